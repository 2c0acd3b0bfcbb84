// neuralize numbers softmax groups (groundings of one rule agreeing on its non-normalised
// variables) in order of first appearance over the ground rules, one count across rules.
// A one-variable key is looked up in a table by symbol id while the ids stay close
// together, and hashed once they spread (here: a string constant after small integers,
// ids far apart); two-variable keys are always hashed. Every path must give the numbering
// computed here directly from the GroundSample's bindings.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "logic/grounder.hpp"
#include "lrnn/syntax.hpp"
#include "neural/network.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

using GroundRuleKey = std::tuple<uint32_t, uint32_t, std::vector<uint32_t>>;  // rule, head, inputs (ground ids)

// The expected group of every ground rule of a softmax rule: keys numbered in rule-set and
// row order, one counter for all rules.
std::map<GroundRuleKey, uint32_t> expected_groups(const neural::TemplateModel& model, const logic::GroundSample& ground) {
  std::map<GroundRuleKey, uint32_t> expected;
  std::map<std::pair<uint32_t, std::vector<uint32_t>>, uint32_t> numbers;  // (rule, key) -> group
  for (const logic::GroundRuleSet& set : ground.rules) {
    const neural::RuleSpec& spec = model.rules[set.rule];
    if (!spec.softmax) continue;
    for (size_t g = 0; g < set.size(); ++g) {
      std::vector<uint32_t> key;
      for (uint32_t v : spec.softmax_group_vars) key.push_back(set.bindings[g * set.n_vars + v]);
      const auto it = numbers.emplace(std::make_pair(set.rule, key), static_cast<uint32_t>(numbers.size())).first;
      std::vector<uint32_t> inputs(set.inputs.begin() + g * set.n_inputs, set.inputs.begin() + (g + 1) * set.n_inputs);
      expected[{set.rule, set.head[g], inputs}] = it->second;
    }
  }
  return expected;
}

TEST(NeuralSoftmaxGroups, TableHashAndWideKeysNumberInOrderOfFirstAppearance) {
  train::Engine engine(parse_template(
      "w(I, J) :- k(J), q(I). [aggregation=softmax(J)]\n"
      "u(I, J) :- k(J), p(I). [aggregation=softmax(J)]\n"
      "t(I, K, J) :- k(J), q(I), p(K). [aggregation=softmax(J)]\n"));
  // q's ids: small integers widening the table down (3) and up (1000), then a string
  // constant (a table entry, an id far below the integers'): the keys move to the hash.
  const ExampleAst ex = parse_examples(
      "q(5), q(3), q(1000), q(2), q(a), q(7), k(0), k(1), k(2), p(4), p(x), p(6).")[0];
  const auto qs = parse_queries("w(I, J), u(I, J), t(I, K, J).")[0].queries;
  const logic::GroundSample ground = logic::ground(engine.program(), ex, qs);
  ASSERT_EQ(ground.rules.size(), 3u);
  const neural::SampleNetwork net = neural::neuralize(engine.model(), ex, ground);
  const auto expected = expected_groups(engine.model(), ground);
  ASSERT_EQ(expected.size(), size_t(6 * 3 + 3 * 3 + 6 * 3 * 3));
  ASSERT_EQ(net.num_ground_rules(), expected.size());
  std::vector<uint32_t> seen;
  for (size_t g = 0; g < net.num_ground_rules(); ++g) {
    std::vector<uint32_t> inputs;
    for (uint32_t i = net.inputs_begin[g]; i < net.inputs_begin[g + 1]; ++i) inputs.push_back(net.atom_ground_id[net.inputs[i]]);
    const auto it = expected.find({net.rule[g], net.atom_ground_id[net.head[g]], inputs});
    ASSERT_NE(it, expected.end()) << "ground rule " << g;
    EXPECT_EQ(net.softmax_group[g], it->second) << "ground rule " << g;
    seen.push_back(net.softmax_group[g]);
  }
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  EXPECT_EQ(seen.size(), size_t(6 + 3 + 6 * 3));  // groups: w per I, u per I, t per (I, K)
}

}  // namespace
