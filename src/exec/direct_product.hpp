// Kernels of a DirectProduct rule group (plan.hpp): products read at their inputs' value
// offsets, gradients scattered straight back to them. Forward loops run in parallel
// (disjoint writes); backward scatters run in member order on one thread, so results
// are bit-reproducible.
#pragma once

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

}  // namespace lrnn::exec
