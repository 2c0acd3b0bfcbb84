// Fused kernels of the most common atom group: inputs summed (averaged) in place, an
// optional offset, a ReLU or identity activation, no batch norm (a GCN or GIN layer's
// atoms). Unfused, forward walks the group's rows three times (sum, offset, activation) and
// backward three times (activation, offset, scatter to the inputs); fused, once each. The
// additions are the same, in the same order, so the bits are the same.
#pragma once

#include "exec/plan.hpp"
#include "exec/row_sum.hpp"

namespace lrnn::exec {

// g[src[k]] += dL/d(red[j]) (`gy`, `size` entries; scaled for an average) for every input k
// of atom j: an in-place sum's backward for one atom, fused or not (W > 0: size is W).
template <int W = 0, class T>
inline void scatter_to_inputs(const AtomGroup& A, uint32_t j, const T* gy, T* g, long size) {
  const uint32_t b = A.segments[j], e = A.segments[j + 1];
  if (b == e) return;
  const T scale = A.combination == AggregationKind::Avg ? T(1.0) / T(e - b) : T(1.0);
  for (uint32_t k = b; k < e; ++k) add_scaled_row<W>(g + A.src[k], gy, scale, size);
}

// Whether A's forward and backward may run fused (the kinds above).
bool fusable_atom_sum(const AtomGroup& A);
// v[A.red_off ...] (== pre_off) = inputs' sum (average) + offset, v[A.out_off ...] = its
// activation.
template <class T>
void fused_atom_sum_forward(const AtomGroup& A, const ParamView<T>& params, T* v);
// Given g[A.out_off ...]: g[A.red_off ...] (zero before) = dL/d(pre), the offset's gradient
// ACCUMULATED into pg, and g[input offsets] += dL/d(input).
template <class T>
void fused_atom_sum_backward(const AtomGroup& A, const ParamView<T>& params, const T* v, T* g, T* pg);

}  // namespace lrnn::exec
