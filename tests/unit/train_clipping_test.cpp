// Gradient clipping (clip_grad_value, clip_grad_norm: torch's formulas), the summed MSE,
// the linear (ArithmeticLR) schedule, in-order minibatches, the last epoch's outputs, and
// backward passes seeded with given output gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "lrnn/lrnn.hpp"
#include "train/config.hpp"
#include "train/engine.hpp"
#include "train/numerics.hpp"

namespace {

const char* kTemplate =
    "hidden(X) :- {3,2} f(X), {3}. [activation=tanh]\n"
    "{1,3} out :- hidden(X).\n"
    "out/0 [activation=identity]\n";
const char* kExamples = "<5> out :- <[2.5, -1]> f(a), <[1, 2]> f(b).\n<-4> out :- <[-1, 3]> f(a).\n";

TEST(TrainClipping, ValueThenNormAsTorch) {
  std::vector<double> g = {3.0, -4.0, 0.5};
  lrnn::train::clip_gradients(g, 1.0, 0.0);
  EXPECT_EQ(g, (std::vector<double>{1.0, -1.0, 0.5}));
  g = {3.0, -4.0};  // norm 5
  lrnn::train::clip_gradients(g, 0.0, 1.0);
  EXPECT_DOUBLE_EQ(g[0], 3.0 / (5.0 + 1e-6));
  EXPECT_DOUBLE_EQ(g[1], -4.0 / (5.0 + 1e-6));
  g = {0.3, 0.4};  // norm 0.5 <= 1: unchanged
  lrnn::train::clip_gradients(g, 0.0, 1.0);
  EXPECT_EQ(g, (std::vector<double>{0.3, 0.4}));
}

// One full-batch SGD step (lr 1) with clipping moves every weight by exactly minus the
// clipped gradient of the loss at the starting weights.
void expect_one_clipped_step(std::optional<double> clip_value, std::optional<double> clip_norm) {
  lrnn::Settings s;
  s.optimizer = "sgd";
  s.lr = 1.0;
  s.epochs = 1;
  s.clip_grad_value = clip_value;
  s.clip_grad_norm = clip_norm;
  lrnn::Model model(lrnn::Template::from_string(kTemplate), s);
  lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  const std::vector<lrnn::Parameter> before = model.parameters();
  // The full-batch gradient: the mean over both samples' losses.
  std::vector<double> grad;
  for (size_t i = 0; i < data.size(); ++i) {
    const lrnn::GroundNetwork net = model.network(data, i, true);
    size_t k = 0;
    for (const lrnn::Parameter& p : net.parameter_gradients)
      for (double v : p.values) {
        if (grad.size() <= k) grad.push_back(0.0);
        grad[k++] += v / static_cast<double>(data.size());
      }
  }
  std::vector<double> unclipped = grad;
  lrnn::train::clip_gradients(grad, clip_value.value_or(0.0), clip_norm.value_or(0.0));
  ASSERT_NE(grad, unclipped) << "the clip must bind in this test";
  model.train(data);
  size_t k = 0;
  for (const lrnn::Parameter& p : before) {
    const lrnn::Parameter after = model.parameter(p.name);
    for (size_t e = 0; e < p.values.size(); ++e, ++k) EXPECT_NEAR(after.values[e], p.values[e] - grad[k], 1e-12);
  }
}

TEST(TrainClipping, ClipGradValueChangesTheUpdate) { expect_one_clipped_step(0.05, std::nullopt); }
TEST(TrainClipping, ClipGradNormChangesTheUpdate) { expect_one_clipped_step(std::nullopt, 0.1); }

TEST(TrainClipping, RefusesNonPositiveClips) {
  lrnn::Settings s;
  s.clip_grad_norm = 0.0;
  EXPECT_THROW(lrnn::train::make_train_config(s, 0), lrnn::Error);
  s.clip_grad_norm.reset();
  s.clip_grad_value = -1.0;
  EXPECT_THROW(lrnn::train::make_train_config(s, 0), lrnn::Error);
}

TEST(TrainClipping, SummedMseIsTheMeanTimesTheCount) {
  std::vector<double> g_mean(2), g_sum(2);
  const std::vector<double> y = {1.0, 3.0}, t = {0.0, 1.0};
  const double mean = lrnn::train::loss(lrnn::train::LossKind::Mse, y, t, g_mean);
  const double sum = lrnn::train::loss(lrnn::train::parse_loss("mse_sum"), y, t, g_sum);
  EXPECT_DOUBLE_EQ(mean, 2.5);
  EXPECT_DOUBLE_EQ(sum, 5.0);
  EXPECT_DOUBLE_EQ(g_sum[0], 2.0);
  EXPECT_DOUBLE_EQ(g_sum[1], 4.0);
  EXPECT_DOUBLE_EQ(lrnn::train::loss_divisor(lrnn::train::LossKind::MseSum, 7), 1.0);
  EXPECT_DOUBLE_EQ(lrnn::train::loss_divisor(lrnn::train::LossKind::Mse, 7), 7.0);
}

TEST(TrainClipping, LinearScheduleIsArithmeticDecay) {
  lrnn::train::Schedule s;
  s.kind = lrnn::train::Schedule::parse("arithmetic");
  s.step_size = 10;
  EXPECT_DOUBLE_EQ(s.lr(100, 0), 100);
  EXPECT_DOUBLE_EQ(s.lr(100, 1), 90);
  EXPECT_DOUBLE_EQ(s.lr(100, 4), 60);
  EXPECT_DOUBLE_EQ(s.lr(100, 12), 0);  // never negative
}

TEST(TrainClipping, LastEpochOutputsAreTheForwardBeforeTheUpdate) {
  lrnn::Settings s;
  s.optimizer = "sgd";
  s.lr = 0.1;
  s.epochs = 1;
  s.batch_size = 1;
  s.shuffle = false;
  lrnn::Model model(lrnn::Template::from_string(kTemplate), s);
  lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  const auto first = model.forward(lrnn::Dataset::from_text("<5> out :- <[2.5, -1]> f(a), <[1, 2]> f(b).\n"));
  const lrnn::TrainReport report = model.train(data);
  ASSERT_EQ(report.last_epoch_outputs.size(), 2u);
  // Online in order: sample 0 is computed with the initial weights, sample 1 after one step.
  EXPECT_EQ(report.last_epoch_outputs[0], first[0]);
  EXPECT_NE(report.last_epoch_outputs[1], model.forward(data)[1]);
}

TEST(TrainClipping, SeededBackwardIsAVectorJacobianProduct) {
  // With d out = 1 the seeded pass gives d out / d w; with 2, twice that.
  lrnn::Model model(lrnn::Template::from_string(kTemplate));
  lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  const lrnn::GroundNetwork one = model.network(data, 0, std::vector<std::vector<double>>{{1.0}});
  const lrnn::GroundNetwork two = model.network(data, 0, std::vector<std::vector<double>>{{2.0}});
  ASSERT_EQ(one.parameter_gradients.size(), two.parameter_gradients.size());
  const lrnn::Parameter w = model.parameter("rule1.head");
  size_t p = 0;
  while (p < one.parameter_gradients.size() && one.parameter_gradients[p].name != w.name) ++p;
  ASSERT_LT(p, one.parameter_gradients.size());
  for (size_t e = 0; e < w.values.size(); ++e) {
    auto at = [&](double h) {
      auto v = w.values;
      v[e] += h;
      model.set_parameter(w.name, v);
      const double out = model.forward(data)[0][0];
      model.set_parameter(w.name, w.values);
      return out;
    };
    const double fd = (at(1e-6) - at(-1e-6)) / 2e-6;
    EXPECT_NEAR(one.parameter_gradients[p].values[e], fd, 1e-6);
    EXPECT_DOUBLE_EQ(two.parameter_gradients[p].values[e], 2 * one.parameter_gradients[p].values[e]);
  }
  EXPECT_THROW(model.network(data, 0, std::vector<std::vector<double>>{{1.0, 2.0}}), lrnn::Error);
  EXPECT_THROW(model.network(data, 0, std::vector<std::vector<double>>{}), lrnn::Error);
}

}  // namespace
