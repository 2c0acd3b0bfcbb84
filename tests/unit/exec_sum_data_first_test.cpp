// A big rule group over data facts sums its inputs first (TransformSum::sum_first) in a
// training plan, instead of sharing the self rule's transformed rows
// (rewrites/transform_sum.cpp, kSumDataFirstMin): on a 12000-node graph with 72000 edges
// the GCN layer's neighbour rule does, the self rule keeps its rows, and the outputs and
// parameter gradients equal those of the plan without the rewrite (1e-12, float64). With
// fact gradients (the default options) the inputs need gradients and nothing changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "api/dataset_impl.hpp"
#include "exec/plan.hpp"
#include "exec/rewrites/registry.hpp"
#include "lrnn/lrnn.hpp"
#include "lrnn/syntax.hpp"
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

std::string graph() {
  std::string f = "g :- ";
  for (int n = 0; n < kNodes; ++n)
    f += "<[" + std::to_string(std::sin(0.7 * n)) + ", " + std::to_string(std::cos(1.3 * n)) + ", " +
         std::to_string(0.001 * (n % 997) - 0.4) + "]> x(n" + std::to_string(n) + "), ";
  for (int n = 0; n < kNodes; ++n)
    for (int k = 1; k <= kDegree; ++k)
      f += "edge(n" + std::to_string(n) + ", n" + std::to_string((n * 7919 + k * 104729) % kNodes) + "), ";
  f.resize(f.size() - 2);
  return f + ".\n";
}

std::string queries() {
  std::string q = "g :- ";
  for (int n = 0; n < kNodes; ++n) q += std::string(n ? ", " : "") + (n % 3 ? "1.0" : "0.0") + " o(n" + std::to_string(n) + ")";
  return q + ".\n";
}

TEST(SumDataFirst, BigGroupOverDataFactsSumsFirstAndEqualsThePlainPlan) {
  static_assert(size_t{kNodes} * kDegree >= exec::kSumDataFirstMin);
  train::Engine engine(parse_template(kTemplate));
  const Dataset data = Dataset::from_text(graph(), queries());
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
  const test::PlanPass a = test::run_plan_pass(rewritten, engine), b = test::run_plan_pass(reference, engine);
  ASSERT_EQ(rewritten.outputs.size(), reference.outputs.size());
  for (size_t o = 0; o < rewritten.outputs.size(); ++o)
    EXPECT_NEAR(a.ws.values[rewritten.outputs[o].offset], b.ws.values[reference.outputs[o].offset], 1e-12) << o;
  double largest = 0;
  for (size_t i = 0; i < a.param_grads.size(); ++i) {
    EXPECT_NEAR(a.param_grads[i], b.param_grads[i], 1e-12 * std::max(1.0, std::abs(b.param_grads[i]))) << i;
    largest = std::max(largest, std::abs(b.param_grads[i]));
  }
  EXPECT_GT(largest, 1e-2);

  // With fact gradients the edge rule's inputs take gradients: it shares the self rule's rows.
  const exec::Plan with_fact_gradients = exec::build_plan(engine.model(), {&set.networks[0]});
  for (const exec::RuleGroup& G : with_fact_gradients.rule_groups) EXPECT_FALSE(G.transform.sum_first);
}

}  // namespace
