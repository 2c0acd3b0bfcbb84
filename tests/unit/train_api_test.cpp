// The public API (include/lrnn/model.hpp): parameters by name, the ground network with
// gradients (checked against finite differences of the API's own loss), and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <thread>

#include "lrnn/lrnn.hpp"

namespace {

const char* kTemplate =
    "hidden(X) :- {3,2} f(X), {3}. [activation=tanh]\n"
    "{1,3} out :- hidden(X). [aggregation=max]\n"
    "out/0 [activation=sigmoid]\n";
const char* kExamples = "<1> out :- <[0.5, -1]> f(a), <[1, 2]> f(b).\n<0> out :- <[-1, 0.3]> f(a).\n";

TEST(TrainApi, ParametersByNameAndStateDict) {
  lrnn::Model model(lrnn::Template::from_string(kTemplate));
  auto params = model.parameters();
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].name, "rule0.body0");
  EXPECT_EQ(params[0].rows, 3);
  EXPECT_EQ(params[0].cols, 2);
  lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  ASSERT_EQ(data.size(), 2u);
  const auto before = model.forward(data);
  model.set_parameter("rule1.head", {0, 0, 0});
  const auto zero = model.forward(data);
  EXPECT_DOUBLE_EQ(zero[0][0], 0.5);  // sigmoid(0)
  model.load_parameters(params);
  EXPECT_EQ(model.forward(data), before);
  EXPECT_THROW(model.parameter("nope"), lrnn::Error);
  EXPECT_THROW(model.set_parameter("rule1.head", {1, 2}), lrnn::Error);
}

TEST(TrainApi, NetworkGradientsMatchFiniteDifferences) {
  lrnn::Model model(lrnn::Template::from_string(kTemplate));
  lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  lrnn::GroundNetwork net = model.network(data, 0, true);
  ASSERT_EQ(net.ground_rules, 4u);  // two hidden(X) groundings, two out groundings
  bool found_hidden = false;
  for (const auto& a : net.atoms)
    if (a.text == "hidden(a)") {
      found_hidden = true;
      EXPECT_EQ(a.rows, 3);
      EXPECT_EQ(a.gradient.size(), 3u);
    }
  EXPECT_TRUE(found_hidden);
  ASSERT_EQ(net.parameter_gradients.size(), 3u);
  const lrnn::Parameter w = model.parameter("rule0.body0");
  for (size_t e = 0; e < w.values.size(); ++e) {
    auto shifted = [&](double h) {
      auto v = w.values;
      v[e] += h;
      model.set_parameter(w.name, v);
      double l = model.network(data, 0, true).loss;
      model.set_parameter(w.name, w.values);
      return l;
    };
    const double fd = (shifted(1e-6) - shifted(-1e-6)) / 2e-6;
    EXPECT_NEAR(net.parameter_gradients[0].values[e], fd, 1e-6);
  }
}

TEST(TrainApi, TrainsAndSplits) {
  lrnn::Settings s;
  s.epochs = 5;
  lrnn::Model model(lrnn::Template::from_string(kTemplate), s);
  lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  auto [train, test] = data.split(0.5, 3);
  EXPECT_EQ(train.size(), 1u);
  EXPECT_EQ(test.size(), 1u);
  int calls = 0;
  auto report = model.train(train, &test, [&](const lrnn::EpochInfo& e) {
    ++calls;
    EXPECT_TRUE(e.has_test);
    return e.epoch < 3;  // stop after the third epoch
  });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(report.epochs, 3);
  EXPECT_EQ(model.epochs_trained(), 3);
  EXPECT_THROW(lrnn::Dataset::from_text("f(a).\nf(b).\n", "1.0 out.\n0.0 out.\n1.0 out.\n"), lrnn::Error);  // 2 vs 3 lines
}

}  // namespace

namespace {

TEST(TrainApi, SubsetKeepsTheChosenSamplesInOrder) {
  lrnn::Template t = lrnn::Template::from_string(kTemplate);
  lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  ASSERT_EQ(data.size(), 2u);
  lrnn::Model model(t, {.seed = 1});
  const auto all = model.evaluate(data).outputs;
  const lrnn::Dataset picked = data.subset({1, 0});
  ASSERT_EQ(picked.size(), 2u);
  const auto sub = model.evaluate(picked).outputs;
  ASSERT_EQ(sub.size(), 2u);
  EXPECT_EQ(sub[0].value, all[1].value);
  EXPECT_EQ(sub[1].value, all[0].value);
  EXPECT_THROW(data.subset({data.size()}), lrnn::Error);
}

// Outside an MPI job a share is the whole dataset (docs/distributed.md); a share of a rank
// (made here as one of two) refuses what needs the samples it does not hold.
TEST(TrainApi, SharesOutsideAJobAndWhatAShareRefuses) {
  const std::string path = ::testing::TempDir() + "lrnn_share_examples.txt";
  { std::ofstream(path) << kExamples << "<1> out :- <[2, 2]> f(c).\n"; }
  const lrnn::Dataset whole = lrnn::Dataset::load_share(path);
  EXPECT_EQ(whole.size(), 3u);
  EXPECT_EQ(whole.held(), 3u);
  EXPECT_EQ(whole.parsed_examples(), 3u);
  EXPECT_EQ(whole.split(0.34, 1).first.parsed_examples(), 3u);
  const lrnn::Dataset share =
      lrnn::Dataset::share_from_ast(lrnn::parse_examples("<0> out :- <[-1, 0.3]> f(a).\n"), {}, 1, 3, 1, 1, 2);
  EXPECT_EQ(share.size(), 3u);
  EXPECT_EQ(share.held(), 1u);
  for (auto refused : {+[](const lrnn::Dataset& d) { (void)d.subset({0}); },
                       +[](const lrnn::Dataset& d) { (void)d.split(0.5); },
                       +[](const lrnn::Dataset& d) { (void)d.with_learnable_facts(); }}) {
    try {
      refused(share);
      ADD_FAILURE() << "a share did what needs every sample";
    } catch (const lrnn::Error& e) {
      EXPECT_NE(std::string(e.what()).find("holds samples 1..2 of 3"), std::string::npos) << e.what();
    }
  }
  lrnn::Model model(lrnn::Template::from_string(kTemplate), {.seed = 1});
  EXPECT_THROW(model.evaluate(share), lrnn::Error);  // no MPI job: nothing holds the rest
  EXPECT_THROW(lrnn::Dataset::share_from_ast(lrnn::parse_examples("<0> out :- f(a).\n"), {}, 3, 3, 1, 3, 4),
               lrnn::Error);
}

}  // namespace

namespace {

// Issue 32 (include/lrnn/model.hpp "Threads"): one model trained from two threads at once
// gives the weights of the same calls made in sequence; two models in two threads each give
// exactly their weights trained alone.
std::string many_examples() {
  std::string text;
  for (int i = 0; i < 100; ++i) text += kExamples;
  return text;
}

std::vector<std::vector<double>> weights(const lrnn::Model& model) {
  std::vector<std::vector<double>> out;
  for (const lrnn::Parameter& p : model.parameters()) out.push_back(p.values);
  return out;
}

lrnn::Model threaded_model(uint64_t seed) {
  return lrnn::Model(lrnn::Template::from_string(kTemplate),
                     lrnn::Settings{.epochs = 3, .lr = 0.05, .batch_size = 16, .seed = seed});
}

TEST(TrainApi, TwoThreadsOnOneModelEqualTheSameCallsInSequence) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(many_examples());
  lrnn::Model sequential = threaded_model(3);
  for (int call = 0; call < 6; ++call) sequential.train(data);
  for (int run = 0; run < 20; ++run) {  // issue 32: one result in 20 runs
    lrnn::Model shared = threaded_model(3);
    auto work = [&] {
      for (int call = 0; call < 3; ++call) {
        shared.train(data);
        shared.evaluate(data);  // other calls interleave too
      }
    };
    std::thread a(work), b(work);
    a.join();
    b.join();
    EXPECT_EQ(shared.epochs_trained(), 18);
    EXPECT_EQ(weights(shared), weights(sequential)) << "run " << run;
  }
}

TEST(TrainApi, TwoModelsInTwoThreadsAreIndependentAndExact) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(many_examples());
  lrnn::Model alone3 = threaded_model(3), alone4 = threaded_model(4);
  for (int call = 0; call < 3; ++call) alone3.train(data), alone4.train(data);
  lrnn::Model a = threaded_model(3), b = threaded_model(4);
  std::thread ta([&] { for (int call = 0; call < 3; ++call) a.train(data); });
  std::thread tb([&] { for (int call = 0; call < 3; ++call) b.train(data); });
  ta.join();
  tb.join();
  EXPECT_EQ(weights(a), weights(alone3));
  EXPECT_EQ(weights(b), weights(alone4));
  EXPECT_NE(weights(alone3), weights(alone4));
}

}  // namespace
