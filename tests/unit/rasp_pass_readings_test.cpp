// The weight compiler's fourth pass alone (src/rasp/passes/readings.cpp): counts read as
// 1/(w+1), s-ops folded into the embeddings, s-ops attention reads through a one-hot.
#include <gtest/gtest.h>

#include "rasp_passes_support.hpp"

namespace {

using namespace rasp_passes_test;

TEST(RaspPassReadings, ReverseReadsLengthWithoutDecodingIt) {
  const auto [length, opp, reverse] = make_reverse_parts();
  const passes::Readings r = readings_of(input_of(reverse, abc(), 4));
  EXPECT_TRUE(passes::is_count(r, node(length)));
  EXPECT_EQ(r.direct, std::set<const Node*>{node(opp)});  // reads 1/(w+1) in the same layer
  EXPECT_TRUE(r.decoded.empty());                          // nothing else reads length
  EXPECT_TRUE(r.embedded.empty());  // opp reads length: not of the tokens or indices alone
  const auto inverse = passes::count_inverse(r, node(length));
  EXPECT_EQ(inverse.size(), 4u);  // lengths 1..4 from 1/2..1/5
}

TEST(RaspPassReadings, OutputCountsAreDecoded) {
  const SOp hist = select(tokens(), tokens(), Predicate::Eq).width().name("hist");
  const passes::Readings r = readings_of(input_of(hist, abc(), 3));
  EXPECT_EQ(r.decoded, std::set<const Node*>{node(hist)});
  EXPECT_TRUE(r.direct.empty());
}

TEST(RaspPassReadings, MapsOfTokensAreEmbeddedAndViewedWhereThatSavesWidth) {
  const SOp upper = map(tokens(), [](const Value& v) -> Value { return to_string(v) + "!"; }, "upper");
  const SOp lower = map(tokens(), [](const Value& v) -> Value { return "_" + to_string(v); }, "lower");
  const SOp next = (indices() + 1).name("next");
  const Selector same = select(indices(), indices(), Predicate::Eq);
  const SOp after = select(next, indices(), Predicate::Eq).width().name("after");
  const SOp both = zipmap({same.value(upper, Value{}), same.value(lower, Value{}), after},
                          [](const std::vector<Value>& a) -> Value { return to_string(a[0]) + to_string(a[1]) + to_string(a[2]); },
                          "both");
  const passes::Readings r = readings_of(input_of(both, abc(), 2));
  EXPECT_EQ(r.embedded.at(node(upper)), Kind::Tokens);
  EXPECT_EQ(r.embedded.at(node(lower)), Kind::Tokens);
  EXPECT_EQ(r.embedded.at(node(next)), Kind::Indices);
  // upper and lower (3 dimensions each) are read through the tokens' 3 dimensions, next
  // through the indices the selector reads anyway
  EXPECT_EQ(r.viewed, (std::set<const Node*>{node(upper), node(lower), node(next)}));
  const auto [through, values] = passes::view_of(r, node(upper));
  EXPECT_EQ(through->node->kind, Kind::Tokens);
  EXPECT_EQ(values, (std::vector<Value>{Value("a!"), Value("b!"), Value("c!")}));
  EXPECT_FALSE(passes::read_by_lookup(r, node(next)));  // only the selector reads it
  EXPECT_TRUE(passes::read_by_lookup(r, node(after)));  // `both` is an MLP reading it
}

}  // namespace
