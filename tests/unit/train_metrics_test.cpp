// The metrics of a set's outputs (train::metrics_of, metrics_of_split): one-number outputs
// and targets take a flat path (no vector per output); its loss, accuracy, AUC and
// predictions must be those of the numerics functions applied output by output, as the
// general path computes them, for both losses and both target conventions.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "train/engine.hpp"
#include "train/numerics.hpp"

namespace {

using namespace lrnn::train;
using lrnn::Metrics;
using lrnn::QuerySplit;

struct Case {
  std::vector<OutputInfo> infos;
  std::vector<std::vector<double>> outputs;
};

Case scalar_case(const std::vector<double>& targets) {
  Case c;
  const std::vector<double> ys = {0.2, 0.7, -0.9, 0.4, 0.6, 0.1, 1.3};
  const QuerySplit splits[] = {QuerySplit::Train, QuerySplit::Validation, QuerySplit::Test};
  for (size_t i = 0; i < ys.size(); ++i) {
    OutputInfo info;
    info.query = static_cast<uint32_t>(i);
    if (i != 4) info.target = {targets[i % targets.size()]};  // output 4 has no target
    info.importance = i == 2 ? 2.5 : 1.0;
    info.split = splits[i % 3];
    c.infos.push_back(info);
    c.outputs.push_back({ys[i]});
  }
  return c;
}

// The metrics of the outputs `take` admits, from the numerics functions one output at a time.
template <class Take>
Metrics expected(LossKind kind, const Case& c, Take take) {
  std::vector<std::vector<double>> preds, targets;
  std::vector<double> scores, flat_targets;
  double total = 0;
  bool binary = true;
  for (size_t o = 0; o < c.infos.size(); ++o) {
    if (c.infos[o].target.empty() || !take(o)) continue;
    std::vector<double> p(1), grad(1);
    predict(kind, c.outputs[o], p);
    total += c.infos[o].importance * loss(kind, c.outputs[o], c.infos[o].target, grad);
    preds.push_back(p);
    targets.push_back(c.infos[o].target);
    scores.push_back(p[0]);
    flat_targets.push_back(c.infos[o].target[0]);
    binary = binary && (c.infos[o].target[0] == 0 || c.infos[o].target[0] == 1);
  }
  Metrics m;
  m.count = preds.size();
  m.loss = total / loss_divisor(kind, m.count);
  m.accuracy = accuracy(preds, targets);
  m.auc = binary ? auc(scores, flat_targets) : std::nan("");
  return m;
}

void expect_same(const Metrics& a, const Metrics& b) {
  EXPECT_EQ(a.count, b.count);
  EXPECT_DOUBLE_EQ(a.loss, b.loss);
  EXPECT_DOUBLE_EQ(a.accuracy, b.accuracy);
  if (std::isnan(b.auc)) EXPECT_TRUE(std::isnan(a.auc));
  else EXPECT_DOUBLE_EQ(a.auc, b.auc);
}

TEST(TrainMetrics, OneNumberOutputsAreThoseOfTheNumericsFunctions) {
  for (const LossKind kind : {LossKind::Mse, LossKind::CrossEntropy}) {
    for (const std::vector<double>& targets : {std::vector<double>{0, 1, 1, 0}, std::vector<double>{-1, 1, 1}}) {
      if (kind == LossKind::CrossEntropy && targets[0] < 0) continue;  // refused: see the next test
      const Case c = scalar_case(targets);
      std::vector<std::vector<double>> predictions;
      const Metrics all = metrics_of(kind, c.infos, c.outputs, &predictions);
      expect_same(all, expected(kind, c, [](size_t) { return true; }));
      EXPECT_EQ(all.count, 6u);
      ASSERT_EQ(predictions.size(), c.outputs.size());  // every output's, the untargeted one too
      for (size_t o = 0; o < predictions.size(); ++o) {
        std::vector<double> p(1);
        predict(kind, c.outputs[o], p);
        EXPECT_EQ(predictions[o], p) << "output " << o;
      }
      for (const QuerySplit split : {QuerySplit::Train, QuerySplit::Validation, QuerySplit::Test}) {
        const Metrics part = metrics_of_split(kind, c.infos, c.outputs, split);
        expect_same(part, expected(kind, c, [&](size_t o) { return c.infos[o].split == split; }));
      }
    }
  }
}

TEST(TrainMetrics, CrossEntropyOfOneNumberRefusesTargetsOutsideZeroOne) {
  // A sigmoid of the logit: a -1 label or a class index would train toward a value it cannot
  // reach, with a loss that looks like any other.
  for (const double t : {-1.0, 3.0, 1.5}) {
    std::vector<double> grad(1);
    const std::vector<double> y = {0.3}, target = {t};
    try {
      (void)loss(LossKind::CrossEntropy, y, target, grad);
      ADD_FAILURE() << "target " << t << " was taken";
    } catch (const lrnn::Error& e) {
      EXPECT_NE(std::string(e.what()).find("[0, 1]"), std::string::npos) << e.what();
    }
  }
  std::vector<double> grad(1);
  const std::vector<double> y = {0.3}, half = {0.5};
  EXPECT_NEAR(loss(LossKind::CrossEntropy, y, half, grad), std::log1p(std::exp(0.3)) - 0.15, 1e-12);
}

TEST(TrainMetrics, OneVectorOutputTakesTheGeneralPath) {
  Case c = scalar_case({0, 1});
  c.outputs.push_back({0.1, 0.8, 0.1});
  OutputInfo info;
  info.target = {1};  // a class index against a three-entry output
  c.infos.push_back(info);
  const Metrics m = metrics_of(LossKind::CrossEntropy, c.infos, c.outputs, nullptr);
  EXPECT_EQ(m.count, 7u);
  EXPECT_TRUE(std::isnan(m.auc));  // not every output is one number
  EXPECT_GT(m.accuracy, 0.0);
}

}  // namespace
