// Batch normalisation (`P/n [normalization=batch]`): a training step's gradient is the
// finite-difference gradient of its batch loss (statistics over every sample of the batch,
// atoms of one predicate at several natural depths aligned), the running statistics move
// as torch's do, evaluation normalises with them, and what cannot be normalised is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

// h's atoms with an e fact are derived through k (depth 2), the others from f alone (depth
// 1): their statistics are still taken together. o is normalised after h.
const char* kTemplate =
    "k(X) :- {2,2} f(X), e(X). [activation=tanh]\n"
    "h(X) :- {2,2} f(X).\n"
    "h(X) :- {2,2} k(X).\n"
    "h/1 {2}\n"
    "h/1 [activation=tanh, normalization=batch]\n"
    "o(X) :- {3,2} h(X).\n"
    "o/1 {3}\n"
    "o/1 [normalization=batch]\n"
    "o/1 [activation=sigmoid]\n"
    "{1,3} out :- o(X). [aggregation=avg]\n"
    "out/0 [activation=sigmoid]\n";
const char* kExamples =
    "<1> out :- <[0.5, -1]> f(a), <[1, 2]> f(b), e(a).\n"
    "<0> out :- <[-1, 0.3]> f(a).\n"
    "<1> out :- <[2, 1]> f(a), <[0, 1]> f(c), <[1, 1]> f(d), e(c), e(d).\n"
    "<0> out :- <[-2, -0.5]> f(b), <[0.3, 0.2]> f(a), e(b).\n";

struct BatchLoss {
  double loss = 0;
  std::vector<double> grads;
};

template <class T = double>
BatchLoss batch_loss(train::SampleSteps& steps, const train::Engine& engine, const train::PreparedSet& set,
                     const std::vector<uint32_t>& batch, Dtype dtype = Dtype::Float64) {
  BatchLoss out;
  out.grads.assign(engine.parameters().size(), 0.0);
  steps.run(engine.model(), set, batch, train::LossKind::Mse, batch.size(), false, false,
            [&](size_t, const train::SampleGradient& sample) {
              out.loss += sample.loss.sum / static_cast<double>(batch.size());  // the gradients are of the mean
              if (sample.has_gradient()) sample.add_to(out.grads, false);
            }, dtype);
  return out;
}

TEST(TrainBatchNorm, StepGradientIsTheFiniteDifferenceOfTheBatchLoss) {
  train::Engine engine(parse_template(kTemplate, "t"));
  const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(kExamples, "e"), {}));
  const std::vector<uint32_t> batch = {0, 1, 2, 3};
  train::SampleSteps steps;
  const BatchLoss at = batch_loss(steps, engine, set, batch);
  neural::Parameters& params = engine.parameters();
  const std::vector<uint8_t> learnable = params.learnable_mask();
  size_t checked = 0;
  double largest = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!learnable[i]) {
      EXPECT_EQ(at.grads[i], 0.0) << "entry " << i;  // the running statistics
      continue;
    }
    const double keep = params.values[i], h = 1e-6;
    params.values[i] = keep + h;
    const double up = batch_loss(steps, engine, set, batch).loss;
    params.values[i] = keep - h;
    const double down = batch_loss(steps, engine, set, batch).loss;
    params.values[i] = keep;
    const double fd = (up - down) / (2 * h);
    EXPECT_NEAR(at.grads[i], fd, 1e-7 + 1e-6 * std::fabs(fd)) << "entry " << i;
    largest = std::max(largest, std::fabs(fd));
    ++checked;
  }
  EXPECT_EQ(checked, 4u + 4u + 4u + 2u + 2u + 6u + 3u + 3u + 3u);  // k, two h weights, h's shift/scale, o's...
  EXPECT_GT(largest, 1e-3);
  // The shift of o after a sigmoid-free mean... every scale and shift has a real gradient.
  for (const char* name : {"h/1.norm_scale", "o/1.norm_scale", "h/1.offset", "o/1.offset"}) {
    const uint32_t p = params.find(name);
    ASSERT_NE(p, neural::kNoParam) << name;
    EXPECT_GT(std::fabs(at.grads[params.info(p).offset]), 1e-6) << name;
  }
  // float32 passes agree with float64's to float precision.
  train::SampleSteps steps32;
  const BatchLoss at32 = batch_loss(steps32, engine, set, batch, Dtype::Float32);
  EXPECT_NEAR(at32.loss, at.loss, 1e-6);
  for (size_t i = 0; i < at.grads.size(); ++i) EXPECT_NEAR(at32.grads[i], at.grads[i], 1e-5) << "entry " << i;
}

// One training step at rate 0 (the weights stay) on the whole set: the running mean is
// 0.1 x the batch mean, the running variance 0.9 + 0.1 x the unbiased batch variance, and
// evaluation normalises with them.
TEST(TrainBatchNorm, RunningStatisticsMoveLikeTorchsAndEvaluationUsesThem) {
  const char* tmpl =
      "h(X) :- {2,2} f(X).\n"
      "h/1 {2}\n"
      "h/1 [normalization=batch]\n"
      "out :- {1,2} h(X). [aggregation=avg]\n";
  train::Engine engine(parse_template(tmpl, "t"));
  const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(kExamples, "e"), {}));
  const neural::Parameters& params = engine.parameters();
  auto values = [&](const char* name) {
    const uint32_t p = params.find(name);
    EXPECT_NE(p, neural::kNoParam) << name;
    return std::vector<double>(params.data(p), params.data(p) + params.info(p).shape.size());
  };
  EXPECT_EQ(values("h/1.norm_scale"), (std::vector<double>{1, 1}));
  EXPECT_EQ(values("h/1.norm_mean"), (std::vector<double>{0, 0}));
  EXPECT_EQ(values("h/1.norm_var"), (std::vector<double>{1, 1}));
  const std::vector<double> w = values("rule0.body0");  // 2x2, row-major
  ASSERT_EQ(w.size(), 4u);
  // Every f fact of the examples is an h atom: x = W f.
  const std::vector<std::vector<std::vector<double>>> facts = {
      {{0.5, -1}, {1, 2}}, {{-1, 0.3}}, {{2, 1}, {0, 1}, {1, 1}}, {{-2, -0.5}, {0.3, 0.2}}};
  std::vector<std::vector<double>> xs;
  for (const auto& sample : facts)
    for (const auto& f : sample) xs.push_back({w[0] * f[0] + w[1] * f[1], w[2] * f[0] + w[3] * f[1]});
  const double n = static_cast<double>(xs.size());
  double mean[2] = {0, 0}, var[2] = {0, 0};
  for (const auto& x : xs)
    for (int i = 0; i < 2; ++i) mean[i] += x[i] / n;
  for (const auto& x : xs)
    for (int i = 0; i < 2; ++i) var[i] += (x[i] - mean[i]) * (x[i] - mean[i]) / (n - 1);

  train::TrainConfig config;
  config.epochs = 1;
  config.optimizer = train::OptimizerConfig::defaults(train::OptimizerKind::Sgd);
  config.optimizer.lr = 0.0;
  const train::TrainResult result = engine.train(set, nullptr, config);
  const std::vector<double> run_mean = values("h/1.norm_mean"), run_var = values("h/1.norm_var");
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(run_mean[i], 0.1 * mean[i], 1e-14);
    EXPECT_NEAR(run_var[i], 0.9 + 0.1 * var[i], 1e-14);
  }
  // The step's own outputs used the batch statistics (biased variance), evaluation the running ones.
  const std::vector<double> v = values("rule1.body0"), shift = values("h/1.offset");
  auto output = [&](size_t sample, const double* m, const double* s2) {
    double sum = 0;
    const size_t first = [&] { size_t k = 0; for (size_t j = 0; j < sample; ++j) k += facts[j].size(); return k; }();
    for (size_t a = 0; a < facts[sample].size(); ++a)
      for (int i = 0; i < 2; ++i)
        sum += v[i] * ((xs[first + a][i] - m[i]) / std::sqrt(s2[i] + 1e-5) + shift[i]);
    return sum / static_cast<double>(facts[sample].size());
  };
  const double biased[2] = {var[0] * (n - 1) / n, var[1] * (n - 1) / n};
  const train::Evaluation eval = engine.evaluate(set, train::LossKind::Mse);
  for (size_t s = 0; s < facts.size(); ++s) {
    ASSERT_EQ(result.last_epoch_outputs[s].size(), 1u);
    EXPECT_NEAR(result.last_epoch_outputs[s][0], output(s, mean, biased), 1e-12) << "sample " << s;
    EXPECT_NEAR(eval.outputs[s].value[0], output(s, run_mean.data(), run_var.data()), 1e-12) << "sample " << s;
  }
}

std::string error_of(const std::string& tmpl, const std::vector<uint32_t>& batch = {0, 1, 2, 3},
                     const char* examples = kExamples) {
  try {
    train::Engine engine(parse_template(tmpl, "t"));
    const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(examples, "e"), {}));
    train::SampleSteps steps;
    batch_loss(steps, engine, set, batch);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TrainBatchNorm, RefusesWhatItCannotNormalise) {
  const std::string rules = "h(X) :- {2,2} f(X).\nout :- {1,2} h(X). [aggregation=avg]\n";
  EXPECT_NE(error_of(rules + "h/1 [normalization=batch]\n").find("needs the predicate's offset declared"),
            std::string::npos);
  EXPECT_NE(error_of(rules + "h/1 {2}\nh/1 [normalization=layer]\n").find("unknown normalization 'layer'"),
            std::string::npos);
  EXPECT_NE(error_of(rules + "h/1 {1}\nh/1 [normalization=batch]\n").find("takes its shape 1x1"), std::string::npos);
  EXPECT_NE(error_of(rules + "g/1 {2}\ng/1 [normalization=batch]\n").find("no rule derives g/1"), std::string::npos);
  EXPECT_NE(error_of(rules + "h/1 {2}\nh/1 [normalization=batch]\n", {1}).find("holds 1 atom of it"),
            std::string::npos);
  {  // a set sharded over MPI ranks (as lrnn::Model marks one) is refused before any step
    train::Engine engine(parse_template(rules + "h/1 {2}\nh/1 [normalization=batch]\n", "t"));
    train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(kExamples, "e"), {}));
    set.global_size = 2 * set.size();
    train::TrainConfig config;
    config.epochs = 1;
    try {
      engine.train(set, nullptr, config);
      ADD_FAILURE() << "a sharded batch-normalised set trained";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot be trained sharded over MPI ranks"), std::string::npos) << e.what();
    }
  }
  const std::string recursive =
      "h(X) :- {2,2} f(X).\nh(X) :- {2,2} h(Y), g(X, Y).\nh/1 {2}\nh/1 [normalization=batch]\n"
      "out :- {1,2} h(X). [aggregation=avg]\n";
  EXPECT_NE(error_of(recursive, {0}, "<1> out :- <[1, 2]> f(a), <[0, 1]> f(b), g(b, a).\n").find("depends on itself"),
            std::string::npos);
}

}  // namespace
