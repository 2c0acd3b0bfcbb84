// TransformSum summed first (exec::PlanOptions::transform_sum_first, TransformSum::sum_first):
// when a rule's distinct inputs are at least twice its heads (a sampled support's
// neighbour rule), each head's inputs are summed (averaged) before one GEMM over the
// heads. Checked on a network with two such rules (a sum and an average) and a self rule
// that is not summed first: the outputs and parameter gradients equal the default plan's
// (1e-12, float64), and every parameter gradient equals central finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "api/dataset_impl.hpp"
#include "exec/plan.hpp"
#include "lrnn/lrnn.hpp"
#include "lrnn/syntax.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

const char* kTemplate =
    "h(X) :- $w={4,3} x(Y), *edge(X, Y). [aggregation=sum]\n"
    "h(X) :- $w={4,3} x(X).\n"
    "h/1 {4,1} [activation=tanh]\n"
    "g(X) :- $v={4,3} x(Y), *near(X, Y). [aggregation=avg]\n"
    "g/1 [activation=tanh]\n"
    "o(X) :- {1,4} h(X).\n"
    "o(X) :- {1,4} g(X).\n";

// Two heads (a, b), eight other nodes: the edge rule reads 8 distinct inputs for 2 heads,
// the near rule 6, the self rule 2 (one per head: not summed first).
std::string examples() {
  std::string f;
  for (int n = 1; n <= 8; ++n)
    f += "<[" + std::to_string(std::sin(0.7 * n)) + ", " + std::to_string(std::cos(1.3 * n)) + ", " +
         std::to_string(0.1 * n - 0.4) + "]> x(" + std::to_string(n) + "), ";
  f += "<[0.2, -0.5, 0.9]> x(a), <[-0.3, 0.8, 0.1]> x(b)";
  for (int n = 1; n <= 5; ++n) f += ", edge(a, " + std::to_string(n) + ")";
  for (int n = 3; n <= 8; ++n) f += ", edge(b, " + std::to_string(n) + ")";
  for (int n = 2; n <= 4; ++n) f += ", near(a, " + std::to_string(n) + ")";
  for (int n = 5; n <= 7; ++n) f += ", near(b, " + std::to_string(n) + ")";
  return "s :- " + f + ".\n";
}

struct Fixture {
  train::Engine engine{parse_template(kTemplate)};
  train::PreparedSet set;
  neural::TemplateModel model;
  Fixture() {
    const Dataset data = Dataset::from_text(examples(), "s :- 1.0 o(a), 0.0 o(b).\n");
    set = engine.prepare(data.impl().samples);
    model = engine.model();
  }
  exec::Plan plan(bool sum_first) const {
    exec::PlanOptions options;
    options.transform_sum_first = sum_first;
    return exec::build_plan(model, {&set.networks[0]}, options);
  }
};

// loss = sum over the outputs of c_o * y_o; its gradients (backward seeded with c).
double loss_and_gradients(const exec::Plan& plan, const neural::TemplateModel& model, const std::vector<double>& c,
                          std::vector<double>* grads) {
  exec::Workspace ws;
  exec::forward(plan, model.params, ws);
  double loss = 0;
  for (size_t o = 0; o < plan.outputs.size(); ++o) loss += c[o] * exec::output_value(plan, ws, o)[0];
  if (grads) {
    ws.grads.assign(plan.num_values, 0.0);
    for (size_t o = 0; o < plan.outputs.size(); ++o) ws.grads[plan.outputs[o].offset] += c[o];
    grads->assign(model.params.size(), 0.0);
    exec::backward(plan, model.params, ws, *grads);
  }
  return loss;
}

}  // namespace

TEST(TransformSumFirst, EqualsTheDefaultPlanAndFiniteDifferences) {
  Fixture f;
  const exec::Plan first = f.plan(true), plain = f.plan(false);
  int summed_first = 0;
  for (const exec::RuleGroup& G : first.rule_groups) summed_first += G.transform.sum_first;
  EXPECT_EQ(summed_first, 2);  // the edge and near rules; the self rule keeps its rows
  for (const exec::RuleGroup& G : plain.rule_groups) EXPECT_FALSE(G.transform.sum_first);
  ASSERT_EQ(first.outputs.size(), 2u);
  const std::vector<double> c = {0.7, -1.3};
  std::vector<double> g_first, g_plain;
  const double l_first = loss_and_gradients(first, f.model, c, &g_first);
  const double l_plain = loss_and_gradients(plain, f.model, c, &g_plain);
  EXPECT_NEAR(l_first, l_plain, 1e-12);
  EXPECT_GT(std::abs(l_first), 1e-3);
  ASSERT_EQ(g_first.size(), g_plain.size());
  double largest = 0;
  for (size_t i = 0; i < g_first.size(); ++i) {
    EXPECT_NEAR(g_first[i], g_plain[i], 1e-12) << "parameter entry " << i;
    largest = std::max(largest, std::abs(g_first[i]));
    const double saved = f.model.params.values[i], h = 1e-6;
    f.model.params.values[i] = saved + h;
    const double lp = loss_and_gradients(first, f.model, c, nullptr);
    f.model.params.values[i] = saved - h;
    const double lm = loss_and_gradients(first, f.model, c, nullptr);
    f.model.params.values[i] = saved;
    const double fd = (lp - lm) / (2 * h);
    EXPECT_NEAR(g_first[i], fd, 1e-6 * std::max(1.0, std::abs(fd))) << "parameter entry " << i;
  }
  EXPECT_GT(largest, 1e-3);
}

TEST(TransformSumFirst, InputGradientsReachTheFacts) {
  // With fact gradients (the default options), the summed-first rules scatter dL/dS onto
  // each input fact: equal to the default plan's fact gradients.
  Fixture f;
  const exec::Plan first = f.plan(true), plain = f.plan(false);
  const std::vector<double> c = {0.4, 0.9};
  auto fact_grads = [&](const exec::Plan& p) {
    exec::Workspace ws;
    exec::forward(p, f.model.params, ws);
    ws.grads.assign(p.num_values, 0.0);
    for (size_t o = 0; o < p.outputs.size(); ++o) ws.grads[p.outputs[o].offset] += c[o];
    std::vector<double> grads(f.model.params.size(), 0.0);
    exec::backward(p, f.model.params, ws, grads);
    return std::vector<double>(ws.grads.begin(), ws.grads.begin() + static_cast<std::ptrdiff_t>(p.data.size()));
  };
  ASSERT_EQ(first.data, plain.data);
  const std::vector<double> a = fact_grads(first), b = fact_grads(plain);
  ASSERT_EQ(a.size(), b.size());
  double largest = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], 1e-12) << "fact value " << i;
    largest = std::max(largest, std::abs(a[i]));
  }
  EXPECT_GT(largest, 1e-3);
}
