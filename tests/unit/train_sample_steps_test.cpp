// Minibatch training one sample at a time (train::SampleSteps): the batch gradient equals
// the merged plan's up to summation order, the thread count does not change a bit of the
// trained weights, every output of the last epoch is reported on the plain and the sharded
// path, and a sample whose plan cannot be built is refused on every attempt.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "lrnn/diagnostics.hpp"
#include "lrnn/memory.hpp"
#include "lrnn/syntax.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using namespace lrnn;

const char* kTemplate =
    "hidden(X) :- {3,2} f(X), {3}. [activation=tanh]\n"
    "hidden(X) :- {3,2} f(Y), g(X, Y). [aggregation=sum]\n"
    "{1,3} out :- hidden(X). [aggregation=avg]\n"
    "out/0 [activation=sigmoid]\n";
const char* kExamples =
    "<1> out :- <[0.5, -1]> f(a), <[1, 2]> f(b), g(a, b).\n<0> out :- <[-1, 0.3]> f(a).\n"
    "<1> out :- <[2, 1]> f(a), <[0, 1]> f(c), <[1, 1]> f(d), g(c, d), g(d, a).\n<0> out :- <[-2, -0.5]> f(b).\n"
    "<1> out :- <[0.1, 0.7]> f(a).\n<0> out :- <[0.3, 0.2]> f(a), <[1, -1]> f(b), g(b, a).\n";

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max({std::fabs(a[i]), std::fabs(b[i]), 1e-300});
    worst = std::max(worst, std::fabs(a[i] - b[i]) / scale);
  }
  return worst;
}

TEST(TrainSampleSteps, BatchGradientIsTheMergedPlansUpToRounding) {
  train::Engine engine(parse_template(kTemplate, "t"));
  const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(kExamples, "e"), {}));
  const std::vector<uint32_t> batch = {0, 2, 5};

  // The reference: the batch's networks merged into one plan, one forward and backward.
  const exec::Plan merged = exec::build_plan(engine.model(), {&set.networks[0], &set.networks[2], &set.networks[5]});
  exec::Workspace ws;
  exec::forward(merged, engine.parameters(), ws);
  ws.grads.assign(merged.num_values, 0.0);
  const std::vector<double> targets[] = {{1.0}, {1.0}, {0.0}};
  const train::LossSum merged_loss = train::seed_loss_gradients(
      merged, ws, train::LossKind::Mse, [&](size_t o) -> const std::vector<double>& { return targets[o]; });
  std::vector<double> merged_grads(engine.parameters().size(), 0.0);
  exec::backward(merged, engine.parameters(), ws, merged_grads);

  train::SampleSteps steps;
  std::vector<double> summed(engine.parameters().size(), 0.0);
  double loss_sum = 0;
  size_t count = 0, calls = 0;
  steps.run(engine.model(), set, batch, train::LossKind::Mse, 3, true, true,
            [&](size_t pos, const train::SampleGradient& sample) {
              EXPECT_EQ(pos, calls++);  // in batch order
              for (size_t i = 0; i < summed.size(); ++i) summed[i] += sample.grads[i];
              loss_sum += sample.loss.sum;
              count += sample.loss.count;
              ASSERT_EQ(sample.values.size(), 1u);
              EXPECT_EQ(sample.values[0], exec::output_value(merged, ws, pos));
              ASSERT_EQ(sample.targets.size(), 1u);
              EXPECT_EQ(sample.targets[0], targets[pos]);
            });
  EXPECT_EQ(calls, 3u);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(merged_loss.count, 3u);
  EXPECT_NEAR(loss_sum, merged_loss.sum, 1e-15);
  EXPECT_GT(*std::max_element(merged_grads.begin(), merged_grads.end()), 1e-6);
  EXPECT_LT(max_relative_difference(summed, merged_grads), 1e-12);
  // Samples 1 and 4 (one f fact, no edge) share one structure, hence one plan.
  steps.run(engine.model(), set, std::vector<uint32_t>{1, 4}, train::LossKind::Mse, 2, false, false,
            [](size_t, const train::SampleGradient&) {});
  EXPECT_EQ(steps.cached_plans(), 4u);
}

#ifdef _OPENMP
// The samples of a batch run on every thread (here whatever their size), but their
// gradients are handed over in batch order: 1, 2 and 3 threads give the same bits, for
// the batch gradient and through training.
TEST(TrainSampleSteps, ThreadCountDoesNotChangeTheBits) {
  std::string examples;
  for (int copy = 0; copy < 6; ++copy) examples += kExamples;
  const auto samples = train::pair_samples(parse_examples(examples, "e"), {});
  std::vector<uint32_t> batch;
  for (uint32_t i = 0; i < samples.size(); i += 2) batch.push_back(i);
  auto with_threads = [&](int threads) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    train::Engine engine(parse_template(kTemplate, "t"));
    const train::PreparedSet set = engine.prepare(samples);
    train::SampleSteps steps;
    steps.min_parallel_values = 0;
    std::vector<double> summed(engine.parameters().size(), 0.0);
    std::vector<std::vector<double>> values;
    steps.run(engine.model(), set, batch, train::LossKind::Mse, batch.size(), true, true,
              [&](size_t, const train::SampleGradient& sample) {
                for (size_t i = 0; i < summed.size(); ++i) summed[i] += sample.grads[i];
                values.push_back(sample.values[0]);
              });
    train::TrainConfig config;
    config.epochs = 4;
    config.batch_size = 7;
    config.optimizer.lr = 0.05;
    engine.train(set, nullptr, config);
    omp_set_num_threads(before);
    return std::make_tuple(summed, values, engine.parameters().values);
  };
  const auto [one_grads, one_values, one_trained] = with_threads(1);
  EXPECT_GT(*std::max_element(one_grads.begin(), one_grads.end()), 1e-6);
  for (int threads : {2, 3}) {
    const auto [grads, values, trained] = with_threads(threads);
    EXPECT_EQ(grads, one_grads) << threads << " threads";
    EXPECT_EQ(values, one_values) << threads << " threads";
    EXPECT_EQ(trained, one_trained) << threads << " threads";
  }
}
#endif

// The next batches' samples (set_next_up) are a prefetch hint: whether planned, not planned
// yet or not in the set at all, the batch runs to the same bits, in float64 and float32.
TEST(TrainSampleSteps, TheNextBatchesHintChangesNoBit) {
  train::Engine engine(parse_template(kTemplate, "t"));
  const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(kExamples, "e"), {}));
  for (const Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
    auto run = [&](train::SampleSteps& steps, std::vector<uint32_t> batch) {
      std::vector<double> out;
      steps.run(engine.model(), set, batch, train::LossKind::Mse, batch.size(), true, true,
                [&](size_t, const train::SampleGradient& sample) {
                  std::vector<double> grads(engine.parameters().size(), 0.0);
                  sample.add_to(grads, true);
                  out.insert(out.end(), grads.begin(), grads.end());
                  out.insert(out.end(), sample.values[0].begin(), sample.values[0].end());
                },
                dtype);
      return out;
    };
    train::SampleSteps plain, hinted;
    const std::vector<double> first = run(plain, {1}), second = run(plain, {0, 2}), third = run(plain, {3});
    hinted.set_next_up(std::vector<uint32_t>{0, 2, 99});  // 0 and 2 not planned yet, 99 no sample
    EXPECT_EQ(run(hinted, {1}), first);
    hinted.set_next_up(std::vector<uint32_t>{3, 1, 5});  // 1 planned, 3 and 5 not
    EXPECT_EQ(run(hinted, {0, 2}), second);
    hinted.set_next_up(std::vector<uint32_t>{2, 2, 0});  // all planned
    EXPECT_EQ(run(hinted, {3}), third);
    EXPECT_GT(*std::max_element(first.begin(), first.end()), 1e-6);
  }
}

// Runs every sample of `set` through `steps` (MSE against 1, 0, 1, ... as the samples
// alternate) and checks each one's output and parameter gradients, bit for bit, against
// the sample's own plan run on its network's double fact values; returns how many it checked.
size_t expect_each_sample_as_its_own_plan(train::Engine& engine, const train::PreparedSet& set,
                                          train::SampleSteps& steps) {
  std::vector<uint32_t> all(set.size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  size_t checked = 0;
  steps.run(engine.model(), set, all, train::LossKind::Mse, all.size(), true, true,
            [&](size_t pos, const train::SampleGradient& sample) {
              const exec::Plan plan = exec::build_plan(engine.model(), {&set.networks[pos]});
              exec::Workspace ws;
              exec::forward(plan, engine.parameters(), ws);
              EXPECT_EQ(sample.values[0], exec::output_value(plan, ws, 0));
              ws.grads.assign(plan.num_values, 0.0);
              const std::vector<double> target = {pos % 2 == 0 ? 1.0 : 0.0};
              train::seed_loss_gradients(plan, ws, train::LossKind::Mse,
                                         [&](size_t) -> const std::vector<double>& { return target; }, nullptr,
                                         nullptr, all.size());
              std::vector<double> grads(engine.parameters().size(), 0.0);
              exec::backward(plan, engine.parameters(), ws, grads);
              EXPECT_EQ(sample.grads, grads);
              ++checked;
            });
  return checked;
}

// A float64 pass over samples whose fact values are each a float exactly reads them from
// the float copy, widened: every gradient and output is bitwise the one of the sample's
// own plan run on its double values. One inexact value (0.1) keeps the whole set on its
// doubles, with the same results.
TEST(TrainSampleSteps, Float64FromExactFloatFactsChangesNoBit) {
  const char* exact =
      "<1> out :- <[0.5, -1]> f(a), <[1, 2]> f(b), g(a, b).\n<0> out :- <[-1, 0.25]> f(a).\n"
      "<1> out :- <[2, 1]> f(a), <[0, 1]> f(c), <[1, 1]> f(d), g(c, d), g(d, a).\n<0> out :- <[-2, -0.5]> f(b).\n";
  const std::string inexact = std::string(exact) + "<1> out :- <[0.1, 3]> f(a).\n";
  for (const std::string& examples : {std::string(exact), inexact}) {
    SCOPED_TRACE(examples);
    train::Engine engine(parse_template(kTemplate, "t"));
    const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(examples, "e"), {}));
    train::SampleSteps steps;
    EXPECT_EQ(expect_each_sample_as_its_own_plan(engine, set, steps), set.size());
    EXPECT_EQ(steps.float64_reads_floats(), examples == exact);
  }
}

// The float copy of a set's fact values is held against the memory budget for as long as it
// lives (lrnn/memory.hpp), so a later stage's check counts its bytes: held once the exact
// copy is made, and given back when the steps are bound to another set and when they end.
TEST(TrainSampleSteps, FloatFactCopyIsHeldAgainstTheBudgetWhileItLives) {
  const char* exact =
      "<1> out :- <[0.5, -1]> f(a), <[1, 2]> f(b), g(a, b).\n<0> out :- <[-1, 0.25]> f(a).\n"
      "<1> out :- <[2, 1]> f(a), <[0, 1]> f(c), <[1, 1]> f(d), g(c, d), g(d, a).\n";
  train::Engine engine(parse_template(kTemplate, "t"));
  const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(exact, "e"), {}));
  const train::PreparedSet other = engine.prepare(train::pair_samples(parse_examples(exact, "e"), {}));
  uint64_t copy_bytes = 0;
  for (const neural::SampleNetwork& net : set.networks) copy_bytes += neural::fact_values_size(net) * sizeof(float);
  ASSERT_GT(copy_bytes, 0u);
  std::vector<uint32_t> all(set.size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  const uint64_t before = memory_held();
  {
    train::SampleSteps steps;
    steps.run(engine.model(), set, all, train::LossKind::Mse, all.size(), true, false,
              [](size_t, const train::SampleGradient&) {});
    ASSERT_TRUE(steps.float64_reads_floats());
    EXPECT_EQ(memory_held() - before, copy_bytes);
    steps.plan_ahead(engine.model(), other, all);  // bound to another set: the copy is dropped
    EXPECT_EQ(memory_held(), before);
    steps.run(engine.model(), set, all, train::LossKind::Mse, all.size(), true, false,
              [](size_t, const train::SampleGradient&) {});
    EXPECT_EQ(memory_held() - before, copy_bytes);
  }
  EXPECT_EQ(memory_held(), before);
  // A copy a float32 pass made serves float64 passes too, even where a second copy would not
  // fit: its bytes are held already, not asked for again.
  {
    train::SampleSteps steps;
    steps.build_fact_copies(set, Dtype::Float32);
    set_memory_limit(memory_held() + copy_bytes - 1);
    steps.build_fact_copies(set, Dtype::Float64);
    set_memory_limit(0);
    EXPECT_TRUE(steps.float64_reads_floats());
    EXPECT_EQ(memory_held() - before, copy_bytes);
  }
}

// Fact values at most one in eight nonzero (one-hot labels) are kept sparse: the nonzero
// values and their positions, a -0 among them. A float64 pass from that copy gives bitwise
// the outputs and gradients of the sample's own plan on its double values; the copy's bytes
// (a position and a float per entry, an offset per sample) are held against the budget.
TEST(TrainSampleSteps, SparseFactCopyChangesNoBit) {
  const char* one_hot_template =
      "hidden(X) :- {3,24} f(X), {3}. [activation=tanh]\n"
      "hidden(X) :- {3,24} f(Y), g(X, Y). [aggregation=sum]\n"
      "{1,3} out :- hidden(X). [aggregation=avg]\n"
      "out/0 [activation=sigmoid]\n";
  // f(x) 24 wide, `value` at `at` (and -0 at `negative_zero` when given), 0 elsewhere.
  const auto f = [](const char* x, int at, const char* value, int negative_zero = -1) {
    std::string s = "<[";
    for (int i = 0; i < 24; ++i) s += std::string(i ? ", " : "") + (i == at ? value : i == negative_zero ? "-0.0" : "0");
    return s + "]> f(" + x + ")";
  };
  const std::string examples = "<1> out :- " + f("a", 2, "1") + ", " + f("b", 23, "1") + ", g(a, b).\n" +
                               "<0> out :- " + f("a", 0, "1", 6) + ".\n" + "<1> out :- " + f("a", 4, "2") + ", " +
                               f("c", 1, "1") + ", " + f("d", -1, "1") + ", g(c, d), g(d, a).\n";
  train::Engine engine(parse_template(one_hot_template, "t"));
  const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(examples, "e"), {}));
  const uint64_t before = memory_held();
  train::SampleSteps steps;
  EXPECT_EQ(expect_each_sample_as_its_own_plan(engine, set, steps), set.size());
  ASSERT_TRUE(steps.float64_reads_floats());
  ASSERT_TRUE(steps.facts_sparse());
  // 9 values kept of 147 (f's 1s and 2, the -0, g's 1s), in 3 samples.
  EXPECT_EQ(memory_held() - before, 9 * (sizeof(uint32_t) + sizeof(float)) + 4 * sizeof(size_t));
}

// With a zero learning rate the weights never move: the last epoch's outputs are the
// evaluation's (up to rounding: evaluation runs the merged plan), on both paths.
TEST(TrainSampleSteps, LastEpochOutputsCoverEverySampleOnBothPaths) {
  const auto samples = train::pair_samples(parse_examples(kExamples, "e"), {});
  for (bool sharded : {false, true}) {
    train::Engine engine(parse_template(kTemplate, "t"));
    train::PreparedSet set = engine.prepare(samples);
    if (sharded) {  // one process holding every sample: the exact (MPI) step
      set.global_size = set.size();
      set.global_target_counts.assign(set.size(), 0);
      for (const auto& o : set.outputs) set.global_target_counts[o.sample] += o.target.empty() ? 0 : 1;
    }
    train::TrainConfig config;
    config.epochs = 2;
    config.batch_size = 4;
    config.optimizer.lr = 0;
    const train::TrainResult result = engine.train(set, nullptr, config);
    const train::Evaluation ev = engine.evaluate(set, config.loss);
    ASSERT_EQ(result.last_epoch_outputs.size(), set.outputs.size()) << (sharded ? "sharded" : "plain");
    for (size_t o = 0; o < set.outputs.size(); ++o) {
      ASSERT_EQ(result.last_epoch_outputs[o].size(), 1u) << "output " << o << (sharded ? " sharded" : " plain");
      EXPECT_NEAR(result.last_epoch_outputs[o][0], ev.outputs[o].value[0], 1e-14) << "output " << o;
    }
  }
}

// A sample whose network does not fit the template's weights (a 3-vector under a 3x2 weight)
// fails when its plan is built: the error names the rule, and a second attempt fails the
// same way rather than finding the sample without a plan.
TEST(TrainSampleSteps, ASampleWithoutAPlanIsRefusedEveryTime) {
  train::Engine engine(parse_template(kTemplate, "t"));
  const train::PreparedSet set =
      engine.prepare(train::pair_samples(parse_examples("<1> out :- <[1, 2]> f(a).\n<0> out :- <[1, 2, 3]> f(b).\n", "e"), {}));
  train::TrainConfig config;
  config.epochs = 1;
  config.batch_size = 2;
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      engine.train(set, nullptr, config);
      FAIL() << "attempt " << attempt << " trained";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("hidden(X)"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
