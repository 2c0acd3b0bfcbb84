// Kernels of a DirectProduct rule group (plan.hpp): products read at their inputs' value
// offsets, gradients scattered straight back to them. Forward loops run in parallel
// (disjoint writes); backward scatters run in member order on one thread, so results
// are bit-reproducible.
#pragma once

#include <cstdint>

#include "exec/plan.hpp"

namespace lrnn::exec {

// comb[k * len ...] = the product of member k, for all G.n members (not fused_sum).
template <class T>
void direct_product_forward(const RuleGroup& G, const T* v, T* comb);
// fused_sum: agg[h] = the sum (avg) of the products of head h's members, for all G.m heads.
template <class T>
void direct_sum_forward(const RuleGroup& G, const T* v, T* agg);
// g[input offsets] += dL/d(inputs), given gcomb = dL/d(products) per member (not fused_sum).
template <class T>
void direct_product_backward(const RuleGroup& G, const T* v, const T* gcomb, T* g);
// fused_sum: the same given gagg = dL/d(per-head sums).
template <class T>
void direct_sum_backward(const RuleGroup& G, const T* v, const T* gagg, T* g);

// Readouts read through their rows' sums (RuleGroup::readout_scale): agg[h] (and agg2[h],
// when not null) = the coefficient-weighted sum of head h's member rows, and backward adds
// each member's coefficients times gagg[h] (and gagg2[h]) to its row's gradient.
template <class T>
void weighted_sums_forward(const RuleGroup& G, const T* v, T* agg, T* agg2);
template <class T>
void weighted_sums_backward(const RuleGroup& G, const T* gagg, const T* gagg2, T* g);

// Sets G.head_order where G's forward is a plain row sum (each member its input row alone,
// plain_sum_forward) and its heads' counts of members differ; leaves it empty otherwise.
// build_plan calls it on every rule group of a finished plan.
void order_heads_by_count(RuleGroup& G);

// The product of a dense block's constant scalar factors, leaving out factor `skip`
// (shared by the per-member kernels and the dense tiles).
template <class T>
T constant_factor(const DirectProduct& d, const T* v, size_t skip = SIZE_MAX) {
  T s = 1.0;
  for (size_t j = 0; j < d.scalar_off.size(); ++j)
    if (j != skip) s *= v[d.scalar_off[j]];
  return s;
}

// g[constant factor j] += through * (product of the other constant factors).
template <class T>
void constant_factor_grads(const DirectProduct& d, const T* v, T through, T* g) {
  for (size_t j = 0; j < d.scalar_off.size(); ++j) g[d.scalar_off[j]] += through * constant_factor(d, v, j);
}

}  // namespace lrnn::exec
