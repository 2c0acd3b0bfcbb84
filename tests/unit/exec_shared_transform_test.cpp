// A TransformSum group shares the transformed rows of an earlier group of its depth with
// the same weight when its inputs are among that group's (exec/plan.hpp, owns_transform):
// a GCN layer's neighbour rule, whose inputs are the nodes with a neighbour, sums its self
// rule's rows (every node) instead of gathering and transforming its own. Checked: which
// groups share; the shared plan holds fewer values; and its outputs and parameter gradients
// equal those of the per-grounding path (combination=max on the neighbour rules, the
// identity on one input) to 1e-12. Where the inputs are not among the earlier group's (the
// self rule restricted to marked nodes), the group keeps its own transform.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "exec/plan.hpp"
#include "lrnn/syntax.hpp"
#include "plan_pass.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

// SELF is the self rule's extra literal, NEIGHBOUR the neighbour rules' metadata tail.
std::string gcn(const std::string& self, const std::string& neighbour) {
  return "h(X) :- $w={3,2} x(X)" + self + ".\n"
         "h(X) :- $w={3,2} x(Y), *edge(X, Y). [aggregation=sum" + neighbour + "]\n"
         "h/1 {3,1} [activation=relu]\n"
         "g(X) :- $u={3,3} h(X).\n"
         "g(X) :- $u={3,3} h(Y), *edge(X, Y). [aggregation=sum" + neighbour + "]\n"
         "g/1 {3,1} [activation=tanh]\n"
         "o :- {1,3} g(X). [aggregation=avg]\n";
}

// Node 4 has no neighbour: the neighbour rules read nodes 1-3, the self rules 1-4.
const char* kExample =
    "<0.3> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[-0.75, 0.4]> x(3), <[0.2, 0.6]> x(4), "
    "marked(1), marked(4), edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2), edge(4, 1).\n";

struct Built {
  train::Engine engine;
  train::PreparedSet set;
  exec::Plan plan;

  explicit Built(const std::string& text) : engine(parse_template(text, "t")) {
    set = engine.prepare(train::pair_samples(parse_examples(kExample, "e"), {}));
    plan = exec::build_plan(engine.model(), {&set.networks[0]});
  }
};

// Whether each transform-sum group owns its transform, in rule group order.
std::vector<bool> owners(const exec::Plan& plan) {
  std::vector<bool> owns;
  for (const exec::RuleGroup& G : plan.rule_groups)
    if (G.transform.enabled) owns.push_back(G.transform.owns_transform);
  return owns;
}

void expect_same_pass(Built& a, Built& b) {
  b.engine.parameters() = a.engine.parameters();
  const test::PlanPass pa = test::run_plan_pass(a.plan, a.engine), pb = test::run_plan_pass(b.plan, b.engine);
  ASSERT_EQ(a.plan.outputs.size(), 1u);
  ASSERT_EQ(b.plan.outputs.size(), 1u);
  const double ya = pa.ws.values[a.plan.outputs[0].offset], yb = pb.ws.values[b.plan.outputs[0].offset];
  EXPECT_GT(std::abs(ya), 1e-3);
  EXPECT_NEAR(ya, yb, 1e-12);
  ASSERT_EQ(pa.param_grads.size(), pb.param_grads.size());
  size_t nonzero = 0;
  for (size_t i = 0; i < pa.param_grads.size(); ++i) {
    nonzero += pa.param_grads[i] != 0.0;
    EXPECT_NEAR(pa.param_grads[i], pb.param_grads[i], 1e-12) << "parameter entry " << i;
  }
  EXPECT_GT(nonzero, pa.param_grads.size() / 2);
}

TEST(SharedTransform, NeighbourRuleSumsTheSelfRulesRows) {
  Built shared(gcn("", "")), gathered(gcn("", ", combination=max"));
  // h's and g's self rules own their transforms, their neighbour rules share them; o's own.
  EXPECT_EQ(owners(shared.plan), (std::vector<bool>{true, false, true, false, true}));
  EXPECT_EQ(owners(gathered.plan), (std::vector<bool>{true, true, true}));
  EXPECT_LT(shared.plan.num_values, gathered.plan.num_values);
  expect_same_pass(shared, gathered);
}

TEST(SharedTransform, InputsOutsideTheEarlierGroupsKeepTheirOwnTransform) {
  // The self rule reads nodes 1 and 4 only; the neighbour rule reads 1-3: not among them.
  Built own(gcn(", *marked(X)", "")), gathered(gcn(", *marked(X)", ", combination=max"));
  EXPECT_EQ(owners(own.plan), (std::vector<bool>{true, true, true, false, true}));
  expect_same_pass(own, gathered);
}

}  // namespace
