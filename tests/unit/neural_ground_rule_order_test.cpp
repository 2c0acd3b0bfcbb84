// neuralize orders ground rules by (rule, head, softmax group, grounding order) whatever
// order the GroundSample lists its rule sets in: the grounder's own order (by rule: each
// rule's range is sorted by head alone, where out of order) and the rule sets reversed
// (the general counting sorts) must give the same network. Likewise the relevance and depths
// of a sample without recursion (rule sets with levels: passes per level) and of the same
// sample with its levels removed (the depth-first search).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "logic/grounder.hpp"
#include "logic/radix_sort.hpp"
#include "lrnn/syntax.hpp"
#include "neural/network.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

TEST(NeuralGroundRuleOrder, RuleSetsInAnyOrderGiveOneNetwork) {
  // Causal attention: the score rule's heads come one after another, the weighted sum's
  // heads (out(I), its groundings listed key by key) interleave; h reads both.
  train::Engine engine(parse_template(
      "<0.5> d_k.\n"
      "w(I, J) :- d_k, k(J)^T, q(I), @leq(J, I). [combination=product, aggregation=softmax(J)]\n"
      "out(I) :- w(I, J), v(J). [combination=product, aggregation=sum]\n"
      "h(I) :- out(I), q(I).\n"));
  std::string facts, queries;
  for (int i = 0; i < 9; ++i) {
    const std::string s = std::to_string(i);
    facts += "<[1, " + s + "]> q(" + s + "), <[" + s + ", 2]> k(" + s + "), <[0, " + s + "]> v(" + s + "), ";
    queries += std::string(i ? ", " : "") + "h(" + s + ")";
  }
  const ExampleAst ex = parse_examples(facts + "<[1, 1]> unused(0).")[0];
  const auto qs = parse_queries(queries + ".")[0].queries;
  logic::GroundSample ground = logic::ground(engine.program(), ex, qs);
  ASSERT_EQ(ground.rules.size(), 3u);
  const neural::SampleNetwork a = neural::neuralize(engine.model(), ex, ground);
  std::reverse(ground.rules.begin(), ground.rules.end());
  const neural::SampleNetwork b = neural::neuralize(engine.model(), ex, ground);
  EXPECT_EQ(a.num_ground_rules(), size_t(9 * 10 / 2 * 2 + 9));
  EXPECT_EQ(a.rule, b.rule);
  EXPECT_EQ(a.head, b.head);
  EXPECT_EQ(a.softmax_group, b.softmax_group);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.inputs_begin, b.inputs_begin);
  EXPECT_EQ(a.structure_hash, b.structure_hash);
  // Sorted: by rule, then head, within a head by group.
  for (size_t g = 1; g < a.num_ground_rules(); ++g) {
    ASSERT_LE(a.rule[g - 1], a.rule[g]);
    if (a.rule[g - 1] == a.rule[g]) ASSERT_LE(a.head[g - 1], a.head[g]);
  }
}

// Every array of two networks.
void expect_same_network(const neural::SampleNetwork& a, const neural::SampleNetwork& b) {
  EXPECT_EQ(a.atom_depth, b.atom_depth);
  EXPECT_EQ(a.atom_predicate, b.atom_predicate);
  EXPECT_EQ(a.atom_fact, b.atom_fact);
  EXPECT_EQ(a.atom_ground_id, b.atom_ground_id);
  EXPECT_EQ(a.fact_template, b.fact_template);
  EXPECT_EQ(a.fact_data, b.fact_data);
  EXPECT_EQ(a.rule, b.rule);
  EXPECT_EQ(a.head, b.head);
  EXPECT_EQ(a.softmax_group, b.softmax_group);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.inputs_begin, b.inputs_begin);
  EXPECT_EQ(a.query_atoms, b.query_atoms);
  EXPECT_EQ(a.dropped_cycle_rules, b.dropped_cycle_rules);
  EXPECT_EQ(a.structure_hash, b.structure_hash);
}

// Full attention: the weighted sum's groundings (listed key by key) form a grid whose sort
// by head is a transposition (written in strips); the same network as the general counting
// sort (rule sets reversed), with every atom kept and with atoms pruned by neuralize (an
// unpruned grounding queried for some positions only: local ids differ from ground ids).
TEST(NeuralGroundRuleOrder, GridOfHeadsGivesTheSortedNetwork) {
  train::Engine engine(parse_template(
      "<0.5> d_k.\n"
      "w(I, J) :- d_k, k(J)^T, q(I). [combination=product, aggregation=softmax(J)]\n"
      "out(I) :- w(I, J), v(J). [combination=product, aggregation=sum]\n"));
  for (int n : {5, 37}) {
    std::string facts, all, some;
    for (int i = 0; i < n; ++i) {
      const std::string s = std::to_string(i);
      facts += "<[1, " + s + "]> q(" + s + "), <[" + s + ", 2]> k(" + s + "), <[0, " + s + "]> v(" + s + "), ";
      all += std::string(i ? ", " : "") + "out(" + s + ")";
      if (i % 3 != 1) some += std::string(some.empty() ? "" : ", ") + "out(" + s + ")";
    }
    const ExampleAst ex = parse_examples(facts + "<[1, 1]> unused(0).")[0];
    for (const std::string& queries : {all, some}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", queries " + queries);
      logic::GroundingOptions o;
      o.prune = queries == all;
      logic::GroundSample ground = logic::ground(engine.program(), ex, parse_queries(queries + ".")[0].queries, o);
      const neural::SampleNetwork a = neural::neuralize(engine.model(), ex, ground);
      std::reverse(ground.rules.begin(), ground.rules.end());
      expect_same_network(a, neural::neuralize(engine.model(), ex, ground));
      const size_t heads = queries == all ? n : n - n / 3 - (n % 3 > 1);
      EXPECT_EQ(a.num_ground_rules(), 2 * heads * n);
      EXPECT_EQ(a.num_atoms() < ground.num_atoms(), queries != all);
      for (size_t g = 1; g < a.num_ground_rules(); ++g) {
        ASSERT_LE(a.rule[g - 1], a.rule[g]);
        if (a.rule[g - 1] == a.rule[g]) ASSERT_LE(a.head[g - 1], a.head[g]);
      }
    }
  }
}

// The radix sort orders by the chosen bits only and keeps the order of keys equal there,
// below and above its comparison-sort threshold, by part of a word or by all of it.
TEST(NeuralGroundRuleOrder, RadixSortIsStableByTheChosenBits) {
  std::mt19937_64 random(7);
  for (size_t n : {size_t{10}, size_t{5000}, size_t{100000}}) {
    for (const auto [low, bits] : {std::pair{32u, 21u}, std::pair{0u, 64u}, std::pair{8u, 3u}}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", bits [" + std::to_string(low) + ", +" + std::to_string(bits) + ")");
      std::vector<uint64_t> keys(n);
      for (uint64_t& k : keys) k = random();
      const uint64_t field = bits == 64 ? ~uint64_t{0} : ((uint64_t{1} << bits) - 1) << low;
      std::vector<uint64_t> expected = keys;
      std::stable_sort(expected.begin(), expected.end(), [&](uint64_t a, uint64_t b) { return (a & field) < (b & field); });
      logic::radix_sort_bits(keys, low, bits);
      ASSERT_EQ(keys, expected);
    }
  }
}

// A graph with more heads than the counting sort's range (its heads' groundings listed in
// a shuffled edge order): each head's ground rules in grounding order, as a stable sort of
// the grounder's rows by head gives them.
TEST(NeuralGroundRuleOrder, ManyHeadsSortedByRadixKeepGroundingOrder) {
  train::Engine engine(parse_template("h(X) :- {1} x(Y), edge(X, Y).\n"));
  constexpr int n = 70000;  // more heads than kCountingSortMaxRange
  std::vector<std::pair<int, int>> edges;
  for (int i = 0; i < n; ++i) edges.insert(edges.end(), {{i, static_cast<int>((i * 7919LL + 1) % n)}, {i, static_cast<int>((i * 104729LL + 3) % n)}});
  std::shuffle(edges.begin(), edges.end(), std::mt19937(3));
  std::string facts, queries;
  for (int i = 0; i < n; ++i) facts += "<1> x(" + std::to_string(i) + "), ";
  for (const auto& [a, b] : edges) facts += "edge(" + std::to_string(a) + ", " + std::to_string(b) + "), ";
  for (int i = 0; i < n; ++i) queries += std::string(i ? ", " : "") + "h(" + std::to_string(i) + ")";
  const ExampleAst ex = parse_examples(facts + "x(-1).")[0];
  const logic::GroundSample ground = logic::ground(engine.program(), ex, parse_queries(queries + ".")[0].queries);
  ASSERT_EQ(ground.rules.size(), 1u);
  const logic::GroundRuleSet& rs = ground.rules[0];
  ASSERT_EQ(rs.size(), edges.size());
  std::vector<uint32_t> rows(rs.size());
  std::iota(rows.begin(), rows.end(), 0u);
  ASSERT_FALSE(std::is_sorted(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) { return rs.head[a] < rs.head[b]; }));
  std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) { return rs.head[a] < rs.head[b]; });
  const neural::SampleNetwork net = neural::neuralize(engine.model(), ex, ground);
  ASSERT_EQ(net.num_atoms(), ground.num_atoms());  // every atom kept: local ids are ground ids
  ASSERT_EQ(net.num_ground_rules(), rows.size());
  for (size_t g = 0; g < rows.size(); ++g) {
    ASSERT_EQ(net.head[g], rs.head[rows[g]]) << "ground rule " << g;
    for (uint32_t k = 0; k < rs.n_inputs; ++k)
      ASSERT_EQ(net.inputs[net.inputs_begin[g] + k], rs.inputs[static_cast<size_t>(rows[g]) * rs.n_inputs + k]);
  }
}

TEST(NeuralGroundRuleOrder, LevelsGiveTheNetworkOfTheSearch) {
  // Depths 1-4 with atoms reached along paths of different lengths (m from a and from g),
  // a rule listed before the rule it reads, and atoms no query needs (unpruned grounding).
  train::Engine engine(parse_template(
      "top(X) :- m(X), g(X).\n"
      "g(X) :- h(X), e(X, Y).\n"
      "h(X) :- a(X), b(X).\n"
      "m(X) :- a(X).\nm(X) :- g(X).\n"
      "u(X) :- e(X, Y).\n"));
  const ExampleAst ex = parse_examples(
      "a(1), a(2), a(3), b(2), b(3), e(1, 2), e(2, 3), e(3, 1), e(5, 6).")[0];
  for (const std::string queries : {"top(X).", "top(2), u(5).", "m(2), h(X)."}) {
    SCOPED_TRACE(queries);
    const auto qs = parse_queries(queries)[0].queries;
    for (bool prune : {true, false}) {
      logic::GroundingOptions o;
      o.prune = prune;
      logic::GroundSample ground = logic::ground(engine.program(), ex, qs, o);
      ASSERT_FALSE(ground.rules.empty());
      for (const auto& set : ground.rules) ASSERT_NE(set.level, logic::kNone);
      const neural::SampleNetwork layered = neural::neuralize(engine.model(), ex, ground);
      for (auto& set : ground.rules) set.level = logic::kNone;
      const neural::SampleNetwork searched = neural::neuralize(engine.model(), ex, ground);
      expect_same_network(layered, searched);
      EXPECT_GT(*std::max_element(layered.atom_depth.begin(), layered.atom_depth.end()), 2u);
    }
  }
  // A recursive template has no levels.
  train::Engine recursive(parse_template("path(X, Y) :- e(X, Y).\npath(X, Y) :- e(X, Z), path(Z, Y).\n"));
  const logic::GroundSample ground = logic::ground(recursive.program(), ex, parse_queries("path(1, X).")[0].queries);
  for (const auto& set : ground.rules) EXPECT_EQ(set.level, logic::kNone);
}

}  // namespace
