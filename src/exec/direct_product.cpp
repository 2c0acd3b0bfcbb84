#include "exec/direct_product.hpp"
#include "exec/dense_tiles.hpp"
#include "exec/parallel.hpp"
#include "exec/row_sum.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace lrnn::exec {

namespace {

using Kind = DirectProduct::Kind;

// The product of member k's scalar factors, leaving out input `skip`.
template <class T>
inline T scalar_factor(const RuleGroup& G, const T* v, uint32_t k, int skip = -1) {
  T s = 1.0;
  for (int j : G.direct.scalars)
    if (j != skip) s *= v[G.inputs[j].src[k]];
  return s;
}

template <class T>
inline T dot(const T* x, const T* y, int len) { return CMapV<T>(x, len).dot(CMapV<T>(y, len)); }

// y += a x (a plain loop the compiler vectorises: no reduction).
template <class T>
inline void axpy(T a, const T* x, T* y, int len) {
  for (int e = 0; e < len; ++e) y[e] += a * x[e];
}

template <class T>
inline const T* input(const RuleGroup& G, int i, const T* v, uint32_t k) {
  return v + G.inputs[i].src[k];
}

// Entries of one product: the scaled value (Scale) or a scalar.
inline int product_size(const DirectProduct& d) { return d.kind == Kind::Scale ? d.len : 1; }

// out (+)= the product of member k.
template <class T, bool Accumulate>
inline void member_product(const RuleGroup& G, const T* v, uint32_t k, T* out) {
  const DirectProduct& d = G.direct;
  const T s = scalar_factor(G, v, k);
  T p = s;
  switch (d.kind) {
    case Kind::None:
    case Kind::Scalars: break;
    case Kind::Scale: {
      const T* x = input(G, d.a, v, k);
      if (Accumulate) {
        axpy(s, x, out, d.len);
      } else {
        for (int e = 0; e < d.len; ++e) out[e] = s * x[e];
      }
      return;
    }
    case Kind::Dot: p = s * dot(input(G, d.a, v, k), input(G, d.b, v, k), d.len); break;
  }
  if (Accumulate) out[0] += p;
  else out[0] = p;
}

// g[inputs of member k] += dL/d(inputs) given dL/d(product) = scale * gk.
template <class T>
inline void member_backward(const RuleGroup& G, const T* v, uint32_t k, const T* gk, T scale,
                            T* g) {
  const DirectProduct& d = G.direct;
  // dL/d(scalar factor j) = (product of the other factors) * <gk, the non-scalar part>.
  auto scalar_grads = [&](T through) {
    for (int j : d.scalars) g[G.inputs[j].src[k]] += through * scalar_factor(G, v, k, j);
  };
  switch (d.kind) {
    case Kind::None: return;
    case Kind::Scalars: scalar_grads(scale * gk[0]); return;
    case Kind::Scale: {
      const T* x = input(G, d.a, v, k);
      axpy(scale * scalar_factor(G, v, k), gk, g + G.inputs[d.a].src[k], d.len);
      if (!d.scalars.empty()) scalar_grads(scale * dot(gk, x, d.len));
      return;
    }
    case Kind::Dot: {
      const T* row = input(G, d.a, v, k);
      const T* col = input(G, d.b, v, k);
      const T through = scale * gk[0];
      const T c = through * scalar_factor(G, v, k);
      axpy(c, col, g + G.inputs[d.a].src[k], d.len);
      axpy(c, row, g + G.inputs[d.b].src[k], d.len);
      if (!d.scalars.empty()) scalar_grads(through * dot(row, col, d.len));
      return;
    }
  }
}


// Large dense products use every OpenMP thread (Eigen's GEMM splits them by blocks, which
// is deterministic for a given thread count); everything else keeps Eigen on one thread
// (the executor's setting), since splitting small products costs more than it saves.
class ParallelProducts {
 public:
  explicit ParallelProducts(double multiply_adds) {
#ifdef _OPENMP
    if (multiply_adds > kParallelMultiplyAdds) Eigen::setNbThreads(omp_get_max_threads());
#endif
  }
  ~ParallelProducts() { Eigen::setNbThreads(1); }
  ParallelProducts(const ParallelProducts&) = delete;
  ParallelProducts& operator=(const ParallelProducts&) = delete;

 private:
  static constexpr double kParallelMultiplyAdds = 1 << 22;
};

template <class T>
void dense_dot_forward(const DirectProduct& d, const T* v, T* comb) {
  const ParallelProducts threads(double(d.rows) * d.cols * d.len);
  CMapM<T> X(v + d.outer_off, d.rows, d.len), Y(v + d.inner_off, d.cols, d.len);
  MapM<T>(comb, d.rows, d.cols).noalias() = constant_factor(d, v) * (X * Y.transpose());
}

template <class T>
void dense_dot_backward(const DirectProduct& d, const T* v, const T* gcomb, T* g) {
  const ParallelProducts threads(double(d.rows) * d.cols * d.len);
  CMapM<T> X(v + d.outer_off, d.rows, d.len), Y(v + d.inner_off, d.cols, d.len);
  CMapM<T> G(gcomb, d.rows, d.cols);
  // Both products first: the two row runs may be the same atoms (q = k).
  const RowMat<T> gx = G * Y, gy = G.transpose() * X;
  const T s = constant_factor(d, v);
  MapM<T>(g + d.outer_off, d.rows, d.len) += s * gx;
  MapM<T>(g + d.inner_off, d.cols, d.len) += s * gy;
  if (!d.scalar_off.empty()) constant_factor_grads(d, v, gx.cwiseProduct(X).sum(), g);
}

// Calls f(W, gW) with the dense Scale block's scalar weights and their gradients as
// rows x cols views: the stored matrix, or its transpose when stored column by column.
template <class T, typename F>
void with_weight_views(const DirectProduct& d, const T* v, T* g, F&& f) {
  const uint32_t stored_rows = d.outer_transposed ? d.cols : d.rows;
  const uint32_t stored_cols = d.outer_transposed ? d.rows : d.cols;
  CMapM<T> W(v + d.outer_off, stored_rows, stored_cols);
  MapM<T> gW(g ? g + d.outer_off : nullptr, stored_rows, stored_cols);
  if (d.outer_transposed) f(W.transpose(), gW.transpose());
  else f(W, gW);
}

// 1 / cols for an average over each head's cols members, else 1.
double mean_scale(const RuleGroup& G) {
  return G.aggregation == AggregationKind::Avg ? 1.0 / G.direct.cols : 1.0;
}

template <class T>
void dense_scale_forward(const RuleGroup& G, const T* v, T* agg) {
  const DirectProduct& d = G.direct;
  const ParallelProducts threads(double(d.rows) * d.cols * d.len);
  CMapM<T> V(v + d.inner_off, d.cols, d.len);
  const T s = constant_factor(d, v) * mean_scale(G);
  with_weight_views(d, v, static_cast<T*>(nullptr), [&](const auto& W, auto) {
    MapM<T>(agg, d.rows, d.len).noalias() = s * (W * V);
  });
}

template <class T>
void dense_scale_backward(const RuleGroup& G, const T* v, const T* gagg, T* g) {
  const DirectProduct& d = G.direct;
  const ParallelProducts threads(double(d.rows) * d.cols * d.len);
  CMapM<T> V(v + d.inner_off, d.cols, d.len), Gout(gagg, d.rows, d.len);
  const T mean = mean_scale(G), s = constant_factor(d, v) * mean;
  // out = s W V: dL/dW = s G V^T, dL/dV = s W^T G, dL/d(constant factor) = mean <G V^T, W>
  // times the other factors.
  with_weight_views(d, v, g, [&](const auto& W, auto gW) {
    const RowMat<T> tw = Gout * V.transpose();
    MapM<T>(g + d.inner_off, d.cols, d.len).noalias() += s * (W.transpose() * Gout);
    gW += s * tw;
    if (!d.scalar_off.empty()) constant_factor_grads(d, v, mean * tw.cwiseProduct(W).sum(), g);
  });
}

// A banded block planned without per-member input offsets (a pair block, plan.cpp) runs its
// members one by one only when a tile would multiply a non-finite value by a masked zero;
// then the offsets are written out for that pass: member k of row i, column
// band_first[i] + t, reads row i of `outer` and that column of `inner` (Dot), or scales that
// column of `inner` by `outer` at outer_off + k (Scale); the other scalars are constant.
RuleGroup with_member_sources(const RuleGroup& G) {
  RuleGroup E = G;
  E.direct.banded = false;
  const DirectProduct& d = G.direct;
  const uint32_t len = static_cast<uint32_t>(d.len);
  for (InputBlock& B : E.inputs) B.src.resize(G.n);
  size_t constant = 0;
  for (int j : d.scalars)
    if (j != d.outer) std::fill(E.inputs[j].src.begin(), E.inputs[j].src.end(), d.scalar_off[constant++]);
  for (uint32_t i = 0; i < d.rows; ++i)
    for (uint32_t k = d.band_begin[i]; k < d.band_begin[i + 1]; ++k) {
      const uint32_t column = d.band_first[i] + (k - d.band_begin[i]);
      E.inputs[d.inner].src[k] = d.inner_off + column * len;
      E.inputs[d.outer].src[k] = d.kind == Kind::Dot ? d.outer_off + i * len : d.outer_off + k;
    }
  return E;
}

// Whether G's banded block left its members' input offsets out.
bool implicit_members(const RuleGroup& G) { return G.direct.banded && G.inputs[G.direct.inner].src.empty(); }

}  // namespace

template <class T>
void direct_product_forward(const RuleGroup& G, const T* v, T* comb) {
  if (G.direct.dense) return dense_dot_forward(G.direct, v, comb);
  if (G.direct.banded && banded_dot_forward(G.direct, v, comb)) return;
  if (implicit_members(G)) return direct_product_forward(with_member_sources(G), v, comb);
  const int size = product_size(G.direct);
  const size_t n = G.n;
  parallel_for_if(n * G.direct.len > kParallelEntries, n, [&](size_t k) {
    member_product<T, false>(G, v, static_cast<uint32_t>(k), comb + k * size);
  });
}

// Whether every member is its input row alone (Scale without scalar factors: a GNN's
// sum or average over neighbours, the weight on the head): then the sums below add the
// rows without the factor 1 and the generic per-member dispatch. The same additions in
// the same order (1 * x is x, 0 + x the first row): the same bits.
bool plain_row_sums(const RuleGroup& G) { return G.direct.kind == Kind::Scale && G.direct.scalars.empty(); }

template <int W, class T>
void plain_sum_forward(const RuleGroup& G, const T* v, T* agg) {
  const long size = W > 0 ? W : G.direct.len;
  const uint32_t* src = G.inputs[G.direct.a].src.data();
  const uint32_t* order = G.head_order.size() == G.m ? G.head_order.data() : nullptr;
  for (uint32_t i = 0; i < G.m; ++i) {
    const uint32_t h = order ? order[i] : i;
    T* out = agg + size_t(h) * size;
    const uint32_t begin = G.head_segments[h], end = G.head_segments[h + 1];
    if (begin == end) {
      std::fill_n(out, size, T(0.0));
      continue;
    }
    T acc[W > 0 ? W : 1];
    T* sum = W > 0 ? acc : out;
    sum_rows<W>(begin, end, [&](uint32_t k) { return v + src[k]; }, sum, size);
    const T scale = head_scale(G, h);
    for (long e = 0; e < size; ++e) out[e] = scale != T(1.0) ? sum[e] * scale : sum[e];
  }
}

template <int W, class T>
void plain_sum_backward(const RuleGroup& G, const T* gagg, T* g) {
  const long size = W > 0 ? W : G.direct.len;
  const uint32_t* src = G.inputs[G.direct.a].src.data();
  for (uint32_t h = 0; h < G.m; ++h) {
    const T scale = head_scale(G, h);
    const T* gy = gagg + size_t(h) * size;
    for (uint32_t k = G.head_segments[h]; k < G.head_segments[h + 1]; ++k) add_scaled_row<W>(g + src[k], gy, scale, size);
  }
}

template <class T>
void direct_sum_forward(const RuleGroup& G, const T* v, T* agg) {
  if (G.direct.dense) return dense_scale_forward(G, v, agg);
  if (G.direct.banded && banded_scale_forward(G.direct, G.aggregation == AggregationKind::Avg, v, agg)) return;
  if (implicit_members(G)) return direct_sum_forward(with_member_sources(G), v, agg);
  const int size = product_size(G.direct);
  const size_t m = G.m;
  if (plain_row_sums(G) && size_t(G.n) * G.direct.len <= kParallelEntries)
    return with_row_width(size, [&](auto w) { plain_sum_forward<decltype(w)::value>(G, v, agg); });
  parallel_for_if(size_t(G.n) * G.direct.len > kParallelEntries, m, [&](size_t h) {
    T* out = agg + h * size;
    std::fill_n(out, size, 0.0);
    for (uint32_t k = G.head_segments[h]; k < G.head_segments[h + 1]; ++k) member_product<T, true>(G, v, k, out);
    const T scale = head_scale(G, static_cast<uint32_t>(h));
    if (scale != T(1.0))
      for (int e = 0; e < size; ++e) out[e] *= scale;
  });
}

template <class T>
void direct_product_backward(const RuleGroup& G, const T* v, const T* gcomb, T* g) {
  if (G.direct.dense) return dense_dot_backward(G.direct, v, gcomb, g);
  if (G.direct.banded && banded_dot_backward(G.direct, v, gcomb, g)) return;
  if (implicit_members(G)) return direct_product_backward(with_member_sources(G), v, gcomb, g);
  const int size = product_size(G.direct);
  for (uint32_t k = 0; k < G.n; ++k) member_backward(G, v, k, gcomb + size_t(k) * size, T(1), g);
}

template <class T>
void direct_sum_backward(const RuleGroup& G, const T* v, const T* gagg, T* g) {
  if (G.direct.dense) return dense_scale_backward(G, v, gagg, g);
  if (G.direct.banded && banded_scale_backward(G.direct, G.aggregation == AggregationKind::Avg, v, gagg, g)) return;
  if (implicit_members(G)) return direct_sum_backward(with_member_sources(G), v, gagg, g);
  if (plain_row_sums(G))
    return with_row_width(G.direct.len, [&](auto w) { plain_sum_backward<decltype(w)::value>(G, gagg, g); });
  const int size = product_size(G.direct);
  for (uint32_t h = 0; h < G.m; ++h) {
    const T scale = head_scale(G, h);
    for (uint32_t k = G.head_segments[h]; k < G.head_segments[h + 1]; ++k)
      member_backward(G, v, k, gagg + size_t(h) * size, scale, g);
  }
}

// agg[h] (and agg2[h]) = the coefficient-weighted sum of head h's member rows: per entry the
// FMA chain over the members in order from zero, add_scaled_row's arithmetic (a scale of 1
// adds, the bits of an FMA by 1). At a width known at compile time the chains run in local
// rows the compiler keeps in registers: added into the output rows in memory, every member
// waited for the store of the one before (store-to-load forwarding on the critical path,
// two chains per member under two weights: 4% of the NCI1 GraphSAGE epoch at batch 1).
template <int W, bool Two, class T>
void weighted_sums_forward_rows(const RuleGroup& G, const T* v, T* agg, T* agg2) {
  const uint32_t* src = G.inputs[G.direct.a].src.data();
  const double* scale = G.readout_scale.data();
  const double* scale2 = Two ? G.readout_scale2.data() : nullptr;
  for (uint32_t h = 0; h < G.m; ++h) {
    T a[W] = {}, b[W] = {};
    for (uint32_t k = G.head_segments[h]; k < G.head_segments[h + 1]; ++k) {
      const T* x = v + src[k];
      const T s = T(scale[k]);
      for (int e = 0; e < W; ++e) a[e] = multiply_add(s, x[e], a[e]);
      if constexpr (Two) {
        const T s2 = T(scale2[k]);
        for (int e = 0; e < W; ++e) b[e] = multiply_add(s2, x[e], b[e]);
      }
    }
    std::copy_n(a, W, agg + size_t(h) * W);
    if constexpr (Two) std::copy_n(b, W, agg2 + size_t(h) * W);
  }
}

// gx[k] += scale[k] gagg[h] (then + scale2[k] gagg2[h]) for each member k of head h: the two
// add_scaled_row calls' arithmetic, the member's row held in registers between them.
template <int W, bool Two, class T>
void weighted_sums_backward_rows(const RuleGroup& G, const T* gagg, const T* gagg2, T* g) {
  const uint32_t* src = G.inputs[G.direct.a].src.data();
  const double* scale = G.readout_scale.data();
  const double* scale2 = Two ? G.readout_scale2.data() : nullptr;
  for (uint32_t h = 0; h < G.m; ++h) {
    T ga[W], gb[W];
    std::copy_n(gagg + size_t(h) * W, W, ga);
    if constexpr (Two) std::copy_n(gagg2 + size_t(h) * W, W, gb);
    for (uint32_t k = G.head_segments[h]; k < G.head_segments[h + 1]; ++k) {
      T* gx = g + src[k];
      T row[W];
      const T s = T(scale[k]);
      for (int e = 0; e < W; ++e) row[e] = multiply_add(s, ga[e], gx[e]);
      if constexpr (Two) {
        const T s2 = T(scale2[k]);
        for (int e = 0; e < W; ++e) row[e] = multiply_add(s2, gb[e], row[e]);
      }
      std::copy_n(row, W, gx);
    }
  }
}

template <int W, class T>
void weighted_sums_forward(const RuleGroup& G, const T* v, T* agg, T* agg2) {
  if constexpr (W > 0) {
    if (agg2) return weighted_sums_forward_rows<W, true>(G, v, agg, agg2);
    return weighted_sums_forward_rows<W, false>(G, v, agg, agg2);
  }
  const long size = G.direct.len;
  const uint32_t* src = G.inputs[G.direct.a].src.data();
  for (uint32_t h = 0; h < G.m; ++h) {
    T* a = agg + size_t(h) * size;
    T* b = agg2 ? agg2 + size_t(h) * size : nullptr;
    std::fill_n(a, size, T(0.0));
    if (b) std::fill_n(b, size, T(0.0));
    for (uint32_t k = G.head_segments[h]; k < G.head_segments[h + 1]; ++k) {
      add_scaled_row<0>(a, v + src[k], T(G.readout_scale[k]), size);
      if (b) add_scaled_row<0>(b, v + src[k], T(G.readout_scale2[k]), size);
    }
  }
}

template <int W, class T>
void weighted_sums_backward(const RuleGroup& G, const T* gagg, const T* gagg2, T* g) {
  if constexpr (W > 0) {
    if (gagg2) return weighted_sums_backward_rows<W, true>(G, gagg, gagg2, g);
    return weighted_sums_backward_rows<W, false>(G, gagg, gagg2, g);
  }
  const long size = G.direct.len;
  const uint32_t* src = G.inputs[G.direct.a].src.data();
  for (uint32_t h = 0; h < G.m; ++h) {
    const T* ga = gagg + size_t(h) * size;
    const T* gb = gagg2 ? gagg2 + size_t(h) * size : nullptr;
    for (uint32_t k = G.head_segments[h]; k < G.head_segments[h + 1]; ++k) {
      add_scaled_row<0>(g + src[k], ga, T(G.readout_scale[k]), size);
      if (gb) add_scaled_row<0>(g + src[k], gb, T(G.readout_scale2[k]), size);
    }
  }
}

template <class T>
void weighted_sums_forward(const RuleGroup& G, const T* v, T* agg, T* agg2) {
  with_row_width(G.direct.len, [&](auto w) { weighted_sums_forward<decltype(w)::value>(G, v, agg, agg2); });
}

template <class T>
void weighted_sums_backward(const RuleGroup& G, const T* gagg, const T* gagg2, T* g) {
  with_row_width(G.direct.len, [&](auto w) { weighted_sums_backward<decltype(w)::value>(G, gagg, gagg2, g); });
}

void order_heads_by_count(RuleGroup& G) {
  G.head_order.clear();
  if (!sums_input_rows(G.direct) || G.m < 2 || G.head_segments.size() != size_t(G.m) + 1) return;
  const auto count = [&](uint32_t h) { return G.head_segments[h + 1] - G.head_segments[h]; };
  bool differ = false;
  for (uint32_t h = 1; h < G.m && !differ; ++h) differ = count(h) != count(0);
  if (!differ) return;
  G.head_order.resize(G.m);
  std::iota(G.head_order.begin(), G.head_order.end(), 0u);
  std::stable_sort(G.head_order.begin(), G.head_order.end(), [&](uint32_t a, uint32_t b) { return count(a) < count(b); });
}

// The two scalar types of execution (exec/scalar.hpp).
template void direct_product_forward<double>(const RuleGroup&, const double*, double*);
template void direct_sum_forward<double>(const RuleGroup&, const double*, double*);
template void direct_product_backward<double>(const RuleGroup&, const double*, const double*, double*);
template void direct_sum_backward<double>(const RuleGroup&, const double*, const double*, double*);
template void direct_product_forward<float>(const RuleGroup&, const float*, float*);
template void direct_sum_forward<float>(const RuleGroup&, const float*, float*);
template void direct_product_backward<float>(const RuleGroup&, const float*, const float*, float*);
template void direct_sum_backward<float>(const RuleGroup&, const float*, const float*, float*);
template void weighted_sums_forward<double>(const RuleGroup&, const double*, double*, double*);
template void weighted_sums_backward<double>(const RuleGroup&, const double*, const double*, double*);
template void weighted_sums_forward<float>(const RuleGroup&, const float*, float*, float*);
template void weighted_sums_backward<float>(const RuleGroup&, const float*, const float*, float*);

}  // namespace lrnn::exec
