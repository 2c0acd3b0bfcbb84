// The numeric functions of docs/language.md (activations, combinations, aggregations) as
// batched kernels over flat row-major buffers. A "value" is a rows x cols matrix
// (scalar 1x1, column vector n x 1, row vector 1 x n); a batch holds `count` values of
// one shape back to back. Every backward ACCUMULATES (+=) into its gradient outputs.
// No virtual calls, no allocation per value: one call processes a whole group.
// Forward outputs must not overlap their inputs, except that element-wise activations
// may run in place (x == y). Kernels are deterministic and serial, the caller deciding
// how to spread groups over threads, except segment softmax of scalar scores, which splits
// a large group's independent segments across threads (results do not depend on it). Conventions (docs/language.md leaves them open):
// - relu'(0) = 0, leaky_relu slope 0.01, signum has gradient 0, lukasiewicz passes the
//   gradient on [0, 1] inclusive (like torch.clamp); sparsemax of a value with a NaN is NaN.
// - max/min (combination and aggregation) send the gradient of each entry to the first
//   input attaining the extreme.
// - A combination with no inputs: sum/avg/max/min 0, count 0, product/elproduct 1;
//   concat/softmax/crosssum/cossim need inputs (Shape error).
// - cossim divides by max(|a|, 1e-8) max(|b|, 1e-8) (PyTorch's eps), so a zero vector gives 0.
// - norm: (x - mean) / sqrt(biased variance + 1e-5), over all entries of the value.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/scalar.hpp"
#include "lrnn/ast.hpp"
#include "neural/functions.hpp"

namespace lrnn::exec {

// The functions' descriptors (kinds, parameters, shape rules) belong to the neural stage,
// which builds networks from them; the kernels below compute them.
using neural::Activation;
using neural::ActivationKind;
using neural::Aggregation;
using neural::AggregationKind;
using neural::CombinationKind;
using neural::Shape;
using neural::SliceBounds;
using neural::activation_shape;
using neural::aggregation_shape;
using neural::checked_shape;
using neural::combination_shape;
using neural::parse_activation;
using neural::parse_aggregation;
using neural::parse_combination;
using neural::slice_bounds;
using neural::to_string;

// Softmax of n entries (max-subtracted, stable); y may be x. The one softmax of the
// activation and the combination (segment softmax, across values, is below).
template <class T>
inline void softmax_entries(int n, const T* x, T* y) {
  T m = x[0];
  for (int i = 1; i < n; ++i) m = std::max(m, x[i]);
  T s = 0;
  for (int i = 0; i < n; ++i) s += (y[i] = std::exp(x[i] - m));
  const T inv = 1.0 / s;
  for (int i = 0; i < n; ++i) y[i] *= inv;
}

// ---- activations ---------------------------------------------------------------------
template <class T>
void activation_forward(const Activation& a, Shape in, size_t count, const T* x, T* y);
// gx += dL/dx given x, y = f(x), gy = dL/dy.
template <class T>
void activation_backward(const Activation& a, Shape in, size_t count, const T* x,
                         const T* y, const T* gy, T* gx);

// ---- combinations (how a rule's weighted inputs, or an atom's weighted aggregates, combine)
// k = in_shapes.size() inputs; in[i] points at `count` values of in_shapes[i].
template <class T>
void combination_forward(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count,
                         const T* const* in, T* out);
// gin[i] += dL/din[i] (gin[i] may be null for inputs that need no gradient).
template <class T>
void combination_backward(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count,
                          const T* const* in, const T* out, const T* gout,
                          T* const* gin);

// ---- aggregations (over the groundings of one rule for one head) ---------------------
// Max/Min are element-wise. Count is 1x1 (segment length). Concat stacks the segment's
// values (needs equal segment lengths: out rows = len * rows). Softmax is NOT a segment
// reduction here: use segment_softmax below, then a Sum aggregation.
template <class T>
void aggregation_forward(AggregationKind a, Shape in, size_t segments, const uint32_t* offsets,
                         const T* x, T* y);
template <class T>
void aggregation_backward(AggregationKind a, Shape in, size_t segments, const uint32_t* offsets,
                          const T* x, const T* y, const T* gy, T* gx);

// Softmax across the values of each segment, element-wise per entry: for entry e,
// y[i][e] = exp(x[i][e]) / sum_{j in seg} exp(x[j][e]) (max-subtracted, stable).
template <class T>
void segment_softmax_forward(Shape in, size_t segments, const uint32_t* offsets, const T* x,
                             T* y);
template <class T>
void segment_softmax_backward(Shape in, size_t segments, const uint32_t* offsets, const T* y,
                              const T* gy, T* gx);

}  // namespace lrnn::exec
