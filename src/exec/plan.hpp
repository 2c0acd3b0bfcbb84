// Execution plans: one or more sample networks merged into layers of batched kernels over
// one flat value buffer (ARCHITECTURE.md "Execution model"). A plan holds only indices and
// shapes; values live in a Workspace, parameters in neural::Parameters. Forward runs the
// steps in order, backward in reverse with the transposed kernels; every gradient of a
// shared weight is reduced inside its group in a fixed order (deterministic).
#pragma once

#include <cstdint>
#include <vector>

#include "exec/functions.hpp"
#include "neural/network.hpp"
#include "neural/template_model.hpp"

namespace lrnn::exec {

inline constexpr uint32_t kNoValue = 0xFFFFFFFFu;

// How a weight W meets its input x (decided once per group from the two shapes):
//  None:        no weight, z = x
//  Scalar:      W is 1x1, z = w * x
//  Outer:       x is 1x1 and W is not, z = x * W (a scalar input scales a vector/matrix weight)
//  MatMul:      W is r x c and x has c rows, z = W x (r x x.cols)
//  Elementwise: W has x's shape but cannot multiply it (e.g. two n x 1 vectors), z = W .* x
enum class WeightMode : uint8_t { None, Scalar, Outer, MatMul, Elementwise };
// Throws lrnn::Error (Shape) with `what` in the message when W cannot apply to x.
WeightMode weight_mode(Shape w, Shape x, Shape& out);

struct InputBlock {
  Shape raw_shape;   // the input atoms' value shape
  Shape wout_shape;  // after the weight
  Shape out_shape;   // after ^T (the weight applies first: `W k(J)^T` is (W k_J)^T)
  bool soft_negated = false, transposed = false;
  uint32_t weight = neural::kNoParam;
  WeightMode mode = WeightMode::None;
  std::vector<uint32_t> src;  // value offset of each grounding's input atom
  uint32_t x_off = 0;         // gathered inputs (1 - x under ~), n values
  uint32_t w_off = 0;         // weighted (== x_off without weight)
  uint32_t z_off = 0;         // transposed (== w_off unless a real matrix is transposed)
};

// All ground rules of one template rule whose heads sit at one depth, with their
// aggregation and the head weight: one kernel.
struct RuleGroup {
  uint32_t rule = 0;
  uint32_t n = 0;  // ground rules
  CombinationKind combination = CombinationKind::Sum;
  Activation activation;
  std::vector<InputBlock> inputs;
  Shape comb_shape;
  uint32_t comb_off = 0;   // combination output (n values)
  uint32_t offset = neural::kNoParam;
  uint32_t pre_off = 0;    // + offset (== comb_off without offset)
  Shape act_shape;
  uint32_t act_off = 0;    // rule neuron values (n values)
  // softmax(J) aggregation: rule neuron values are normalised across the groundings that
  // agree on every variable except J (a softmax segment may span several heads), then
  // summed per head. softmax_perm orders the n rule neurons by softmax segment.
  bool softmax = false;
  std::vector<uint32_t> softmax_perm;
  std::vector<uint32_t> softmax_segments;  // offsets into the permuted order
  uint32_t perm_off = 0;   // rule neuron values in permuted order
  uint32_t psoft_off = 0;  // their softmax (permuted order)
  uint32_t soft_off = 0;   // the softmax back in head order
  AggregationKind aggregation = AggregationKind::Avg;
  uint32_t m = 0;                       // distinct heads (aggregation neurons)
  std::vector<uint32_t> head_segments;  // m + 1 offsets into the n rule neurons
  Shape agg_shape;
  uint32_t agg_off = 0;
  uint32_t head_weight = neural::kNoParam;
  WeightMode head_mode = WeightMode::None;
  Shape out_shape;
  uint32_t out_off = 0;  // head-weighted aggregates (== agg_off without head weight)
};

// Atom neurons of one predicate at one depth: combine each atom's inputs (one per rule
// that derives it, plus its own fact value if it is also a fact), offset, activation.
struct AtomGroup {
  uint32_t predicate = 0;
  uint32_t m = 0;
  Shape in_shape;
  std::vector<uint32_t> src;       // value offset of each input
  std::vector<uint32_t> segments;  // m + 1 offsets into src
  uint32_t c_off = 0;              // gathered inputs
  AggregationKind combination = AggregationKind::Sum;
  uint32_t red_off = 0;
  uint32_t offset = neural::kNoParam;
  uint32_t pre_off = 0;
  Activation activation;
  Shape out_shape;
  uint32_t out_off = 0;  // the atom values, m consecutive
};

struct Step {
  bool atom = false;  // AtomGroup or RuleGroup
  uint32_t index = 0;
};

struct OutputRef {
  uint32_t sample = 0;  // position of the sample in the plan
  uint32_t query = 0;   // query of the example
  uint32_t atom = 0;    // local atom id in the sample network (kNoValue: no neuron)
  uint32_t offset = kNoValue;  // value offset, kNoValue: the query has no neuron (output 0)
  Shape shape;
};

struct Plan {
  uint32_t num_values = 0;
  // Example fact values, laid out at [0, data.size()): forward starts with one copy.
  std::vector<double> data;
  // Template facts: value offset and parameter.
  std::vector<uint32_t> param_fact_off, param_fact_param;
  std::vector<RuleGroup> rule_groups;
  std::vector<AtomGroup> atom_groups;
  std::vector<Step> steps;
  std::vector<OutputRef> outputs;
  // Per sample: value offset of each local atom (for inspection).
  std::vector<std::vector<uint32_t>> atom_offsets;
  std::vector<std::vector<Shape>> atom_shapes;
  size_t num_samples() const { return atom_offsets.size(); }
};

// Merges sample networks into one plan (same-depth, same-rule groups concatenated) and
// infers every shape. Throws lrnn::Error (Shape) naming the rule, literal and shapes.
Plan build_plan(const neural::TemplateModel& model,
                const std::vector<const neural::SampleNetwork*>& samples);

struct Workspace {
  std::vector<double> values, grads;
};

// Computes every neuron value of the plan.
void forward(const Plan& plan, const neural::Parameters& params, Workspace& ws);
// Given ws.grads seeded with dL/d(output values) (after forward, with every other entry
// zero), propagates to every neuron and ACCUMULATES parameter gradients into param_grads.
void backward(const Plan& plan, const neural::Parameters& params, Workspace& ws,
              std::vector<double>& param_grads);

// The value of output o (0 for a query without a neuron), as a flat row-major array.
std::vector<double> output_value(const Plan& plan, const Workspace& ws, size_t o);

}  // namespace lrnn::exec
