// Fused kernels of the most common atom group: inputs summed (averaged) in place, an
// optional offset, a ReLU or identity activation, no batch norm (a GCN or GIN layer's
// atoms). Unfused, forward walks the group's rows three times (sum, offset, activation) and
// backward three times (activation, offset, scatter to the inputs); fused, once each. The
// additions are the same, in the same order, so the bits are the same.
#pragma once

#include "exec/plan.hpp"

namespace lrnn::exec {

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
