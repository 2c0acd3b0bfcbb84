// A batch-normalised group whose atoms each sum one input lying in consecutive rows (a GIN's
// `mlp(I) :- {w} in(I)`) has its batch statistics read from those rows and dL/dx added to
// their gradients (exec::norm_input_off), with no copy into red_off and no scatter out of
// it; in plans with in_place_atoms it has no red_off slot at all (AtomGroup::x_in_inputs).
// Checked against the copying path on two samples' plans, run in the phases of a training
// step (train/batch_norm_steps.cpp): the same outputs and parameter gradients bit for bit,
// in double and in float; a group with two inputs per atom keeps red_off.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exec/batch_norm.hpp"
#include "exec/plan.hpp"
#include "lrnn/syntax.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

// mlp: one input per atom (read in place); h: two (copied into red_off).
const char* kTemplate =
    "agg(I) :- x(J), *edge(J, I). [aggregation=sum]\n"
    "in(I) :- x(I).\n"
    "in(I) :- agg(I).\n"
    "mlp(I) :- {4,2} in(I).\n"
    "mlp/1 {4}\n"
    "mlp/1 [normalization=batch]\n"
    "mlp/1 [activation=relu]\n"
    "h(I) :- {3,4} mlp(I).\n"
    "h(I) :- {3,2} in(I).\n"
    "h/1 {3}\n"
    "h/1 [normalization=batch]\n"
    "h/1 [activation=tanh]\n"
    "o :- {1,3} h(I). [aggregation=sum]\n";

const char* kExamples =
    "<1.0> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[-0.75, 0.4]> x(3), <[0.2, 0.6]> x(4), "
    "edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2), edge(3, 4), edge(4, 1).\n"
    "<0.0> o :- <[-0.3, 0.8]> x(1), <[0.9, -0.5]> x(2), <[0.1, 0.7]> x(3), edge(1, 2), edge(2, 3), edge(3, 1).\n";

template <class T>
struct StepResult {
  std::vector<T> outputs, param_grads;
};

// One training step's phases over the plans (one sample each): forward to each normalised
// group, its batch statistics, on; the output gradients seeded with 1; backward likewise.
// direct: x read where norm_input_off finds it; else always copied into red_off.
template <class T>
StepResult<T> step(const std::vector<exec::Plan>& plans, const exec::ParamView<T>& params, bool direct) {
  const size_t n = plans.size();
  std::vector<exec::BasicWorkspace<T>> ws(n);
  std::vector<size_t> cursor(n, 0);
  std::vector<std::vector<exec::NormSite<T>>> sites(plans[0].norm_steps.size());
  std::vector<exec::BatchStats> stats(sites.size());
  for (size_t s = 0; s < n; ++s) exec::forward_prepare(plans[s], plans[s].data, params, ws[s], nullptr);
  for (size_t k = 0; k < sites.size(); ++k) {
    for (size_t s = 0; s < n; ++s) {
      const size_t at = plans[s].norm_steps[k];
      exec::forward_steps(plans[s], params, ws[s], cursor[s], at);
      const exec::AtomGroup& A = plans[s].atom_groups[plans[s].steps[at].index];
      const uint32_t x_off = direct ? exec::norm_input_off(A) : A.red_off;
      if (x_off == A.red_off) exec::norm_reduce_forward(plans[s], at, ws[s]);
      sites[k].push_back({&A, &ws[s], x_off});
    }
    exec::batch_norm_forward<T>(sites[k], "p", stats[k]);
    for (size_t s = 0; s < n; ++s) {
      exec::norm_finish_forward(plans[s], plans[s].norm_steps[k], params, ws[s]);
      cursor[s] = plans[s].norm_steps[k] + 1;
    }
  }
  StepResult<T> out;
  out.param_grads.assign(params.size(), T(0));
  for (size_t s = 0; s < n; ++s) {
    exec::forward_steps(plans[s], params, ws[s], cursor[s], plans[s].steps.size());
    const uint32_t y = plans[s].outputs[0].offset;
    out.outputs.push_back(ws[s].values[y]);
    ws[s].grads.assign(plans[s].num_values, T(0));
    ws[s].grads[y] = T(1);
    cursor[s] = plans[s].steps.size();
  }
  for (size_t k = sites.size(); k-- > 0;) {
    for (size_t s = 0; s < n; ++s) {
      const size_t at = plans[s].norm_steps[k];
      exec::backward_steps(plans[s], params, ws[s], out.param_grads.data(), at + 1, cursor[s]);
      exec::norm_finish_backward(plans[s], at, params, ws[s], out.param_grads.data());
    }
    exec::batch_norm_backward<T>(sites[k], stats[k]);
    for (size_t s = 0; s < n; ++s) {
      const size_t at = plans[s].norm_steps[k];
      exec::norm_reduce_backward(plans[s], at, ws[s], exec::GradientSlots::Keep,
                                 sites[k][s].x_off == sites[k][s].group->red_off);
      cursor[s] = at;
    }
  }
  for (size_t s = 0; s < n; ++s)
    exec::backward_steps(plans[s], params, ws[s], out.param_grads.data(), 0, cursor[s]);
  return out;
}

template <class T>
void expect_same(const StepResult<T>& a, const StepResult<T>& b) {
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t s = 0; s < a.outputs.size(); ++s) EXPECT_EQ(a.outputs[s], b.outputs[s]) << "sample " << s;
  size_t nonzero = 0;
  for (size_t i = 0; i < a.param_grads.size(); ++i) {
    nonzero += a.param_grads[i] != T(0);
    EXPECT_EQ(a.param_grads[i], b.param_grads[i]) << "parameter entry " << i;
  }
  EXPECT_GT(nonzero, 10u);
}

TEST(BatchNormInput, ConsecutiveSingleInputsAreReadInPlaceWithTheSameStep) {
  train::Engine engine(parse_template(kTemplate, "t"));
  const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(kExamples, "e"), {}));
  ASSERT_EQ(set.networks.size(), 2u);
  // In place: mlp's x are the rule's rows (no slot); copied: a slot red_off of its own,
  // which the copying path below fills.
  std::vector<exec::Plan> in_place, copied;
  for (const auto& network : set.networks) {
    in_place.push_back(exec::build_plan(engine.model(), {&network}, {.in_place_atoms = true, .alias_identity_rules = true}));
    copied.push_back(exec::build_plan(engine.model(), {&network}, {.alias_identity_rules = true}));
  }
  for (const exec::Plan* plan : {&in_place[0], &in_place[1], &copied[0], &copied[1]}) {
    ASSERT_EQ(plan->norm_steps.size(), 2u);
    const exec::AtomGroup& mlp = plan->atom_groups[plan->steps[plan->norm_steps[0]].index];
    const exec::AtomGroup& h = plan->atom_groups[plan->steps[plan->norm_steps[1]].index];
    const bool planned_in_place = plan == &in_place[0] || plan == &in_place[1];
    EXPECT_EQ(mlp.x_in_inputs, planned_in_place);
    EXPECT_EQ(mlp.red_off == mlp.src[0], planned_in_place);
    EXPECT_EQ(exec::norm_input_off(mlp), mlp.src[0]);  // the rule's rows either way
    // x^ over x where x lies in the rule's GEMM rows, which nothing else reads.
    EXPECT_EQ(mlp.norm_off == mlp.red_off, planned_in_place);
    EXPECT_FALSE(h.x_in_inputs);
    EXPECT_NE(h.norm_off, h.red_off);
    EXPECT_EQ(exec::norm_input_off(h), h.red_off);  // two inputs per atom: summed first
  }
  EXPECT_LT(in_place[0].num_values, copied[0].num_values);
  expect_same(step(in_place, exec::view_of(engine.parameters()), true),
              step(copied, exec::view_of(engine.parameters()), false));
  expect_same(step(copied, exec::view_of(engine.parameters()), true),
              step(copied, exec::view_of(engine.parameters()), false));
  exec::ParamMirror mirror;
  const exec::ParamView<float> params32 = mirror.refresh(engine.parameters());
  expect_same(step(in_place, params32, true), step(copied, params32, false));
}

// Outside a training step (the running statistics: evaluation, gradients of a trained
// model) x^ over x gives the same outputs and gradients as x^ in a slot of its own.
TEST(BatchNormInput, RunningStatisticsWithXHatOverX) {
  train::Engine engine(parse_template(kTemplate, "t"));
  const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(kExamples, "e"), {}));
  neural::Parameters params = engine.parameters();
  for (const neural::BatchNormSpec& norm : engine.model().batch_norms)  // running statistics away from 0 and 1
    for (size_t i = 0; i < params.info(norm.mean).shape.size(); ++i) {
      params.data(norm.mean)[i] = 0.25 - 0.1 * double(i);
      params.data(norm.var)[i] = 0.5 + 0.3 * double(i);
    }
  for (const auto& network : set.networks) {
    const exec::Plan over = exec::build_plan(engine.model(), {&network}, {.in_place_atoms = true});
    const exec::Plan slot = exec::build_plan(engine.model(), {&network}, {});
    const exec::AtomGroup& mlp = over.atom_groups[over.steps[over.norm_steps[0]].index];
    ASSERT_EQ(mlp.norm_off, mlp.red_off);
    exec::Workspace a, b;
    exec::forward(over, params, a);
    exec::forward(slot, params, b);
    const uint32_t ya = over.outputs[0].offset, yb = slot.outputs[0].offset;
    EXPECT_EQ(a.values[ya], b.values[yb]);
    EXPECT_NE(a.values[ya], 0.0);
    a.grads.assign(over.num_values, 0.0);
    b.grads.assign(slot.num_values, 0.0);
    a.grads[ya] = b.grads[yb] = 1.0;
    std::vector<double> ga, gb;
    exec::backward(over, params, a, ga);
    exec::backward(slot, params, b, gb);
    ASSERT_EQ(ga.size(), gb.size());
    size_t nonzero = 0;
    for (size_t i = 0; i < ga.size(); ++i) {
      nonzero += ga[i] != 0.0;
      EXPECT_EQ(ga[i], gb[i]) << "parameter entry " << i;
    }
    EXPECT_GT(nonzero, 10u);
  }
}

}  // namespace
