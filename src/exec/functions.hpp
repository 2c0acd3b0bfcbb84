// The numeric functions of LANGUAGE.md (activations, combinations, aggregations) as
// batched kernels over flat row-major buffers. A "value" is a rows x cols matrix
// (scalar 1x1, column vector n x 1, row vector 1 x n); a batch holds `count` values of
// one shape back to back. Every backward ACCUMULATES (+=) into its gradient outputs.
// No virtual calls, no allocation per value: one call processes a whole group.
// Forward outputs must not overlap their inputs, except that element-wise activations
// may run in place (x == y). Kernels are deterministic and serial, the caller deciding
// how to spread groups over threads, except segment softmax of scalar scores, which splits
// a large group's independent segments across threads (results do not depend on it). Conventions (LANGUAGE.md leaves them open):
// - relu'(0) = 0, leaky_relu slope 0.01, signum has gradient 0, lukasiewicz passes the
//   gradient on [0, 1] inclusive (like torch.clamp); sparsemax of a value with a NaN is NaN.
// - max/min (combination and aggregation) send the gradient of each entry to the first
//   input attaining the extreme.
// - A combination with no inputs: sum/avg/max/min 0, count 0, product/elproduct 1;
//   concat/softmax/crosssum/cossim need inputs (Shape error).
// - cossim divides by max(|a|, 1e-8) max(|b|, 1e-8) (PyTorch's eps), so a zero vector gives 0.
// - norm: (x - mean) / sqrt(biased variance + 1e-5), over all entries of the value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lrnn/ast.hpp"

namespace lrnn::exec {

struct Shape {
  int rows = 1, cols = 1;
  int size() const { return rows * cols; }
  bool scalar() const { return rows == 1 && cols == 1; }
  bool operator==(const Shape&) const = default;
};
std::string to_string(Shape s);  // "3x1"
// rows x cols as a Shape, refused (ErrorKind::Limit, naming `what`) beyond
// kMaxValueEntries entries; sizes are computed in 64 bits, so nothing overflows first.
Shape checked_shape(int64_t rows, int64_t cols, const std::string& what);

// ---- activations ---------------------------------------------------------------------
enum class ActivationKind : uint8_t {
  Identity, Sigmoid, Tanh, Relu, LeakyRelu, Exp, Log, Sqrt, Inverse, Reverse, Signum,
  Lukasiewicz,  // min(1, max(0, x))
  // whole-value:
  Softmax, Sparsemax, Norm, Transpose, Slice, Reshape,
};
struct Activation {
  ActivationKind kind = ActivationKind::Identity;
  int row_begin = 0, row_end = -1, col_begin = 0, col_end = -1;  // Slice ([begin, end))
  int rows = 0, cols = 0;                                        // Reshape
  bool elementwise() const { return kind < ActivationKind::Softmax; }
};
// From metadata (`sigmoid`, `slice(rows=(0,2), cols=(1,3))`, `reshape(2,3)`); throws
// lrnn::Error naming the span on an unknown name or bad arguments. Names are
// case-insensitive and ignore '_' and '-' (leaky_relu = leakyrelu); aliases: linear
// (identity), transp (transpose), layernorm (norm). A slice axis left out (or end < 0 in
// a hand-built Activation) is the whole axis.
Activation parse_activation(const FunctionSpec& f, const Span& span);
std::string to_string(const Activation& a);
Shape activation_shape(const Activation& a, Shape in);  // throws on a bad slice/reshape
void activation_forward(const Activation& a, Shape in, size_t count, const double* x, double* y);
// gx += dL/dx given x, y = f(x), gy = dL/dy.
void activation_backward(const Activation& a, Shape in, size_t count, const double* x,
                         const double* y, const double* gy, double* gx);

// ---- combinations (how a rule's weighted inputs, or an atom's weighted aggregates, combine)
enum class CombinationKind : uint8_t {
  Sum, Avg, Max, Min, Count, Product, ElProduct, Concat, CrossSum, CosSim, Softmax,
};
CombinationKind parse_combination(const FunctionSpec& f, const Span& span);
std::string to_string(CombinationKind c);
// Output shape for inputs of these shapes; throws lrnn::Error (Shape) naming both shapes.
// sum/avg/max/min/elproduct: equal shapes, scalars broadcast. product: chained matrix
// product left to right, scalars scale. concat: stacks column vectors (rows add up).
// crosssum: every pair sum of two vectors (n*m). cossim: 1x1. count: 1x1 (number of
// inputs). softmax: softmax over the concatenation of scalar inputs (n x 1).
// Also accepted: concat of row vectors (1 x total cols), and vector inputs to softmax
// (their entries join the concatenation). crosssum puts a_i + b_j at i*m + j.
Shape combination_shape(CombinationKind c, const std::vector<Shape>& in);
// k = in_shapes.size() inputs; in[i] points at `count` values of in_shapes[i].
void combination_forward(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count,
                         const double* const* in, double* out);
// gin[i] += dL/din[i] (gin[i] may be null for inputs that need no gradient).
void combination_backward(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count,
                          const double* const* in, const double* out, const double* gout,
                          double* const* gin);

// ---- aggregations (over the groundings of one rule for one head) ---------------------
// Segment s covers input values [offsets[s], offsets[s+1]); an empty segment gives 0.
enum class AggregationKind : uint8_t { Sum, Avg, Max, Min, Count, Concat, Softmax };
struct Aggregation {
  AggregationKind kind = AggregationKind::Avg;
  std::vector<std::string> over;  // softmax(J, K): the variables normalised over
};
Aggregation parse_aggregation(const FunctionSpec& f, const Span& span);
std::string to_string(const Aggregation& a);
// Max/Min are element-wise. Count is 1x1 (segment length). Concat stacks the segment's
// values (needs equal segment lengths: out rows = len * rows). Softmax is NOT a segment
// reduction here: use segment_softmax below, then a Sum aggregation.
// Output shape of one segment of `segment_length` values of shape `in` (segment_length
// matters only for Concat); Softmax keeps `in` (it is applied by segment_softmax).
Shape aggregation_shape(AggregationKind a, Shape in, size_t segment_length);
void aggregation_forward(AggregationKind a, Shape in, size_t segments, const uint32_t* offsets,
                         const double* x, double* y);
void aggregation_backward(AggregationKind a, Shape in, size_t segments, const uint32_t* offsets,
                          const double* x, const double* y, const double* gy, double* gx);

// Softmax across the values of each segment, element-wise per entry: for entry e,
// y[i][e] = exp(x[i][e]) / sum_{j in seg} exp(x[j][e]) (max-subtracted, stable).
void segment_softmax_forward(Shape in, size_t segments, const uint32_t* offsets, const double* x,
                             double* y);
void segment_softmax_backward(Shape in, size_t segments, const uint32_t* offsets, const double* y,
                              const double* gy, double* gx);

}  // namespace lrnn::exec
