// Stratified k-fold cross-validation: `lrnn train --folds K` and lrnn::cross_validate.
// Folds are stratified and sized as stratified_folds promises, each fold is a fresh model
// (its test accuracy equals training a new Model on exactly that split), runs repeat
// exactly, and impossible fold counts or unlabelled data are refused with their reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "cli_test_support.hpp"
#include "lrnn/datasets.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"
#include "shared_datasets.hpp"

namespace {

using lrnn_test::run_lrnn;

const std::string kMutag = std::string(LRNN_DATASETS_DIR) + "/tu/MUTAG";
const std::string kTemplate = std::string(LRNN_SOURCE_DIR) + "/examples/graphs/gcn_mutag.lrnn";

// The JSON line of a run (progress lines go to stderr, which run_lrnn merges in).
std::string json_line(const std::string& out) {
  const size_t start = out.rfind("\n{");
  return start == std::string::npos ? out : out.substr(start + 1);
}

std::string untimed(const std::string& json) {
  return std::regex_replace(json, std::regex("\"[a-z_]+_s\":[0-9.e+-]+"), "T");
}

// A tiny separable dataset: 6 positives (a(1) high) and 4 negatives. Sample i's example and
// query lines:
std::pair<std::string, std::string> tiny_sample(int i) {
  const bool pos = i < 6;
  return {"s" + std::to_string(i) + " :- " + (pos ? "0.9" : "0.1") + " a, " + std::to_string(0.1 * i) + " b.\n",
          "s" + std::to_string(i) + " :- " + (pos ? "1" : "0") + " q.\n"};
}

lrnn::Dataset tiny_dataset() {
  std::string examples, queries;
  for (int i = 0; i < 10; ++i) {
    const auto [ex, q] = tiny_sample(i);
    examples += ex;
    queries += q;
  }
  return lrnn::Dataset::from_text(examples, queries);
}

// tiny_dataset's samples split into (train, test) by fold f of `fold_of_sample`.
std::pair<lrnn::Dataset, lrnn::Dataset> tiny_split(const std::vector<int>& fold_of_sample, int f) {
  std::string train_ex, train_q, test_ex, test_q;
  for (int i = 0; i < 10; ++i) {
    const auto [ex, q] = tiny_sample(i);
    (fold_of_sample[i] == f ? test_ex : train_ex) += ex;
    (fold_of_sample[i] == f ? test_q : train_q) += q;
  }
  return {lrnn::Dataset::from_text(train_ex, train_q), lrnn::Dataset::from_text(test_ex, test_q)};
}

// The tiny runs' settings: rate 0.1, `epochs` epochs.
lrnn::Settings tiny_settings(int epochs) {
  lrnn::Settings settings;
  settings.epochs = epochs;
  settings.lr = 0.1;
  return settings;
}

const char* kTinyTemplate = "{1,1} q :- a.\n{1,1} q :- b.\nq/0 [activation=sigmoid]\n";

}  // namespace

TEST(CrossValidation, CliFoldSizesMeanAndDeterminism) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  const std::string cmd = "train " + kTemplate + " --dataset tu:" + kMutag + " --folds 10 --epochs 2 --json 2>/dev/null";
  lrnn_test::CliRun a = run_lrnn(cmd), b = run_lrnn(cmd);
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_EQ(untimed(a.out), untimed(b.out));
  const nlohmann::json j = nlohmann::json::parse(json_line(a.out));
  ASSERT_EQ(j["k"], 10);
  ASSERT_EQ(j["folds"].size(), 10u);
  size_t tested = 0;
  double sum = 0, sq = 0;
  for (const auto& f : j["folds"]) {
    const size_t test = f["test_samples"], train = f["train_samples"];
    EXPECT_TRUE(test == 18 || test == 19) << test;  // 188 graphs in 10 folds
    EXPECT_EQ(train + test, 188u);
    tested += test;
    sum += f["test"]["accuracy"].get<double>();
  }
  EXPECT_EQ(tested, 188u);
  const double mean = sum / 10;
  for (const auto& f : j["folds"]) sq += std::pow(f["test"]["accuracy"].get<double>() - mean, 2) / 10;
  EXPECT_NEAR(j["mean_accuracy"].get<double>(), mean, 1e-12);
  EXPECT_NEAR(j["std_accuracy"].get<double>(), std::sqrt(sq), 1e-12);
  // Another seed deals other folds.
  lrnn_test::CliRun c = run_lrnn("train " + kTemplate + " --dataset tu:" + kMutag +
                                 " --folds 10 --epochs 2 --seed 7 --json 2>/dev/null");
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(untimed(a.out), untimed(c.out));
}

TEST(CrossValidation, CliTextReport) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  lrnn_test::CliRun r = run_lrnn("train " + kTemplate + " --dataset tu:" + kMutag + " --folds 3 --epochs 1 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("3-fold cross-validation of 188 samples (seed 1, 1 epochs per fold)"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("fold  3: train 125, test 63 ")) ||
              std::regex_search(r.out, std::regex("fold  3: train 126, test 62 ")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("test accuracy: 0\\.[0-9]{4} ± 0\\.[0-9]{4} \\(mean ± std over 3 folds\\)")))
      << r.out;
}

TEST(CrossValidation, CliRefusals) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  const std::string base = "train " + kTemplate + " --dataset tu:" + kMutag + " --epochs 1";
  lrnn_test::CliRun one = run_lrnn(base + " --folds 1");
  EXPECT_NE(one.code, 0);
  EXPECT_NE(one.out.find("--folds: '1' is not an integer in [2, 1000000000]"), std::string::npos) << one.out;
  // MUTAG has 63 graphs of class -1 (target 0): 64 folds would leave one without it.
  lrnn_test::CliRun many = run_lrnn(base + " --folds 64");
  EXPECT_NE(many.code, 0);
  EXPECT_NE(many.out.find("64 folds need at least 64 samples of every class, but the class with target 0 has 63 "
                          "(of 188 samples); use at most 63 folds"),
            std::string::npos)
      << many.out;
  lrnn_test::CliRun save = run_lrnn(base + " --folds 5 --save /tmp/x.json");
  EXPECT_NE(save.code, 0);
  EXPECT_NE(save.out.find("--save cannot be combined with it"), std::string::npos) << save.out;
  lrnn_test::CliRun frac = run_lrnn(base + " --folds 5 --test-fraction 0.2");
  EXPECT_NE(frac.out.find("--test-fraction cannot be combined with it"), std::string::npos) << frac.out;
}

TEST(CrossValidation, FoldsAreStratifiedAndFresh) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  lrnn::Dataset mutag = lrnn::load_tu(kMutag);
  lrnn::Template tmpl = lrnn::Template::from_file(kTemplate);
  lrnn::Settings settings;
  settings.epochs = 1;
  const lrnn::CrossValidationReport cv = lrnn::cross_validate(tmpl, settings, mutag, 10, 3);
  ASSERT_EQ(cv.folds.size(), 10u);
  ASSERT_EQ(cv.fold_of_sample.size(), 188u);
  // MUTAG: 125 graphs of class 1 (mutagenic), 63 of class -1; every fold holds 12-13 and 6-7.
  const lrnn::TuData raw = lrnn::read_tu(kMutag);
  std::map<std::pair<int, int>, int> count;  // (fold, class) -> graphs
  for (size_t s = 0; s < 188; ++s) ++count[{cv.fold_of_sample[s], raw.graph_class[s]}];
  for (int f = 0; f < 10; ++f) {
    const int pos = count[std::make_pair(f, 1)], neg = count[std::make_pair(f, 0)];
    EXPECT_TRUE(pos == 12 || pos == 13) << "fold " << f << ": " << pos;
    EXPECT_TRUE(neg == 6 || neg == 7) << "fold " << f << ": " << neg;
    EXPECT_EQ(static_cast<size_t>(pos + neg), cv.folds[f].test_samples);
  }
  // Same call, same result (folds and every accuracy).
  const lrnn::CrossValidationReport again = lrnn::cross_validate(tmpl, settings, mutag, 10, 3);
  EXPECT_EQ(again.fold_of_sample, cv.fold_of_sample);
  for (int f = 0; f < 10; ++f) EXPECT_EQ(again.folds[f].test.accuracy, cv.folds[f].test.accuracy);
}

TEST(CrossValidation, EachFoldEqualsAFreshModelOnItsSplit) {
  const lrnn::Dataset data = tiny_dataset();
  const lrnn::Template tmpl = lrnn::Template::from_string(kTinyTemplate);
  const lrnn::Settings settings = tiny_settings(20);
  const lrnn::CrossValidationReport cv = lrnn::cross_validate(tmpl, settings, data, 2, 5);
  ASSERT_EQ(cv.folds.size(), 2u);
  for (int f = 0; f < 2; ++f) {
    const auto [train, test] = tiny_split(cv.fold_of_sample, f);
    lrnn::Model model(tmpl, settings);
    model.train(train);
    const lrnn::Evaluation ev = model.evaluate(test);
    EXPECT_EQ(ev.metrics.accuracy, cv.folds[f].test.accuracy) << "fold " << f;
    EXPECT_EQ(ev.metrics.loss, cv.folds[f].test.loss) << "fold " << f;
    EXPECT_EQ(ev.metrics.count, cv.folds[f].test_samples);
  }
  // 6 positives, 4 negatives, 2 folds: 3 + 2 in each.
  EXPECT_EQ(cv.folds[0].test_samples, 5u);
  EXPECT_EQ(cv.folds[1].test_samples, 5u);
}

TEST(CrossValidation, RefusesUnlabelledSamplesAndTooManyFolds) {
  const lrnn::Template tmpl = lrnn::Template::from_string(kTinyTemplate);
  const lrnn::Dataset unlabelled = lrnn::Dataset::from_text("s0 :- 1 a, 0 b.\ns1 :- 0 a, 1 b.\n", "s0 :- 1 q.\ns1 :- q.\n");
  try {
    lrnn::cross_validate(tmpl, {}, unlabelled, 2);
    FAIL() << "expected an error";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("sample 2 ('s1') has a query without a target"), std::string::npos) << e.what();
  }
  EXPECT_THROW(lrnn::cross_validate(tmpl, {}, tiny_dataset(), 5), lrnn::Error);  // 4 negatives < 5 folds
  const lrnn::Dataset singleton = lrnn::Dataset::from_text("s0 :- 1 a, 0 b.\ns1 :- 0 a, 1 b.\ns2 :- 0 a, 0 b.\n",
                                                          "s0 :- 1 q.\ns1 :- 1 q.\ns2 :- 0.5 q.\n");
  try {
    lrnn::cross_validate(tmpl, {}, singleton, 2);
    FAIL() << "expected an error";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("stratified cross-validation needs at least 2 samples of every class, but the "
                                         "class with target 0.5 has 1 (of 3 samples)"),
              std::string::npos)
        << e.what();
  }
  try {
    lrnn::cross_validate(tmpl, {}, tiny_dataset(), 1);
    FAIL() << "expected an error";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cross-validation needs at least 2 folds, got 1"), std::string::npos) << e.what();
  }
}

// --test-curve: the test fold's metrics after epoch e equal a fresh model trained e epochs on
// the fold's split, the run's training is the one without a curve, and the summary is the
// mean/std per epoch with its first highest epoch.
TEST(CrossValidation, TestCurveIsEachEpochsModelOnItsTestFold) {
  const lrnn::Dataset data = tiny_dataset();
  const lrnn::Template tmpl = lrnn::Template::from_string(kTinyTemplate);
  lrnn::Settings settings = tiny_settings(6);
  const lrnn::CrossValidationReport plain = lrnn::cross_validate(tmpl, settings, data, 2, 5);
  const lrnn::CrossValidationReport cv = lrnn::cross_validate(tmpl, settings, data, 2, 5, {}, true);
  ASSERT_EQ(cv.folds.size(), 2u);
  EXPECT_TRUE(plain.folds[0].test_by_epoch.empty());
  EXPECT_EQ(plain.best_epoch, 0);
  for (int f = 0; f < 2; ++f) {
    EXPECT_EQ(cv.folds[f].test.loss, plain.folds[f].test.loss) << "fold " << f;
    EXPECT_EQ(cv.folds[f].train.loss, plain.folds[f].train.loss) << "fold " << f;
    ASSERT_EQ(cv.folds[f].test_by_epoch.size(), 6u);
    const auto [train, test] = tiny_split(cv.fold_of_sample, f);
    for (int e = 1; e <= 6; ++e) {
      lrnn::Settings s = settings;
      s.epochs = e;
      lrnn::Model model(tmpl, s);
      model.train(train);
      const lrnn::Evaluation ev = model.evaluate(test);
      EXPECT_EQ(ev.metrics.loss, cv.folds[f].test_by_epoch[e - 1].loss) << "fold " << f << " epoch " << e;
      EXPECT_EQ(ev.metrics.accuracy, cv.folds[f].test_by_epoch[e - 1].accuracy) << "fold " << f << " epoch " << e;
    }
  }
  ASSERT_EQ(cv.mean_accuracy_by_epoch.size(), 6u);
  int best = 0;
  for (int e = 0; e < 6; ++e) {
    const double a = cv.folds[0].test_by_epoch[e].accuracy, b = cv.folds[1].test_by_epoch[e].accuracy;
    EXPECT_DOUBLE_EQ(cv.mean_accuracy_by_epoch[e], (a + b) / 2);
    EXPECT_DOUBLE_EQ(cv.std_accuracy_by_epoch[e], std::abs(a - b) / 2);
    if (cv.mean_accuracy_by_epoch[e] > cv.mean_accuracy_by_epoch[best]) best = e;
  }
  EXPECT_EQ(cv.best_epoch, best + 1);
  EXPECT_EQ(cv.best_epoch_mean_accuracy, cv.mean_accuracy_by_epoch[best]);
  EXPECT_EQ(cv.best_epoch_std_accuracy, cv.std_accuracy_by_epoch[best]);
  EXPECT_EQ(cv.mean_accuracy_by_epoch.back(), cv.mean_accuracy);

  settings.patience = 2;
  try {
    lrnn::cross_validate(tmpl, settings, data, 2, 5, {}, true);
    FAIL() << "expected an error";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be combined with early stopping (patience 2)"), std::string::npos)
        << e.what();
  }
}

TEST(CrossValidation, CliTestCurve) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  const std::string base = "train " + kTemplate + " --dataset tu:" + kMutag + " --epochs 3";
  lrnn_test::CliRun run = run_lrnn(base + " --folds 3 --test-curve --json 2>/dev/null");
  ASSERT_EQ(run.code, 0) << run.out;
  const nlohmann::json j = nlohmann::json::parse(json_line(run.out));
  ASSERT_EQ(j["mean_accuracy_by_epoch"].size(), 3u);
  ASSERT_EQ(j["std_accuracy_by_epoch"].size(), 3u);
  double mean_last = 0;
  for (const auto& fold : j["folds"]) {
    ASSERT_EQ(fold["test_accuracy_by_epoch"].size(), 3u);
    EXPECT_EQ(fold["test_accuracy_by_epoch"][2].get<double>(), fold["test"]["accuracy"].get<double>());
    mean_last += fold["test_accuracy_by_epoch"][2].get<double>() / 3;
  }
  EXPECT_NEAR(j["mean_accuracy_by_epoch"][2].get<double>(), mean_last, 1e-15);
  const int best = j["best_epoch"];
  ASSERT_GE(best, 1);
  EXPECT_EQ(j["best_epoch_mean_accuracy"].get<double>(), j["mean_accuracy_by_epoch"][best - 1].get<double>());
  for (const auto& m : j["mean_accuracy_by_epoch"]) EXPECT_LE(m.get<double>(), j["best_epoch_mean_accuracy"].get<double>());
  lrnn_test::CliRun text = run_lrnn(base + " --folds 3 --test-curve 2>/dev/null");
  EXPECT_NE(text.out.find("best epoch " + std::to_string(best) + ": test accuracy "), std::string::npos) << text.out;
  lrnn_test::CliRun single = run_lrnn(base + " --test-curve");
  EXPECT_NE(single.code, 0);
  EXPECT_NE(single.out.find("--test-curve belongs to cross-validation (--folds K)"), std::string::npos) << single.out;
  lrnn_test::CliRun without = run_lrnn(base + " --folds 3 --json 2>/dev/null");
  EXPECT_EQ(nlohmann::json::parse(json_line(without.out)).count("best_epoch"), 0u);
}
