// The weight compiler's fifth pass alone (src/rasp/passes/schedule.cpp): the sublayer
// after which each feature is in the residual (attention of layer l: 2l-1, its MLP: 2l).
#include <gtest/gtest.h>

#include "rasp_passes_support.hpp"
#include "rasp_test_support.hpp"

namespace {

using namespace rasp_passes_test;

TEST(RaspPassSchedule, ReverseTakesTwoLayers) {
  const auto [length, opp, reverse] = make_reverse_parts();
  const passes::Scheduled s = passes::schedule(readings_of(input_of(reverse, abc(), 4)));
  EXPECT_EQ(s.attention_at.at(node(length)), 1);
  EXPECT_EQ(s.features.at(node(length)).ready, 2);  // decoded (if read so) by the MLP after
  EXPECT_EQ(s.features.at(node(opp)).ready, 2);     // reads 1/(w+1) in layer 1's MLP
  EXPECT_EQ(s.attention_at.at(node(reverse)), 3);   // its query opp is ready after sublayer 2
  EXPECT_EQ(s.features.at(node(reverse)).ready, 3);
  for (const auto& [n, f] : s.features)
    if (n->kind == Kind::Tokens || n->kind == Kind::Indices) {
      EXPECT_EQ(f.ready, 0);
    }
  EXPECT_TRUE(s.shadows.empty());
}

TEST(RaspPassSchedule, ACategoricalCopyIsMadeByTheMlpAfterItsSOp) {
  auto fraction = [](const char* t) {
    const SOp is_t = numerical(map(tokens(), [t](const Value& v) -> Value { return int64_t{to_string(v) == t}; }));
    return aggregate(select(indices(), indices(), Predicate::Le), is_t, int64_t{0}, Convention::Mean);
  };
  const SOp a = fraction("a"), b = fraction("b");
  const SOp product = numerical(a * b);
  const passes::Scheduled s = passes::schedule(readings_of(input_of(product, abc(), 3)));
  ASSERT_EQ(s.shadows.size(), 1u);
  const auto& [copied, copy] = *s.shadows.begin();
  EXPECT_EQ(s.features.at(copied).ready, 1);  // the head averaging it
  EXPECT_EQ(copy.ready, 2);                   // the MLP after it
  EXPECT_FALSE(copy.numerical);
  EXPECT_EQ(s.features.at(node(product)).ready, 4);  // the next MLP that sees the copy
}

TEST(RaspPassSchedule, CausalRefusesASelectorLookingAhead) {
  CompileOptions causal;
  causal.causal = true;
  const std::string error = rasp_test::error_of(
      [&] { passes::schedule(readings_of(input_of(make_reverse(), abc(), 3, causal))); });
  EXPECT_NE(error.find("causal attention sees only earlier positions"), std::string::npos) << error;
}

}  // namespace
