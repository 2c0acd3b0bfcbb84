#include "exec/atom_sum.hpp"

#include "exec/row_sum.hpp"

#include <algorithm>

namespace lrnn::exec {

namespace {

// A row's sum `sum` of its `count` inputs (`size` entries; W > 0: W, known at compile
// time): averaged, + offset, stored at y (the pre-activation value; `sum` may be y itself)
// and its activation at out.
template <int W, bool Relu, class T>
void finish_row(const AtomGroup& A, Eigen::Index runtime_size, T* sum, uint32_t count, const T* B, bool scalar_offset,
                T* y, T* out) {
  const Eigen::Index size = W > 0 ? W : runtime_size;
  if (A.combination == AggregationKind::Avg && count > 0) {
    const T inv = T(1.0) / T(count);
    for (Eigen::Index i = 0; i < size; ++i) sum[i] *= inv;
  }
  if (B)
    for (Eigen::Index i = 0; i < size; ++i) sum[i] = sum[i] + B[scalar_offset ? 0 : i];
  for (Eigen::Index i = 0; i < size; ++i) {
    y[i] = sum[i];
    out[i] = Relu ? (sum[i] > 0 ? sum[i] : T(0.0)) : sum[i];
  }
}

// The atoms that are their one input's rows (AtomGroup::in_input_rows; m rows of `size`
// back to back at y, which are also their outputs): each entry 0 + x (the bits of a sum of
// one; an average of one scales by 1), + offset, then the activation, in place. One loop
// over the rows' entries, which the compiler runs in whole vectors: row by row, a width of
// 10 doubles took a vector of 8 and two scalars per row, its stores waiting on the loads
// of the row after (the ReLU of a GraphSAGE layer's rows, ~4% of the NCI1 epoch at batch 1).
template <bool Relu, class T>
void forward_input_rows(const AtomGroup& A, Eigen::Index size, const T* B, bool scalar_offset, T* y) {
  const size_t n = size_t(A.m) * size_t(size);
  const auto activate = [](T x) { return Relu ? (x > 0 ? x : T(0.0)) : x; };
  if (B && !scalar_offset) {
    for (uint32_t j = 0; j < A.m; ++j)
      for (Eigen::Index i = 0; i < size; ++i) {
        T& x = y[j * size + i];
        x = activate((T(0.0) + x) + B[i]);
      }
    return;
  }
  const T b = B ? B[0] : T(0.0);
  if (B) {
    for (size_t i = 0; i < n; ++i) y[i] = activate((T(0.0) + y[i]) + b);
  } else {
    for (size_t i = 0; i < n; ++i) y[i] = activate(T(0.0) + y[i]);
  }
}

// Row j of the group: y = 0 + x_0 + x_1 + ... (scaled for an average), + offset, then the
// activation into out. W > 0: W entries per row, known at compile time, summed in
// registers (exec/row_sum.hpp); else summed into y.
template <int W, bool Relu, class T>
void forward_rows(const AtomGroup& A, Eigen::Index runtime_size, const T* B, bool scalar_offset, T* v) {
  const Eigen::Index size = W > 0 ? W : runtime_size;
  if (A.in_input_rows) return forward_input_rows<Relu>(A, size, B, scalar_offset, v + A.red_off);
  auto input = [&](uint32_t k) -> const T* { return v + A.src[k]; };
  for (uint32_t j = 0; j < A.m; ++j) {
    T* y = v + A.red_off + j * size;
    T* out = v + A.out_off + j * size;
    const uint32_t b = A.segments[j], e = A.segments[j + 1];
    T acc[W > 0 ? W : 1];
    T* sum = W > 0 && b < e ? acc : y;
    if (b == e) std::fill(y, y + size, T(0.0));
    else sum_rows<W>(b, e, input, sum, size);
    finish_row<W, Relu>(A, size, sum, e - b, B, scalar_offset, y, out);
  }
}

// backward_rows for atoms that are their one input's rows, in place (the gradients of the
// outputs become those of the pre-activations where they lie, which are the input's): the
// gate as one loop over the rows' entries, then the offset's gradient summed row by row as
// backward_rows does.
template <bool Relu, class T>
void backward_input_rows(const AtomGroup& A, Eigen::Index size, const T* pre, T* g, T* gB, bool scalar_offset) {
  const size_t n = size_t(A.m) * size_t(size);
  for (size_t i = 0; i < n; ++i) {
    const T gi = g[i];
    g[i] = T(0.0) + (Relu ? (pre[i] > 0 ? gi : T(0.0)) : gi);
  }
  if (!gB) return;
  if (scalar_offset) {
    T sum = 0;
    for (size_t i = 0; i < n; ++i) sum += g[i];
    gB[0] += sum;
    return;
  }
  for (uint32_t j = 0; j < A.m; ++j)
    for (Eigen::Index i = 0; i < size; ++i) gB[i] += g[j * size + i];
}

template <int W, bool Relu, class T>
void backward_rows(const AtomGroup& A, Eigen::Index runtime_size, const T* v, T* g, T* gB, bool scalar_offset) {
  const Eigen::Index size = W > 0 ? W : runtime_size;
  if (A.in_input_rows && A.out_off == A.red_off)
    return backward_input_rows<Relu>(A, size, v + A.red_off, g + A.red_off, gB, scalar_offset);
  T scalar_sum = 0;
  // In place (out_off == red_off, PlanOptions::in_place_atoms) the slot holds the outputs,
  // whose sign is the pre-activation's, and dL/d(output) becomes dL/d(pre) where it is.
  const bool in_place = A.out_off == A.red_off;
  for (uint32_t j = 0; j < A.m; ++j) {
    const T* pre = v + A.red_off + j * size;
    const T* gout = g + A.out_off + j * size;
    T* gpre = g + A.red_off + j * size;
    if constexpr (W > 0) {
      // Each gradient is loaded before the sign decides on it, into a row of registers:
      // written as `pre > 0 ? gout : 0` straight into the slot (which may be gout itself),
      // the loads were conditional and GCC made a branch of each entry, mispredicted on
      // every other ReLU sign (a tenth of the NCI1 GraphSAGE epoch). The same operations.
      T gated[W];
      for (int i = 0; i < W; ++i) {
        const T gi = gout[i];
        gated[i] = Relu ? (pre[i] > 0 ? gi : T(0.0)) : gi;
      }
      if (in_place)
        for (int i = 0; i < W; ++i) gpre[i] = T(0.0) + gated[i];
      else
        for (int i = 0; i < W; ++i) gpre[i] += gated[i];
    } else if (in_place) {
      for (Eigen::Index i = 0; i < size; ++i) gpre[i] = T(0.0) + (Relu ? (pre[i] > 0 ? gout[i] : T(0.0)) : gout[i]);
    } else {
      for (Eigen::Index i = 0; i < size; ++i) gpre[i] += Relu ? (pre[i] > 0 ? gout[i] : T(0.0)) : gout[i];
    }
    if (gB) {
      if (scalar_offset) {
        for (Eigen::Index i = 0; i < size; ++i) scalar_sum += gpre[i];
      } else {
        for (Eigen::Index i = 0; i < size; ++i) gB[i] += gpre[i];
      }
    }
    if (!A.in_input_rows) scatter_to_inputs<W>(A, j, gpre, g, size);  // (else gpre is the input's gradient)
  }
  if (gB && scalar_offset) gB[0] += scalar_sum;
}

// The group's offset (B: its values, or its gradient; null without one) and whether it is
// one scalar for every entry.
template <class P>
P* offset_of(const AtomGroup& A, const neural::Parameters& params, P* base, bool& scalar) {
  scalar = A.offset != neural::kNoParam && params.info(A.offset).shape.scalar();
  return A.offset != neural::kNoParam ? base + params.info(A.offset).offset : nullptr;
}

}  // namespace

bool fusable_atom_sum(const AtomGroup& A) {
  const bool activation = A.activation.kind == ActivationKind::Relu || A.activation.kind == ActivationKind::Identity;
  return A.summed_in_place && A.norm == neural::kNoParam && activation && A.pre_off == A.red_off &&
         (A.combination == AggregationKind::Sum || A.combination == AggregationKind::Avg);
}

template <class T>
void fused_atom_sum_forward(const AtomGroup& A, const ParamView<T>& params, T* v) {
  bool scalar_offset;
  const T* B = offset_of(A, *params.params, params.values, scalar_offset);
  const bool relu = A.activation.kind == ActivationKind::Relu;
  with_row_width(A.in_shape.size(), [&](auto w) {
    constexpr int W = decltype(w)::value;
    if (relu) forward_rows<W, true>(A, A.in_shape.size(), B, scalar_offset, v);
    else forward_rows<W, false>(A, A.in_shape.size(), B, scalar_offset, v);
  });
}

template <class T>
void fused_atom_sum_backward(const AtomGroup& A, const ParamView<T>& params, const T* v, T* g, T* pg) {
  bool scalar_offset;
  T* gB = offset_of(A, *params.params, pg, scalar_offset);
  const bool relu = A.activation.kind == ActivationKind::Relu;
  with_row_width(A.in_shape.size(), [&](auto w) {
    constexpr int W = decltype(w)::value;
    if (relu) backward_rows<W, true>(A, A.in_shape.size(), v, g, gB, scalar_offset);
    else backward_rows<W, false>(A, A.in_shape.size(), v, g, gB, scalar_offset);
  });
}

template void fused_atom_sum_forward<double>(const AtomGroup&, const ParamView<double>&, double*);
template void fused_atom_sum_forward<float>(const AtomGroup&, const ParamView<float>&, float*);
template void fused_atom_sum_backward<double>(const AtomGroup&, const ParamView<double>&, const double*, double*,
                                              double*);
template void fused_atom_sum_backward<float>(const AtomGroup&, const ParamView<float>&, const float*, float*, float*);

}  // namespace lrnn::exec
