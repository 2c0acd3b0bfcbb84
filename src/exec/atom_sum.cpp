#include "exec/atom_sum.hpp"

#include "exec/row_sum.hpp"

#include <algorithm>

namespace lrnn::exec {

namespace {

struct OffsetRef {
  const void* values = nullptr;  // nullptr: no offset
  bool scalar = false;
};

// A row's sum `acc` of its e - b inputs (W entries): averaged, + offset, stored at y (the
// pre-activation value) and its activation at out.
template <int W, bool Relu, class T>
void finish_row(const AtomGroup& A, T (&acc)[W], const T* B, bool scalar_offset, uint32_t b, uint32_t e, T* y,
                T* out) {
  if (A.combination == AggregationKind::Avg) {
    const T inv = T(1.0) / T(e - b);
    for (int i = 0; i < W; ++i) acc[i] *= inv;
  }
  if (B)
    for (int i = 0; i < W; ++i) acc[i] = acc[i] + B[scalar_offset ? 0 : i];
  for (int i = 0; i < W; ++i) {
    y[i] = acc[i];
    out[i] = Relu ? (acc[i] > 0 ? acc[i] : T(0.0)) : acc[i];
  }
}

// Row j of the group: y = 0 + x_0 + x_1 + ... (scaled for an average), + offset, then the
// activation into out. W > 0: W entries per row, known at compile time (summed in
// registers, exec/row_sum.hpp).
template <int W, bool Relu, class T>
void forward_rows(const AtomGroup& A, Eigen::Index runtime_size, const T* B, bool scalar_offset, T* v) {
  const Eigen::Index size = W > 0 ? W : runtime_size;
  for (uint32_t j = 0; j < A.m; ++j) {
    T* y = v + A.red_off + j * size;
    const uint32_t b = A.segments[j], e = A.segments[j + 1];
    if constexpr (W > 0) {
      if (b < e) {
        T acc[W];
        sum_rows(b, e, [&](uint32_t k) { return v + A.src[k]; }, acc);
        finish_row<W, Relu>(A, acc, B, scalar_offset, b, e, y, v + A.out_off + j * W);
        continue;
      }
    }
    if (b == e) {
      std::fill(y, y + size, T(0.0));
    } else {
      const T* x0 = v + A.src[b];
      for (Eigen::Index i = 0; i < size; ++i) y[i] = T(0.0) + x0[i];
      for (uint32_t k = b + 1; k < e; ++k) {
        const T* x = v + A.src[k];
        for (Eigen::Index i = 0; i < size; ++i) y[i] += x[i];
      }
      if (A.combination == AggregationKind::Avg) {
        const T inv = T(1.0) / T(e - b);
        for (Eigen::Index i = 0; i < size; ++i) y[i] *= inv;
      }
    }
    if (B) {
      if (scalar_offset) {
        for (Eigen::Index i = 0; i < size; ++i) y[i] = y[i] + B[0];
      } else {
        for (Eigen::Index i = 0; i < size; ++i) y[i] = y[i] + B[i];
      }
    }
    T* out = v + A.out_off + j * size;
    for (Eigen::Index i = 0; i < size; ++i) out[i] = Relu ? (y[i] > 0 ? y[i] : T(0.0)) : y[i];
  }
}

template <int W, bool Relu, class T>
void backward_rows(const AtomGroup& A, Eigen::Index runtime_size, const T* v, T* g, T* gB, bool scalar_offset) {
  const Eigen::Index size = W > 0 ? W : runtime_size;
  T scalar_sum = 0;
  // In place (out_off == red_off, PlanOptions::in_place_atoms) the slot holds the outputs,
  // whose sign is the pre-activation's, and dL/d(output) becomes dL/d(pre) where it is.
  const bool in_place = A.out_off == A.red_off;
  for (uint32_t j = 0; j < A.m; ++j) {
    const T* pre = v + A.red_off + j * size;
    const T* gout = g + A.out_off + j * size;
    T* gpre = g + A.red_off + j * size;
    if (in_place) {
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
    const uint32_t b = A.segments[j], e = A.segments[j + 1];
    if (b == e) continue;
    const T scale = A.combination == AggregationKind::Avg ? T(1.0) / T(e - b) : T(1.0);
    for (uint32_t k = b; k < e; ++k) {
      T* gx = g + A.src[k];
      for (Eigen::Index i = 0; i < size; ++i) gx[i] += scale * gpre[i];
    }
  }
  if (gB && scalar_offset) gB[0] += scalar_sum;
}

template <bool Relu, class T>
void forward_dispatch(const AtomGroup& A, const T* B, bool scalar_offset, T* v) {
  switch (const Eigen::Index size = A.in_shape.size()) {
    case 16: return forward_rows<16, Relu>(A, size, B, scalar_offset, v);
    case 32: return forward_rows<32, Relu>(A, size, B, scalar_offset, v);
    case 64: return forward_rows<64, Relu>(A, size, B, scalar_offset, v);
    default: return forward_rows<0, Relu>(A, size, B, scalar_offset, v);
  }
}

template <bool Relu, class T>
void backward_dispatch(const AtomGroup& A, const T* v, T* g, T* gB, bool scalar_offset) {
  switch (const Eigen::Index size = A.in_shape.size()) {
    case 16: return backward_rows<16, Relu>(A, size, v, g, gB, scalar_offset);
    case 32: return backward_rows<32, Relu>(A, size, v, g, gB, scalar_offset);
    case 64: return backward_rows<64, Relu>(A, size, v, g, gB, scalar_offset);
    default: return backward_rows<0, Relu>(A, size, v, g, gB, scalar_offset);
  }
}

}  // namespace

bool fusable_atom_sum(const AtomGroup& A) {
  const bool activation = A.activation.kind == ActivationKind::Relu || A.activation.kind == ActivationKind::Identity;
  return A.summed_in_place && A.norm == neural::kNoParam && activation && A.pre_off == A.red_off &&
         (A.combination == AggregationKind::Sum || A.combination == AggregationKind::Avg);
}

template <class T>
void fused_atom_sum_forward(const AtomGroup& A, const ParamView<T>& params, T* v) {
  const bool has_offset = A.offset != neural::kNoParam;
  const T* B = has_offset ? params.data(A.offset) : nullptr;
  const bool scalar_offset = has_offset && params.info(A.offset).shape.scalar();
  if (A.activation.kind == ActivationKind::Relu) forward_dispatch<true>(A, B, scalar_offset, v);
  else forward_dispatch<false>(A, B, scalar_offset, v);
}

template <class T>
void fused_atom_sum_backward(const AtomGroup& A, const ParamView<T>& params, const T* v, T* g, T* pg) {
  const bool has_offset = A.offset != neural::kNoParam;
  T* gB = has_offset ? pg + params.info(A.offset).offset : nullptr;
  const bool scalar_offset = has_offset && params.info(A.offset).shape.scalar();
  if (A.activation.kind == ActivationKind::Relu) backward_dispatch<true>(A, v, g, gB, scalar_offset);
  else backward_dispatch<false>(A, v, g, gB, scalar_offset);
}

template void fused_atom_sum_forward<double>(const AtomGroup&, const ParamView<double>&, double*);
template void fused_atom_sum_forward<float>(const AtomGroup&, const ParamView<float>&, float*);
template void fused_atom_sum_backward<double>(const AtomGroup&, const ParamView<double>&, const double*, double*,
                                              double*);
template void fused_atom_sum_backward<float>(const AtomGroup&, const ParamView<float>&, const float*, float*, float*);

}  // namespace lrnn::exec
