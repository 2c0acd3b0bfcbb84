// Mini-batches of one sample's queries (docs/big_graphs.md "Mini-batches of queries"): a
// step over a batch's support is exactly the step of the whole network with the loss of
// that batch alone, and a fan-out keeps at most F ground rules per (rule, head), seeded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "api/dataset_impl.hpp"
#include "cli_test_support.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/lrnn.hpp"
#include "lrnn/syntax.hpp"
#include "shared_datasets.hpp"
#include "train/engine.hpp"
#include "train/query_batches.hpp"

namespace {

constexpr int kNodes = 30;

const char* kTemplate =
    "h(X) :- {3,2} x(Y), *edge(X, Y). [activation=tanh, aggregation=sum]\n"
    "h(X) :- {3,2} x(X). [activation=tanh]\n"
    "g(X) :- {3,3} h(Y), *edge(X, Y). [activation=tanh, aggregation=mean]\n"
    "out(X) :- {1,3} g(X). [activation=sigmoid]\n";

// A graph whose node n links to n+1, n+3 and n+8 (both ways): degrees 6.
std::string facts() {
  std::string f;
  for (int n = 0; n < kNodes; ++n) {
    f += (n ? ", " : "") + std::string("<[") + std::to_string(std::sin(0.9 * n)) + ", " +
         std::to_string(std::cos(1.7 * n)) + "]> x(n" + std::to_string(n) + ")";
    for (int d : {1, 3, 8})
      f += ", edge(n" + std::to_string(n) + ", n" + std::to_string((n + d) % kNodes) + "), edge(n" +
           std::to_string((n + d) % kNodes) + ", n" + std::to_string(n) + ")";
  }
  return f;
}

std::string query(int n) { return std::to_string(std::sin(2.1 * n) > 0 ? 1 : 0) + " out(n" + std::to_string(n) + ")"; }

lrnn::Settings settings() {
  lrnn::Settings s;
  s.epochs = 2;
  s.lr = 0.05;
  s.seed = 5;
  s.shuffle = false;
  return s;
}

std::vector<lrnn::Parameter> trained(const lrnn::Dataset& data, const lrnn::Settings& s) {
  lrnn::Model m(lrnn::Template::from_string(kTemplate), s);
  m.train(data);
  return m.parameters();
}

}  // namespace

// One example asked every node, trained in query batches of 7 in order with `fanout`, and
// the same steps as samples (one copy of the example per batch, asked that batch's
// queries): the same parameters to 1e-12.
void expect_steps_of_the_whole_network(const std::vector<size_t>& fanout) {
  std::string queries;
  for (int n = 0; n < kNodes; ++n) queries += query(n) + ".\n";
  lrnn::Settings batched = settings();
  batched.query_batch_size = 7;
  batched.fanout = fanout;
  const auto by_query = trained(lrnn::Dataset::from_text("g :- " + facts() + ".\n", queries), batched);
  // The same steps as samples: one copy of the example per batch, asked that batch's queries.
  std::string examples, lines;
  for (int b = 0; b < kNodes; b += 7) {
    examples += "b" + std::to_string(b) + " :- " + facts() + ".\n";
    lines += "b" + std::to_string(b) + " :- ";
    for (int n = b; n < std::min(kNodes, b + 7); ++n) lines += (n > b ? ", " : "") + query(n);
    lines += ".\n";
  }
  lrnn::Settings per_sample = settings();
  per_sample.batch_size = 1;
  const auto by_sample = trained(lrnn::Dataset::from_text(examples, lines), per_sample);
  ASSERT_EQ(by_query.size(), by_sample.size());
  double moved = 0;
  const auto initial = lrnn::Model(lrnn::Template::from_string(kTemplate), settings()).parameters();
  for (size_t p = 0; p < by_query.size(); ++p)
    for (size_t k = 0; k < by_query[p].values.size(); ++k) {
      EXPECT_NEAR(by_query[p].values[k], by_sample[p].values[k], 1e-12) << by_query[p].name;
      moved = std::max(moved, std::abs(by_query[p].values[k] - initial[p].values[k]));
    }
  EXPECT_GT(moved, 1e-3);  // 10 steps of Adam moved the weights
}

// The graph's one example with every node's query, grounded: its network and the ground
// rules of each (rule, head).
struct GraphNetwork {
  lrnn::Dataset data = lrnn::Dataset::from_text("g :- " + facts() + ".\n", every_query());
  lrnn::train::Engine engine{lrnn::parse_template(kTemplate)};
  lrnn::train::PreparedSet set;
  lrnn::train::RulesByHead heads;
  static std::string every_query() {
    std::string queries;
    for (int n = 0; n < kNodes; ++n) queries += query(n) + ".\n";
    return queries;
  }
  GraphNetwork() {
    set = engine.prepare(data.impl().samples);
    heads = lrnn::train::rules_by_head(net());
  }
  const lrnn::neural::SampleNetwork& net() const { return set.networks[0]; }
};

TEST(QueryBatches, AStepIsTheWholeNetworksStepOnTheBatchsLoss) { expect_steps_of_the_whole_network({}); }

// Training gives its workspaces' gradient buffers back at its end when they are big
// (Engine::release_gradients_from): two calls of two epochs each, with and without the
// buffers given back between them, train the same parameters bit for bit, and evaluation
// after a release reads the same values.
TEST(QueryBatches, GradientsGivenBackAfterTrainingChangeNothing) {
  lrnn::train::TrainConfig config;
  config.epochs = 2;
  config.optimizer.lr = 0.05;
  config.shuffle = false;
  std::vector<std::vector<double>> params;
  std::vector<double> losses;
  for (size_t from : {size_t{0}, std::numeric_limits<size_t>::max()}) {
    GraphNetwork graph;
    graph.engine.release_gradients_from = from;
    for (int call = 0; call < 2; ++call) graph.engine.train(graph.set, nullptr, config);
    params.push_back(graph.engine.model().params.values);
    losses.push_back(graph.engine.evaluate(graph.set, config.loss).metrics.loss);
  }
  ASSERT_EQ(params[0].size(), params[1].size());
  for (size_t k = 0; k < params[0].size(); ++k) EXPECT_EQ(params[0][k], params[1][k]) << k;
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_NE(params[0], lrnn::train::Engine{lrnn::parse_template(kTemplate)}.model().params.values);
}

TEST(QueryBatches, AFanoutAboveEveryDegreeStepsAsTheWholeNetwork) {
  // Every node has degree 6: 7 (and 50) per hop keep every ground rule, so a step is the
  // whole network's step on the batch's loss (the draws consume the generator, which the
  // batch order does not read: shuffle is off).
  expect_steps_of_the_whole_network({50, 7});
  expect_steps_of_the_whole_network({7});
}

TEST(QueryBatches, FanoutKeepsAtMostFGroundRulesPerRuleAndHead) {
  const GraphNetwork graph;
  const lrnn::train::Engine& engine = graph.engine;
  const lrnn::neural::SampleNetwork& net = graph.net();
  const lrnn::train::RulesByHead& heads = graph.heads;
  const std::vector<uint32_t> some = {2, 11, 17};
  auto per_head = [](const lrnn::neural::SampleNetwork& n) {
    std::map<std::pair<uint32_t, uint32_t>, int> count;
    for (size_t g = 0; g < n.num_ground_rules(); ++g) ++count[{n.rule[g], n.head[g]}];
    return count;
  };
  const lrnn::neural::TemplateModel& model = engine.model();
  auto fan = [&](std::vector<size_t> per_hop) { return lrnn::train::fan_out(model, std::move(per_hop)); };
  // No fan-out: every ground rule of the supports; degree 6, so fan-out 6 changes nothing.
  const auto all = lrnn::train::support_network(net, heads, some, fan({}), nullptr);
  lrnn::train::Rng rng(1);
  const auto six = lrnn::train::support_network(net, heads, some, fan({6}), &rng);
  EXPECT_EQ(all.rule, six.rule);
  EXPECT_EQ(all.inputs, six.inputs);
  int most = 0;
  for (auto [key, c] : per_head(all)) most = std::max(most, c);
  EXPECT_EQ(most, 6);
  EXPECT_EQ(all.query_atoms.size(), 3u);
  // Fan-out 2: at most 2 per (rule, head), fewer atoms, and the draw follows the seed.
  lrnn::train::Rng a(7), b(7), c(8);
  const auto two_a = lrnn::train::support_network(net, heads, some, fan({2}), &a);
  const auto two_b = lrnn::train::support_network(net, heads, some, fan({2}), &b);
  const auto two_c = lrnn::train::support_network(net, heads, some, fan({2}), &c);
  for (auto [key, count] : per_head(two_a)) EXPECT_LE(count, 2);
  EXPECT_LT(two_a.num_atoms(), all.num_atoms());
  EXPECT_EQ(two_a.inputs, two_b.inputs);
  EXPECT_NE(two_a.inputs, two_c.inputs);
  // A support is a network: it evaluates (its outputs are finite sigmoids).
  lrnn::Settings s = settings();
  s.query_batch_size = 4;
  s.fanout = {2};
  lrnn::Model m(lrnn::Template::from_string(kTemplate), s);
  const lrnn::TrainReport r = m.train(graph.data);
  EXPECT_EQ(r.history.size(), 2u);
  EXPECT_EQ(r.history[0].train.count, size_t(kNodes));
  EXPECT_TRUE(std::isfinite(r.history[1].train.loss));
}

// What a partitioned sample's query steps ask of a support (train/partition_query_steps.cpp):
// roots besides the queries, each support atom's id in the network, and a walk that stops
// at a depth.
TEST(QueryBatches, SupportsOfRootsGiveTheirAtomIdsAndStopAtADepth) {
  const GraphNetwork graph;
  const lrnn::neural::SampleNetwork& net = graph.net();
  const lrnn::train::FanOut every = lrnn::train::fan_out(graph.engine.model(), {});
  lrnn::train::SupportScratch scratch;
  const std::vector<uint32_t> query = {2};
  std::vector<uint32_t> ids;
  const auto sub = lrnn::train::support_network(net, graph.heads, query, every, nullptr, scratch, nullptr, {}, &ids);
  ASSERT_EQ(ids.size(), sub.num_atoms());
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  for (size_t l = 0; l < ids.size(); ++l) EXPECT_EQ(sub.atom_depth[l], net.atom_depth[ids[l]]);
  EXPECT_EQ(ids[sub.query_atoms[0][0]], net.query_atoms[2][0]);
  // The query's own support as roots: the same atoms, no outputs.
  std::vector<uint32_t> same;
  const auto rooted =
      lrnn::train::support_network(net, graph.heads, {}, every, nullptr, scratch, nullptr, net.query_atoms[2], &same);
  EXPECT_EQ(same, ids);
  EXPECT_TRUE(rooted.query_atoms.empty());
  EXPECT_EQ(rooted.inputs, sub.inputs);
  // The atoms alone, as support_network's; stopping at the depth of h: its inputs (x) not reached.
  std::vector<uint32_t> atoms;
  lrnn::train::support_atoms(net, graph.heads, query, {}, every, scratch, atoms);
  EXPECT_EQ(atoms, ids);
  const uint32_t h_depth = net.atom_depth[net.inputs[net.inputs_begin[
      std::find_if(net.rule.begin(), net.rule.end(), [](uint32_t r) { return r == 2; }) - net.rule.begin()]]];
  std::vector<uint32_t> upper;
  lrnn::train::support_atoms(net, graph.heads, query, {}, every, scratch, upper, h_depth);
  EXPECT_LT(upper.size(), atoms.size());
  for (uint32_t a : upper) EXPECT_GE(net.atom_depth[a], h_depth);  // out, g and the h they read
  EXPECT_TRUE(std::any_of(upper.begin(), upper.end(), [&](uint32_t a) { return net.atom_depth[a] == h_depth; }));
  // The scratch is left as found: the whole walk again gives the same atoms.
  lrnn::train::support_atoms(net, graph.heads, query, {}, every, scratch, atoms);
  EXPECT_EQ(atoms, ids);
}

TEST(QueryBatches, SettingsThatExcludeEachOtherAreRefused) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  const std::string t = std::string(LRNN_SOURCE_DIR) + "/examples/templates/xor.lrnn";
  const std::string e = std::string(LRNN_DATASETS_DIR) + "/neuralogic/simple/xor/naive/trainExamples.txt";
  lrnn_test::CliRun fanout_alone = lrnn_test::run_lrnn("train " + t + " -e " + e + " --epochs 1 --fanout 3");
  EXPECT_EQ(fanout_alone.code, 2) << fanout_alone.out;
  EXPECT_NE(fanout_alone.out.find("query_batch_size"), std::string::npos) << fanout_alone.out;
  lrnn_test::CliRun both = lrnn_test::run_lrnn("train " + t + " -e " + e + " --epochs 1 --batch-size 2 --query-batch-size 2");
  EXPECT_EQ(both.code, 2) << both.out;
  lrnn_test::CliRun ok = lrnn_test::run_lrnn("train " + t + " -e " + e + " --epochs 2 --query-batch-size 1 --json");
  EXPECT_EQ(ok.code, 0) << ok.out;
}

TEST(QueryBatches, FanoutPerHopCountsHopsThroughNeighbourRules) {
  // kTemplate: out(X) :- g(X) and h(X) :- x(X) read the head's node (no hop); g's and h's
  // rules over *edge(X, Y) read a neighbour (a hop). So the queries' g atoms are at hop 0
  // and keep 3 of their 6 neighbour groundings, the h atoms those read are at hop 1 and
  // keep 1: NeighborLoader(num_neighbors=[3, 1]).
  const GraphNetwork graph;
  const lrnn::train::Engine& engine = graph.engine;
  const lrnn::neural::SampleNetwork& net = graph.net();
  const lrnn::train::RulesByHead& heads = graph.heads;
  const lrnn::train::FanOut fan = lrnn::train::fan_out(engine.model(), {3, 1});
  EXPECT_EQ(fan.hop_rule, (std::vector<uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ(fan.at(0), 3u);
  EXPECT_EQ(fan.at(1), 1u);
  EXPECT_EQ(fan.at(5), 1u);  // beyond the list: its last entry
  const std::vector<uint32_t> some = {2, 11, 17, 25};
  lrnn::train::Rng a(3), b(3);
  const auto sub_a = lrnn::train::support_network(net, heads, some, fan, &a);
  const auto sub_b = lrnn::train::support_network(net, heads, some, fan, &b);
  EXPECT_EQ(sub_a.inputs, sub_b.inputs);  // seeded
  EXPECT_EQ(sub_a.rule, sub_b.rule);
  std::map<std::pair<uint32_t, uint32_t>, int> count;
  for (size_t g = 0; g < sub_a.num_ground_rules(); ++g) ++count[{sub_a.rule[g], sub_a.head[g]}];
  std::map<uint32_t, int> heads_of_rule;
  for (auto [key, c] : count) {
    ++heads_of_rule[key.first];
    if (key.first == 2) EXPECT_EQ(c, 3);  // g(X) :- h(Y), *edge(X, Y): hop 0
    else if (key.first == 0) EXPECT_EQ(c, 1);  // h(X) :- x(Y), *edge(X, Y): hop 1
    else EXPECT_EQ(c, 1);  // one grounding per head
  }
  EXPECT_EQ(heads_of_rule[3], 4);  // the 4 queries' out atoms
  EXPECT_EQ(heads_of_rule[2], 4);  // their g atoms
  EXPECT_GE(heads_of_rule[0], 3);  // the h atoms of the g atoms' 3 neighbours each
  EXPECT_LE(heads_of_rule[0], 12);
  EXPECT_EQ(heads_of_rule[0], heads_of_rule[1]);  // each h atom has its self rule too
}

TEST(QueryBatches, FanoutPerHopFromTheCommandLine) {
  std::string queries;
  for (int n = 0; n < kNodes; ++n) queries += query(n) + ".\n";
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/qb.lrnn") << kTemplate;
  std::ofstream(dir + "/qb.examples.txt") << "g :- " + facts() + ".\n";
  std::ofstream(dir + "/qb.queries.txt") << queries;
  const std::string base = "train " + dir + "/qb.lrnn -e " + dir + "/qb.examples.txt -q " + dir + "/qb.queries.txt";
  lrnn_test::CliRun ok = lrnn_test::run_lrnn(base + " --epochs 2 --query-batch-size 8 --fanout 3,1 --json");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("\"steps_s\""), std::string::npos) << ok.out;
  lrnn_test::CliRun bad = lrnn_test::run_lrnn(base + " --epochs 1 --query-batch-size 8 --fanout 3,x");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--fanout '3,x'"), std::string::npos) << bad.out;
}

TEST(QueryBatches, FloatBatchesGatherTheSupportsRowsFromTheGraphsValues) {
  // A float pass's batch keeps its supports' values in the index's float copy of the
  // graph's (value_rows into value_tables): the rows it lists are, in order, the float
  // values of the support a copying batch builds from the same draws.
  const GraphNetwork graph;
  const lrnn::neural::SampleNetwork& net = graph.net();
  lrnn::train::QueryBatches copying(graph.engine.model(), graph.set, {2, 2});
  lrnn::train::QueryBatches by_reference(graph.engine.model(), graph.set, {2, 2}, true);
  const std::vector<lrnn::train::QueryRef> refs = {{0, 3}, {0, 12}, {0, 25}};
  lrnn::train::Rng rng_a(9), rng_b(9);
  std::vector<uint32_t> origin_a, origin_b;
  const lrnn::train::PreparedSet a = copying.batch(refs, rng_a, origin_a);
  const lrnn::train::PreparedSet b = by_reference.batch(refs, rng_b, origin_b, true);
  EXPECT_EQ(origin_a, origin_b);
  ASSERT_EQ(b.value_tables.size(), 1u);
  const lrnn::neural::SampleNetwork& copied = a.networks[0];
  const lrnn::neural::SampleNetwork& listed = b.networks[0];
  EXPECT_TRUE(listed.fact_data.empty());
  EXPECT_EQ(listed.fact_data_begin, copied.fact_data_begin);
  EXPECT_EQ(listed.inputs, copied.inputs);
  EXPECT_EQ(listed.atom_ground_id, copied.atom_ground_id);
  EXPECT_EQ(listed.atom_fact, copied.atom_fact);
  ASSERT_EQ(b.value_rows[0].size(), 2 * copied.num_facts());
  std::vector<float> gathered;
  for (size_t k = 0; k < b.value_rows[0].size(); k += 2)
    gathered.insert(gathered.end(), b.value_tables[0] + b.value_rows[0][k], b.value_tables[0] + b.value_rows[0][k + 1]);
  ASSERT_EQ(gathered.size(), copied.fact_data.size());
  size_t features = 0;
  for (size_t i = 0; i < gathered.size(); ++i) {
    EXPECT_EQ(gathered[i], static_cast<float>(copied.fact_data[i])) << i;
    features += copied.fact_data[i] != 0.0;
  }
  EXPECT_GT(features, 10u);  // the rows hold the nodes' features, not zeros
  EXPECT_GT(net.num_facts(), copied.num_facts());  // a support: some of the graph's facts
}

TEST(QueryBatches, Float32StepsAreTheWholeNetworksSteps) {
  // The float path (rows gathered from the graph's values) trains as the float steps of the
  // whole network on each batch's loss, up to float rounding.
  std::string queries;
  for (int n = 0; n < kNodes; ++n) queries += query(n) + ".\n";
  lrnn::Settings batched = settings();
  batched.dtype = lrnn::Dtype::Float32;
  batched.query_batch_size = 7;
  const auto by_query = trained(lrnn::Dataset::from_text("g :- " + facts() + ".\n", queries), batched);
  lrnn::Settings whole = settings();
  whole.query_batch_size = 7;  // the float64 steps of the same batches
  const auto by_double = trained(lrnn::Dataset::from_text("g :- " + facts() + ".\n", queries), whole);
  ASSERT_EQ(by_query.size(), by_double.size());
  for (size_t p = 0; p < by_query.size(); ++p)
    for (size_t k = 0; k < by_query[p].values.size(); ++k)
      EXPECT_NEAR(by_query[p].values[k], by_double[p].values[k], 2e-5) << by_query[p].name;
}
