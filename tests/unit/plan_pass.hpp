// One forward and backward pass of an execution plan for the exec tests: every output's
// gradient seeded with 1.001, 1.002, ... (so every output matters, differently), returning
// the neuron values, neuron gradients and parameter gradients to compare across plans.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "exec/batch_norm.hpp"
#include "exec/clear_gradients.hpp"
#include "exec/plan.hpp"
#include "train/engine.hpp"

namespace lrnn::test {

struct PlanPass {
  exec::Workspace ws;
  std::vector<double> param_grads;
};

inline PlanPass run_plan_pass(const exec::Plan& plan, const train::Engine& engine) {
  PlanPass p;
  p.param_grads.assign(engine.parameters().size(), 0.0);
  exec::forward(plan, engine.parameters(), p.ws);
  p.ws.grads.assign(plan.num_values, 0.0);
  double seed = 1.0;
  for (const exec::OutputRef& o : plan.outputs)
    if (o.offset != exec::kNoValue)
      for (uint32_t k = 0; k < o.shape.size(); ++k) p.ws.grads[o.offset + k] = (seed += 0.001);
  exec::backward(plan, engine.parameters(), p.ws, p.param_grads);
  return p;
}

// One pass of each plan (of the same networks): their outputs agree to 1e-12 and their
// parameter gradients to 1e-12 relative, and some gradient is at least `largest_at_least`
// (so that the comparison means something).
inline void expect_same_pass(const exec::Plan& a_plan, const exec::Plan& b_plan, const train::Engine& engine,
                             double largest_at_least) {
  const PlanPass a = run_plan_pass(a_plan, engine), b = run_plan_pass(b_plan, engine);
  ASSERT_EQ(a_plan.outputs.size(), b_plan.outputs.size());
  for (size_t o = 0; o < a_plan.outputs.size(); ++o)
    EXPECT_NEAR(a.ws.values[a_plan.outputs[o].offset], b.ws.values[b_plan.outputs[o].offset], 1e-12) << o;
  double largest = 0;
  for (size_t i = 0; i < a.param_grads.size(); ++i) {
    EXPECT_NEAR(a.param_grads[i], b.param_grads[i], 1e-12 * std::max(1.0, std::abs(b.param_grads[i]))) << i;
    largest = std::max(largest, std::abs(b.param_grads[i]));
  }
  EXPECT_GT(largest, largest_at_least);
}

// One pass of `plan` (built with its data) in T as training runs it: a clearing backward
// (exec::GradientSlots::Clear), the outputs' gradients seeded as run_plan_pass seeds them.
// The outputs, the parameter gradients, and whether every value gradient was left 0.
struct ClearingPass {
  std::vector<double> outputs, param_grads;
  bool grads_left_zero = false;
};

template <class T>
ClearingPass run_clearing_pass(const exec::Plan& plan, const train::Engine& engine) {
  exec::ParamMirror mirror;
  exec::ParamView<T> params;
  if constexpr (std::is_same_v<T, double>) params = exec::view_of(engine.parameters());
  else params = mirror.refresh(engine.parameters());
  exec::BasicWorkspace<T> ws;
  exec::forward_prepare(plan, std::span<const double>(plan.data), params, ws, nullptr);
  exec::forward_steps(plan, params, ws, 0, plan.steps.size());
  exec::zero_gradients(plan, ws);
  double seed = 1.0;
  for (const exec::OutputRef& o : plan.outputs)
    if (o.offset != exec::kNoValue)
      for (uint32_t k = 0; k < o.shape.size(); ++k) ws.grads[o.offset + k] = static_cast<T>(seed += 0.001);
  ClearingPass p;
  p.param_grads.assign(engine.parameters().size(), 0.0);
  exec::backward(plan, params, ws, p.param_grads, nullptr, nullptr, exec::FloatGradients::Add,
                 exec::GradientSlots::Clear);
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    const std::vector<double> y = exec::output_value(plan, ws, o);
    p.outputs.insert(p.outputs.end(), y.begin(), y.end());
  }
  p.grads_left_zero = std::all_of(ws.grads.begin(), ws.grads.end(), [](T g) { return g == T(0); });
  return p;
}

}  // namespace lrnn::test
