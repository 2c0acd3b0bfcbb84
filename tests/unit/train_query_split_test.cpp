// Query splits inside one example (docs/big_graphs.md "Query splits"): only training queries
// give gradient, so a split trains exactly as the same example asked only its training
// queries; the validation and test metrics of an epoch are those of the parameters its
// forward pass ran with; early stopping on validation restores those parameters; and the
// CLI's fractions and per-split files give the parts they say.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "api/dataset_impl.hpp"
#include "cli_test_support.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/lrnn.hpp"
#include "model_compare.hpp"
#include "syntax/statements.hpp"
#include "train/dataset.hpp"

namespace {

using lrnn::QuerySplit;

constexpr int kNodes = 40;

const char* kTemplate =
    "h(X) :- {4,2} x(Y), *edge(X, Y). [activation=tanh, aggregation=sum]\n"
    "h(X) :- {4,2} x(X). [activation=tanh]\n"
    "out(X) :- {1,4} h(X). [activation=sigmoid]\n";

double feature(int n, int k) { return std::sin(1.3 * n + 0.7 * k + 0.2); }

// One graph: a ring with chords, two features per node; a node's target is 1 where its
// first feature plus its neighbours' is positive (`flip`: the opposite).
std::string graph_example() {
  std::string facts;
  for (int n = 0; n < kNodes; ++n) {
    facts += (n ? ", " : "") + std::string("<[") + std::to_string(feature(n, 0)) + ", " +
             std::to_string(feature(n, 1)) + "]> x(n" + std::to_string(n) + ")";
    for (int d : {1, 7}) {
      const int m = (n + d) % kNodes;
      facts += ", edge(n" + std::to_string(n) + ", n" + std::to_string(m) + "), edge(n" + std::to_string(m) + ", n" +
               std::to_string(n) + ")";
    }
  }
  return "g :- " + facts + ".\n";
}

int target(int n) {
  double s = feature(n, 0);
  for (int d : {1, 7, kNodes - 1, kNodes - 7}) s += feature((n + d) % kNodes, 0);
  return s > 0 ? 1 : 0;
}

// One query line per node (in `nodes`), `flip`ped targets where asked.
std::string query_lines(const std::vector<int>& nodes, bool flip = false) {
  std::string q;
  for (int n : nodes) q += std::to_string(flip ? 1 - target(n) : target(n)) + " out(n" + std::to_string(n) + ").\n";
  return q;
}

std::vector<int> all_nodes() {
  std::vector<int> v(kNodes);
  for (int n = 0; n < kNodes; ++n) v[n] = n;
  return v;
}

lrnn::Settings settings(int epochs) {
  lrnn::Settings s;
  s.epochs = epochs;
  s.lr = 0.05;
  s.seed = 11;
  return s;
}

}  // namespace

TEST(QuerySplit, RandomSplitCountsAreSeededAndChecked) {
  const auto split = lrnn::train::random_query_split(101, 0.6, 0.2, 0.2, 5);
  size_t count[4] = {0, 0, 0, 0};
  for (QuerySplit p : split) ++count[static_cast<int>(p)];
  EXPECT_EQ(count[1], 20u);  // round(0.2 * 101)
  EXPECT_EQ(count[2], 20u);
  EXPECT_EQ(count[0], 61u);  // fractions summing to 1 leave no query out
  EXPECT_EQ(count[3], 0u);
  EXPECT_EQ(split, lrnn::train::random_query_split(101, 0.6, 0.2, 0.2, 5));
  EXPECT_NE(split, lrnn::train::random_query_split(101, 0.6, 0.2, 0.2, 6));
  // Fractions below 1 leave the rest in no part.
  const auto partial = lrnn::train::random_query_split(100, 0.1, 0.1, 0.1, 5);
  EXPECT_EQ(std::count(partial.begin(), partial.end(), QuerySplit::None), 70);
  EXPECT_THROW(lrnn::train::random_query_split(10, 0.6, 0.3, 0.2, 1), lrnn::Error);  // sums to 1.1
  EXPECT_THROW(lrnn::train::random_query_split(10, -0.1, 0.3, 0.2, 1), lrnn::Error);
  EXPECT_THROW(lrnn::train::random_query_split(10, NAN, 0.3, 0.2, 1), lrnn::Error);
}

TEST(QuerySplit, SplitPartsFollowTheQueriesAndAreChecked) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(graph_example(), query_lines(all_nodes()));
  ASSERT_EQ(data.size(), 1u);
  ASSERT_EQ(data.num_queries(), size_t(kNodes));
  EXPECT_FALSE(data.has_query_split());
  std::vector<QuerySplit> parts(kNodes, QuerySplit::Train);
  parts[3] = QuerySplit::Validation;
  parts[5] = QuerySplit::Test;
  parts[7] = QuerySplit::None;
  const lrnn::Dataset split = data.with_query_splits(parts);
  EXPECT_TRUE(split.has_query_split());
  EXPECT_EQ(split.query_splits(), parts);
  EXPECT_FALSE(data.has_query_split());  // the original is unchanged
  EXPECT_THROW(data.with_query_splits(std::vector<QuerySplit>(kNodes - 1)), lrnn::Error);
  // By query line: the lines of a validation file are validation queries.
  std::vector<lrnn::QueryLineAst> lines = lrnn::parse_queries(query_lines({0, 1, 2}), "<q>");
  const lrnn::Dataset by_line = lrnn::Dataset::from_ast(lrnn::parse_examples(graph_example(), "<e>"), lines,
                                                        {QuerySplit::Train, QuerySplit::Validation, QuerySplit::Test});
  EXPECT_EQ(by_line.query_splits(),
            (std::vector<QuerySplit>{QuerySplit::Train, QuerySplit::Validation, QuerySplit::Test}));
}

// A split of a dataset no other handle shares takes its facts (a big graph's are gigabytes);
// of a shared one, copies them (the other handle keeps its own): the same split either way.
TEST(QuerySplit, AnUnsharedDatasetIsSplitWithoutCopyingItsFacts) {
  std::vector<QuerySplit> parts(kNodes, QuerySplit::Train);
  parts[3] = QuerySplit::Validation;
  parts[5] = QuerySplit::Test;
  lrnn::Dataset data = lrnn::Dataset::from_text(graph_example(), query_lines(all_nodes()));
  lrnn::Dataset other = data;
  const uint64_t before = lrnn::memory_held();
  const lrnn::Dataset copied = std::move(other).with_query_splits(parts);  // `data` shares it
  const uint64_t copy_bytes = lrnn::memory_held() - before;
  EXPECT_GT(copy_bytes, 0u);
  EXPECT_EQ(other.size(), 0u);
  ASSERT_EQ(data.size(), 1u);
  const lrnn::Dataset taken = std::move(data).with_query_splits(parts);  // no one else holds it
  EXPECT_EQ(lrnn::memory_held() - before, copy_bytes);
  EXPECT_EQ(data.size(), 0u);
  EXPECT_EQ(taken.query_splits(), parts);
  EXPECT_EQ(copied.query_splits(), parts);
  lrnn::Model model(lrnn::Template::from_string(kTemplate), settings(1));
  const lrnn::Evaluation a = model.evaluate(copied), b = model.evaluate(taken);
  ASSERT_EQ(a.outputs.size(), size_t(kNodes));
  ASSERT_EQ(b.outputs.size(), size_t(kNodes));
  for (size_t k = 0; k < a.outputs.size(); ++k) EXPECT_EQ(a.outputs[k].value, b.outputs[k].value) << k;
  EXPECT_EQ(a.test.loss, b.test.loss);
}

TEST(QuerySplit, TrainsExactlyAsTheTrainingQueriesAlone) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(graph_example(), query_lines(all_nodes()));
  const lrnn::Dataset split = data.with_query_split(0.5, 0.25, 0.25, 3);
  std::vector<int> train_nodes;
  const auto parts = split.query_splits();
  for (int n = 0; n < kNodes; ++n)
    if (parts[n] == QuerySplit::Train) train_nodes.push_back(n);
  ASSERT_EQ(train_nodes.size(), 20u);
  const lrnn::Dataset only_train = lrnn::Dataset::from_text(graph_example(), query_lines(train_nodes));
  const lrnn::Template t = lrnn::Template::from_string(kTemplate);
  lrnn::Model with_split(t, settings(6)), alone(t, settings(6));
  const lrnn::TrainReport a = with_split.train(split);
  const lrnn::TrainReport b = alone.train(only_train);
  ASSERT_EQ(a.history.size(), 6u);
  for (size_t e = 0; e < a.history.size(); ++e) {
    EXPECT_NEAR(a.history[e].train.loss, b.history[e].train.loss, 1e-12);
    EXPECT_EQ(a.history[e].train.count, 20u);
    EXPECT_TRUE(a.history[e].has_validation);
    EXPECT_EQ(a.history[e].validation.count, 10u);
    EXPECT_TRUE(a.history[e].has_test);
    EXPECT_EQ(a.history[e].test.count, 10u);
  }
  EXPECT_LT(lrnn_test::max_parameter_difference(with_split, alone), 1e-12);
  // A training loss that moved: the test above compares trained models, not initial ones.
  EXPECT_LT(a.history.back().train.loss, a.history.front().train.loss - 1e-3);
}

TEST(QuerySplit, EpochMetricsAreThoseOfItsForwardPass) {
  const lrnn::Dataset split =
      lrnn::Dataset::from_text(graph_example(), query_lines(all_nodes())).with_query_split(0.5, 0.25, 0.25, 3);
  lrnn::Model model(lrnn::Template::from_string(kTemplate), settings(2));
  const lrnn::Evaluation before = model.evaluate(split);
  ASSERT_TRUE(before.has_splits);
  EXPECT_EQ(before.train.count + before.validation.count + before.test.count, size_t(kNodes));
  const lrnn::TrainReport r = model.train(split);
  EXPECT_NEAR(r.history[0].train.loss, before.train.loss, 1e-12);
  EXPECT_NEAR(r.history[0].validation.loss, before.validation.loss, 1e-12);
  EXPECT_NEAR(r.history[0].validation.accuracy, before.validation.accuracy, 1e-12);
  EXPECT_NEAR(r.history[0].test.loss, before.test.loss, 1e-12);
  EXPECT_NEAR(r.history[0].test.auc, before.test.auc, 1e-12);
  // The second epoch ran with the parameters the first step left.
  EXPECT_GT(std::abs(r.history[1].validation.loss - before.validation.loss), 1e-9);
  // One output per query here, in query order: each carries its query's part.
  const lrnn::Evaluation after = model.evaluate(split);
  const std::vector<QuerySplit> parts = split.query_splits();
  ASSERT_EQ(after.outputs.size(), parts.size());
  for (size_t k = 0; k < parts.size(); ++k) EXPECT_EQ(after.outputs[k].split, parts[k]);
}

TEST(QuerySplit, EarlyStoppingRestoresTheBestValidationEpoch) {
  // Validation queries ask the opposite of the training queries on the same nodes' kind of
  // input: training moves validation the wrong way from the first step, so the first epoch
  // is the best and early stopping must end with its parameters (the initial ones).
  std::vector<int> train_nodes, val_nodes;
  for (int n = 0; n < kNodes; ++n) (n % 2 ? val_nodes : train_nodes).push_back(n);
  std::vector<lrnn::QueryLineAst> lines = lrnn::parse_queries(query_lines(train_nodes) + query_lines(val_nodes, true), "<q>");
  std::vector<QuerySplit> line_split(train_nodes.size(), QuerySplit::Train);
  line_split.resize(lines.size(), QuerySplit::Validation);
  const lrnn::Dataset data = lrnn::Dataset::from_ast(lrnn::parse_examples(graph_example(), "<e>"), lines, line_split);
  lrnn::Settings s = settings(50);
  s.patience = 3;
  lrnn::Model model(lrnn::Template::from_string(kTemplate), s);
  const std::vector<lrnn::Parameter> initial = model.parameters();
  const lrnn::TrainReport r = model.train(data);
  ASSERT_TRUE(r.stopped_early);
  EXPECT_EQ(r.best_epoch, 1);
  EXPECT_EQ(r.history.size(), 4u);  // epoch 1 then three without improvement
  for (size_t e = 1; e < r.history.size(); ++e) EXPECT_GT(r.history[e].validation.loss, r.history[0].validation.loss);
  const lrnn::Evaluation final_eval = model.evaluate(data);
  EXPECT_NEAR(final_eval.validation.loss, r.best.validation.loss, 1e-12);
  const std::vector<lrnn::Parameter> restored = model.parameters();
  for (size_t p = 0; p < initial.size(); ++p) EXPECT_EQ(restored[p].values, initial[p].values);
}

TEST(QuerySplit, RefusedWhereItWouldMislead) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(graph_example(), query_lines(all_nodes()));
  const lrnn::Dataset split = data.with_query_split(0.5, 0.25, 0.25, 3);
  lrnn::Model model(lrnn::Template::from_string(kTemplate), settings(1));
  // A separate test set besides the split's own test queries: two "test" metrics.
  EXPECT_THROW(model.train(split, &data), lrnn::Error);
  // Cross-validation would train on the split's held-out queries.
  EXPECT_THROW(lrnn::cross_validate(lrnn::Template::from_string(kTemplate), settings(1), split, 2), lrnn::Error);
}

TEST(QuerySplitCli, FractionsAndFilesGiveTheirParts) {
  const auto dir = std::filesystem::temp_directory_path() / "lrnn_query_split_cli";
  std::filesystem::create_directories(dir);
  const std::string t = (dir / "t.lrnn").string(), e = (dir / "e.txt").string(), q = (dir / "q.txt").string(),
                    v = (dir / "v.txt").string(), te = (dir / "te.txt").string();
  std::ofstream(t) << kTemplate;
  std::ofstream(e) << graph_example();
  std::ofstream(q) << query_lines({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  std::ofstream(v) << query_lines({20, 21, 22, 23, 24});
  std::ofstream(te) << query_lines({30, 31, 32});
  const std::string base = "train " + t + " -e " + e + " --epochs 3 --json";
  lrnn_test::CliRun files = lrnn_test::run_lrnn(base + " -q " + q + " --val-queries " + v + " --test-queries " + te + " 2>/dev/null");
  ASSERT_EQ(files.code, 0) << files.out;
  EXPECT_NE(files.out.find("\"splits\":{\"test\":{\"accuracy\""), std::string::npos) << files.out;
  EXPECT_NE(files.out.find("\"count\":12"), std::string::npos);
  EXPECT_NE(files.out.find("\"count\":5"), std::string::npos);
  EXPECT_NE(files.out.find("\"count\":3"), std::string::npos);
  EXPECT_NE(files.out.find("\"split\":\"val\""), std::string::npos);
  // Fractions of the queries of one file.
  std::ofstream(q) << query_lines(all_nodes());
  lrnn_test::CliRun fractions = lrnn_test::run_lrnn(base + " -q " + q + " --query-split 0.5,0.25,0.25");
  ASSERT_EQ(fractions.code, 0) << fractions.out;
  EXPECT_NE(fractions.out.find("\"val\":{\"accuracy\""), std::string::npos);
  lrnn_test::CliRun text = lrnn_test::run_lrnn("train " + t + " -e " + e + " -q " + q + " --epochs 3 --query-split 0.5,0.25,0.25 --patience 5");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("val:   loss"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(10 queries)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("best validation loss at epoch"), std::string::npos) << text.out;
  // Bad input: exit 2 with the option named.
  for (const std::string& bad : std::vector<std::string>{"--query-split 0.5,0.6,0.2", "--query-split 0.5,0.5", "--query-split a,b,c",
                                 "--query-split 0.6,0.2,0.2 --test-fraction 0.2",
                                 "--query-split 0.6,0.2,0.2 --val-queries " + v}) {
    lrnn_test::CliRun r = lrnn_test::run_lrnn(base + " -q " + q + " " + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("query"), std::string::npos) << bad << ": " << r.out;
  }
}

// Dataset::without_facts (what `lrnn train` does after grounding, docs/big_graphs.md): a
// model that prepared the dataset trains and evaluates on its grounding exactly as on the
// dataset itself; anything that would ground the facts again is refused.
TEST(QuerySplit, AModelThatPreparedADatasetTrainsOnItWithoutItsFacts) {
  const lrnn::Dataset split =
      lrnn::Dataset::from_text(graph_example(), query_lines(all_nodes())).with_query_split(0.5, 0.25, 0.25, 3);
  const lrnn::Template t = lrnn::Template::from_string(kTemplate);
  lrnn::Model kept(t, settings(4)), released(t, settings(4));
  released.prepare(split);
  const lrnn::Dataset without = split.without_facts();
  EXPECT_EQ(without.size(), split.size());
  EXPECT_EQ(without.query_splits(), split.query_splits());
  EXPECT_EQ(without.num_queries(), split.num_queries());  // its queries' literals are dropped, not their count
  EXPECT_TRUE(without.has_query_split());
  const lrnn::TrainReport a = kept.train(split);
  const lrnn::TrainReport b = released.train(without);
  ASSERT_EQ(b.history.size(), 4u);
  for (size_t e = 0; e < a.history.size(); ++e) {
    EXPECT_EQ(a.history[e].train.loss, b.history[e].train.loss);
    EXPECT_EQ(a.history[e].test.loss, b.history[e].test.loss);
  }
  const lrnn::Evaluation ea = kept.evaluate(split), eb = released.evaluate(without);
  ASSERT_EQ(eb.outputs.size(), size_t(kNodes));
  for (size_t k = 0; k < ea.outputs.size(); ++k) EXPECT_EQ(ea.outputs[k].value, eb.outputs[k].value);
  EXPECT_EQ(lrnn_test::max_parameter_difference(kept, released), 0.0);
  // A model that never grounded it, and what would read the facts, are told why not.
  lrnn::Model fresh(t, settings(1));
  for (const auto& use : std::vector<std::function<void()>>{
           [&] { fresh.evaluate(without); }, [&] { (void)without.subset({0}); },
           [&] { (void)without.with_query_split(0.5, 0.5, 0.0); }, [&] { (void)released.network(without, 0); }}) {
    try {
      use();
      ADD_FAILURE() << "a dataset without its facts was grounded again";
    } catch (const lrnn::Error& e) {
      EXPECT_NE(std::string(e.what()).find("Dataset::without_facts"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW((void)split.with_learnable_facts().without_facts(), lrnn::Error);
}

// A dataset without its facts keeps, of a big examples file's text, only what its heads'
// spans show in error messages: the example lines near their columns (the whole text, here
// 2 MB on two lines, was held through training by the example's span).
// A big examples file's text is let go once its facts are stored (the facts are grounded
// without it): its spans' diagnostics read their line back from the file and show what
// the text in memory showed, before and after the dataset releases its facts; with the
// file gone, the position alone.
TEST(QuerySplit, ABigExamplesFileIsReadBackForItsDiagnostics) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "lrnn_big_examples.txt";
  {
    std::ofstream out(path);
    out << "% a comment line\n";
    out << "g :- ";
    for (int i = 0; i < 100000; ++i) out << (i ? ", " : "") << "edge(n" << i << ", n" << i + 1 << ")";
    out << ".\n";
  }
  const std::filesystem::path queries = std::filesystem::temp_directory_path() / "lrnn_big_examples_queries.txt";
  std::ofstream(queries) << "1.0 edge(n0, n1).\n";
  const lrnn::Dataset data = lrnn::Dataset::load(path.string(), queries.string());
  const lrnn::Span loaded = data.impl().samples.without_facts()[0].example.span;
  ASSERT_TRUE(loaded.file);
  EXPECT_TRUE(loaded.file->text_on_disk);
  EXPECT_TRUE(loaded.file->text.empty());
  lrnn::Span in_memory = loaded;
  auto text = std::make_shared<lrnn::SourceFile>(lrnn::SourceFile{path.string(), {}});
  ASSERT_TRUE(lrnn::syntax::read_whole_file(path.string(), text->text));
  ASSERT_GT(text->text.size(), size_t(1) << 20);
  in_memory.file = text;
  const std::string expected = lrnn::format_diagnostic(in_memory, "m");
  EXPECT_NE(expected.find("g :- edge(n0, n1)"), std::string::npos) << expected;
  EXPECT_EQ(lrnn::format_diagnostic(loaded, "m"), expected);
  const lrnn::Span released = data.without_facts().impl().samples.without_facts()[0].example.span;
  ASSERT_TRUE(released.file);
  EXPECT_EQ(released.line, loaded.line);
  EXPECT_EQ(lrnn::format_diagnostic(released, "m"), expected);
  std::filesystem::remove(path);
  EXPECT_EQ(lrnn::format_diagnostic(loaded, "m").find("g :- "), std::string::npos);
  EXPECT_EQ(lrnn::format_diagnostic(loaded, "m").rfind(path.string() + ":2:1: error: m", 0), 0u);
  std::filesystem::remove(queries);
}
