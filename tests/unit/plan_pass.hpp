// One forward and backward pass of an execution plan for the exec tests: every output's
// gradient seeded with 1.001, 1.002, ... (so every output matters, differently), returning
// the neuron values, neuron gradients and parameter gradients to compare across plans.
#pragma once

#include <vector>

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

}  // namespace lrnn::test
