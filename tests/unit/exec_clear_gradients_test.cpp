// A clearing backward (exec::GradientSlots::Clear, exec/clear_gradients.hpp) zeroes each
// step's value gradients once no step left needs them and the facts' at the end, so that
// the next pass's zero_gradients writes nothing. Checked on plans of a GIN layer with batch
// norm, a GCN with a shared transform, a max combination (gathered inputs) and a template
// fact, in both the default and the training plan options, in double and float:
//  - the steps' value ranges (Plan::step_values) are disjoint, ascending and, with the
//    facts below them, cover every value;
//  - clearing passes give the parameter gradients of a pass over a zero-filled buffer bit
//    for bit, leave every gradient 0, and so do passes of other plans in between in the
//    same workspace (a larger plan, then a smaller one, run in the larger buffer);
//  - a keeping backward after a clearing one marks the buffer as not zero, and the next
//    zero_gradients fills it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "exec/batch_norm.hpp"
#include "exec/clear_gradients.hpp"
#include "exec/plan.hpp"
#include "lrnn/syntax.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

const char* kGinBatchNorm =
    "agg(I) :- x(J), *edge(J, I). [aggregation=sum]\n"
    "in(I) :- x(I).\n"
    "in(I) :- agg(I).\n"
    "mlp(I) :- {4,2} in(I).\n"
    "mlp/1 {4}\n"
    "mlp/1 [normalization=batch]\n"
    "mlp/1 [activation=relu]\n"
    "h(I) :- {3,4} mlp(I).\n"
    "h/1 {3}\n"
    "h/1 [activation=relu]\n"
    "o :- {1,3} h(I). [aggregation=sum]\n"
    "o :- {1,2} x(I). [aggregation=sum]\n";

const char* kGcnMax =
    "h(X) :- $w={3,2} x(X).\n"
    "h(X) :- $w={3,2} x(Y), *edge(X, Y). [aggregation=sum]\n"
    "h/1 {3,1} [activation=relu]\n"
    "g(X) :- {3,3} h(Y), *edge(X, Y). [aggregation=max]\n"
    "g(X) :- {3,3} h(X), {3,1} c.\n"
    "g/1 [activation=tanh]\n"
    "c :- {1,1} k.\n"
    "k.\n"
    "o :- {1,3} g(X). [aggregation=avg]\n";

// Two graphs of different sizes (the second's plan is the larger).
const char* kExamples =
    "<1.0> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[-0.75, 0.4]> x(3), edge(1, 2), edge(2, 1), "
    "edge(2, 3), edge(3, 2).\n"
    "<0.0> o :- <[0.2, 0.6]> x(1), <[-0.3, 0.9]> x(2), <[0.7, -0.1]> x(3), <[0.1, 0.1]> x(4), <[-0.6, 0.3]> x(5), "
    "edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2), edge(3, 4), edge(4, 3), edge(4, 5), edge(5, 4), edge(5, 1).\n";

struct Built {
  train::Engine engine;
  train::PreparedSet set;
  std::vector<exec::Plan> plans;  // one per sample

  Built(const std::string& text, const exec::PlanOptions& options) : engine(parse_template(text, "t")) {
    set = engine.prepare(train::pair_samples(parse_examples(kExamples, "e"), {}));
    for (const auto& net : set.networks) plans.push_back(exec::build_plan(engine.model(), {&net}, options));
  }
};

// One pass of `plan` in `ws`: forward, zero_gradients, every output seeded 1.001, 1.002,
// ..., backward leaving the value gradients as `slots` says; the parameter gradients.
template <class T>
std::vector<double> pass(const exec::Plan& plan, const train::Engine& engine, exec::BasicWorkspace<T>& ws,
                         exec::GradientSlots slots) {
  exec::ParamMirror mirror;
  exec::ParamView<T> params;
  if constexpr (std::is_same_v<T, float>) params = mirror.refresh(engine.parameters());
  else params = exec::view_of(engine.parameters());
  exec::forward(plan, plan.data, params, ws);
  exec::zero_gradients(plan, ws);
  double seed = 1.0;
  for (const exec::OutputRef& o : plan.outputs)
    if (o.offset != exec::kNoValue)
      for (uint32_t k = 0; k < o.shape.size(); ++k) ws.grads[o.offset + k] = static_cast<T>(seed += 0.001);
  std::vector<double> grads(engine.parameters().size(), 0.0);
  exec::backward(plan, params, ws, grads, nullptr, nullptr, exec::FloatGradients::Add, slots);
  return grads;
}

template <class T>
bool all_zero(const exec::BasicWorkspace<T>& ws) {
  return std::all_of(ws.grads.begin(), ws.grads.end(), [](T g) { return g == T(0); });
}

void expect_covering_ranges(const exec::Plan& plan) {
  ASSERT_EQ(plan.step_values.size(), plan.steps.size());
  ASSERT_FALSE(plan.steps.empty());
  uint32_t at = plan.step_values[0].first;
  EXPECT_GT(at, 0u);  // the facts' values come first
  for (const auto& [begin, end] : plan.step_values) {
    EXPECT_EQ(begin, at);
    EXPECT_LE(begin, end);
    at = end;
  }
  EXPECT_EQ(at, plan.num_values);
}

template <class T>
void check_template(const std::string& text, const exec::PlanOptions& options) {
  Built b(text, options);
  for (const exec::Plan& plan : b.plans) expect_covering_ranges(plan);
  // References: each plan in a fresh workspace, value gradients kept.
  std::vector<std::vector<double>> ref;
  size_t nonzero = 0;
  for (const exec::Plan& plan : b.plans) {
    exec::BasicWorkspace<T> fresh;
    ref.push_back(pass(plan, b.engine, fresh, exec::GradientSlots::Keep));
    EXPECT_FALSE(fresh.grads_zero);
    EXPECT_FALSE(all_zero(fresh));
    nonzero += std::count_if(ref.back().begin(), ref.back().end(), [](double g) { return g != 0.0; });
  }
  EXPECT_GT(nonzero, b.engine.parameters().size() / 2);  // over both samples
  // One workspace, clearing: larger plan, smaller, larger, smaller.
  exec::BasicWorkspace<T> ws;
  for (int round = 0; round < 4; ++round) {
    const size_t p = round % 2 == 0 ? 1 : 0;
    const std::vector<double> got = pass(b.plans[p], b.engine, ws, exec::GradientSlots::Clear);
    EXPECT_EQ(got, ref[p]) << "round " << round;  // bit for bit
    EXPECT_TRUE(ws.grads_zero);
    EXPECT_TRUE(all_zero(ws)) << "round " << round;
    // Never shrunk to the smaller plan (growing back would fill again).
    EXPECT_GE(ws.grads.size(), b.plans[1].num_values);
  }
  // Keeping after clearing: not zero any more, and the next clearing pass starts from a fill.
  EXPECT_EQ(pass(b.plans[1], b.engine, ws, exec::GradientSlots::Keep), ref[1]);
  EXPECT_FALSE(ws.grads_zero);
  EXPECT_FALSE(all_zero(ws));
  EXPECT_EQ(pass(b.plans[0], b.engine, ws, exec::GradientSlots::Clear), ref[0]);
  EXPECT_TRUE(all_zero(ws));
}

constexpr exec::PlanOptions kTraining{.fact_gradients = false, .in_place_atoms = true};

TEST(ClearGradients, GinWithBatchNorm) {
  check_template<double>(kGinBatchNorm, {});
  check_template<double>(kGinBatchNorm, kTraining);
  check_template<float>(kGinBatchNorm, kTraining);
}

TEST(ClearGradients, GcnSharedTransformMaxAndTemplateFact) {
  check_template<double>(kGcnMax, {});
  check_template<double>(kGcnMax, kTraining);
  check_template<float>(kGcnMax, kTraining);
}

// A plan that lists no step values (built elsewhere) is cleared whole at the end.
TEST(ClearGradients, PlanWithoutStepValuesIsClearedAtTheEnd) {
  Built b(kGinBatchNorm, kTraining);
  exec::Workspace fresh;
  const std::vector<double> ref = pass(b.plans[1], b.engine, fresh, exec::GradientSlots::Keep);
  exec::Plan plan = b.plans[1];
  plan.step_values.clear();
  exec::Workspace ws;
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(pass(plan, b.engine, ws, exec::GradientSlots::Clear), ref);
    EXPECT_TRUE(all_zero(ws));
  }
}

}  // namespace
