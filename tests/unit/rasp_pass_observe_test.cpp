// The weight compiler's first pass alone (src/rasp/passes/observe.cpp): which s-ops are
// materialised and what running every input shows about them.
#include <gtest/gtest.h>

#include "rasp_passes_support.hpp"
#include "rasp_test_support.hpp"

namespace {

using namespace rasp_passes_test;

TEST(RaspPassObserve, ReverseNeedsItsHeadsAndOneLookup) {
  const auto [length, opp, reverse] = make_reverse_parts();
  const passes::Observation o = passes::observe(input_of(reverse, abc(), 3), {});
  // opp_idx is folded into the one lookup opp_idx-1 reads: it is not materialised
  EXPECT_EQ(needed_named(o, "opp_idx"), nullptr);
  const Node* lookup = needed_named(o, "opp_idx-1");
  ASSERT_NE(lookup, nullptr);
  EXPECT_TRUE(o.needed.count(node(reverse)));
  EXPECT_TRUE(o.read_directly.count(node(reverse)));  // the output
  EXPECT_NE(needed_named(o, "tokens"), nullptr);  // the flip's values
  // its frontier, by node id: indices and length; a row per (index < length, length)
  const std::vector<const Node*>& frontier = passes::frontier_of(o, lookup);
  ASSERT_EQ(frontier.size(), 2u);
  EXPECT_EQ(frontier[0]->description(), "indices");
  EXPECT_EQ(frontier[1]->description(), "length");
  const passes::Table& t = o.tables.at(lookup);
  EXPECT_EQ(t.rows.size(), 6u);
  for (const auto& [key, row] : t.rows)
    EXPECT_EQ(to_double(row.second), to_double(row.first[1]) - to_double(row.first[0]) - 1);
  // length selects every key; the flip exactly one
  const Node* length_node = needed_named(o, "length");
  ASSERT_NE(length_node, nullptr);
  EXPECT_EQ(o.stats.at(length_node).max_selected, 3u);
  EXPECT_EQ(o.stats.at(node(reverse)).max_selected, 1u);
  EXPECT_FALSE(o.stats.at(node(reverse)).some_empty);
  EXPECT_EQ(o.width_tables.at(length_node).rows.size(), 3u);  // 1/2, 1/3, 1/4 -> 1, 2, 3
  EXPECT_EQ(o.values.at(node(reverse)).values.size(), 3u);    // a, b, c
}

TEST(RaspPassObserve, MaterialisedSOpsEndTheFrontier) {
  const SOp inner = (tokens() == "a").name("is_a");
  const SOp outer = (inner + indices()).name("outer");
  passes::Materialization split;
  split.materialized.insert(node(inner));
  const passes::Observation o = passes::observe(input_of(outer, abc(), 2), split);
  const std::vector<const Node*>& frontier = passes::frontier_of(o, node(outer));
  ASSERT_EQ(frontier.size(), 2u);
  EXPECT_TRUE(std::find(frontier.begin(), frontier.end(), node(inner)) != frontier.end());
  EXPECT_TRUE(o.needed.count(node(inner)));
  const passes::Observation folded = passes::observe(input_of(outer, abc(), 2), {});
  EXPECT_FALSE(folded.needed.count(node(inner)));  // without the split: one lookup of tokens, indices
}

TEST(RaspPassObserve, JointFeatureOfAnOrOverTwoPairs) {
  const Selector mixed = select(tokens(), tokens(), Predicate::Eq) | select(indices(), SOp(int64_t{0}), Predicate::Eq);
  const passes::Observation o = passes::observe(input_of(mixed.width(), abc(), 2), {});
  ASSERT_EQ(o.joints.size(), 1u);  // the keys compare (tokens, indices) jointly
  const passes::Joint& j = o.joints.begin()->second;
  ASSERT_EQ(j.components.size(), 2u);
  EXPECT_EQ(j.tuples.size(), 6u);  // 3 tokens x 2 positions
  EXPECT_EQ(j.feature.values.size(), 6u);
  EXPECT_EQ(j.feature.ready, -1);  // scheduled later
}

TEST(RaspPassObserve, RefusesTooManyInputs) {
  CompileOptions few;
  few.max_inputs = 10;
  const std::string error = rasp_test::error_of([&] { passes::observe(input_of(make_reverse(), abc(), 3, few), {}); });
  EXPECT_NE(error.find("39 inputs over a vocabulary of 3 up to length 3"), std::string::npos) << error;
}

}  // namespace
