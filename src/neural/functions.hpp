// The functions of docs/language.md as descriptors: kinds, their parameters, parsing from
// metadata, printing, and the shape rules (what shape a function gives for given input
// shapes). The neural stage builds networks from them; exec/functions.hpp holds the
// kernels that compute them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lrnn/ast.hpp"

namespace lrnn::neural {

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
constexpr int kActivationKinds = static_cast<int>(ActivationKind::Reshape) + 1;
struct Activation {
  ActivationKind kind = ActivationKind::Identity;
  int row_begin = 0, row_end = -1, col_begin = 0, col_end = -1;  // Slice ([begin, end))
  int rows = 0, cols = 0;                                        // Reshape
  double slope = kDefaultLeakySlope;  // LeakyRelu: the slope for x <= 0 (leaky_relu(0.2))
  static constexpr double kDefaultLeakySlope = 0.01;
  bool elementwise() const { return kind < ActivationKind::Softmax; }
};
// From metadata (`sigmoid`, `slice(rows=(0,2), cols=(1,3))`, `reshape(2,3)`,
// `leaky_relu(0.2)` or `leaky_relu(alpha=0.2)`, PyNeuraLogic's spelling); throws
// lrnn::Error naming the span on an unknown name or bad arguments. Names are
// case-insensitive and ignore '_' and '-' (leaky_relu = leakyrelu); aliases: linear
// (identity), transp (transpose), layernorm (norm). A slice axis left out (or end < 0 in
// a hand-built Activation) is the whole axis.
Activation parse_activation(const FunctionSpec& f, const Span& span);
std::string to_string(const Activation& a);
Shape activation_shape(const Activation& a, Shape in);  // throws on a bad slice/reshape
// Resolved slice bounds for an input shape (end < 0 means the whole axis).
struct SliceBounds {
  int r0, r1, c0, c1;
};
inline SliceBounds slice_bounds(const Activation& a, Shape in) {
  return {a.row_end < 0 ? 0 : a.row_begin, a.row_end < 0 ? in.rows : a.row_end,
          a.col_end < 0 ? 0 : a.col_begin, a.col_end < 0 ? in.cols : a.col_end};
}

// ---- combinations (how a rule's weighted inputs, or an atom's weighted aggregates, combine)
enum class CombinationKind : uint8_t {
  Sum, Avg, Max, Min, Count, Product, ElProduct, Concat, CrossSum, CosSim, Softmax,
};
constexpr int kCombinationKinds = static_cast<int>(CombinationKind::Softmax) + 1;
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

// ---- aggregations (over the groundings of one rule for one head) ---------------------
// Segment s covers input values [offsets[s], offsets[s+1]); an empty segment gives 0.
// Product: element-wise product of the segment's values (also an atom's `product` /
// `elproduct` combination of its rules, PyNeuraLogic's GCN degree normalisation).
enum class AggregationKind : uint8_t { Sum, Avg, Max, Min, Count, Concat, Softmax, Product };
constexpr int kAggregationKinds = static_cast<int>(AggregationKind::Product) + 1;
struct Aggregation {
  AggregationKind kind = AggregationKind::Avg;
  std::vector<std::string> over;  // softmax(J, K): the variables normalised over
};
Aggregation parse_aggregation(const FunctionSpec& f, const Span& span);
std::string to_string(const Aggregation& a);
// A sum, average, maximum, minimum or product of one value is that value.
inline bool single_value_identity(AggregationKind kind) {
  return kind == AggregationKind::Sum || kind == AggregationKind::Avg || kind == AggregationKind::Max ||
         kind == AggregationKind::Min || kind == AggregationKind::Product;
}
// Output shape of one segment of `segment_length` values of shape `in` (segment_length
// matters only for Concat); Softmax keeps `in` (it is applied by segment_softmax).
Shape aggregation_shape(AggregationKind a, Shape in, size_t segment_length);
// The canonical name of every kind, in enum order (indexed by kind): what to_string
// prints and the Python DSL's tables are checked against.
std::vector<std::string> activation_names();
std::vector<std::string> combination_names();
std::vector<std::string> aggregation_names();

}  // namespace lrnn::neural
