// A big transform sum's backward gathers each transformed row's gradient from the heads
// that read it (TransformSum::row_begin / row_heads, exec/plan.hpp) instead of scattering
// each head's gradient onto its rows. Checked on a graph whose transformed rows pass
// kBackwardByRowMinEntries: the plan gathers, and every neuron gradient and parameter
// gradient equals, to the bit, the same plan's with the rows' index removed (the scatter),
// for a sum (the vector-register path at width 32) and an average (per-head scales), at a
// width with a compile-time row loop (32) and one without (20). A molecule-sized group
// keeps the scatter.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>

#include "exec/plan.hpp"
#include "lrnn/syntax.hpp"
#include "plan_pass.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

std::string graph_template(int width, const std::string& aggregation) {
  const std::string w = std::to_string(width);
  return "h(X) :- $w={" + w + ",4} x(Y), *edge(X, Y). [aggregation=" + aggregation + "]\n" +
         "h/1 {" + w + ",1} [activation=tanh]\n" +
         "o :- {1," + w + "} h(X). [aggregation=avg]\n";
}

// `nodes` nodes with 4 random features and 3 random out-edges each (repeats and self loops
// allowed, as a grounder meets them).
std::string random_graph(int nodes) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::uniform_int_distribution<int> node(1, nodes);
  std::ostringstream s;
  s << "<0.3> o :- ";
  for (int i = 1; i <= nodes; ++i) {
    s << "<[" << value(rng) << ", " << value(rng) << ", " << value(rng) << ", " << value(rng) << "]> x(" << i << "), ";
    for (int e = 0; e < 3; ++e) s << "edge(" << i << ", " << node(rng) << "), ";
  }
  s << "x(0).\n";
  return s.str();
}

struct Built {
  train::Engine engine;
  train::PreparedSet set;
  exec::Plan plan;

  Built(const std::string& text, const std::string& examples) : engine(parse_template(text, "t")) {
    set = engine.prepare(train::pair_samples(parse_examples(examples, "e"), {}));
    plan = exec::build_plan(engine.model(), {&set.networks[0]});
  }
};

// The groups whose backward gathers by rows.
size_t by_row_groups(const exec::Plan& plan) {
  size_t count = 0;
  for (const exec::RuleGroup& G : plan.rule_groups) count += !G.transform.row_begin.empty();
  return count;
}

void expect_gather_equals_scatter(int width, const std::string& aggregation) {
  SCOPED_TRACE(aggregation + " at width " + std::to_string(width));
  Built built(graph_template(width, aggregation), random_graph(4000));
  ASSERT_EQ(by_row_groups(built.plan), 1u);
  exec::Plan scattered = built.plan;
  for (exec::RuleGroup& G : scattered.rule_groups) {
    if (G.transform.row_begin.empty()) continue;
    // Every grounding once, under its own head, rows in order.
    const exec::TransformSum& t = G.transform;
    ASSERT_EQ(t.row_begin.size(), t.sources.size() + 1);
    ASSERT_EQ(t.row_heads.size(), t.row_of.size());
    EXPECT_EQ(t.row_begin.back(), G.n);
    G.transform.row_begin.clear();
    G.transform.row_heads.clear();
  }
  ASSERT_EQ(by_row_groups(scattered), 0u);
  const test::PlanPass gathered = test::run_plan_pass(built.plan, built.engine);
  const test::PlanPass scatter = test::run_plan_pass(scattered, built.engine);
  ASSERT_EQ(gathered.ws.grads.size(), scatter.ws.grads.size());
  size_t differing = 0, nonzero = 0;
  for (size_t i = 0; i < gathered.ws.grads.size(); ++i) {
    differing += gathered.ws.grads[i] != scatter.ws.grads[i];
    nonzero += gathered.ws.grads[i] != 0.0;
  }
  EXPECT_EQ(differing, 0u) << "neuron gradients that differ";
  EXPECT_GT(nonzero, gathered.ws.grads.size() / 4);
  ASSERT_EQ(gathered.param_grads.size(), scatter.param_grads.size());
  for (size_t i = 0; i < gathered.param_grads.size(); ++i)
    EXPECT_EQ(gathered.param_grads[i], scatter.param_grads[i]) << "parameter entry " << i;
}

TEST(BackwardByRow, SumGathersTheScattersBitsAtAVectorWidth) { expect_gather_equals_scatter(32, "sum"); }

TEST(BackwardByRow, AverageGathersTheScattersBits) { expect_gather_equals_scatter(32, "avg"); }

TEST(BackwardByRow, RuntimeWidthGathersTheScattersBits) {
  expect_gather_equals_scatter(20, "sum");
  expect_gather_equals_scatter(20, "avg");
}

TEST(BackwardByRow, SmallGroupsScatter) {
  Built built(graph_template(32, "sum"), random_graph(40));
  EXPECT_EQ(by_row_groups(built.plan), 0u);
}

}  // namespace
