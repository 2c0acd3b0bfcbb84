// The weight compiler's third pass alone (src/rasp/passes/split_lookups.cpp): an
// element-wise s-op over two numerical inputs is fitted linear, reads one through a
// categorical copy, or has its inner element-wise s-ops given their own MLP.
#include <gtest/gtest.h>

#include "rasp_passes_support.hpp"

namespace {

using namespace rasp_passes_test;

// The fraction of the prefix whose token is `t` (numerical: an average of several keys).
SOp prefix_fraction(const char* t) {
  const SOp is_t = numerical(map(tokens(), [t](const Value& v) -> Value { return int64_t{to_string(v) == t}; }));
  return aggregate(select(indices(), indices(), Predicate::Le), is_t, int64_t{0}, Convention::Mean);
}

passes::Lookups split_of(const SOp& program) {
  return passes::split_lookups(passes::choose_encodings(passes::observe(input_of(program, abc(), 3), {})));
}

TEST(RaspPassSplitLookups, ASumOfTwoNumbersIsFittedLinear) {
  const SOp sum = numerical(prefix_fraction("a") + prefix_fraction("b"));
  const passes::Lookups l = split_of(sum);
  EXPECT_FALSE(l.resplit);
  ASSERT_EQ(l.linear.count(node(sum)), 1u);
  const auto& fits = l.linear.at(node(sum));
  ASSERT_EQ(fits.size(), 1u);  // no categorical inputs: one combination
  EXPECT_EQ(fits.begin()->second, (std::vector<double>{0, 1, 1}));  // 0 + 1 x + 1 y, integral
  EXPECT_TRUE(l.shadowed.empty());
}

TEST(RaspPassSplitLookups, AProductReadsOneInputThroughACategoricalCopy) {
  const SOp a = prefix_fraction("a"), b = prefix_fraction("b");
  const SOp product = numerical(a * b);
  const passes::Lookups l = split_of(product);
  EXPECT_FALSE(l.resplit);
  EXPECT_EQ(l.linear.count(node(product)), 0u);
  ASSERT_EQ(l.shadowed.count(node(product)), 1u);
  EXPECT_EQ(l.shadowed.at(node(product)).size(), 1u);  // the other is read as a number
}

TEST(RaspPassSplitLookups, AnInnerLookupOfANumberGetsItsOwnMlp) {
  const SOp a = prefix_fraction("a"), b = prefix_fraction("b");
  const SOp doubled = (a * 2).name("doubled");
  const SOp product = numerical(doubled * b);
  const passes::Lookups l = split_of(product);
  EXPECT_TRUE(l.resplit);
  EXPECT_EQ(l.next.materialized, std::set<const Node*>{node(doubled)});
  // the next round reads `doubled` (categorical, one MLP earlier) and b: nothing to split
  passes::Encoded again = passes::choose_encodings(passes::observe(input_of(product, abc(), 3), l.next));
  EXPECT_FALSE(again.features.at(node(doubled)).numerical);
  EXPECT_FALSE(passes::split_lookups(again).resplit);
}

}  // namespace
