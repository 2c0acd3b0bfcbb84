// The shared-head-rows rewrite (rewrites/shared_head_rows.cpp, docs/semantics.md "Plan
// rewrites"): rules whose head weights map into the same atoms, which sum them, write one
// set of rows, the later rules adding their products (RuleGroup::adds_to_out), and the
// atoms are those rows (AtomGroup::in_input_rows). Compared with the plain plan and with
// the training plan without it: outputs and parameter gradients to 1e-12 (float64), and
// where it must not fire (an average or a max of the atoms' inputs, heads that differ,
// inspection plans) it does not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "api/dataset_impl.hpp"
#include "exec/plan.hpp"
#include "lrnn/lrnn.hpp"
#include "lrnn/syntax.hpp"
#include "graph_text.hpp"
#include "model_gradient_check.hpp"
#include "plan_pass.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

// Layer 1: GraphSAGE as PyNeuraLogic writes it (head weights; every node has 3 out-edges,
// so both rules have every node as a head): shared, the atoms (offset, ReLU) in place.
// Layer 2: a third rule for the two marked nodes alone: the first two share, the third
// keeps its rows; tanh atoms sum two inputs. Layer 3: atoms averaging their inputs:
// not shared. Layer 4: atoms taking the max: not shared. Output: one rule.
const char* kTemplate =
    "{4,3} h1(X) :- x(X).\n"
    "{4,3} h1(X) :- x(Y), *edge(X, Y). [aggregation=avg]\n"
    "h1/1 {4,1} [activation=relu]\n"
    "{4,4} h2(X) :- h1(X).\n"
    "{4,4} h2(X) :- h1(Y), *edge(X, Y). [aggregation=avg]\n"
    "{4,4} h2(X) :- h1(X), *mark(X).\n"
    "h2/1 [activation=tanh]\n"
    "{3,4} h3(X) :- h2(X).\n"
    "{3,4} h3(X) :- h2(Y), *edge(X, Y). [aggregation=avg]\n"
    "h3/1 [combination=avg]\n"
    "{3,3} h4(X) :- h3(X).\n"
    "{3,3} h4(X) :- h3(Y), *edge(X, Y). [aggregation=sum]\n"
    "h4/1 [combination=max]\n"
    "o(X) :- {1,3} h4(X).\n";

constexpr int kNodes = 300, kDegree = 3;

// The graph with two nodes marked (mark(n1), mark(n5)).
std::string marked(std::string graph) {
  return graph.substr(0, graph.rfind('.')) + ", mark(n1), mark(n5).\n";
}

struct Fixture {
  train::Engine engine{parse_template(kTemplate)};
  Dataset data = Dataset::from_text(marked(test::graph_text(kNodes, kDegree)), test::node_queries(kNodes));
  train::PreparedSet set = engine.prepare(data.impl().samples);
  const neural::SampleNetwork& net = set.networks[0];
};

// The training plan's options (train/engine.cpp kTrainingPlan), with or without the rewrite.
exec::PlanOptions training(bool share) {
  exec::PlanOptions o{.fact_gradients = false, .in_place_atoms = true, .alias_identity_rules = true,
                      .merge_shared_weight_rules = true, .share_head_rows = true};
  if (!share) o.disabled_rewrites.set(exec::bit(exec::Rewrite::SharedHeadRows));
  return o;
}

const exec::RuleGroup* group_of_rule(const exec::Plan& plan, uint32_t rule) {
  for (const exec::RuleGroup& G : plan.rule_groups)
    if (G.rule == rule) return &G;
  return nullptr;
}

TEST(SharedHeadRows, OnlyHeadWeightsIntoTheSameSummedAtomsShareAndTheValuesStay) {
  Fixture f;
  const exec::Plan plan = exec::build_plan(f.engine.model(), {&f.net}, training(true));
  // Layer 1's neighbour rule adds to the self rule's rows; so does layer 2's, not its third
  // rule (two heads); layers 3 and 4 keep their rows.
  EXPECT_EQ(plan.rewrites[exec::bit(exec::Rewrite::SharedHeadRows)], 2u);
  for (uint32_t r = 0; r < 10; ++r) {
    const exec::RuleGroup* G = group_of_rule(plan, r);
    ASSERT_NE(G, nullptr) << r;
    EXPECT_EQ(G->adds_to_out, r == 1 || r == 3) << r;
  }
  EXPECT_EQ(group_of_rule(plan, 4)->m, 2u);
  EXPECT_EQ(group_of_rule(plan, 1)->out_off, group_of_rule(plan, 0)->out_off);
  EXPECT_EQ(group_of_rule(plan, 3)->out_off, group_of_rule(plan, 2)->out_off);
  // h1's atoms are the shared rows (offset and ReLU applied there); h2's sum two inputs.
  size_t in_rows = 0;
  for (const exec::AtomGroup& A : plan.atom_groups) in_rows += A.in_input_rows;
  EXPECT_EQ(in_rows, 1u);
  const exec::Plan plain = exec::build_plan(f.engine.model(), {&f.net}, training(false));
  EXPECT_EQ(plain.rewrites[exec::bit(exec::Rewrite::SharedHeadRows)], 0u);
  EXPECT_LT(plan.num_values, plain.num_values);
  test::expect_same_pass(plan, plain, f.engine, 1e-3);
  // And against the plain plan with every rewrite off.
  exec::PlanOptions none;
  none.disabled_rewrites.set();
  test::expect_same_pass(plan, exec::build_plan(f.engine.model(), {&f.net}, none), f.engine, 1e-3);
}

// Several samples in one plan (a batch): the heads are (sample, atom) pairs, the rows shared
// across all of them.
TEST(SharedHeadRows, ABatchOfGraphsSharesAcrossItsSamples) {
  train::Engine engine{parse_template(kTemplate)};
  Dataset data = Dataset::from_text(marked(test::graph_text(40, 3)) + marked(test::graph_text(25, 3)),
                                    test::node_queries(40) + test::node_queries(25));
  train::PreparedSet set = engine.prepare(data.impl().samples);
  ASSERT_EQ(set.networks.size(), 2u);
  const std::vector<const neural::SampleNetwork*> nets{&set.networks[0], &set.networks[1]};
  const exec::Plan plan = exec::build_plan(engine.model(), nets, training(true));
  EXPECT_GE(plan.rewrites[exec::bit(exec::Rewrite::SharedHeadRows)], 1u);
  test::expect_same_pass(plan, exec::build_plan(engine.model(), nets, training(false)), engine, 1e-3);
}

// One rule with a head weight per layer (a GCN as PyNeuraLogic writes it): the atoms are
// its GEMM's rows (offset and ReLU in place), nothing shared.
TEST(SharedHeadRows, OneHeadWeightedRuleHasItsAtomsInItsRows) {
  train::Engine engine{parse_template("{4,3} h1(X) :- x(Y), *edge(X, Y). [aggregation=sum]\n"
                                      "h1/1 {4,1} [activation=relu]\n"
                                      "{4,4} h2(X) :- h1(Y), *edge(X, Y). [aggregation=avg]\n"
                                      "h2/1 [activation=relu]\n"
                                      "o(X) :- {1,4} h2(X).\n")};
  Dataset data = Dataset::from_text(test::graph_text(kNodes, kDegree), test::node_queries(kNodes));
  train::PreparedSet set = engine.prepare(data.impl().samples);
  const exec::Plan plan = exec::build_plan(engine.model(), {&set.networks[0]}, training(true));
  EXPECT_EQ(plan.rewrites[exec::bit(exec::Rewrite::SharedHeadRows)], 0u);
  size_t in_rows = 0;
  for (const exec::AtomGroup& A : plan.atom_groups) in_rows += A.in_input_rows;
  EXPECT_EQ(in_rows, 2u);
  exec::PlanOptions none;
  none.disabled_rewrites.set();
  test::expect_same_pass(plan, exec::build_plan(engine.model(), {&set.networks[0]}, none), engine, 1e-3);
}

// Input weights (no head weight): the self rule's transformed rows (its weight read by no
// other rule) take the neighbour rule's per-head sums, or, summed first, its GEMM over the
// heads' summed inputs; the atoms are those rows. Marked nodes only, so that the neighbours
// outnumber the heads (sum first).
TEST(SharedHeadRows, TransformSumsAddToTheSelfRulesTransformedRows) {
  std::string marks, queries = "g :- ";
  for (int n = 0; n < kNodes; n += 7) {
    marks += ", mark(n" + std::to_string(n) + ")";
    queries += std::string(n ? ", " : "") + (n % 2 ? "1.0" : "0.0") + " o(n" + std::to_string(n) + ")";
  }
  const std::string graph = test::graph_text(kNodes, kDegree);
  Dataset data = Dataset::from_text(graph.substr(0, graph.rfind('.')) + marks + ".\n", queries + ".\n");
  exec::PlanOptions none;
  none.disabled_rewrites.set();
  // Rows of 4 values (summed at a width known at run time) and of 8 (at compile time).
  for (const std::string w : {"4", "8"}) {
    train::Engine engine{parse_template("h1(X) :- $s1={" + w + ",3} x(X), *mark(X).\n"
                                        "h1(X) :- $n1={" + w + ",3} x(Y), *edge(X, Y), *mark(X). [aggregation=sum]\n"
                                        "h1/1 {" + w + ",1} [activation=relu]\n"
                                        "o(X) :- {1," + w + "} h1(X).\n")};
    train::PreparedSet set = engine.prepare(data.impl().samples);
    const neural::SampleNetwork& net = set.networks[0];
    const exec::Plan plain = exec::build_plan(engine.model(), {&net}, none);
    for (const bool sum_first : {false, true}) {
      SCOPED_TRACE(std::string(sum_first ? "summed first" : "per-head sums") + ", width " + w);
      exec::PlanOptions options = training(true);
      options.transform_sum_first = sum_first;
      options.transform_sum_first_ratio = 1;  // (69 distinct neighbours of 43 heads)
      const exec::Plan plan = exec::build_plan(engine.model(), {&net}, options);
      EXPECT_EQ(plan.rewrites[exec::bit(exec::Rewrite::SharedHeadRows)], 1u);
      const exec::RuleGroup *self = group_of_rule(plan, 0), *nbr = group_of_rule(plan, 1);
      ASSERT_TRUE(self && nbr);
      EXPECT_TRUE(self->transform.rows_are_heads);
      EXPECT_TRUE(nbr->adds_to_out);
      EXPECT_EQ(nbr->transform.sum_first, sum_first);
      EXPECT_EQ(nbr->agg_off, self->transform.t_off);
      size_t in_rows = 0;
      for (const exec::AtomGroup& A : plan.atom_groups) in_rows += A.in_input_rows;
      EXPECT_EQ(in_rows, 1u);
      test::expect_same_pass(plan, plain, engine, 1e-3);
    }
  }
  // A rule of another predicate reading $s1 at the same depth shares the self rule's
  // transformed rows (TransformSum::owns_transform): they stay the self rule's alone to
  // read, nothing is added to them and the atoms are not planned in them.
  train::Engine reread{parse_template("h1(X) :- $s1={4,3} x(X), *mark(X).\n"
                                      "h1(X) :- $n1={4,3} x(Y), *edge(X, Y), *mark(X). [aggregation=sum]\n"
                                      "h1/1 {4,1} [activation=relu]\n"
                                      "g1(X) :- $s1={4,3} x(X), *mark(X).\n"
                                      "o(X) :- {1,4} h1(X).\n"
                                      "o(X) :- {1,4} g1(X).\n")};
  train::PreparedSet reread_set = reread.prepare(data.impl().samples);
  const exec::Plan plan = exec::build_plan(reread.model(), {&reread_set.networks[0]}, training(true));
  EXPECT_EQ(plan.rewrites[exec::bit(exec::Rewrite::SharedHeadRows)], 0u);
  size_t shared_transforms = 0;
  for (const exec::RuleGroup& G : plan.rule_groups) shared_transforms += G.transform.enabled && !G.transform.owns_transform;
  EXPECT_EQ(shared_transforms, 1u);
  test::expect_same_pass(plan, exec::build_plan(reread.model(), {&reread_set.networks[0]}, none), reread, 1e-3);
}

// Inspection plans (the default options) keep every rule's own rows.
TEST(SharedHeadRows, InspectionPlansKeepEachRulesRows) {
  Fixture f;
  const exec::Plan plan = exec::build_plan(f.engine.model(), {&f.net});
  EXPECT_EQ(plan.rewrites[exec::bit(exec::Rewrite::SharedHeadRows)], 0u);
  for (const exec::RuleGroup& G : plan.rule_groups) EXPECT_FALSE(G.adds_to_out);
}

// Training with the rewrite: GraphSAGE spelled with head weights (the GEMMs add into one
// set of rows) and with input weights (the neighbour rule's per-head sums add into the self
// rule's transformed rows), against the same function with each rule into a predicate of
// its own and the layer summing those (nothing shared), from the same weights: the losses
// and weights after a few epochs of Adam agree to the order of additions, in float64 and
// float32, and with h1 batch-normalised over batches of two graphs (the normalisation reads
// the shared rows).
enum class Spelling { HeadWeights, InputWeights, Apart };

std::string sage(Spelling spelling, bool batch_norm) {
  std::string t;
  for (const char* layer : {"1", "2"}) {
    const std::string h = std::string("h") + layer, in = layer[0] == '1' ? "x" : "h1";
    const std::string dims = layer[0] == '1' ? "={4,3}" : "={4,4}";
    const std::string self = "$s" + std::string(layer) + dims, nbr = "$n" + std::string(layer) + dims;
    switch (spelling) {
      case Spelling::HeadWeights:
        t += self + " " + h + "(X) :- " + in + "(X).\n" + nbr + " " + h + "(X) :- " + in +
             "(Y), *edge(X, Y). [aggregation=avg]\n";
        break;
      case Spelling::InputWeights:
        t += h + "(X) :- " + self + " " + in + "(X).\n" + h + "(X) :- " + nbr + " " + in +
             "(Y), *edge(X, Y). [aggregation=avg]\n";
        break;
      case Spelling::Apart:
        t += h + "s(X) :- " + self + " " + in + "(X).\n" + h + "n(X) :- " + nbr + " " + in +
             "(Y), *edge(X, Y). [aggregation=avg]\n" + h + "(X) :- " + h + "s(X).\n" + h + "(X) :- " + h + "n(X).\n";
        break;
    }
    t += layer[0] == '1' ? "h1/1 $b1={4,1} [activation=relu]\n" + std::string(batch_norm ? "h1/1 [normalization=batch]\n" : "")
                         : "h2/1 [activation=tanh]\n";
  }
  return t + "o(X) :- $o={1,4} h2(X).\n";
}

TEST(SharedHeadRows, TrainingMatchesTheSameFunctionPlannedWithoutIt) {
  const Dataset data = Dataset::from_text(test::graph_text(kNodes, kDegree) + test::graph_text(120, 2),
                                          test::node_queries(kNodes) + test::node_queries(120));
  for (const bool batch_norm : {false, true}) {
    for (const Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
      SCOPED_TRACE(std::string(batch_norm ? "batch norm, " : "") + (dtype == Dtype::Float64 ? "float64" : "float32"));
      Settings s;
      s.seed = 5;
      s.epochs = 4;
      s.lr = 0.05;
      s.batch_size = 2;
      s.dtype = dtype;
      for (const Spelling spelling : {Spelling::HeadWeights, Spelling::InputWeights}) {
        SCOPED_TRACE(spelling == Spelling::HeadWeights ? "head weights" : "input weights");
        Model shared(Template::from_string(sage(spelling, batch_norm)), s),
            plain(Template::from_string(sage(Spelling::Apart, batch_norm)), s);
        lrnn_test::copy_parameters(shared, plain);
        const std::vector<Parameter> before = shared.parameters();
        const double loss_shared = shared.train(data).history.back().train.loss;
        const double loss_plain = plain.train(data).history.back().train.loss;
        const double tolerance = dtype == Dtype::Float64 ? 1e-12 : 1e-5;
        EXPECT_NEAR(loss_shared, loss_plain, tolerance * std::abs(loss_plain));
        const std::vector<Parameter> a = shared.parameters(), b = plain.parameters();
        ASSERT_EQ(a.size(), b.size());
        double moved = 0;
        for (size_t i = 0; i < a.size(); ++i) {
          ASSERT_EQ(a[i].name, b[i].name);
          for (size_t e = 0; e < a[i].values.size(); ++e) {
            EXPECT_NEAR(a[i].values[e], b[i].values[e], tolerance * std::max(1.0, std::abs(b[i].values[e])))
                << a[i].name << "[" << e << "]";
            moved = std::max(moved, std::abs(a[i].values[e] - before[i].values[e]));
          }
        }
        EXPECT_GT(moved, 1e-3);
      }
    }
  }
}

}  // namespace
