// The weight-after-readout rewrite (rewrites/weight_after_readout.cpp, docs/semantics.md
// "Plan rewrites"): a GCN's last layer without activation, read out by a sum or average,
// has its head weight applied after the readout (W avg(s) for avg(W s)). Compared with the
// training plan without it and with the plain plan: outputs and parameter gradients to
// 1e-12 (float64), on generated graphs, batches of graphs and MUTAG's graphs under
// PyNeuraLogic's benchmark GCN and GraphSAGE (whose layer's two weights both move) in both
// spellings; where it must not fire (an activation or
// offset on the layer's atoms, another reader of them, a query on them, a weight that is not
// square, a max readout, inspection plans) it does not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "exec/plan.hpp"
#include "graph_text.hpp"
#include "lrnn/datasets.hpp"
#include "lrnn/syntax.hpp"
#include "plan_pass.hpp"
#include "planned_networks.hpp"
#include "shared_datasets.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

// Two GCN layers over in-neighbours, read out by `readout` (an aggregation) into one
// graph-level atom under `readout_weight`; `extra` adds lines.
std::string gcn(const std::string& readout = "avg", const std::string& extra = "",
                const std::string& l2_weight = "{4,4}", const std::string& readout_weight = "{1,4}",
                const std::string& l2_input_weight = "") {
  return "{4,3} l1(X) :- x(Y), *edge(Y, X). [aggregation=sum]\n"
         "l1/1 [activation=relu]\n" +
         l2_weight + " l2(X) :- " + l2_input_weight + "l1(Y), *edge(Y, X). [aggregation=sum]\n" + readout_weight +
         " predict :- l2(X). [aggregation=" + readout + "]\n" + extra;
}

// The training plan's options (train/engine.cpp kTrainingPlan), with or without the rewrite.
exec::PlanOptions training(bool move) {
  exec::PlanOptions o = train::kTrainingPlan;
  if (!move) o.disabled_rewrites.set(exec::bit(exec::Rewrite::WeightAfterReadout));
  return o;
}

uint32_t moved(const exec::Plan& plan) { return plan.rewrites[exec::bit(exec::Rewrite::WeightAfterReadout)]; }

using Case = test::PlannedNetworks;

Case graph_case(const std::string& tmpl, int nodes = 60, const std::string& query = "1.0 predict") {
  return Case(tmpl, test::graph_text(nodes, 3), "g :- " + query + ".\n");
}

void expect_same_as_unmoved(const Case& c, const exec::Plan& plan) {
  test::expect_same_pass(plan, c.plan(training(false)), c.engine, 1e-3);
  test::expect_same_pass(plan, c.plan(test::plain_plan_options()), c.engine, 1e-3);
}

TEST(WeightAfterReadout, AnAveragedLayersWeightIsAppliedOnceAfterTheReadout) {
  const Case c = graph_case(gcn());
  const exec::Plan plan = c.plan(training(true));
  ASSERT_EQ(moved(plan), 1u);
  // The readout carries the weight and reads through l2's neighbour sums: its members are
  // l1's rows, each once with its coefficient (in-edges / nodes); l2's group has no member.
  size_t carriers = 0, emptied = 0;
  for (const exec::RuleGroup& G : plan.rule_groups) {
    if (G.readout_weight != neural::kNoParam) {
      ++carriers;
      EXPECT_EQ(G.m, 1u);
      EXPECT_NE(G.head_weight, neural::kNoParam);
      EXPECT_EQ(G.readout_scale.size(), G.n);
      EXPECT_TRUE(G.readout_scale2.empty());
      EXPECT_TRUE(std::is_sorted(G.inputs[0].src.begin(), G.inputs[0].src.end()));
      EXPECT_EQ(std::adjacent_find(G.inputs[0].src.begin(), G.inputs[0].src.end()), G.inputs[0].src.end());
    }
    if (G.m == 0 && G.n == 0) ++emptied;
  }
  EXPECT_EQ(carriers, 1u);
  // l2's group, left with no member, computes nothing: it is not among the steps
  // (exec/plan_drop_idle.cpp).
  EXPECT_EQ(emptied, 0u);
  EXPECT_EQ(plan.steps.size() + 1, c.plan(training(false)).steps.size());
  expect_same_as_unmoved(c, plan);
  // With a weight on l2's input too, its rows are a transform's per-head sums: the weight
  // moves, and the readout sums those rows.
  const Case weighted = graph_case(gcn("avg", "", "{4,4}", "{1,4}", "{4,4} "));
  const exec::Plan through_rows = weighted.plan(training(true));
  EXPECT_EQ(moved(through_rows), 1u);
  for (const exec::RuleGroup& G : through_rows.rule_groups) EXPECT_TRUE(G.readout_scale.empty());
  expect_same_as_unmoved(weighted, through_rows);
  // Inspection plans keep every atom's value.
  EXPECT_EQ(moved(c.plan({})), 0u);
}

TEST(WeightAfterReadout, ASumReadoutAndAReadoutWithoutWeightMoveToo) {
  const Case sum = graph_case(gcn("sum"));
  const exec::Plan summed = sum.plan(training(true));
  EXPECT_EQ(moved(summed), 1u);
  expect_same_as_unmoved(sum, summed);
  // Without a weight of its own the readout's rows are the weighted ones: a 4-vector output.
  const Case bare = graph_case(gcn("avg", "", "{4,4}", ""));
  const exec::Plan unweighted = bare.plan(training(true));
  EXPECT_EQ(moved(unweighted), 1u);
  ASSERT_EQ(unweighted.outputs.size(), 1u);
  EXPECT_EQ(unweighted.outputs[0].shape.size(), 4u);
  const exec::Plan reference = bare.plan(training(false));
  const test::PlanPass a = test::run_plan_pass(unweighted, bare.engine);
  const test::PlanPass b = test::run_plan_pass(reference, bare.engine);
  for (uint32_t k = 0; k < 4; ++k)
    EXPECT_NEAR(a.ws.values[unweighted.outputs[0].offset + k], b.ws.values[reference.outputs[0].offset + k], 1e-12);
  expect_same_as_unmoved(bare, unweighted);
}

// A batch of graphs in one plan: one readout head per graph, each the average of its own
// nodes' sums.
TEST(WeightAfterReadout, ABatchOfGraphsMovesOnceForAllItsReadouts) {
  const Case c(gcn(), test::graph_text(40, 3) + test::graph_text(25, 2) + test::graph_text(7, 1),
               "g :- 1.0 predict.\ng :- 0.0 predict.\ng :- 1.0 predict.\n");
  ASSERT_EQ(c.set.networks.size(), 3u);
  const exec::Plan plan = c.plan(training(true));
  EXPECT_EQ(moved(plan), 1u);
  expect_same_as_unmoved(c, plan);
}

// A GraphSAGE layer as PyNeuraLogic writes it, W1 x + W2 avg(x_nbr) into one set of rows
// (shared_head_rows): both weights move, each over its own rows' averages.
std::string graphsage(const std::string& third_rule = "", const std::string& neighbour_input_weight = "") {
  return "{4,3} l1(X) :- x(X).\n"
         "{4,3} l1(X) :- x(Y), *edge(Y, X). [aggregation=avg]\n"
         "l1/1 [activation=relu]\n"
         "{4,4} l2(X) :- l1(X).\n"
         "{4,4} l2(X) :- " + neighbour_input_weight + "l1(Y), *edge(Y, X). [aggregation=avg]\n" +
         third_rule + "{1,4} predict :- l2(X). [aggregation=avg]\n";
}

TEST(WeightAfterReadout, BothWeightsOfAGraphSageLayerMove) {
  const Case c = graph_case(graphsage());
  const exec::Plan plan = c.plan(training(true));
  ASSERT_EQ(moved(plan), 1u);
  size_t carriers = 0;
  for (const exec::RuleGroup& G : plan.rule_groups)
    if (G.readout_weight != neural::kNoParam) {
      ++carriers;
      EXPECT_NE(G.readout_weight2, neural::kNoParam);
      // Both aggregates over l1's rows: the self rule's (1 / nodes each) and the neighbour
      // averages' read through.
      EXPECT_EQ(G.readout_scale.size(), G.n);
      EXPECT_EQ(G.readout_scale2.size(), G.n);
    }
  EXPECT_EQ(carriers, 1u);
  expect_same_as_unmoved(c, plan);
  // A weight on the neighbours' input too: their rows are a transform's, read where they lie
  // (the second aggregates over the same members' rows, RuleGroup::readout_shift).
  const Case weighted = graph_case(graphsage("", "{4,4} "));
  const exec::Plan shifted = weighted.plan(training(true));
  EXPECT_EQ(moved(shifted), 1u);
  for (const exec::RuleGroup& G : shifted.rule_groups)
    if (G.readout_weight2 != neural::kNoParam) EXPECT_TRUE(G.readout_scale.empty());
  expect_same_as_unmoved(weighted, shifted);
  const Case batch(graphsage(), test::graph_text(40, 3) + test::graph_text(9, 1),
                   "g :- 1.0 predict.\ng :- 0.0 predict.\n");
  const exec::Plan batched = batch.plan(training(true));
  EXPECT_EQ(moved(batched), 1u);
  expect_same_as_unmoved(batch, batched);
  // A third rule adding to the rows: not moved, and the same function.
  const Case three = graph_case(graphsage("{4,4} l2(X) :- l1(Y), *edge(X, Y). [aggregation=sum]\n"));
  const exec::Plan thrice = three.plan(training(true));
  EXPECT_EQ(moved(thrice), 0u);
  expect_same_as_unmoved(three, thrice);
}

// The steps a plan keeps once the groups left idle are dropped (exec/plan_drop_idle.cpp):
// every rule step does something, each depth's steps and the batch-normalised atom groups
// are still found where the plan says, and the values whose gradients a clearing backward
// zeroes are those of the plan before (the same first value, the same count).
void expect_idle_groups_dropped(const exec::Plan& plan, const exec::Plan& unmoved, size_t dropped) {
  EXPECT_EQ(plan.steps.size() + dropped, unmoved.steps.size());
  EXPECT_EQ(plan.rule_groups.size() + dropped, unmoved.rule_groups.size());
  for (const exec::Step& step : plan.steps) {
    if (step.atom) continue;
    ASSERT_LT(step.index, plan.rule_groups.size());
    const exec::RuleGroup& G = plan.rule_groups[step.index];
    EXPECT_TRUE(G.m > 0 || G.readout_weight != neural::kNoParam);
    EXPECT_FALSE(G.direct.input_rows && G.head_weight == neural::kNoParam && !G.adds_to_out);
  }
  ASSERT_EQ(plan.depth_steps.size(), unmoved.depth_steps.size());
  EXPECT_TRUE(std::is_sorted(plan.depth_steps.begin(), plan.depth_steps.end()));
  EXPECT_EQ(plan.depth_steps.back(), plan.steps.size());
  ASSERT_EQ(plan.norm_steps.size(), unmoved.norm_steps.size());
  for (uint32_t k : plan.norm_steps) {
    ASSERT_LT(k, plan.steps.size());
    ASSERT_TRUE(plan.steps[k].atom);
    EXPECT_NE(plan.atom_groups[plan.steps[k].index].norm, neural::kNoParam);
  }
  ASSERT_EQ(plan.step_values.size(), plan.steps.size());
  const auto cleared = [](const exec::Plan& p) {
    size_t total = 0;
    for (const auto& [begin, end] : p.step_values) total += end - begin;
    return total;
  };
  EXPECT_EQ(plan.step_values[0].first, unmoved.step_values[0].first);
  EXPECT_EQ(cleared(plan), cleared(unmoved));
}

TEST(WeightAfterReadout, GroupsLeftIdleAreNotAmongTheSteps) {
  // GraphSAGE's l2: the self rule reads l1's rows in place with no weight left, and the
  // neighbour averages are read through.
  const Case sage = graph_case(graphsage());
  const exec::Plan plan = sage.plan(training(true));
  expect_idle_groups_dropped(plan, sage.plan(training(false)), 2);
  const test::ClearingPass f64 = test::run_clearing_pass<double>(plan, sage.engine);
  const test::ClearingPass f32 = test::run_clearing_pass<float>(plan, sage.engine);
  EXPECT_TRUE(f64.grads_left_zero && f32.grads_left_zero);
  expect_same_as_unmoved(sage, plan);
  // With batch normalisation on l1, whose atom group's step lies before the dropped ones,
  // and on the readout's, after them: both steps are still found.
  const Case normed = graph_case(graphsage("l1/1 {4}\nl1/1 [normalization=batch]\npredict/0 {1}\n"
                                           "predict/0 [normalization=batch]\n"));
  const exec::Plan normed_plan = normed.plan(training(true));
  ASSERT_EQ(moved(normed_plan), 1u);
  ASSERT_EQ(normed_plan.norm_steps.size(), 2u);
  expect_idle_groups_dropped(normed_plan, normed.plan(training(false)), 2);
  expect_same_as_unmoved(normed, normed_plan);
}

// Two linear layers in a row: l2's weight moves after l3's neighbour sums (W3 W2 sum s for
// W3 sum W2 s), which read through l2's sums only where that is fewer rows (neighbours of
// neighbours); l3's weight, now carrying W2, stays. The same function either way.
TEST(WeightAfterReadout, ADeeperLinearStackComputesTheSameFunction) {
  const Case c = graph_case(gcn("avg", "{4,4} l3(X) :- l2(Y), *edge(Y, X). [aggregation=sum]\n"
                                       "{1,4} deep :- l3(X). [aggregation=avg]\n"),
                            60, "1.0 deep");
  const exec::Plan plan = c.plan(training(true));
  EXPECT_EQ(moved(plan), 1u);
  expect_same_as_unmoved(c, plan);
}

TEST(WeightAfterReadout, DoesNotMoveWhereTheLayersRowsAreNotOnlyAverages) {
  // The atoms' activation, or offset, applies to W s: their rows are not a linear function's.
  EXPECT_EQ(moved(graph_case(gcn("avg", "l2/1 [activation=tanh]\n")).plan(training(true))), 0u);
  EXPECT_EQ(moved(graph_case(gcn("avg", "l2/1 {4}\n")).plan(training(true))), 0u);
  // Another rule reads l2's atoms, or a query does.
  EXPECT_EQ(moved(graph_case(gcn("avg", "{1,4} other :- l2(X). [aggregation=max]\n"), 60,
                             "1.0 predict, 0.0 other")
                      .plan(training(true))),
            0u);
  EXPECT_EQ(moved(graph_case(gcn(), 60, "1.0 predict, 0.0 l2(n3)").plan(training(true))), 0u);
  // A weight that changes the rows' size, and a readout that is not a sum or average.
  EXPECT_EQ(moved(graph_case(gcn("avg", "", "{5,4}", "{1,5}")).plan(training(true))), 0u);
  EXPECT_EQ(moved(graph_case(gcn("max")).plan(training(true))), 0u);
  // Each still computes what the plain plan does.
  const Case read_twice = graph_case(gcn("avg", "{1,4} other :- l2(X). [aggregation=max]\n"), 60,
                                     "1.0 predict, 0.0 other");
  test::expect_same_pass(read_twice.plan(training(true)), read_twice.plan(test::plain_plan_options()),
                         read_twice.engine, 1e-3);
}

// PyNeuraLogic's benchmark GCN and GraphSAGE (bench/pyneuralogic_table.py) on MUTAG's first
// graphs, each planned alone as training plans it, in lrnn's spelling and PyNeuraLogic's
// `<0.0> edge`.
TEST(WeightAfterReadout, MutagGraphsUnderPyNeuraLogicsBenchmarkGcn) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  TuData mutag = read_tu(std::string(LRNN_DATASETS_DIR) + "/tu/MUTAG");
  mutag.examples.resize(12);
  mutag.queries.resize(12);
  std::vector<std::string> templates;
  for (const std::string edge : {"*edge(Y, X)", "<0.0> edge(Y, X)"}) {
    templates.push_back("atom_embed(X) :- {10,7} x(X).\n"
                        "{10,10} l1(X) :- atom_embed(Y), " + edge + ". [aggregation=sum]\n"
                        "{10,10} l2(X) :- l1(Y), " + edge + ". [aggregation=sum]\n"
                        "l1/1 [activation=relu]\n"
                        "{1,10} predict :- l2(X). [aggregation=avg]\n"
                        "predict/0 {1}\n");
    templates.push_back("atom_embed(X) :- {10,7} x(X).\n"
                        "{10,10} l1(X) :- atom_embed(X).\n"
                        "{10,10} l1(X) :- atom_embed(Y), " + edge + ". [aggregation=avg]\n"
                        "{10,10} l2(X) :- l1(X).\n"
                        "{10,10} l2(X) :- l1(Y), " + edge + ". [aggregation=avg]\n"
                        "l1/1 [activation=relu]\n"
                        "{1,10} predict :- l2(X). [aggregation=avg]\n"
                        "predict/0 {1}\n");
  }
  for (const std::string& text : templates) {
    const bool lrnn_spelling = text.find("*edge") != std::string::npos;
    train::Engine engine(parse_template(text, "t"));
    const train::PreparedSet set = engine.prepare(train::pair_samples(mutag.examples, mutag.queries));
    for (const neural::SampleNetwork& net : set.networks) {
      const exec::Plan plan = exec::build_plan(engine.model(), {&net}, training(true));
      EXPECT_EQ(moved(plan), 1u) << text;
      // As training runs it, in float32 too: a clearing backward leaves every gradient 0.
      const exec::Plan unmoved = exec::build_plan(engine.model(), {&net}, training(false));
      const test::ClearingPass f32 = test::run_clearing_pass<float>(plan, engine);
      const test::ClearingPass f32_unmoved = test::run_clearing_pass<float>(unmoved, engine);
      const test::ClearingPass f64 = test::run_clearing_pass<double>(plan, engine);
      EXPECT_TRUE(f32.grads_left_zero && f64.grads_left_zero);
      ASSERT_EQ(f32.outputs.size(), 1u);
      EXPECT_NEAR(f32.outputs[0], f32_unmoved.outputs[0], 1e-5);
      EXPECT_NEAR(f32.outputs[0], f64.outputs[0], 1e-5);
      for (size_t i = 0; i < f32.param_grads.size(); ++i)
        EXPECT_NEAR(f32.param_grads[i], f32_unmoved.param_grads[i], 1e-5 * std::max(1.0, std::abs(f64.param_grads[i])));
      test::expect_same_pass(plan, exec::build_plan(engine.model(), {&net}, training(false)), engine, 1e-4);
      // (The plain plan also differentiates the fixed <0.0> weights, which fold_zero_literals
      // leaves out: only lrnn's spelling compares with it.)
      if (lrnn_spelling)
        test::expect_same_pass(plan, exec::build_plan(engine.model(), {&net}, test::plain_plan_options()), engine,
                               1e-4);
    }
  }
}

}  // namespace
