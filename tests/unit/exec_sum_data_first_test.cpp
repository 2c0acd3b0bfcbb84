// A big rule group over data facts sums its inputs first (TransformSum::sum_first) in a
// training plan, instead of sharing the self rule's transformed rows
// (rewrites/transform_sum.cpp, kSumDataFirstMin): on a 12000-node graph with 72000 edges
// the GCN layer's neighbour rule does, the self rule keeps its rows, and the outputs and
// parameter gradients equal those of the plan without the rewrite (1e-12, float64). With
// fact gradients (the default options) the inputs need gradients and nothing changes.
// Those sums depend on the data alone (TransformSum::constant_sums): a workspace that ran
// the same plan on the same source before keeps them and the data themselves, and every
// pass still equals a fresh workspace's to the bit, after the weights change and after
// the data do.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "api/dataset_impl.hpp"
#include "exec/batch_norm.hpp"
#include "exec/plan.hpp"
#include "exec/rewrites/registry.hpp"
#include "lrnn/lrnn.hpp"
#include "lrnn/syntax.hpp"
#include "graph_text.hpp"
#include "plan_pass.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

const char* kTemplate =
    "h(X) :- $w={4,3} x(X).\n"
    "h(X) :- $w={4,3} x(Y), *edge(X, Y). [aggregation=sum]\n"
    "h/1 {4,1} [activation=tanh]\n"
    "o(X) :- {1,4} h(X).\n";

constexpr int kNodes = 12000, kDegree = 6;  // 72000 groundings of the edge rule: over kSumDataFirstMin

TEST(SumDataFirst, BigGroupOverDataFactsSumsFirstAndEqualsThePlainPlan) {
  static_assert(size_t{kNodes} * kDegree >= exec::kSumDataFirstMin);
  train::Engine engine(parse_template(kTemplate));
  const Dataset data = Dataset::from_text(test::graph_text(kNodes, kDegree), test::node_queries(kNodes));
  const train::PreparedSet set = engine.prepare(data.impl().samples);
  exec::PlanOptions training{.fact_gradients = false};
  exec::PlanOptions plain = training;
  plain.disabled_rewrites.set(exec::bit(exec::Rewrite::TransformSum));
  const exec::Plan rewritten = exec::build_plan(engine.model(), {&set.networks[0]}, training);
  const exec::Plan reference = exec::build_plan(engine.model(), {&set.networks[0]}, plain);
  int summed_first = 0, transformed = 0;
  for (const exec::RuleGroup& G : rewritten.rule_groups) {
    summed_first += G.transform.sum_first;
    transformed += G.transform.enabled;
  }
  EXPECT_EQ(transformed, 3);   // the self, edge and output rules
  EXPECT_EQ(summed_first, 1);  // the edge rule; the self rule keeps its transformed rows
  test::expect_same_pass(rewritten, reference, engine, 1e-2);

  // With fact gradients the edge rule's inputs take gradients: it shares the self rule's rows.
  const exec::Plan with_fact_gradients = exec::build_plan(engine.model(), {&set.networks[0]});
  for (const exec::RuleGroup& G : with_fact_gradients.rule_groups) EXPECT_FALSE(G.transform.sum_first);
}

// The values of one forward pass of `plan` over `data` in `ws` (from `source`, if given).
std::vector<double> pass_values(const exec::Plan& plan, const std::vector<double>& data, const train::Engine& engine,
                                exec::Workspace& ws, const exec::DataSource* source) {
  const exec::ParamView<double> params = exec::view_of(engine.parameters());
  exec::forward_prepare(plan, std::span<const double>(data), params, ws, nullptr, source);
  exec::forward_steps(plan, params, ws, 0, plan.steps.size());
  return std::vector<double>(ws.values.begin(), ws.values.begin() + plan.num_values);
}

TEST(SumDataFirst, AWorkspaceKeepsTheSumsOfTheDataItRanOnAndOnlyThose) {
  train::Engine engine(parse_template(kTemplate));
  const Dataset data = Dataset::from_text(test::graph_text(kNodes, kDegree), test::node_queries(kNodes));
  const train::PreparedSet set = engine.prepare(data.impl().samples);
  const exec::Plan plan = exec::build_plan(engine.model(), {&set.networks[0]}, {.fact_gradients = false});
  int constant = 0;
  for (const exec::RuleGroup& G : plan.rule_groups) constant += G.transform.constant_sums;
  EXPECT_EQ(constant, 1);  // the edge rule's sums of x
  const auto fresh = [&](const std::vector<double>& d) {
    exec::Workspace ws;
    return pass_values(plan, d, engine, ws, nullptr);
  };

  exec::Workspace ws;
  const exec::DataSource source{set.id, 0};
  EXPECT_EQ(pass_values(plan, plan.data, engine, ws, &source), fresh(plan.data));
  EXPECT_FALSE(ws.data_held);  // nothing before it
  // New weights, the same data: the sums are kept and the pass is a fresh one's.
  for (double& w : engine.parameters().values) w *= 1.25;
  EXPECT_EQ(pass_values(plan, plan.data, engine, ws, &source), fresh(plan.data));
  EXPECT_TRUE(ws.data_held);
  // Other data (another sample of the plan): summed again.
  std::vector<double> other = plan.data;
  for (double& x : other) x = 0.5 - x;
  const exec::DataSource other_source{set.id, 1};
  EXPECT_EQ(pass_values(plan, other, engine, ws, &other_source), fresh(other));
  EXPECT_FALSE(ws.data_held);
  // A pass without a source keeps nothing; another plan, even with equal contents, neither.
  EXPECT_EQ(pass_values(plan, plan.data, engine, ws, nullptr), fresh(plan.data));
  EXPECT_EQ(pass_values(plan, plan.data, engine, ws, &source), fresh(plan.data));
  EXPECT_FALSE(ws.data_held);
  const exec::Plan same = exec::build_plan(engine.model(), {&set.networks[0]}, {.fact_gradients = false});
  EXPECT_NE(same.serial, plan.serial);
  EXPECT_EQ(pass_values(same, same.data, engine, ws, &source), pass_values(plan, plan.data, engine, ws, nullptr));
}

}  // namespace
