// The plan options a partitioned sample's part is planned with (train/ghost_exchange.hpp):
// rules that sum W x into the same atoms through one weight W planned as one group
// (PlanOptions::merge_shared_weight_rules), data facts from an offset on keeping their
// gradients (data_gradients_from), and a backward pass that pauses between layers
// (BackwardPauses). Each is compared with the plain plan: outputs, parameter gradients and
// the facts' gradients to 1e-12 (float64).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "api/dataset_impl.hpp"
#include "exec/plan.hpp"
#include "lrnn/lrnn.hpp"
#include "lrnn/syntax.hpp"
#include "graph_text.hpp"
#include "plan_pass.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

// Layer 1: a self rule (average over its one grounding) and an edge rule sharing $w1: they
// merge. Layer 2: self and edge rules with their own weights: they do not. Layer 3: two
// rules through $w3, one averaging over several groundings: they do not either.
const char* kTemplate =
    "h1(X) :- $w1={4,3} x(X).\n"
    "h1(X) :- $w1={4,3} x(Y), *edge(X, Y). [aggregation=sum]\n"
    "h1/1 {4,1} [activation=tanh]\n"
    "h2(X) :- $s2={4,4} h1(X).\n"
    "h2(X) :- $n2={4,4} h1(Y), *edge(X, Y). [aggregation=sum]\n"
    "h2/1 [activation=relu]\n"
    "h3(X) :- $w3={2,4} h2(X).\n"
    "h3(X) :- $w3={2,4} h2(Y), *edge(X, Y).\n"
    "o(X) :- {1,2} h3(X).\n";

constexpr int kNodes = 300, kDegree = 3;

struct Fixture {
  train::Engine engine{parse_template(kTemplate)};
  Dataset data = Dataset::from_text(test::graph_text(kNodes, kDegree), test::node_queries(kNodes));
  train::PreparedSet set = engine.prepare(data.impl().samples);
};

TEST(MergeSharedWeight, OnlyRulesThatSumThroughOneWeightMergeAndTheValuesStay) {
  Fixture f;
  exec::PlanOptions merged{.merge_shared_weight_rules = true};
  const exec::Plan plan = exec::build_plan(f.engine.model(), {&f.set.networks[0]}, merged);
  const exec::Plan plain = exec::build_plan(f.engine.model(), {&f.set.networks[0]});
  // Layer 1's two rules are one group (planned as the edge rule, which sums); layers 2 and
  // 3 keep theirs; the output rule is its own.
  EXPECT_EQ(plan.rule_groups.size(), plain.rule_groups.size() - 1);
  size_t layer1 = 0;
  for (const exec::RuleGroup& G : plan.rule_groups) layer1 += G.rule == 0 || G.rule == 1;
  EXPECT_EQ(layer1, 1u);
  for (const exec::RuleGroup& G : plan.rule_groups)
    if (G.rule == 1) EXPECT_EQ(G.n, uint32_t(kNodes * (kDegree + 1)));
  test::expect_same_pass(plan, plain, f.engine, 1e-3);
}

TEST(MergeSharedWeight, DataGradientsFromAnOffsetAreThoseOfTheFullPlan) {
  Fixture f;
  const neural::SampleNetwork& net = f.set.networks[0];
  // From the values of the 100th node's feature fact on: its gradient and all after it.
  const uint32_t from = net.fact_data_begin.at(100);
  exec::PlanOptions partial{.fact_gradients = false, .data_gradients_from = from};
  const exec::Plan plan = exec::build_plan(f.engine.model(), {&net}, partial);
  const exec::Plan full = exec::build_plan(f.engine.model(), {&net});
  const test::PlanPass a = test::run_plan_pass(plan, f.engine), b = test::run_plan_pass(full, f.engine);
  const size_t data = net.fact_data.size();
  double largest = 0;
  for (size_t v = from; v < data; ++v) {
    EXPECT_NEAR(a.ws.grads[v], b.ws.grads[v], 1e-12) << v;
    largest = std::max(largest, std::abs(b.ws.grads[v]));
  }
  EXPECT_GT(largest, 1e-3);
}

TEST(MergeSharedWeight, BackwardPausesAtDepthBoundariesChangeNothing) {
  Fixture f;
  const exec::Plan plan = exec::build_plan(f.engine.model(), {&f.set.networks[0]});
  // Depths 1..3 and the output's: depth_steps lists each depth's first step, then the end.
  ASSERT_GE(plan.depth_steps.size(), 4u);
  EXPECT_EQ(plan.depth_steps.front(), 0u);
  EXPECT_EQ(plan.depth_steps.back(), plan.steps.size());
  EXPECT_TRUE(std::is_sorted(plan.depth_steps.begin(), plan.depth_steps.end()));
  const test::PlanPass plain = test::run_plan_pass(plan, f.engine);

  test::PlanPass paused;
  paused.param_grads.assign(f.engine.parameters().size(), 0.0);
  exec::forward(plan, f.engine.parameters(), paused.ws);
  paused.ws.grads.assign(plan.num_values, 0.0);
  double seed = 1.0;
  for (const exec::OutputRef& o : plan.outputs)
    for (uint32_t k = 0; k < o.shape.size(); ++k) paused.ws.grads[o.offset + k] = (seed += 0.001);
  // Pauses after the steps above depths 2 and 1 (descending), where ghosts' gradients come
  // home: adding nothing there, the pass is the plain one; each pause sees the gradients of
  // the layers above it complete and those below it not yet computed.
  const std::vector<uint32_t> at = {plan.depth_steps[2], plan.depth_steps[1]};
  std::vector<uint32_t> called;
  std::vector<double> layer1_params_at_pause;
  const uint32_t w1 = f.engine.model().params.find("$w1");
  ASSERT_NE(w1, neural::kNoParam);
  const size_t w1_first = f.engine.model().params.info(w1).offset;
  const std::function<void(uint32_t)> pause = [&](uint32_t step) {
    called.push_back(step);
    layer1_params_at_pause.push_back(paused.param_grads[w1_first]);  // layer 1's weight
  };
  exec::backward(plan, exec::view_of(f.engine.parameters()), paused.ws, paused.param_grads, nullptr, nullptr,
                 exec::FloatGradients::Add, exec::GradientSlots::Keep, exec::BackwardPauses{at, &pause});
  EXPECT_EQ(called, at);
  ASSERT_EQ(layer1_params_at_pause.size(), 2u);
  EXPECT_EQ(layer1_params_at_pause[1], 0.0);  // layer 1's backward had not run at either pause
  for (size_t i = 0; i < plain.param_grads.size(); ++i) EXPECT_EQ(paused.param_grads[i], plain.param_grads[i]) << i;
  for (size_t v = 0; v < plan.num_values; ++v) EXPECT_EQ(paused.ws.grads[v], plain.ws.grads[v]) << v;
}

}  // namespace

// A merged group's per-head sums are read by its atoms only; with a ReLU (or identity) and
// an offset, the atoms are those rows (AtomGroup::in_input_rows): no slot of their own, and
// the pass is the plain plan's, twice over on one workspace (the offset and the ReLU
// applied in place must not pile up), with a vector offset and a scalar one. With tanh
// the atoms keep their own slot.
TEST(MergeSharedWeight, AtomsInTheirRuleGroupsSumRowsAreThePlainPlansAtoms) {
  for (const std::string offset : {"{4,1} ", "{1} "})
  for (const std::string activation : {"relu", "identity", "tanh"}) {
    std::string text = kTemplate;
    text.replace(text.find("activation=tanh"), 15, "activation=" + activation);
    text.replace(text.find("{4,1} [activation"), 6, offset);
    train::Engine engine{parse_template(text)};
    const Dataset data = Dataset::from_text(test::graph_text(kNodes, kDegree), test::node_queries(kNodes));
    const train::PreparedSet set = engine.prepare(data.impl().samples);
    const exec::Plan merged = exec::build_plan(engine.model(), {&set.networks[0]}, {.merge_shared_weight_rules = true});
    const exec::Plan in_rows = exec::build_plan(engine.model(), {&set.networks[0]},
                                                {.in_place_atoms = true, .merge_shared_weight_rules = true});
    const exec::Plan plain = exec::build_plan(engine.model(), {&set.networks[0]});
    size_t groups_in_rows = 0;
    for (const exec::AtomGroup& A : in_rows.atom_groups) groups_in_rows += A.in_input_rows;
    const std::string where = "activation " + activation + ", offset " + offset;
    if (activation == "tanh") {
      EXPECT_EQ(groups_in_rows, 0u) << where;
      continue;
    }
    EXPECT_EQ(groups_in_rows, 1u) << where;  // h1's atoms (h2's two rules do not merge)
    // h1's kNodes atoms of 4 values hold sums and values in the merged plan, nothing here.
    EXPECT_LE(in_rows.num_values + 2 * kNodes * 4, merged.num_values) << where;
    test::expect_same_pass(in_rows, plain, engine, 1e-3);
    test::PlanPass twice = test::run_plan_pass(in_rows, engine);
    exec::forward(in_rows, engine.parameters(), twice.ws);
    const test::PlanPass once = test::run_plan_pass(plain, engine);
    for (size_t o = 0; o < in_rows.outputs.size(); ++o)
      EXPECT_NEAR(twice.ws.values[in_rows.outputs[o].offset], once.ws.values[plain.outputs[o].offset], 1e-12)
          << where << " output " << o;
  }
}
