// Every function kind has a canonical name that parses back to it and prints as itself:
// the tables are indexed by kind, so a kind added to an enum without a name, or a name
// pointing at the wrong kind, fails here (and -Werror=switch names switches that miss it).
#include <gtest/gtest.h>

#include "neural/functions.hpp"

namespace {

using namespace lrnn::neural;

lrnn::FunctionSpec spec(const std::string& name) {
  lrnn::FunctionSpec f;
  f.name = name;
  if (name == "reshape") f.args = {"1", "1"};                // reshape needs its target shape
  if (name == "slice") f.kwargs = {{"rows", "(0,1)"}};       // and slice its range
  return f;
}

TEST(FunctionKinds, EveryActivationKindRoundTrips) {
  const std::vector<std::string> names = activation_names();
  ASSERT_EQ(names.size(), static_cast<size_t>(kActivationKinds));
  for (int k = 0; k < kActivationKinds; ++k) {
    const Activation a = parse_activation(spec(names[k]), lrnn::Span{});
    EXPECT_EQ(static_cast<int>(a.kind), k) << names[k];
    EXPECT_EQ(parse_activation(spec(names[k]), lrnn::Span{}).kind, a.kind);
    // A 1x1 value keeps its shape under every activation but transpose/slice/reshape of it.
    EXPECT_EQ(activation_shape(a, Shape{1, 1}), (Shape{1, 1})) << names[k];
  }
}

TEST(FunctionKinds, EveryCombinationKindRoundTrips) {
  const std::vector<std::string> names = combination_names();
  ASSERT_EQ(names.size(), static_cast<size_t>(kCombinationKinds));
  for (int k = 0; k < kCombinationKinds; ++k) {
    const CombinationKind c = parse_combination(spec(names[k]), lrnn::Span{});
    EXPECT_EQ(static_cast<int>(c), k) << names[k];
    EXPECT_EQ(to_string(c), names[k]);
  }
}

TEST(FunctionKinds, EveryAggregationKindRoundTrips) {
  const std::vector<std::string> names = aggregation_names();
  ASSERT_EQ(names.size(), static_cast<size_t>(kAggregationKinds));
  for (int k = 0; k < kAggregationKinds; ++k) {
    const Aggregation a = parse_aggregation(spec(names[k]), lrnn::Span{});
    EXPECT_EQ(static_cast<int>(a.kind), k) << names[k];
    EXPECT_EQ(to_string(a), names[k]);
    const Shape expected = a.kind == AggregationKind::Count ? Shape{1, 1} : a.kind == AggregationKind::Concat ? Shape{6, 1} : Shape{3, 1};
    EXPECT_EQ(aggregation_shape(a.kind, Shape{3, 1}, 2), expected) << names[k];
  }
}

}  // namespace
