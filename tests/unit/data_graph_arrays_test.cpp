// One graph from arrays (src/data/graph_arrays.cpp): the sample is the one its text form
// parses to (facts, queries, targets), a model grounds and trains it to the same outputs and
// weights bit for bit, the masks become per-node splits, and every malformed array is an
// error naming the array, the entry and its value. (The .npz reader is tested on files
// numpy writes: tests/python/test_graph_arrays.py.)
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "api/dataset_impl.hpp"
#include "lrnn/datasets.hpp"
#include "lrnn/model.hpp"
#include "lrnn/syntax.hpp"

namespace {

using namespace lrnn;

// A small graph: 6 nodes with 3 features, 9 directed edges (a self-loop, a repeated edge),
// class ids of 3 classes.
struct SmallGraph {
  size_t nodes = 6, width = 3, classes = 3;
  std::vector<double> x = {0.5, -1.25, 2.0, 0.1, 0.2, 0.3, -0.7, 1e-3, 4.5, 3.0, 0.0, -2.0, 1.5, 2.5, -0.25, 0.125, 7.0, -3.5};
  std::vector<int64_t> edge_index = {0, 1, 1, 2, 3, 4, 5, 5, 0,   // sources
                                     1, 0, 2, 3, 3, 5, 4, 5, 1};  // targets
  std::vector<int64_t> y = {0, 2, 1, 1, 0, 2};
  size_t edges() const { return edge_index.size() / 2; }
  GraphArrays arrays() const {
    GraphArrays a;
    a.x = {ArrayView::Type::Float64, x.data(), {nodes, width}};
    a.edge_index = {ArrayView::Type::Int64, edge_index.data(), {2, edges()}};
    a.y = ArrayView{ArrayView::Type::Int64, y.data(), {nodes}};
    return a;
  }
};

// A bigger graph of the same kind: edges at random, more of them than graph_from_arrays adds
// in one slice.
SmallGraph random_graph(size_t nodes, size_t edges, uint64_t seed) {
  std::mt19937_64 random(seed);
  SmallGraph g;
  g.nodes = nodes;
  g.x.resize(nodes * g.width);
  for (double& v : g.x) v = std::uniform_int_distribution<int>(-8, 8)(random) / 4.0;
  g.edge_index.resize(2 * edges);
  for (int64_t& end : g.edge_index) end = std::uniform_int_distribution<int64_t>(0, nodes - 1)(random);
  g.y.resize(nodes);
  for (int64_t& c : g.y) c = std::uniform_int_distribution<int64_t>(0, 2)(random);
  return g;
}

std::string number(double v) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, end);
}

// The same graph written as an examples file and a queries file, as a user would.
std::pair<std::string, std::string> as_text(const SmallGraph& g) {
  std::string examples = "graph :- ";
  for (size_t i = 0; i < g.nodes; ++i) {
    examples += "node(" + std::to_string(i) + "), [";
    for (size_t k = 0; k < g.width; ++k) examples += (k ? ", " : "") + number(g.x[i * g.width + k]);
    examples += "] x(" + std::to_string(i) + "), ";
  }
  for (size_t e = 0; e < g.edges(); ++e)
    examples += (e ? ", " : "") + std::string("edge(") + std::to_string(g.edge_index[e]) + ", " +
                std::to_string(g.edge_index[g.edges() + e]) + ")";
  examples += ".\n";
  std::string queries;
  for (size_t i = 0; i < g.nodes; ++i) {
    std::string one_hot = "[";
    for (int64_t c = 0; c < int64_t(g.classes); ++c) one_hot += std::string(c ? ", " : "") + (c == g.y[i] ? "1" : "0");
    queries += "graph :- " + one_hot + "] predict(" + std::to_string(i) + ").\n";
  }
  return {examples, queries};
}

const char* kTemplate =
    "h(X) :- {4,3} x(X).\n"
    "h(X) :- {4,3} x(Y), *edge(X, Y). [aggregation=sum]\n"
    "h/1 [activation=relu]\n"
    "{3,4} predict(X) :- h(X).\n";

std::string error_of(const GraphArrays& a, const GraphNames& names = {}) {
  try {
    graph_from_arrays(a, names, "test.npz");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(DataGraphArrays, TheSampleIsTheOneItsTextParsesTo) {
  const SmallGraph g;
  const ArrayGraph graph = graph_from_arrays(g.arrays());
  EXPECT_EQ(graph.nodes, 6u);
  EXPECT_EQ(graph.edges, 9u);
  EXPECT_EQ(graph.feature_width, 3u);
  EXPECT_EQ(graph.classes, 3);
  EXPECT_EQ(graph.target_width, 3u);
  EXPECT_TRUE(graph.split_of_node.empty());
  ASSERT_EQ(graph.dataset.size(), 1u);

  const auto [examples, queries] = as_text(g);
  const Dataset text = Dataset::from_text(examples, queries);
  ASSERT_EQ(text.size(), 1u);
  const train::Sample from_arrays = graph.dataset.impl().samples.at(0);
  const train::Sample from_text = text.impl().samples.at(0);
  EXPECT_EQ(print_example(from_arrays.example), print_example(from_text.example));
  EXPECT_EQ(from_arrays.example, from_text.example);  // every fact, value and term kind
  ASSERT_EQ(from_arrays.queries.size(), 6u);
  EXPECT_EQ(from_arrays.queries, from_text.queries);
  EXPECT_EQ(from_arrays.queries[1].weight->data, (std::vector<double>{0, 0, 1}));
}

TEST(DataGraphArrays, ABiggerGraphIsTheOneItsTextParsesTo) {
  const SmallGraph g = random_graph(500, 9000, 7);  // edges added in three slices
  const ArrayGraph graph = graph_from_arrays(g.arrays());
  ASSERT_EQ(graph.edges, 9000u);
  const auto [examples, queries] = as_text(g);
  const Dataset text = Dataset::from_text(examples, queries);
  const train::Sample from_arrays = graph.dataset.impl().samples.at(0);
  const train::Sample from_text = text.impl().samples.at(0);
  ASSERT_EQ(from_arrays.example.facts.size(), 2 * 500u + 9000u);
  EXPECT_EQ(from_arrays.example, from_text.example);
  EXPECT_EQ(from_arrays.queries, from_text.queries);
}

TEST(DataGraphArrays, GroundsAndTrainsToTheTextFormsOutputsAndWeightsExactly) {
  const SmallGraph g;
  const Dataset arrays = graph_from_arrays(g.arrays()).dataset;
  const auto [examples, queries] = as_text(g);
  const Dataset text = Dataset::from_text(examples, queries);
  const Template t = Template::from_string(kTemplate);
  Model on_arrays(t, Settings{.epochs = 5, .loss = "crossentropy"});
  Model on_text(t, Settings{.epochs = 5, .loss = "crossentropy"});
  const std::vector<std::vector<double>> before = on_arrays.forward(arrays);
  ASSERT_EQ(before.size(), 6u);
  EXPECT_EQ(before, on_text.forward(text));
  on_arrays.train(arrays);
  on_text.train(text);
  const std::vector<Parameter> a = on_arrays.parameters(), b = on_text.parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t p = 0; p < a.size(); ++p) EXPECT_EQ(a[p].values, b[p].values) << a[p].name;
  EXPECT_NE(on_arrays.forward(arrays), before);  // training moved the outputs
  EXPECT_EQ(on_arrays.forward(arrays), on_text.forward(text));
}

TEST(DataGraphArrays, TargetsFollowTheTuRuleAndFloatTargetsAreKept) {
  SmallGraph g;
  g.y = {0, 1, 1, 0, 0, 1};  // two classes: the class index, a scalar
  ArrayGraph two = graph_from_arrays(g.arrays());
  EXPECT_EQ(two.classes, 2);
  EXPECT_EQ(two.target_width, 1u);
  const train::Sample s = two.dataset.impl().samples.at(0);
  EXPECT_EQ(s.queries[1].weight->kind, ValueSpec::Kind::Scalar);
  EXPECT_EQ(s.queries[1].weight->data, (std::vector<double>{1}));

  GraphNames names;
  names.classes = 5;  // fewer ids used than classes: the one-hot width is the given count
  names.query = "label";
  EXPECT_EQ(graph_from_arrays(g.arrays(), names).dataset.impl().samples.at(0).queries[0].weight->data,
            (std::vector<double>{1, 0, 0, 0, 0}));
  EXPECT_EQ(graph_from_arrays(g.arrays(), names).dataset.impl().samples.at(0).queries[0].predicate, "label");

  std::vector<float> targets = {0.5f, -1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // float32, 6 x 2
  GraphArrays a = g.arrays();
  a.y = ArrayView{ArrayView::Type::Float32, targets.data(), {6, 2}};
  ArrayGraph floats = graph_from_arrays(a);
  EXPECT_EQ(floats.classes, 0);
  EXPECT_EQ(floats.target_width, 2u);
  EXPECT_EQ(floats.dataset.impl().samples.at(0).queries[0].weight->data, (std::vector<double>{0.5, -1}));

  a.y.reset();
  const train::Sample unlabelled = graph_from_arrays(a).dataset.impl().samples.at(0);
  ASSERT_EQ(unlabelled.queries.size(), 6u);
  EXPECT_FALSE(unlabelled.queries[0].weight.has_value());
}

TEST(DataGraphArrays, MasksBecomeEachNodesSplit) {
  const SmallGraph g;
  const std::vector<uint8_t> train = {1, 1, 1, 0, 0, 0}, val = {0, 0, 0, 1, 0, 0};
  const std::vector<int32_t> test = {0, 0, 0, 0, 1, 0};  // 0/1 integers are a mask too
  GraphArrays a = g.arrays();
  a.train_mask = ArrayView{ArrayView::Type::Bool, train.data(), {6}};
  a.val_mask = ArrayView{ArrayView::Type::Bool, val.data(), {6}};
  a.test_mask = ArrayView{ArrayView::Type::Int32, test.data(), {6}};
  const ArrayGraph graph = graph_from_arrays(a);
  const std::vector<QuerySplit> expected = {QuerySplit::Train,      QuerySplit::Train, QuerySplit::Train,
                                            QuerySplit::Validation, QuerySplit::Test,  QuerySplit::None};
  EXPECT_EQ(graph.split_of_node, expected);
  EXPECT_EQ(graph.count(QuerySplit::Train), 3u);
  EXPECT_EQ(graph.count(QuerySplit::None), 1u);
  EXPECT_TRUE(graph.dataset.has_query_split());
  EXPECT_EQ(graph.dataset.query_splits(), expected);  // the queries' parts in the dataset
  // Without train_mask every node outside val and test trains (as build_dataset reads masks).
  a.train_mask.reset();
  EXPECT_EQ(graph_from_arrays(a).dataset.query_splits(),
            (std::vector<QuerySplit>{QuerySplit::Train, QuerySplit::Train, QuerySplit::Train, QuerySplit::Validation,
                                     QuerySplit::Test, QuerySplit::Train}));
  EXPECT_FALSE(graph_from_arrays(g.arrays()).dataset.has_query_split());
}

TEST(DataGraphArrays, MaskedTrainingIsTrainingOnTheTrainQueriesAlone) {
  // Only the training queries give gradient: the weights equal those trained on the graph
  // asked its training queries alone (the text form with those query lines only).
  const SmallGraph g;
  const std::vector<uint8_t> train = {1, 0, 1, 1, 0, 1}, test = {0, 1, 0, 0, 1, 0};
  GraphArrays a = g.arrays();
  a.train_mask = ArrayView{ArrayView::Type::Bool, train.data(), {6}};
  a.test_mask = ArrayView{ArrayView::Type::Bool, test.data(), {6}};
  const Dataset masked = graph_from_arrays(a).dataset;
  auto [examples, queries] = as_text(g);
  std::string train_lines;
  for (size_t i = 0, start = 0; i < 6; ++i) {
    const size_t end = queries.find('\n', start) + 1;
    if (train[i]) train_lines += queries.substr(start, end - start);
    start = end;
  }
  const Dataset train_only = Dataset::from_text(examples, train_lines);
  const Template t = Template::from_string(kTemplate);
  Model on_masked(t, Settings{.epochs = 4, .loss = "crossentropy"});
  Model on_train_only(t, Settings{.epochs = 4, .loss = "crossentropy"});
  on_masked.train(masked);
  on_train_only.train(train_only);
  const std::vector<Parameter> p = on_masked.parameters(), q = on_train_only.parameters();
  ASSERT_EQ(p.size(), q.size());
  for (size_t k = 0; k < p.size(); ++k)
    for (size_t v = 0; v < p[k].values.size(); ++v) EXPECT_NEAR(p[k].values[v], q[k].values[v], 1e-12) << p[k].name;
  const Parameter first = Model(t, Settings{.loss = "crossentropy"}).parameters()[0];
  EXPECT_NE(p[0].values, first.values);  // it trained
}

TEST(DataGraphArrays, Float32AndInt32ArraysGiveTheSameSample) {
  const SmallGraph g;
  std::vector<float> x32(g.x.begin(), g.x.end());
  std::vector<int32_t> edges32(g.edge_index.begin(), g.edge_index.end());
  GraphArrays a = g.arrays();
  a.x = {ArrayView::Type::Float32, x32.data(), {6, 3}};
  a.edge_index = {ArrayView::Type::Int32, edges32.data(), {2, 9}};
  const train::Sample s = graph_from_arrays(a).dataset.impl().samples.at(0);
  EXPECT_EQ(s.example.facts[1].weight->data, (std::vector<double>{0.5, -1.25, 2.0}));
  EXPECT_EQ(s.example.facts[3].weight->data[0], static_cast<double>(0.1f));  // the float32 value, widened
  EXPECT_EQ(print_literal(s.example.facts[12]), "edge(0, 1)");
}

TEST(DataGraphArrays, EveryMalformedArrayIsAnErrorNamingTheEntry) {
  SmallGraph g;
  auto expect_error = [](const GraphArrays& a, const std::string& part, const GraphNames& names = {}) {
    const std::string message = error_of(a, names);
    EXPECT_NE(message.find("test.npz: "), std::string::npos) << message;
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  GraphArrays a = g.arrays();
  a.x.shape = {6, 3, 1};
  expect_error(a, "x has shape (6, 3, 1): expected (nodes, features)");
  a = g.arrays();
  a.x.shape = {0, 3};
  expect_error(a, "at least one node");
  a = g.arrays();
  a.edge_index.shape = {3, 6};
  expect_error(a, "edge_index has shape (3, 6): expected (2, edges)");
  a = g.arrays();
  a.edge_index.type = ArrayView::Type::Float64;
  expect_error(a, "edge_index has dtype float64");

  g.edge_index[9 + 4] = 6;  // target of edge 4
  expect_error(g.arrays(), "edge_index[1, 4] = 6 is not a node id: x has 6 rows (nodes 0..5)");
  g.edge_index[9 + 4] = 3;
  g.edge_index[2] = -1;
  expect_error(g.arrays(), "edge_index[0, 2] = -1 is not a node id");
  g.edge_index[2] = 1;

  g.x[4 * 3 + 1] = std::numeric_limits<double>::quiet_NaN();
  expect_error(g.arrays(), "x[4, 1] (node 4) is nan: node features must be finite");
  g.x[4 * 3 + 1] = -std::numeric_limits<double>::infinity();
  expect_error(g.arrays(), "x[4, 1] (node 4) is -inf");
  g.x[4 * 3 + 1] = 0;

  g.y[3] = -1;
  expect_error(g.arrays(), "y[3] = -1 is a negative class id (node 3)");
  g.y[3] = 4;
  GraphNames three;
  three.classes = 3;
  expect_error(g.arrays(), "y[3] = 4 is not a class id below the 3 classes given", three);
  g.y[3] = 1;
  a = g.arrays();
  a.y->shape = {5};
  expect_error(a, "y has shape (5,)");
  std::vector<double> targets(6, 0.0);
  targets[2] = std::numeric_limits<double>::infinity();
  a = g.arrays();
  a.y = ArrayView{ArrayView::Type::Float64, targets.data(), {6}};
  expect_error(a, "y[2] (node 2) is inf: targets must be finite");

  const std::vector<uint8_t> train = {1, 1, 0, 0, 0, 0}, test = {0, 1, 0, 0, 0, 0};
  const std::vector<int64_t> two = {0, 2, 0, 0, 0, 0};
  a = g.arrays();
  a.train_mask = ArrayView{ArrayView::Type::Bool, train.data(), {6}};
  a.test_mask = ArrayView{ArrayView::Type::Bool, test.data(), {6}};
  expect_error(a, "node 1 is in both train_mask and test_mask");
  a.test_mask = ArrayView{ArrayView::Type::Int64, two.data(), {6}};
  expect_error(a, "test_mask[1] = 2: a mask holds 0/1");
  a.test_mask = ArrayView{ArrayView::Type::Bool, test.data(), {5}};
  expect_error(a, "test_mask has shape (5,)");
  a.test_mask = ArrayView{ArrayView::Type::Float64, targets.data(), {6}};
  expect_error(a, "test_mask has dtype float64");
}
