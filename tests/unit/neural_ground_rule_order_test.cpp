// neuralize orders ground rules by (rule, head, softmax group, grounding order) whatever
// order the GroundSample lists its rule sets in: the grounder's own order (by rule: each
// rule's range is sorted by head alone, where out of order) and the rule sets reversed
// (the general counting sorts) must give the same network.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "logic/grounder.hpp"
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

}  // namespace
