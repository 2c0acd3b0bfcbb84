// The self-into-sum rewrite (rewrites/self_into_sum.cpp, docs/semantics.md "Plan
// rewrites"): atoms summing a node's own row and its neighbours' plain per-head sum (a GIN
// layer's h + sum_j h_j, written with an agg predicate as examples/graphs/gin_*.lrnn do)
// are that sum's rows, each head's own row summed first. Compared with the training plan
// without it and with the plain plan: outputs and parameter gradients to 1e-12 (float64);
// where it must not fire (the sum's atoms read elsewhere, an average, an activation on the
// atoms, inspection plans) it does not, and a node without neighbours does not stop it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exec/plan.hpp"
#include "graph_text.hpp"
#include "plan_pass.hpp"
#include "planned_networks.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

// Two GIN-0 layers over out-neighbours (every node has 3: every node heads the sums).
// `agg1_aggregation`, `in1_line` and `readout` vary it.
std::string gin(const std::string& agg1_aggregation = "sum", const std::string& in1_line = "",
                const std::string& readout = "") {
  const std::string edge = "edge(I, J)";
  return "agg1(I) :- x(J), *" + edge + ". [aggregation=" + agg1_aggregation + "]\n"
         "in1(I) :- x(I).\n"
         "in1(I) :- agg1(I).\n" + in1_line +
         "h1(I) :- {4,3} in1(I).\n"
         "h1/1 {4}\n"
         "h1/1 [activation=relu]\n"
         "agg2(I) :- h1(J), *" + edge + ". [aggregation=sum]\n"
         "in2(I) :- h1(I).\n"
         "in2(I) :- agg2(I).\n"
         "h2(I) :- {4,4} in2(I).\n"
         "h2/1 [activation=tanh]\n"
         "o(I) :- {1,4} h2(I).\n" + readout;
}

constexpr int kNodes = 200, kDegree = 3;

// The training plan's options (train/engine.cpp kTrainingPlan), with or without the rewrite.
exec::PlanOptions training(bool fold) {
  exec::PlanOptions o{.fact_gradients = false, .in_place_atoms = true, .alias_identity_rules = true,
                      .merge_shared_weight_rules = true, .share_head_rows = true};
  if (!fold) o.disabled_rewrites.set(exec::bit(exec::Rewrite::SelfIntoSum));
  return o;
}

uint32_t folds(const exec::Plan& plan) { return plan.rewrites[exec::bit(exec::Rewrite::SelfIntoSum)]; }

using Case = test::PlannedNetworks;

Case graph_case(const std::string& tmpl) {
  return Case(tmpl, test::graph_text(kNodes, kDegree), test::node_queries(kNodes));
}

// Whether the plan has an atom group of predicate `name`/1.
bool has_atom_group(const exec::Plan& plan, const train::Engine& engine, const std::string& name) {
  const uint32_t p = engine.model().predicate_index(name, 1);
  for (const exec::AtomGroup& A : plan.atom_groups)
    if (A.predicate == p) return true;
  return false;
}

TEST(SelfIntoSum, EachGinLayersOwnRowIsSummedIntoItsNeighbourSum) {
  const Case c = graph_case(gin());
  const exec::Plan plan = c.plan(training(true));
  EXPECT_EQ(folds(plan), 2u);
  EXPECT_FALSE(has_atom_group(plan, c.engine, "in1"));
  EXPECT_FALSE(has_atom_group(plan, c.engine, "in2"));
  // Each sum now holds a row per node more: its own.
  size_t widened = 0;
  for (const exec::RuleGroup& G : plan.rule_groups)
    if (G.direct.fused_sum && G.m == kNodes) {
      EXPECT_EQ(G.n, uint32_t(kNodes * (kDegree + 1)));
      ++widened;
    }
  EXPECT_EQ(widened, 2u);
  const exec::Plan without = c.plan(training(false));
  EXPECT_EQ(folds(without), 0u);
  EXPECT_TRUE(has_atom_group(without, c.engine, "in1"));
  EXPECT_LT(plan.num_values, without.num_values);
  test::expect_same_pass(plan, without, c.engine, 1e-3);
  test::expect_same_pass(plan, c.plan(test::plain_plan_options()), c.engine, 1e-3);
  // Inspection plans keep every atom's own value.
  EXPECT_EQ(folds(c.plan({})), 0u);
}

// Several graphs in one plan: the sums' heads are (sample, atom) pairs.
TEST(SelfIntoSum, ABatchOfGraphsFoldsAcrossItsSamples) {
  const Case c(gin(), test::graph_text(40, kDegree) + test::graph_text(25, kDegree),
               test::node_queries(40) + test::node_queries(25));
  ASSERT_EQ(c.set.networks.size(), 2u);
  const exec::Plan plan = c.plan(training(true));
  EXPECT_EQ(folds(plan), 2u);
  test::expect_same_pass(plan, c.plan(training(false)), c.engine, 1e-3);
}

// PyNeuraLogic's GIN writes both rules into the atoms' own predicate: the sum's heads are
// the atoms, so their other readers (here a second readout) do not matter.
TEST(SelfIntoSum, PyNeuraLogicsSpellingFoldsWhateverReadsTheAtoms) {
  const Case c = graph_case("l1(I) :- x(J), *edge(I, J). [aggregation=sum]\n"
                            "l1(I) :- x(I).\n"
                            "{4,3} h1(I) :- {3,3} l1(I). [activation=relu]\n"
                            "h1/1 [activation=relu]\n"
                            "l2(I) :- h1(J), *edge(I, J). [aggregation=sum]\n"
                            "l2(I) :- h1(I).\n"
                            "{4,4} h2(I) :- {4,4} l2(I). [activation=relu]\n"
                            "o(I) :- {1,4} h2(I).\n"
                            "o(I) :- {1,4} l2(I).\n");
  const exec::Plan plan = c.plan(training(true));
  EXPECT_EQ(folds(plan), 2u);
  EXPECT_FALSE(has_atom_group(plan, c.engine, "l2"));
  test::expect_same_pass(plan, c.plan(training(false)), c.engine, 1e-3);
  test::expect_same_pass(plan, c.plan(test::plain_plan_options()), c.engine, 1e-3);
}

TEST(SelfIntoSum, OnlyAPlainSumReadByTheAtomsAloneFolds) {
  struct Variant {
    std::string name, tmpl;
    uint32_t folds;
  };
  const std::vector<Variant> variants{
      // agg2 also read by a second readout: its sum keeps its own values, layer 1 folds.
      {"sum read elsewhere", gin("sum", "", "o(I) :- {1,4} agg2(I).\n"), 1},
      // An average's rows cannot take one more row: layer 2 folds.
      {"average", gin("avg"), 1},
      // in1's atoms apply a ReLU to their sum: layer 2 folds.
      {"activation on the atoms", gin("sum", "in1/1 [activation=relu]\n"), 1},
  };
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    const Case c = graph_case(v.tmpl);
    const exec::Plan plan = c.plan(training(true));
    EXPECT_EQ(folds(plan), v.folds);
    test::expect_same_pass(plan, c.plan(test::plain_plan_options()), c.engine, 1e-3);
  }
  // A node without neighbours (n4): its in atoms have one input, so they sit a depth lower
  // (they are x(n4) and h1(n4) themselves), and the other nodes' still fold.
  const Case lonely(gin(),
                    "g :- <[0.5, -1.0, 0.2]> x(n0), <[1.0, 0.25, -0.3]> x(n1), <[-0.75, 0.4, 0.9]> x(n2), "
                    "<[0.2, 0.6, -0.1]> x(n3), <[0.3, -0.2, 0.7]> x(n4), edge(n0, n1), edge(n0, n2), edge(n1, n2), "
                    "edge(n2, n3), edge(n3, n0), edge(n1, n3).\n",
                    test::node_queries(5));
  const exec::Plan plan = lonely.plan(training(true));
  EXPECT_EQ(folds(plan), 2u);
  test::expect_same_pass(plan, lonely.plan(test::plain_plan_options()), lonely.engine, 1e-3);
}

}  // namespace
