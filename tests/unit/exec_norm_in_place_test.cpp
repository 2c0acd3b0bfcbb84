// A batch-normalised atom group with a ReLU or identity activation keeps its outputs in the
// slot of its scaled and shifted values in training plans (PlanOptions::in_place_atoms,
// out_off == pre_off): its backward turns dL/d(output) into dL/d(pre) where it lies, from
// the output's sign. Checked against the plan without in-place atoms on a GIN layer with
// batch norm (ReLU, and identity): same outputs and parameter gradients bit for bit, one
// slot per atom fewer; a normalised group with another activation (tanh) keeps its own
// output slot. (The batch statistics' phases run the same two halves of the group:
// train_batch_norm_test and the NCI1 GIN-BN training JSON cover them.)
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/plan.hpp"
#include "lrnn/syntax.hpp"
#include "plan_pass.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

std::string gin_bn(const std::string& activation) {
  return "agg(I) :- x(J), *edge(J, I). [aggregation=sum]\n"
         "in(I) :- x(I).\n"
         "in(I) :- agg(I).\n"
         "mlp(I) :- {4,2} in(I).\n"
         "mlp/1 {4}\n"
         "mlp/1 [normalization=batch]\n"
         "mlp/1 [activation=" + activation + "]\n"
         "h(I) :- {3,4} mlp(I).\n"
         "h/1 {3}\n"
         "h/1 [activation=relu]\n"
         "o :- {1,3} h(I). [aggregation=sum]\n";
}

const char* kExample =
    "<1.0> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[-0.75, 0.4]> x(3), <[0.2, 0.6]> x(4), "
    "edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2), edge(3, 4), edge(4, 1).\n";

const exec::AtomGroup& normalised(const exec::Plan& plan) {
  for (const exec::AtomGroup& A : plan.atom_groups)
    if (A.norm != neural::kNoParam) return A;
  throw std::runtime_error("no normalised group");
}

void check(const std::string& activation, bool in_place) {
  train::Engine engine(parse_template(gin_bn(activation), "t"));
  // Running statistics away from 0 and 1, so that the normalisation matters.
  neural::Parameters& params = engine.parameters();
  ASSERT_EQ(engine.model().batch_norms.size(), 1u);
  const uint32_t mean = engine.model().batch_norms[0].mean;
  for (int i = 0; i < params.info(mean).shape.size(); ++i) params.data(mean)[i] = 0.1 * (i + 1);
  const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(kExample, "e"), {}));
  const exec::Plan plain = exec::build_plan(engine.model(), {&set.networks[0]}, {.in_place_atoms = false});
  const exec::Plan placed = exec::build_plan(engine.model(), {&set.networks[0]}, {.in_place_atoms = true});
  const exec::AtomGroup& A = normalised(placed);
  EXPECT_NE(normalised(plain).out_off, normalised(plain).pre_off);
  EXPECT_EQ(A.out_off == A.pre_off, in_place) << activation;
  if (in_place) EXPECT_LE(placed.num_values + A.m * 4, plain.num_values);
  const test::PlanPass pa = test::run_plan_pass(plain, engine), pb = test::run_plan_pass(placed, engine);
  const double ya = pa.ws.values[plain.outputs[0].offset], yb = pb.ws.values[placed.outputs[0].offset];
  EXPECT_GT(std::abs(ya), 1e-3);
  EXPECT_EQ(ya, yb);
  size_t nonzero = 0;
  for (size_t i = 0; i < pa.param_grads.size(); ++i) {
    nonzero += pa.param_grads[i] != 0.0;
    EXPECT_EQ(pa.param_grads[i], pb.param_grads[i]) << activation << ", parameter entry " << i;
  }
  EXPECT_GT(nonzero, 4u);  // real gradients (ReLU leaves some weights none here)
}

TEST(NormInPlace, Relu) { check("relu", true); }
TEST(NormInPlace, Identity) { check("identity", true); }
TEST(NormInPlace, TanhKeepsItsSlot) { check("tanh", false); }

}  // namespace
