// Kernels of a TransformSum rule group (plan.hpp): one GEMM over the distinct input atoms,
// then each head sums (averages) the transformed rows of its groundings. Backward
// scatters the heads' gradients onto those rows in member order, then runs the two
// transposed GEMMs, so results are bit-reproducible. One-hot data inputs
// (TransformSum::one_hot_inputs) take W's columns instead, as far as each pass's rows are
// one-hot (rewrites/one_hot_inputs.cpp).
#pragma once

#include <cstdint>
#include <span>

#include "exec/plan.hpp"

namespace lrnn::exec {

// v[G.agg_off ...] = per head, the sum (avg) of W x over its groundings. `data_held`: the
// values hold this plan's pass over the same data before (BasicWorkspace::data_held), so a
// group with TransformSum::constant_sums finds its input sums still in place.
// `hot_rows_written`: a one-hot group's row columns are at hot_off already
// (BasicWorkspace::hot_rows_written, write_hot_rows).
template <class T>
void transform_sum_forward(const RuleGroup& G, const ParamView<T>& params, T* v, bool data_held = false,
                           bool hot_rows_written = false);
// For each one-hot group of `plan` (TransformSum::one_hot_inputs): the column of each of its
// rows' one 1, or -1 for a row that is not one-hot (as the kernel's own check of the rows:
// the 1 exactly, every other entry 0 or -0), written at hot_off from the pass's fact values
// given sparse (`positions` ascending, each with its value, every other value +0). Returns
// whether every row is one-hot (then no kernel reads the rows themselves).
template <class T>
bool write_hot_rows(const Plan& plan, std::span<const uint32_t> positions, std::span<const float> values, T* v);
// Given g[G.agg_off ...] = dL/d(aggregates): g[input offsets] += dL/dx and the weight's
// gradient is ACCUMULATED into pg. Needs g zero at G.transform.t_off and x_off. Without
// G.transform.input_gradients the inputs' gradients are not written.
template <class T>
void transform_sum_backward(const RuleGroup& G, const ParamView<T>& params, const T* v, T* g, T* pg);

}  // namespace lrnn::exec
