// Batch normalisation across the samples of a training batch. Each sample keeps its own
// plan and workspace; a training step runs every sample's plan in phases that stop at its
// batch-normalised atom groups (Plan::norm_steps), where the statistics over all the
// batch's atoms of the predicate are computed (batch_norm_forward) and, going back, the
// sums the normalisation's gradient needs (batch_norm_backward). A plain forward/backward
// (evaluation, inspection, gradients outside training) normalises with the running
// statistics instead and needs none of this.
#pragma once

#include <span>
#include <vector>

#include "exec/plan.hpp"

namespace lrnn::exec {

// forward() is forward_prepare then forward_steps over every step; backward() picks where
// the pass accumulates parameter gradients (the caller's vector for double, a zeroed float
// buffer for float), runs backward_steps over every step (they run in reverse) and
// backward_end, then (float) adds that buffer into the caller's vector. A batch-normalised
// step does the same around its phases, with one such buffer for the whole batch.
//
// `source` (if given) names the data: the caller promises that the same set and sample
// always come with the same values (a prepared set's networks, which nothing changes). A
// pass over the plan and source the workspace's last pass had then keeps the sums computed
// from the data alone (TransformSum::constant_sums). Without a source nothing is kept.
struct DataSource {
  uint64_t set = 0, sample = 0;
};
template <class T>
void forward_prepare(const Plan& plan, std::span<const double> data, const ParamView<T>& params,
                     BasicWorkspace<T>& ws, const neural::Parameters* example_params,
                     const DataSource* source = nullptr);
// The same from fact values already in float (a float copy of the samples' fact values
// kept across epochs by the caller: half the bytes to read, nothing to convert).
void forward_prepare(const Plan& plan, std::span<const float> data, const ParamView<float>& params, Workspace32& ws,
                     const neural::Parameters* example_params, const DataSource* source = nullptr);
// A float64 pass from fact values that are each a float exactly, widened in the copy (the
// same values; half the bytes to read).
void forward_prepare(const Plan& plan, std::span<const float> data, const ParamView<double>& params, Workspace& ws,
                     const neural::Parameters* example_params, const DataSource* source = nullptr);
// Fact values kept sparse: `size` values, each +0 but those at `positions` (ascending),
// which are `values`. Node labels one-hot over 37 classes (NCI1) are 1 value in 37: the
// caller's copy of a set's facts is then ~1/20 of the dense float copy's bytes, and a pass
// writes zeros into its workspace (in cache) instead of reading every value from memory.
struct SparseFacts {
  size_t size = 0;
  std::span<const uint32_t> positions;
  std::span<const float> values;
};
// A pass (float32, or float64 when every value is a float exactly) from such facts.
void forward_prepare(const Plan& plan, const SparseFacts& data, const ParamView<float>& params, Workspace32& ws,
                     const neural::Parameters* example_params, const DataSource* source = nullptr);
void forward_prepare(const Plan& plan, const SparseFacts& data, const ParamView<double>& params, Workspace& ws,
                     const neural::Parameters* example_params, const DataSource* source = nullptr);
template <class T>
void forward_steps(const Plan& plan, const ParamView<T>& params, BasicWorkspace<T>& ws, size_t first, size_t last);
// The two halves of the normalised atom group at steps[step]: its combined inputs x (at
// red_off), then, from x^ at norm_off, scale, shift and activation.
template <class T>
void norm_reduce_forward(const Plan& plan, size_t step, BasicWorkspace<T>& ws);
template <class T>
void norm_finish_forward(const Plan& plan, size_t step, const ParamView<T>& params, BasicWorkspace<T>& ws);

// Clear: each step's value gradients zeroed after its backward (exec/clear_gradients.hpp;
// the caller ends the pass with finish_clearing).
template <class T>
void backward_steps(const Plan& plan, const ParamView<T>& params, BasicWorkspace<T>& ws, T* pg, size_t first,
                    size_t last, GradientSlots slots = GradientSlots::Keep);
// The template facts' gradients into pg, the learnable example facts' into example_grads.
template <class T>
void backward_end(const Plan& plan, const ParamView<T>& params, BasicWorkspace<T>& ws, T* pg,
                  const neural::Parameters* example_params, std::vector<double>* example_grads);
// Back through the activation, shift and scale of the normalised group at steps[step]
// (dL/dx^ at norm_off), then, given dL/dx at red_off, back to the group's inputs.
template <class T>
void norm_finish_backward(const Plan& plan, size_t step, const ParamView<T>& params, BasicWorkspace<T>& ws, T* pg);
// scatter false: dL/dx is already in the inputs' gradients (norm_input_off), only the
// clearing is left.
template <class T>
void norm_reduce_backward(const Plan& plan, size_t step, BasicWorkspace<T>& ws,
                          GradientSlots slots = GradientSlots::Keep, bool scatter = true);

// One sample's atoms of a normalised predicate: its group, the workspace it ran in and
// where the group's combined inputs x lie (values and their gradients): red_off, or the
// rows norm_input_off finds.
template <class T>
struct NormSite {
  const AtomGroup* group = nullptr;
  BasicWorkspace<T>* ws = nullptr;
  uint32_t x_off = 0;
};

// Where a training step reads the normalised group A's x: when each atom sums exactly one
// input and those inputs are consecutive rows in atom order (a rule's outputs, as in a GIN's
// `mlp(I) :- {64,64} in(I)`), the rows themselves, so that the step copies nothing into
// red_off forward and scatters nothing out of it backward (dL/dx is added where the inputs'
// gradients lie; each input feeds this atom alone). Else red_off, after norm_reduce_forward.
// The batch statistics read x as 0 + x, the bits the copy held (-0 -> +0).
uint32_t norm_input_off(const AtomGroup& A);

// The batch statistics of one normalised predicate (entries of its value shape).
struct BatchStats {
  size_t rows = 0;                 // atoms over the batch
  std::vector<double> mean, var;   // var biased (the normalisation's)
  std::vector<double> inv_std;     // 1 / sqrt(var + eps), for backward
  std::vector<double> mean_g, mean_gx;  // backward: mean(dL/dx^) and mean(dL/dx^ x^)
};

// Mean and variance over every site's rows (x at x_off), then x^ at each norm_off.
// Throws lrnn::Error (Runtime) naming `predicate` when the batch holds a single atom (its
// variance is 0 and its x^ meaningless: torch refuses the same).
template <class T>
void batch_norm_forward(std::span<const NormSite<T>> sites, const std::string& predicate, BatchStats& stats);
// With dL/dx^ at each site's norm_off: adds dL/dx = inv_std (g - mean(g) - x^ mean(g x^))
// into x_off's gradients (the means over the batch's rows, kept in stats).
template <class T>
void batch_norm_backward(std::span<const NormSite<T>> sites, BatchStats& stats);

// The same two in parts, for a caller that takes each sample's share while its rows are in
// cache (train/batch_norm_steps.cpp): batch_norm_forward is batch_norm_begin, add_to_mean
// over the sites in order, batch_norm_statistics, then normalize at each site;
// batch_norm_backward is add_to_gradient_means over the sites in order,
// finish_gradient_means, then normalize_backward at each site. Each part adds in the
// same order as the whole, so the parts give the same bits.
void batch_norm_begin(BatchStats& stats);
template <class T>
void add_to_mean(const NormSite<T>& site, BatchStats& stats);
// Divides the sums add_to_mean took, then the variance's pass over `sites` (the same sites).
template <class T>
void batch_norm_statistics(std::span<const NormSite<T>> sites, const std::string& predicate, BatchStats& stats);
template <class T>
void normalize(const NormSite<T>& site, const BatchStats& stats);
void begin_gradient_means(BatchStats& stats);
template <class T>
void add_to_gradient_means(const NormSite<T>& site, BatchStats& stats);
void finish_gradient_means(BatchStats& stats);
template <class T>
void normalize_backward(const NormSite<T>& site, const BatchStats& stats);

}  // namespace lrnn::exec
