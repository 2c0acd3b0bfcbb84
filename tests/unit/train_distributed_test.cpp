// The pieces of data-parallel training (train/distributed.hpp) that run in one process: exact
// sums (the same bits whatever the order or split of the additions), the shard blocks, and
// a sharded set trained through the exact path against the ordinary one. The runs over 2
// and 3 ranks are the ctest `distributed` (tests/distributed/check_distributed.py).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "cli_test_support.hpp"
#include "lrnn/syntax.hpp"
#include "train/dataset.hpp"
#include "train/distributed.hpp"
#include "train/engine.hpp"
#include "shared_datasets.hpp"

namespace {

using lrnn::train::dist::ExactSum;

std::vector<double> mixed_magnitudes(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-40, 30);
  std::vector<double> v(n);
  for (double& x : v) x = std::ldexp(mantissa(rng), exponent(rng));
  return v;
}

TEST(TrainDistributed, ExactSumIsIndependentOfOrder) {
  const std::vector<double> values = mixed_magnitudes(5000, 7);
  ExactSum forward, backward;
  forward.reset(1);
  backward.reset(1);
  for (double x : values) forward.add(0, x);
  for (auto it = values.rbegin(); it != values.rend(); ++it) backward.add(0, *it);
  EXPECT_EQ(forward.value(0), backward.value(0));  // bitwise
  // Floating-point sums of the same values in the two orders differ in the last bits.
  double f = 0, b = 0;
  for (double x : values) f += x;
  for (auto it = values.rbegin(); it != values.rend(); ++it) b += *it;
  EXPECT_NE(f, b);
  // Close to a compensated reference (the only rounding: each value truncated at 2^-64).
  long double reference = 0;
  for (double x : values) reference += x;
  EXPECT_NEAR(forward.value(0), static_cast<double>(reference), 1e-12 * std::fabs(static_cast<double>(reference)));
  EXPECT_EQ(forward.unrepresentable(), 0);
}

TEST(TrainDistributed, ExactSumCountsWhatItCannotHold) {
  ExactSum s;
  s.reset(2);
  s.add(0, 1.5);
  s.add(0, std::numeric_limits<double>::quiet_NaN());
  s.add(1, std::numeric_limits<double>::infinity());
  s.add(1, 0x1p40);
  s.add(1, -0x1p39);
  EXPECT_EQ(s.unrepresentable(), 3);
  EXPECT_EQ(s.value(0), 1.5);
  EXPECT_EQ(s.value(1), -0x1p39);
  s.allreduce();  // one process: nothing to add
  EXPECT_EQ(s.value(1), -0x1p39);
}

TEST(TrainDistributed, ShardsAreContiguousBlocksCoveringTheSet) {
  for (size_t n : {0u, 1u, 2u, 7u, 188u, 4110u})
    for (int size : {1, 2, 3, 5}) {
      size_t next = 0;
      for (int r = 0; r < size; ++r) {
        const auto range = lrnn::train::dist::shard_of(n, r, size);
        EXPECT_EQ(range.first, next) << n << " " << size << " " << r;
        EXPECT_LE(range.last - range.first, n / size + 1);
        next = range.last;
      }
      EXPECT_EQ(next, n);
    }
}

// One process, a sharded set holding every sample: the exact path (per-sample gradients,
// exact sums) trains the weights of the ordinary path up to rounding, and twice the same bits.
TEST(TrainDistributed, ShardedPathTrainsLikeTheOrdinaryPath) {
  const char* tmpl =
      "hidden(X) :- {3,2} f(X), {3}. [activation=tanh]\n"
      "{1,3} out :- hidden(X). [aggregation=avg]\n"
      "out/0 [activation=sigmoid]\n";
  const char* examples =
      "<1> out :- <[0.5, -1]> f(a), <[1, 2]> f(b).\n<0> out :- <[-1, 0.3]> f(a).\n"
      "<1> out :- <[2, 1]> f(a), <[0, 1]> f(c), <[1, 1]> f(d).\n<0> out :- <[-2, -0.5]> f(b).\n"
      "<1> out :- <[0.1, 0.7]> f(a).\n";
  const lrnn::TemplateAst ast = lrnn::parse_template(tmpl, "t");
  auto samples = lrnn::train::pair_samples(lrnn::parse_examples(examples, "e"), {});
  // In both dtypes (float32: float passes, gradients summed in double either way).
  std::vector<double> weights[2];
  for (const lrnn::Dtype dtype : {lrnn::Dtype::Float64, lrnn::Dtype::Float32}) {
    SCOPED_TRACE(lrnn::to_string(dtype));
    lrnn::train::TrainConfig config;
    config.epochs = 15;
    config.batch_size = 2;
    config.dtype = dtype;
    auto train = [&](bool sharded) {
      lrnn::train::Engine engine(ast);
      lrnn::train::PreparedSet set = engine.prepare(samples);
      if (sharded) {
        set.global_size = set.size();
        set.global_target_counts.assign(set.size(), 0);
        for (const auto& o : set.outputs) set.global_target_counts[o.sample] += o.target.empty() ? 0 : 1;
      }
      const auto result = engine.train(set, nullptr, config);
      EXPECT_EQ(result.epochs, 15);
      return std::make_pair(engine.parameters().values, result.history.back().train.loss);
    };
    const auto [plain, plain_loss] = train(false);
    const auto [exact, exact_loss] = train(true);
    const auto [again, again_loss] = train(true);
    EXPECT_EQ(exact, again);
    ASSERT_EQ(plain.size(), exact.size());
    double max_difference = 0;
    for (size_t i = 0; i < plain.size(); ++i) max_difference = std::max(max_difference, std::fabs(plain[i] - exact[i]));
    EXPECT_LT(max_difference, 1e-12);
    EXPECT_NE(plain, std::vector<double>(plain.size(), 0.0));
    EXPECT_NEAR(plain_loss, exact_loss, 1e-12);
    weights[dtype == lrnn::Dtype::Float32] = exact;
  }
  EXPECT_NE(weights[0], weights[1]);
  for (size_t i = 0; i < weights[0].size(); ++i) EXPECT_NEAR(weights[1][i], weights[0][i], 1e-5);
}

}  // namespace

namespace {

// --checkpoint-every writes --save every K epochs (the file a killed MPI job leaves behind:
// the ctest `distributed` kills a rank mid-training and loads it); without --save it has
// nowhere to write and is refused before any training.
TEST(TrainDistributed, CheckpointEveryNeedsSaveAndWritesALoadableModel) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  const std::string xor_data = std::string(LRNN_DATASETS_DIR) + "/neuralogic/simple/xor/naive/trainExamples.txt";
  const std::string tmpl = std::string(LRNN_SOURCE_DIR) + "/examples/templates/xor.lrnn";
  const auto refused = lrnn_test::run_lrnn("train " + tmpl + " -e " + xor_data + " --epochs 3 --checkpoint-every 1");
  EXPECT_EQ(refused.code, 1) << refused.out;
  EXPECT_NE(refused.out.find("--checkpoint-every writes the model to --save"), std::string::npos) << refused.out;
  const std::string path = testing::TempDir() + "lrnn_checkpoint_every.json";
  std::remove(path.c_str());
  const auto run = lrnn_test::run_lrnn("train " + tmpl + " -e " + xor_data + " --epochs 4 --checkpoint-every 2 --save " + path);
  EXPECT_EQ(run.code, 0) << run.out;
  const auto eval = lrnn_test::run_lrnn("eval " + path + " -e " + xor_data);
  EXPECT_EQ(eval.code, 0) << eval.out;
  EXPECT_NE(eval.out.find("(4 targets)"), std::string::npos) << eval.out;
  std::remove(path.c_str());
}

}  // namespace
