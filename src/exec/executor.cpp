// Forward and backward over a plan. Each group is a handful of batched calls: gather rows,
// one GEMM with the shared weight, the combination / activation / aggregation kernels of
// functions.hpp, and a scatter. Gathers are parallel (disjoint writes); scatter-adds and
// weight-gradient reductions run in a fixed order, so results are bit-reproducible.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#include "exec/atom_sum.hpp"
#include "exec/batch_norm.hpp"
#include "exec/clear_gradients.hpp"
#include "exec/direct_product.hpp"
#include "exec/parallel.hpp"
#include "exec/plan.hpp"
#include "exec/row_sum.hpp"
#include "exec/small_gemm.hpp"
#include "exec/transform_sum.hpp"
#include "lrnn/memory.hpp"

namespace lrnn::exec {

namespace {


// rows[k] = values[src[k]], S values each (a copy of fixed size: no memcpy call per row).
template <int S, class T>
void gather_fixed(const uint32_t* src, size_t n, const T* values, T* out) {
  for (size_t k = 0; k < n; ++k) {
    const T* x = values + src[k];
    T* y = out + k * S;
    for (int e = 0; e < S; ++e) y[e] = x[e];
  }
}

// rows[k] = values[src[k]] (size each), as 1 - x under soft negation.
template <class T>
void gather(const std::vector<uint32_t>& src, int size, bool negate, const T* values, T* out) {
  const size_t n = src.size();
  const bool parallel = n * size > kParallelEntries;
  // Small rows of a small group (a message-passing layer's 3-vectors): plain copies.
  if (!parallel && !negate && size <= 4) {
    switch (size) {
      case 1: return gather_fixed<1>(src.data(), n, values, out);
      case 2: return gather_fixed<2>(src.data(), n, values, out);
      case 3: return gather_fixed<3>(src.data(), n, values, out);
      case 4: return gather_fixed<4>(src.data(), n, values, out);
      default: break;
    }
  }
  parallel_for_if(parallel, n, [&](size_t k) {
    const T* x = values + src[k];
    T* y = out + k * size;
    if (negate) {
      for (int e = 0; e < size; ++e) y[e] = T(1.0) - x[e];
    } else {
      std::memcpy(y, x, sizeof(T) * size);
    }
  });
}

// values[src[k]] += rows[k] (negated under soft negation). Sequential: src may repeat.
template <class T>
void scatter_add(const std::vector<uint32_t>& src, int size, bool negate, const T* rows, T* grads) {
  const size_t n = src.size();
  const T sign = negate ? -T(1.0) : T(1.0);
  for (size_t k = 0; k < n; ++k) {
    T* g = grads + src[k];
    const T* y = rows + k * size;
    for (int e = 0; e < size; ++e) g[e] += sign * y[e];
  }
}

// Transposes n matrices of shape s (out has shape s^T); accumulate adds instead.
template <class T>
void transpose_rows(Shape s, size_t n, const T* in, T* out, bool accumulate) {
  const int size = s.size();
  for (size_t k = 0; k < n; ++k) {
    const T* x = in + k * size;
    T* y = out + k * size;
    for (int i = 0; i < s.rows; ++i)
      for (int j = 0; j < s.cols; ++j) {
        if (accumulate) y[j * s.rows + i] += x[i * s.cols + j];
        else y[j * s.rows + i] = x[i * s.cols + j];
      }
  }
}

// out[k] = in[perm[k]] (inverse: out[perm[k]] (+)= in[k]).
template <class T>
void permute_rows(const std::vector<uint32_t>& perm, int size, const T* in, T* out, bool inverse,
                  bool accumulate) {
  for (size_t k = 0; k < perm.size(); ++k) {
    const T* x = in + (inverse ? k : perm[k]) * static_cast<size_t>(size);
    T* y = out + (inverse ? perm[k] : k) * static_cast<size_t>(size);
    for (int e = 0; e < size; ++e) {
      if (accumulate) y[e] += x[e];
      else y[e] = x[e];
    }
  }
}

// z = W (x) for n values of shape x (see WeightMode).
template <class T>
void weight_forward(WeightMode mode, Shape w, Shape x, Shape z, size_t n, const T* W,
                    const T* X, T* Z, const T* Wt = nullptr) {
  const Eigen::Index N = static_cast<Eigen::Index>(n);
  switch (mode) {
    case WeightMode::None: return;
    case WeightMode::Scalar: {
      MapV<T>(Z, N * x.size()) = W[0] * CMapV<T>(X, N * x.size());
      return;
    }
    case WeightMode::Outer: {
      // Z (n x |W|) = x (n x 1) * vec(W)^T
      MapM<T>(Z, N, w.size()).noalias() = CMapV<T>(X, N) * CMapV<T>(W, w.size()).transpose();
      return;
    }
    case WeightMode::MatMul: {
      if (x.cols == 1) {
        // Z (n x r) = X (n x c) W^T: one GEMM for the whole group.
        product_abt(N, x.rows, w.rows, X, W, Z, Wt);
      } else {
        CMapM<T> Wm(W, w.rows, w.cols);
        for (size_t k = 0; k < n; ++k)
          MapM<T>(Z + k * z.size(), z.rows, z.cols).noalias() = Wm * CMapM<T>(X + k * x.size(), x.rows, x.cols);
      }
      return;
    }
    case WeightMode::Elementwise: {
      const int s = x.size();
      CMapV<T> Wv(W, s);
      for (size_t k = 0; k < n; ++k) MapV<T>(Z + k * s, s) = Wv.cwiseProduct(CMapV<T>(X + k * s, s));
      return;
    }
  }
}

// gX += dZ/dX^T gZ, gW += sum over the group (fixed order).
template <class T>
void weight_backward(WeightMode mode, Shape w, Shape x, Shape z, size_t n, const T* W,
                     const T* X, const T* gZ, T* gX, T* gW, bool need_gw) {
  const Eigen::Index N = static_cast<Eigen::Index>(n);
  switch (mode) {
    case WeightMode::None: return;
    case WeightMode::Scalar: {
      const Eigen::Index len = N * x.size();
      MapV<T>(gX, len) += W[0] * CMapV<T>(gZ, len);
      if (need_gw) gW[0] += CMapV<T>(gZ, len).dot(CMapV<T>(X, len));
      return;
    }
    case WeightMode::Outer: {
      CMapM<T> G(gZ, N, w.size());
      MapV<T>(gX, N) += G * CMapV<T>(W, w.size());
      if (need_gw) MapV<T>(gW, w.size()) += G.transpose() * CMapV<T>(X, N);
      return;
    }
    case WeightMode::MatMul: {
      if (x.cols == 1) {
        add_product_ab(N, w.rows, x.rows, gZ, W, gX);                 // gX += gZ W
        if (need_gw) add_product_atb(w.rows, N, x.rows, gZ, X, gW);  // gW += gZ^T X
      } else {
        CMapM<T> Wm(W, w.rows, w.cols);
        MapM<T> GW(gW, w.rows, w.cols);
        for (size_t k = 0; k < n; ++k) {
          CMapM<T> G(gZ + k * z.size(), z.rows, z.cols);
          MapM<T>(gX + k * x.size(), x.rows, x.cols).noalias() += Wm.transpose() * G;
          if (need_gw) GW.noalias() += G * CMapM<T>(X + k * x.size(), x.rows, x.cols).transpose();
        }
      }
      return;
    }
    case WeightMode::Elementwise: {
      const int s = x.size();
      CMapV<T> Wv(W, s);
      MapV<T> GW(gW, s);
      for (size_t k = 0; k < n; ++k) {
        MapV<T>(gX + k * s, s) += Wv.cwiseProduct(CMapV<T>(gZ + k * s, s));
        if (need_gw) GW += CMapV<T>(X + k * s, s).cwiseProduct(CMapV<T>(gZ + k * s, s));
      }
      return;
    }
  }
}

template <class T>
void add_offset(Shape shape, Shape b, size_t n, const T* B, const T* in, T* out) {
  const size_t s = shape.size();
  if (b.scalar()) {
    for (size_t i = 0; i < n * s; ++i) out[i] = in[i] + B[0];
  } else {
    for (size_t k = 0; k < n; ++k)
      for (size_t e = 0; e < s; ++e) out[k * s + e] = in[k * s + e] + B[e];
  }
}

template <class T>
void offset_backward(Shape shape, Shape b, size_t n, const T* g, T* gB) {
  const size_t s = shape.size();
  if (b.scalar()) {
    T acc = 0;
    for (size_t i = 0; i < n * s; ++i) acc += g[i];
    gB[0] += acc;
  } else {
    for (size_t k = 0; k < n; ++k)
      for (size_t e = 0; e < s; ++e) gB[e] += g[k * s + e];
  }
}

// Where the head weight reads its input: the aggregates, or the readout weight's products of
// them (RuleGroup::readout_weight, which keeps their shape).
inline uint32_t head_input_off(const RuleGroup& G) {
  return G.readout_weight != neural::kNoParam ? G.readout_off : G.agg_off;
}

// The readout weights' products of the aggregates (rewrites/weight_after_readout.cpp:
// square matrices on column vectors), the second's added to the first's.
template <class T>
void readout_weights_forward(const RuleGroup& G, const ParamView<T>& params, T* v) {
  const Shape w = params.info(G.readout_weight).shape;
  product_abt(G.m, w.cols, w.rows, v + G.agg_off, params.data(G.readout_weight), v + G.readout_off,
              params.transposed(G.readout_weight));
  if (G.readout_weight2 != neural::kNoParam)
    add_product_abt<T>(G.m, w.cols, w.rows, v + G.readout_agg2_off, params.data(G.readout_weight2), v + G.readout_off,
                       params.transposed(G.readout_weight2));
}

template <class T>
void head_weight_forward(const RuleGroup& G, const ParamView<T>& params, T* v) {
  if (G.readout_weight != neural::kNoParam) readout_weights_forward(G, params, v);
  if (G.adds_to_out && G.head_weight != neural::kNoParam) {  // (a matrix on column vectors: rewrites/shared_head_rows.cpp)
    const Shape w = params.info(G.head_weight).shape;
    add_product_abt<T>(G.m, w.cols, w.rows, v + G.agg_off, params.data(G.head_weight), v + G.out_off,
                       params.transposed(G.head_weight));
    return;
  }
  if (G.head_mode != WeightMode::None)
    weight_forward(G.head_mode, params.info(G.head_weight).shape, G.agg_shape, G.out_shape, G.m,
                   params.data(G.head_weight), v + head_input_off(G), v + G.out_off, params.transposed(G.head_weight));
}

// dL/d(aggregates) from dL/d(out): the head weight's and the readout weight's backward.
template <class T>
void head_weight_backward(const RuleGroup& G, const ParamView<T>& params, const T* v, T* g, T* pg) {
  const uint32_t in = head_input_off(G);
  if (G.head_mode != WeightMode::None)
    weight_backward(G.head_mode, params.info(G.head_weight).shape, G.agg_shape, G.out_shape, G.m,
                    params.data(G.head_weight), v + in, g + G.out_off, g + in,
                    pg + params.info(G.head_weight).offset, true);
  const std::pair<uint32_t, uint32_t> readouts[] = {{G.readout_weight, G.agg_off},
                                                     {G.readout_weight2, G.readout_agg2_off}};
  for (const auto& [weight, agg] : readouts)
    if (weight != neural::kNoParam)
      weight_backward(WeightMode::MatMul, params.info(weight).shape, G.agg_shape, G.agg_shape, G.m,
                      params.data(weight), v + agg, g + G.readout_off, g + agg, pg + params.info(weight).offset, true);
}

// comb = the combination of the gathered, weighted (and transposed) inputs.
template <class T>
void gathered_combination_forward(const RuleGroup& G, const ParamView<T>& params, BasicWorkspace<T>& ws, T* comb) {
  T* v = ws.values.data();
  std::vector<Shape>& shapes = ws.in_shapes;
  std::vector<const T*>& in = ws.in;
  shapes.clear();
  in.clear();
  for (const InputBlock& B : G.inputs) {
    gather(B.src, B.raw_shape.size(), B.soft_negated, v, v + B.x_off);
    if (B.mode != WeightMode::None)
      weight_forward(B.mode, params.info(B.weight).shape, B.raw_shape, B.wout_shape, G.n,
                     params.data(B.weight), v + B.x_off, v + B.w_off, params.transposed(B.weight));
    if (B.z_off != B.w_off) transpose_rows(B.wout_shape, G.n, v + B.w_off, v + B.z_off, false);
    shapes.push_back(B.out_shape);
    in.push_back(v + B.z_off);
  }
  if (in.empty()) {
    std::fill_n(comb, G.n, 1.0);  // a body without neuron inputs holds: value 1
  } else {
    combination_forward(G.combination, shapes, G.n, in.data(), comb);
  }
}

template <class T>
void rule_forward(const RuleGroup& G, const ParamView<T>& params, BasicWorkspace<T>& ws) {
  T* v = ws.values.data();
  if (G.transform.enabled) {
    transform_sum_forward(G, params, v, ws.data_held, ws.hot_rows_written);
    head_weight_forward(G, params, v);
    return;
  }
  if (G.direct.fused_sum) {
    if (!G.readout_scale.empty()) {
      weighted_sums_forward(G, v, v + G.agg_off,
                            G.readout_weight2 != neural::kNoParam ? v + G.readout_agg2_off : nullptr);
    } else {
      if (!G.direct.input_rows) direct_sum_forward(G, v, v + G.agg_off);
      if (G.readout_weight2 != neural::kNoParam)  // the same sums over the second rows
        direct_sum_forward(G, v + G.readout_shift, v + G.readout_agg2_off);
    }
    head_weight_forward(G, params, v);
    return;
  }
  T* comb = v + G.comb_off;
  if (G.direct.kind != DirectProduct::Kind::None) direct_product_forward(G, v, comb);
  else gathered_combination_forward(G, params, ws, comb);
  if (G.offset != neural::kNoParam)
    add_offset(G.comb_shape, params.info(G.offset).shape, G.n, params.data(G.offset), comb, v + G.pre_off);
  // Stages that are the identity share their input's offset (plan.hpp) and are skipped.
  if (G.act_off != G.pre_off) activation_forward(G.activation, G.comb_shape, G.n, v + G.pre_off, v + G.act_off);
  const T* agg_in = v + G.act_off;
  if (G.softmax) {
    const int size = G.act_shape.size();
    const bool permuted = !G.softmax_perm.empty();
    if (permuted) permute_rows(G.softmax_perm, size, v + G.act_off, v + G.perm_off, false, false);
    segment_softmax_forward(G.act_shape, G.softmax_segments.size() - 1, G.softmax_segments.data(),
                            v + G.perm_off, v + G.psoft_off);
    if (permuted) permute_rows(G.softmax_perm, size, v + G.psoft_off, v + G.soft_off, true, false);
    agg_in = v + G.soft_off;
  }
  if (!G.identity_aggregation)
    aggregation_forward(G.aggregation, G.act_shape, G.m, G.head_segments.data(), agg_in, v + G.agg_off);
  head_weight_forward(G, params, v);
}

template <class T>
void rule_backward(const RuleGroup& G, const ParamView<T>& params, BasicWorkspace<T>& ws, T* pg) {
  const T* v = ws.values.data();
  T* g = ws.grads.data();
  head_weight_backward(G, params, v, g, pg);
  if (G.transform.enabled) {
    transform_sum_backward(G, params, v, g, pg);
    return;
  }
  if (G.direct.fused_sum) {
    if (!G.readout_scale.empty()) {
      weighted_sums_backward(G, g + G.agg_off,
                             G.readout_weight2 != neural::kNoParam ? g + G.readout_agg2_off : nullptr, g);
      return;
    }
    if (!G.direct.input_rows) direct_sum_backward(G, v, g + G.agg_off, g);  // else the head weight added there
    if (G.readout_weight2 != neural::kNoParam)
      direct_sum_backward(G, v + G.readout_shift, g + G.readout_agg2_off, g + G.readout_shift);
    return;
  }
  if (G.softmax) {
    const int size = G.act_shape.size();
    const bool permuted = !G.softmax_perm.empty();
    if (!G.identity_aggregation)
      aggregation_backward(G.aggregation, G.act_shape, G.m, G.head_segments.data(), v + G.soft_off,
                           v + G.agg_off, g + G.agg_off, g + G.soft_off);
    if (permuted) permute_rows(G.softmax_perm, size, g + G.soft_off, g + G.psoft_off, false, true);
    segment_softmax_backward(G.act_shape, G.softmax_segments.size() - 1, G.softmax_segments.data(),
                             v + G.psoft_off, g + G.psoft_off, g + G.perm_off);
    if (permuted) permute_rows(G.softmax_perm, size, g + G.perm_off, g + G.act_off, true, true);
  } else if (!G.identity_aggregation) {
    aggregation_backward(G.aggregation, G.act_shape, G.m, G.head_segments.data(), v + G.act_off,
                         v + G.agg_off, g + G.agg_off, g + G.act_off);
  }
  if (G.act_off != G.pre_off)
    activation_backward(G.activation, G.comb_shape, G.n, v + G.pre_off, v + G.act_off, g + G.act_off,
                        g + G.pre_off);
  if (G.offset != neural::kNoParam) {
    offset_backward(G.comb_shape, params.info(G.offset).shape, G.n, g + G.pre_off,
                    pg + params.info(G.offset).offset);
    // g_comb = g_pre: pre_off and comb_off differ only when there is an offset.
    const size_t len = static_cast<size_t>(G.n) * G.comb_shape.size();
    for (size_t i = 0; i < len; ++i) g[G.comb_off + i] += g[G.pre_off + i];
  }
  if (G.inputs.empty()) return;
  if (G.direct.kind != DirectProduct::Kind::None) {
    direct_product_backward(G, v, g + G.comb_off, g);
    return;
  }
  std::vector<Shape>& shapes = ws.in_shapes;
  std::vector<const T*>& in = ws.in;
  std::vector<T*>& gin = ws.gin;
  shapes.clear();
  in.clear();
  gin.clear();
  for (const InputBlock& B : G.inputs) {
    shapes.push_back(B.out_shape);
    in.push_back(v + B.z_off);
    gin.push_back(g + B.z_off);
  }
  combination_backward(G.combination, shapes, G.n, in.data(), v + G.comb_off, g + G.comb_off, gin.data());
  for (const InputBlock& B : G.inputs) {
    if (B.z_off != B.w_off) transpose_rows(B.out_shape, G.n, g + B.z_off, g + B.w_off, true);
    if (B.mode != WeightMode::None)
      weight_backward(B.mode, params.info(B.weight).shape, B.raw_shape, B.wout_shape, G.n,
                      params.data(B.weight), v + B.x_off, g + B.w_off, g + B.x_off,
                      pg + params.info(B.weight).offset, true);
    scatter_add(B.src, B.raw_shape.size(), B.soft_negated, g + B.x_off, g);
  }
}

// red[j] = the sum (average) of atom j's inputs, read where they are, in input order.
template <class T>
void sum_in_place_forward(const AtomGroup& A, T* v) {
  const size_t size = A.in_shape.size();
  for (uint32_t j = 0; j < A.m; ++j) {
    T* y = v + A.red_off + j * size;
    const uint32_t b = A.segments[j], e = A.segments[j + 1];
    if (b == e) std::fill(y, y + size, T(0.0));
    else sum_rows<0>(b, e, [&](uint32_t k) -> const T* { return v + A.src[k]; }, y, static_cast<long>(size));
    if (A.combination == AggregationKind::Avg && e > b) {
      const T inv = T(1.0) / T(e - b);
      for (size_t i = 0; i < size; ++i) y[i] *= inv;
    }
  }
}

// g[src[k]] += dL/d(red[j]) (scaled for an average) for each input k of atom j.
template <class T>
void sum_in_place_backward(const AtomGroup& A, T* g) {
  const long size = A.in_shape.size();
  for (uint32_t j = 0; j < A.m; ++j) scatter_to_inputs(A, j, g + A.red_off + j * size, g, size);
}

// The group's combined inputs, at red_off.
template <class T>
void atom_reduce_forward(const AtomGroup& A, T* v) {
  if (A.x_in_inputs) return;  // x lies in the inputs' rows
  if (A.summed_in_place) {
    sum_in_place_forward(A, v);
  } else {
    gather(A.src, A.in_shape.size(), false, v, v + A.c_off);
    aggregation_forward(A.combination, A.in_shape, A.m, A.segments.data(), v + A.c_off, v + A.red_off);
  }
}

Shape reduced_shape(const AtomGroup& A) {
  return A.combination == AggregationKind::Count ? Shape{1, 1} : A.in_shape;
}

// sqrt(running var + eps) per feature.
template <class T>
std::vector<T> running_std(const T* var, size_t size) {
  std::vector<T> sd(size);
  for (size_t i = 0; i < size; ++i) sd[i] = std::sqrt(var[i] + T(neural::kBatchNormEps));
  return sd;
}

// x^ = (x - running mean) / sqrt(running var + eps): a normalised group outside a training step.
template <class T>
void running_norm_forward(const AtomGroup& A, const ParamView<T>& params, T* v) {
  const size_t size = reduced_shape(A).size();
  const T* mean = params.data(A.norm_mean);
  const T* var = params.data(A.norm_var);
  const T* x = v + A.red_off;
  T* xh = v + A.norm_off;
  // Each feature's sqrt taken once, not once per atom (the division by it stays: the same
  // bits as before, and the loop below vectorises).
  const std::vector<T> sd = running_std(var, size);
  for (uint32_t j = 0; j < A.m; ++j)
    for (size_t i = 0; i < size; ++i) xh[j * size + i] = (x[j * size + i] - mean[i]) / sd[i];
}

// dL/dx added to red_off's gradients; with x^ over x (norm_off == red_off: x feeds this
// group alone, so its gradient is this alone) dL/dx takes dL/dx^'s place, as 0 + it.
template <class T>
void running_norm_backward(const AtomGroup& A, const ParamView<T>& params, T* g) {
  const size_t size = reduced_shape(A).size();
  const std::vector<T> sd = running_std(params.data(A.norm_var), size);
  const bool over = A.norm_off == A.red_off;
  for (uint32_t j = 0; j < A.m; ++j)
    for (size_t i = 0; i < size; ++i) {
      const T gx = g[A.norm_off + j * size + i] / sd[i];
      T& out = g[A.red_off + j * size + i];
      out = over ? T(0) + gx : out + gx;
    }
}

// Offset (after the scale of x^ for a normalised group) and activation.
template <class T>
void atom_finish_forward(const AtomGroup& A, const ParamView<T>& params, T* v) {
  const Shape red = reduced_shape(A);
  if (A.norm != neural::kNoParam) {
    const size_t size = red.size();
    const T* scale = params.data(A.norm_scale);
    const T* shift = params.data(A.offset);
    const T* xh = v + A.norm_off;
    T* pre = v + A.pre_off;
    for (uint32_t j = 0; j < A.m; ++j)
      for (size_t i = 0; i < size; ++i) pre[j * size + i] = scale[i] * xh[j * size + i] + shift[i];
  } else if (A.offset != neural::kNoParam) {
    add_offset(red, params.info(A.offset).shape, A.m, params.data(A.offset), v + A.red_off, v + A.pre_off);
  }
  if (A.out_off != A.pre_off) return activation_forward(A.activation, red, A.m, v + A.pre_off, v + A.out_off);
  // In place (a normalised group of a training plan, ReLU or identity): see plan.hpp.
  if (A.activation.kind == ActivationKind::Relu) {
    T* y = v + A.out_off;
    for (size_t i = 0, len = size_t(A.m) * red.size(); i < len; ++i) y[i] = y[i] > T(0) ? y[i] : T(0);
  }
}

// dL/d(pre) over dL/d(output) where both lie (out_off == pre_off): the output's sign is the
// pre-activation's. `0 +` as the accumulating kernel's `+=` into a zero slot gives (-0 -> +0).
template <class T>
void in_place_activation_backward(const AtomGroup& A, Shape red, const T* v, T* g) {
  const bool relu = A.activation.kind == ActivationKind::Relu;
  const T* y = v + A.out_off;
  T* gy = g + A.out_off;
  for (size_t i = 0, len = size_t(A.m) * red.size(); i < len; ++i)
    gy[i] = T(0) + (relu ? (y[i] > T(0) ? gy[i] : T(0)) : gy[i]);
}

template <class T>
void atom_forward(const AtomGroup& A, const ParamView<T>& params, T* v) {
  if (fusable_atom_sum(A)) return fused_atom_sum_forward(A, params, v);
  atom_reduce_forward(A, v);
  if (A.norm != neural::kNoParam) running_norm_forward(A, params, v);
  atom_finish_forward(A, params, v);
}

// Back through the activation and the offset; for a normalised group also the scale,
// leaving dL/dx^ at norm_off (else dL/dx at red_off).
template <class T>
void atom_finish_backward(const AtomGroup& A, const ParamView<T>& params, const T* v, T* g, T* pg) {
  const Shape red = reduced_shape(A);
  if (A.out_off == A.pre_off) in_place_activation_backward(A, red, v, g);
  else activation_backward(A.activation, red, A.m, v + A.pre_off, v + A.out_off, g + A.out_off, g + A.pre_off);
  if (A.norm != neural::kNoParam) {
    offset_backward(red, params.info(A.offset).shape, A.m, g + A.pre_off, pg + params.info(A.offset).offset);
    const size_t size = red.size();
    const T* scale = params.data(A.norm_scale);
    T* gscale = pg + params.info(A.norm_scale).offset;
    for (uint32_t j = 0; j < A.m; ++j)
      for (size_t i = 0; i < size; ++i) {
        const T gp = g[A.pre_off + j * size + i];
        gscale[i] += gp * v[A.norm_off + j * size + i];
        g[A.norm_off + j * size + i] += scale[i] * gp;
      }
  } else if (A.offset != neural::kNoParam) {
    offset_backward(red, params.info(A.offset).shape, A.m, g + A.pre_off, pg + params.info(A.offset).offset);
    // In place (pre_off == red_off) the two gradients are one.
    const size_t len = A.pre_off == A.red_off ? 0 : static_cast<size_t>(A.m) * red.size();
    for (size_t i = 0; i < len; ++i) g[A.red_off + i] += g[A.pre_off + i];
  }
}

template <class T>
void atom_reduce_backward(const AtomGroup& A, const T* v, T* g) {
  if (A.x_in_inputs) return;  // dL/dx was added where the inputs' gradients lie
  if (A.summed_in_place) {
    sum_in_place_backward(A, g);
    return;
  }
  aggregation_backward(A.combination, A.in_shape, A.m, A.segments.data(), v + A.c_off, v + A.red_off,
                       g + A.red_off, g + A.c_off);
  scatter_add(A.src, A.in_shape.size(), false, g + A.c_off, g);
}

template <class T>
void atom_backward(const AtomGroup& A, const ParamView<T>& params, const T* v, T* g, T* pg) {
  if (fusable_atom_sum(A)) return fused_atom_sum_backward(A, params, v, g, pg);
  atom_finish_backward(A, params, v, g, pg);
  if (A.norm != neural::kNoParam) running_norm_backward(A, params, g);
  atom_reduce_backward(A, v, g);
}

// Adds dst[k] += src[k] for the example fact block's entries read from the value gradients.
template <class T>
void add_fact_grads(const std::vector<uint32_t>& off, const std::vector<uint32_t>& param,
                    const neural::Parameters& params, const T* g, double* grads) {
  for (size_t i = 0; i < off.size(); ++i) {
    const uint32_t p = param[i];
    const int size = params.info(p).shape.size();
    double* gp = grads + params.info(p).offset;
    for (int e = 0; e < size; ++e) gp[e] += g[off[i] + e];
  }
}

}  // namespace

ParamView<float> ParamMirror::refresh(const neural::Parameters& params) {
  values.assign(params.values.begin(), params.values.end());
  transposed.resize(values.size());
  for (uint32_t p = 0; p < params.count(); ++p) {  // every weight the small GEMMs may take (vectors too)
    const neural::ParamInfo& info = params.info(p);
    const Eigen::Index rows = info.shape.rows, cols = info.shape.cols;
    if (rows * cols <= kSmallGemmMaxTransposed)
      MapM<float>(transposed.data() + info.offset, cols, rows) =
          CMapM<float>(values.data() + info.offset, rows, cols).transpose();
  }
  return {&params, values.data(), transposed.data()};
}

void forward(const Plan& plan, const neural::Parameters& params, Workspace& ws,
             const neural::Parameters* example_params) {
  forward(plan, plan.data, view_of(params), ws, example_params);
}

void forward(const Plan& plan, std::span<const double> data, const neural::Parameters& params, Workspace& ws,
             const neural::Parameters* example_params) {
  forward(plan, data, view_of(params), ws, example_params);
}

namespace {

// The fold-zero-literals rewrite left out literals whose fixed weight was zero when the
// plan was built; a weight set since (Model::set_parameter) would make the plan compute
// another function than its template: refused, naming the weight. (Read from the double
// master values: a float mirror rounds tiny weights to 0.)
// The same for the fixed weights the drop-unit-weights rewrite read as the identity.
template <class T>
void check_folded_weights(const Plan& plan, const ParamView<T>& params) {
  const auto refuse = [&](uint32_t p, const std::string& what) {
    throw Error(ErrorKind::Semantic, params.info(p).span,
                "the fixed weight " + params.info(p).name + " was " + what +
                    " when the network was planned, which left it out (docs/semantics.md \"Plan rewrites\"), "
                    "and is not now: write its value in the template (or make it learnable)");
  };
  for (uint32_t p : plan.folded_zero_weights) {
    const double* w = params.params->data(p);
    if (std::any_of(w, w + params.info(p).shape.size(), [](double x) { return x != 0.0; })) refuse(p, "0");
  }
  for (const auto& [p, mode] : plan.dropped_unit_weights)
    if (!multiplies_as_identity(params.params->data(p), params.info(p).shape, mode)) refuse(p, "the identity");
}

// The fact values into the workspace's first slots, converted to T.
template <class T, class D>
void write_facts(std::span<const D> data, T* v) {
  std::copy(data.begin(), data.end(), v);
}
template <class T>
void write_facts(const SparseFacts& data, T* v) {
  std::fill_n(v, data.size, T(0));
  for (size_t i = 0; i < data.positions.size(); ++i) v[data.positions[i]] = T(data.values[i]);
}

// Whether the pass's one-hot groups find their rows' columns written (write_hot_rows): from
// sparse facts, whose positions say where each row's nonzero values are. Checking the rows
// instead read each one right after the facts' copy wrote them, a load the stores before it
// could not forward (NCI1 GCN at batch 1: an eighth of a pass whose data were all in cache).
// `facts_unread`: every row was one-hot and the plan reads the facts' values no other way
// (Plan::hot_only_facts), so they need not be written.
template <class T, class D>
bool write_hot_columns(const Plan&, std::span<const D>, T*, bool& facts_unread) {
  facts_unread = false;
  return false;
}
template <class T>
bool write_hot_columns(const Plan& plan, const SparseFacts& data, T* v, bool& facts_unread) {
  const bool all_hot = write_hot_rows(plan, data.positions, data.values, v);
  facts_unread = all_hot && plan.hot_only_facts != 0 && plan.hot_only_facts == data.size;
  return true;
}

template <class T, class Data>
void prepare_values(const Plan& plan, const Data& data, const ParamView<T>& params, BasicWorkspace<T>& ws,
                    const neural::Parameters* example_params, const DataSource* source) {
  // Eigen's own GEMM threading splits even small products (n x 8 by 8 x 8) across
  // threads; the group kernels are memory-bound, so they run single-threaded.
  static const bool eigen_single = [] {
    Eigen::setNbThreads(1);
    return true;
  }();
  (void)eigen_single;
  check_folded_weights(plan, params);
  // Every value is written by its kernel before it is read: no zero-fill needed.
  if (ws.values.size() < plan.num_values) {
    // Asked only when the workspace grows (once per plan size), never per pass.
    const uint64_t more = uint64_t(plan.num_values - ws.values.size()) * sizeof(T);
    if (!memory_fits(more))
      check_memory(more, "the workspace of a network of " + std::to_string(plan.num_values) + " values");
    ws.values.resize(plan.num_values);
  }
  const typename BasicWorkspace<T>::DataKey key =
      source ? typename BasicWorkspace<T>::DataKey{plan.serial, source->set, source->sample}
             : typename BasicWorkspace<T>::DataKey{};
  ws.data_held = source && plan.serial != 0 && key == ws.data_key;
  ws.data_key = key;
  T* v = ws.values.data();
  // The fact data are converted to T here, in the copy every forward makes but one that
  // finds them in place (a big graph's 2M feature rows: 128 MB per pass).
  // Held data keep the one-hot columns a pass over them wrote, as they keep the data.
  const bool hot_rows_held = ws.data_held && ws.hot_rows_written;
  bool facts_unread = false;
  if (!hot_rows_held) ws.hot_rows_written = write_hot_columns(plan, data, v, facts_unread);
  if (!ws.data_held) {
    // Facts no step reads are left unwritten (an online epoch over small one-hot graphs: a
    // fill of every graph's feature slots, 3-4% of NCI1's); the workspace then does not
    // hold them for a later pass to find.
    if (facts_unread) ws.data_key = {};
    else write_facts(data, v);
  }
  for (size_t i = 0; i < plan.param_fact_off.size(); ++i) {
    const uint32_t p = plan.param_fact_param[i];
    std::copy_n(params.data(p), params.info(p).shape.size(), v + plan.param_fact_off[i]);
  }
  if (example_params)
    for (size_t i = 0; i < plan.example_fact_off.size(); ++i) {
      const uint32_t p = plan.example_fact_param[i];
      std::copy_n(example_params->data(p), example_params->info(p).shape.size(), v + plan.example_fact_off[i]);
    }
}

}  // namespace

template <class T>
void forward_prepare(const Plan& plan, std::span<const double> data, const ParamView<T>& params,
                     BasicWorkspace<T>& ws, const neural::Parameters* example_params, const DataSource* source) {
  prepare_values(plan, data, params, ws, example_params, source);
}

template <class T>
void forward_steps(const Plan& plan, const ParamView<T>& params, BasicWorkspace<T>& ws, size_t first, size_t last) {
  T* v = ws.values.data();
  for (size_t k = first; k < last; ++k) {
    const Step& step = plan.steps[k];
    if (step.atom) {
      atom_forward(plan.atom_groups[step.index], params, v);
    } else {
      rule_forward(plan.rule_groups[step.index], params, ws);
    }
  }
}

template <class T>
void forward(const Plan& plan, std::span<const double> data, const ParamView<T>& params, BasicWorkspace<T>& ws,
             const neural::Parameters* example_params) {
  forward_prepare(plan, data, params, ws, example_params);
  forward_steps(plan, params, ws, 0, plan.steps.size());
}

void forward_prepare(const Plan& plan, std::span<const float> data, const ParamView<float>& params, Workspace32& ws,
                     const neural::Parameters* example_params, const DataSource* source) {
  prepare_values(plan, data, params, ws, example_params, source);
}

void forward_prepare(const Plan& plan, std::span<const float> data, const ParamView<double>& params, Workspace& ws,
                     const neural::Parameters* example_params, const DataSource* source) {
  prepare_values(plan, data, params, ws, example_params, source);
}

void forward_prepare(const Plan& plan, const SparseFacts& data, const ParamView<float>& params, Workspace32& ws,
                     const neural::Parameters* example_params, const DataSource* source) {
  prepare_values(plan, data, params, ws, example_params, source);
}

void forward_prepare(const Plan& plan, const SparseFacts& data, const ParamView<double>& params, Workspace& ws,
                     const neural::Parameters* example_params, const DataSource* source) {
  prepare_values(plan, data, params, ws, example_params, source);
}

template <class T>
void norm_reduce_forward(const Plan& plan, size_t step, BasicWorkspace<T>& ws) {
  atom_reduce_forward(plan.atom_groups[plan.steps[step].index], ws.values.data());
}

template <class T>
void norm_finish_forward(const Plan& plan, size_t step, const ParamView<T>& params, BasicWorkspace<T>& ws) {
  atom_finish_forward(plan.atom_groups[plan.steps[step].index], params, ws.values.data());
}

void backward(const Plan& plan, const neural::Parameters& params, Workspace& ws,
              std::vector<double>& param_grads, const neural::Parameters* example_params,
              std::vector<double>* example_grads) {
  backward(plan, view_of(params), ws, param_grads, example_params, example_grads);
}

template <class T>
void backward_steps(const Plan& plan, const ParamView<T>& params, BasicWorkspace<T>& ws, T* pg, size_t first,
                    size_t last, GradientSlots slots) {
  const T* v = ws.values.data();
  T* g = ws.grads.data();
  const bool clear = slots == GradientSlots::Clear;
  ws.grads_zero = false;  // until a clearing pass's finish_clearing
  for (size_t k = last; k-- > first;) {
    const Step& step = plan.steps[k];
    if (step.atom) {
      atom_backward(plan.atom_groups[step.index], params, v, g, pg);
    } else {
      rule_backward(plan.rule_groups[step.index], params, ws, pg);
    }
    if (clear) clear_step_gradients(plan, k, g);
  }
}

template <class T>
void backward_end(const Plan& plan, const ParamView<T>& params, BasicWorkspace<T>& ws, T* pg,
                  const neural::Parameters* example_params, std::vector<double>* example_grads) {
  const T* g = ws.grads.data();
  for (size_t i = 0; i < plan.param_fact_off.size(); ++i) {
    const uint32_t p = plan.param_fact_param[i];
    const int size = params.info(p).shape.size();
    T* gp = pg + params.info(p).offset;
    for (int e = 0; e < size; ++e) gp[e] += g[plan.param_fact_off[i] + e];
  }
  if (example_params && example_grads) {
    example_grads->resize(example_params->size(), 0.0);
    add_fact_grads(plan.example_fact_off, plan.example_fact_param, *example_params, g, example_grads->data());
  }
}

template <class T>
void backward(const Plan& plan, const ParamView<T>& params, BasicWorkspace<T>& ws, std::vector<double>& param_grads,
              const neural::Parameters* example_params, std::vector<double>* example_grads,
              FloatGradients float_gradients, GradientSlots slots, BackwardPauses pauses) {
  const bool keep_float = float_gradients == FloatGradients::KeepFloat && !std::is_same_v<T, double>;
  if (!keep_float) param_grads.resize(params.size(), 0.0);
  if (ws.grads.size() < plan.num_values && !memory_fits(uint64_t(plan.num_values - ws.grads.size()) * sizeof(T)))
    check_memory(uint64_t(plan.num_values - ws.grads.size()) * sizeof(T),
                 "the gradients of a network of " + std::to_string(plan.num_values) + " values");
  // (Grown only: a larger buffer left all zero by a clearing pass stays so past the plan.)
  if (ws.grads.size() < plan.num_values) ws.grads.resize(plan.num_values, 0.0);
  // double accumulates into the caller's vector; float sums the pass in float first.
  T* pg;
  if constexpr (std::is_same_v<T, double>) {
    pg = param_grads.data();
  } else {
    ws.param_grads.assign(params.size(), T(0));
    pg = ws.param_grads.data();
  }
  size_t last = plan.steps.size();
  for (uint32_t at : pauses.at) {
    backward_steps(plan, params, ws, pg, at, last, slots);
    (*pauses.call)(at);
    last = at;
  }
  backward_steps(plan, params, ws, pg, 0, last, slots);
  backward_end(plan, params, ws, pg, example_params, example_grads);
  if (slots == GradientSlots::Clear) finish_clearing(plan, ws);
  if constexpr (!std::is_same_v<T, double>)
    if (!keep_float)
      for (size_t i = 0; i < param_grads.size(); ++i) param_grads[i] += pg[i];
}

template <class T>
void norm_finish_backward(const Plan& plan, size_t step, const ParamView<T>& params, BasicWorkspace<T>& ws, T* pg) {
  ws.grads_zero = false;
  atom_finish_backward(plan.atom_groups[plan.steps[step].index], params, ws.values.data(), ws.grads.data(), pg);
}

template <class T>
void norm_reduce_backward(const Plan& plan, size_t step, BasicWorkspace<T>& ws, GradientSlots slots, bool scatter) {
  if (scatter) atom_reduce_backward(plan.atom_groups[plan.steps[step].index], ws.values.data(), ws.grads.data());
  ws.grads_zero = false;
  if (slots == GradientSlots::Clear) clear_step_gradients(plan, step, ws.grads.data());
}

#define LRNN_STAGED(T)                                                                                              \
  template void forward_prepare<T>(const Plan&, std::span<const double>, const ParamView<T>&, BasicWorkspace<T>&,   \
                                   const neural::Parameters*, const DataSource*);                                   \
  template void forward_steps<T>(const Plan&, const ParamView<T>&, BasicWorkspace<T>&, size_t, size_t);            \
  template void norm_reduce_forward<T>(const Plan&, size_t, BasicWorkspace<T>&);                                   \
  template void norm_finish_forward<T>(const Plan&, size_t, const ParamView<T>&, BasicWorkspace<T>&);             \
  template void backward_steps<T>(const Plan&, const ParamView<T>&, BasicWorkspace<T>&, T*, size_t, size_t,       \
                                  GradientSlots);                                                                  \
  template void backward_end<T>(const Plan&, const ParamView<T>&, BasicWorkspace<T>&, T*,                         \
                                const neural::Parameters*, std::vector<double>*);                                  \
  template void norm_finish_backward<T>(const Plan&, size_t, const ParamView<T>&, BasicWorkspace<T>&, T*);         \
  template void norm_reduce_backward<T>(const Plan&, size_t, BasicWorkspace<T>&, GradientSlots, bool);
LRNN_STAGED(double)
LRNN_STAGED(float)
#undef LRNN_STAGED

template <class T>
std::vector<double> output_value(const Plan& plan, const BasicWorkspace<T>& ws, size_t o) {
  const OutputRef& out = plan.outputs[o];
  if (out.offset == kNoValue) return {0.0};
  return std::vector<double>(ws.values.begin() + out.offset, ws.values.begin() + out.offset + out.shape.size());
}

template void forward<double>(const Plan&, std::span<const double>, const ParamView<double>&, Workspace&,
                              const neural::Parameters*);
template void forward<float>(const Plan&, std::span<const double>, const ParamView<float>&, Workspace32&,
                             const neural::Parameters*);
template void backward<double>(const Plan&, const ParamView<double>&, Workspace&, std::vector<double>&,
                               const neural::Parameters*, std::vector<double>*, FloatGradients, GradientSlots,
                               BackwardPauses);
template void backward<float>(const Plan&, const ParamView<float>&, Workspace32&, std::vector<double>&,
                              const neural::Parameters*, std::vector<double>*, FloatGradients, GradientSlots,
                              BackwardPauses);
template <class T>
void copy_output_value(const Plan& plan, const BasicWorkspace<T>& ws, size_t o, std::vector<double>& out) {
  const OutputRef& ref = plan.outputs[o];
  if (ref.offset == kNoValue) {
    out.assign(1, 0.0);
    return;
  }
  out.assign(ws.values.begin() + ref.offset, ws.values.begin() + ref.offset + ref.shape.size());
}

template std::vector<double> output_value<double>(const Plan&, const Workspace&, size_t);
template void copy_output_value<double>(const Plan&, const Workspace&, size_t, std::vector<double>&);
template void copy_output_value<float>(const Plan&, const Workspace32&, size_t, std::vector<double>&);
template std::vector<double> output_value<float>(const Plan&, const Workspace32&, size_t);

}  // namespace lrnn::exec
