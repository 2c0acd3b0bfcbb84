// Exact values of every function against hand-computed numbers, shapes and their
// errors, and the parsing/printing of function names.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "exec/functions.hpp"

namespace {

using namespace lrnn::exec;
using lrnn::Error;
using lrnn::ErrorKind;
using lrnn::FunctionSpec;
using lrnn::Span;
using Vec = std::vector<double>;

void expect_near_all(const Vec& got, const Vec& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "entry " << i;
}

Activation act(ActivationKind k) {
  Activation a;
  a.kind = k;
  return a;
}

Vec apply(const Activation& a, Shape in, const Vec& x) {
  Shape out = activation_shape(a, in);
  Vec y(x.size() / in.size() * out.size());
  activation_forward(a, in, x.size() / in.size(), x.data(), y.data());
  return y;
}

Vec combine(CombinationKind c, const std::vector<Shape>& shapes, const std::vector<Vec>& inputs,
            size_t count = 1) {
  std::vector<const double*> ptrs;
  for (const auto& v : inputs) ptrs.push_back(v.data());
  Vec out(count * combination_shape(c, shapes).size());
  combination_forward(c, shapes, count, ptrs.data(), out.data());
  return out;
}

Vec aggregate(AggregationKind a, Shape in, const std::vector<uint32_t>& offsets, const Vec& x) {
  const size_t segments = offsets.size() - 1;
  Vec y(segments * aggregation_shape(a, in, offsets[1] - offsets[0]).size());
  aggregation_forward(a, in, segments, offsets.data(), x.data(), y.data());
  return y;
}

FunctionSpec spec(std::string name, std::vector<std::string> args = {},
                  std::vector<std::pair<std::string, std::string>> kwargs = {}) {
  FunctionSpec f;
  f.name = std::move(name);
  f.has_parens = !args.empty() || !kwargs.empty();
  f.args = std::move(args);
  f.kwargs = std::move(kwargs);
  return f;
}

// ---- element-wise activations ----------------------------------------------------------

TEST(FunctionsValues, ElementwiseActivations) {
  const Vec x = {-2.0, -0.5, 0.0, 0.25, 1.0, 3.0};
  const Shape s{6, 1};
  expect_near_all(apply(act(ActivationKind::Identity), s, x), x);
  expect_near_all(apply(act(ActivationKind::Sigmoid), s, x),
                  {0.11920292202211755, 0.3775406687981454, 0.5, 0.5621765008857981,
                   0.7310585786300049, 0.9525741268224334});
  expect_near_all(apply(act(ActivationKind::Tanh), s, x),
                  {-0.9640275800758169, -0.46211715726000974, 0.0, 0.24491866240370913,
                   0.7615941559557649, 0.9950547536867305});
  expect_near_all(apply(act(ActivationKind::Relu), s, x), {0, 0, 0, 0.25, 1, 3});
  expect_near_all(apply(act(ActivationKind::LeakyRelu), s, x), {-0.02, -0.005, 0, 0.25, 1, 3});
  expect_near_all(apply(act(ActivationKind::Exp), s, x),
                  {0.1353352832366127, 0.6065306597126334, 1.0, 1.2840254166877414,
                   2.718281828459045, 20.085536923187668});
  expect_near_all(apply(act(ActivationKind::Reverse), s, x), {3.0, 1.5, 1.0, 0.75, 0.0, -2.0});
  expect_near_all(apply(act(ActivationKind::Signum), s, x), {0, 0, 0, 1, 1, 1});
  expect_near_all(apply(act(ActivationKind::Lukasiewicz), s, x), {0, 0, 0, 0.25, 1, 1});
  const Vec pos = {0.25, 1.0, 4.0};
  expect_near_all(apply(act(ActivationKind::Log), {3, 1}, pos), {-1.3862943611198906, 0.0, 1.3862943611198906});
  expect_near_all(apply(act(ActivationKind::Sqrt), {3, 1}, pos), {0.5, 1.0, 2.0});
  expect_near_all(apply(act(ActivationKind::Inverse), {3, 1}, pos), {4.0, 1.0, 0.25});
}

TEST(FunctionsValues, SigmoidIsStableForLargeInputs) {
  Vec y = apply(act(ActivationKind::Sigmoid), {3, 1}, {-800.0, 800.0, -40.0});
  EXPECT_EQ(y[0], 0.0);
  EXPECT_EQ(y[1], 1.0);
  EXPECT_NEAR(y[2], 4.248354255291589e-18, 1e-30);
  for (double v : y) EXPECT_FALSE(std::isnan(v));
}

TEST(FunctionsValues, SignumAndClampGradients) {
  const Vec x = {-1.0, 0.5, 2.0, 0.0, 1.0};
  const Vec gy = {1, 1, 1, 1, 1};
  Vec y(5), gx(5, 0.0);
  activation_forward(act(ActivationKind::Signum), {5, 1}, 1, x.data(), y.data());
  activation_backward(act(ActivationKind::Signum), {5, 1}, 1, x.data(), y.data(), gy.data(), gx.data());
  EXPECT_EQ(gx, Vec(5, 0.0));
  activation_forward(act(ActivationKind::Lukasiewicz), {5, 1}, 1, x.data(), y.data());
  activation_backward(act(ActivationKind::Lukasiewicz), {5, 1}, 1, x.data(), y.data(), gy.data(), gx.data());
  EXPECT_EQ(gx, (Vec{0, 1, 0, 1, 1}));  // like torch.clamp: boundaries pass the gradient
  Vec gr(5, 0.0);
  activation_forward(act(ActivationKind::Relu), {5, 1}, 1, x.data(), y.data());
  activation_backward(act(ActivationKind::Relu), {5, 1}, 1, x.data(), y.data(), gy.data(), gr.data());
  EXPECT_EQ(gr, (Vec{0, 1, 1, 0, 1}));  // relu'(0) = 0 as in PyTorch
}

// ---- whole-value activations -----------------------------------------------------------

TEST(FunctionsValues, SoftmaxOverTheWholeValue) {
  expect_near_all(apply(act(ActivationKind::Softmax), {3, 1}, {1, 2, 3}),
                  {0.09003057317038046, 0.24472847105479767, 0.6652409557748219});
  // A batch of two values: each normalised on its own; a 2x2 matrix over all 4 entries.
  expect_near_all(apply(act(ActivationKind::Softmax), {1, 2}, {0, 0, 1000, 1000}), {0.5, 0.5, 0.5, 0.5});
  expect_near_all(apply(act(ActivationKind::Softmax), {2, 2}, {0, 0, 0, 0}), {0.25, 0.25, 0.25, 0.25});
  expect_near_all(apply(act(ActivationKind::Softmax), {1, 1}, {7}), {1});
}

TEST(FunctionsValues, SparsemaxKnownVectors) {
  // sorted z = (0.5, 0.3, -0.2): k = 2, tau = (0.8 - 1) / 2 = -0.1.
  expect_near_all(apply(act(ActivationKind::Sparsemax), {3, 1}, {0.3, -0.2, 0.5}), {0.4, 0.0, 0.6});
  // A dominant entry takes everything: tau = 3 - 1 = 2.
  expect_near_all(apply(act(ActivationKind::Sparsemax), {3, 1}, {3, 1, 0}), {1, 0, 0});
  // Equal entries share uniformly (like softmax).
  expect_near_all(apply(act(ActivationKind::Sparsemax), {1, 4}, {2, 2, 2, 2}), {0.25, 0.25, 0.25, 0.25});
  // (1.0, 0.1, 0.0): k = 2, tau = 0.05.
  expect_near_all(apply(act(ActivationKind::Sparsemax), {3, 1}, {1.0, 0.1, 0.0}), {0.95, 0.05, 0.0});
}

TEST(FunctionsValues, SparsemaxGradientIsCenteredOnTheSupport) {
  const Vec x = {0.3, -0.2, 0.5}, gy = {1.0, 5.0, 3.0};
  Vec y(3), gx(3, 0.0);
  activation_forward(act(ActivationKind::Sparsemax), {3, 1}, 1, x.data(), y.data());
  activation_backward(act(ActivationKind::Sparsemax), {3, 1}, 1, x.data(), y.data(), gy.data(), gx.data());
  expect_near_all(gx, {-1.0, 0.0, 1.0});  // support {0, 2}: gy - mean(1, 3)
}

TEST(FunctionsValues, LayerNormMatchesPyTorch) {
  // torch.nn.functional.layer_norm(torch.tensor([1., 2., 3., 4.]), (4,), eps=1e-5)
  expect_near_all(apply(act(ActivationKind::Norm), {4, 1}, {1, 2, 3, 4}),
                  {-1.3416354199689269, -0.447211806656309, 0.447211806656309, 1.3416354199689269});
  // Constant input: zeros, not NaN (epsilon).
  expect_near_all(apply(act(ActivationKind::Norm), {2, 2}, {5, 5, 5, 5}), {0, 0, 0, 0});
}

TEST(FunctionsValues, TransposeSliceReshape) {
  EXPECT_EQ(activation_shape(act(ActivationKind::Transpose), {2, 3}), (Shape{3, 2}));
  EXPECT_EQ(apply(act(ActivationKind::Transpose), {2, 3}, {1, 2, 3, 4, 5, 6}), (Vec{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(activation_shape(act(ActivationKind::Transpose), {3, 1}), (Shape{1, 3}));
  EXPECT_EQ(apply(act(ActivationKind::Transpose), {3, 1}, {1, 2, 3}), (Vec{1, 2, 3}));

  Activation slice = parse_activation(spec("slice", {}, {{"rows", "(0,2)"}, {"cols", "(1,3)"}}), Span{});
  EXPECT_EQ(activation_shape(slice, {3, 4}), (Shape{2, 2}));
  // [[0,1,2,3],[4,5,6,7],[8,9,10,11]] rows 0..1, cols 1..2
  EXPECT_EQ(apply(slice, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}), (Vec{1, 2, 5, 6}));
  Activation rows = parse_activation(spec("slice", {}, {{"rows", "(1,3)"}}), Span{});
  EXPECT_EQ(activation_shape(rows, {4, 1}), (Shape{2, 1}));
  EXPECT_EQ(apply(rows, {4, 1}, {10, 11, 12, 13, 20, 21, 22, 23}), (Vec{11, 12, 21, 22}));

  Activation reshape = parse_activation(spec("reshape", {"3", "2"}), Span{});
  EXPECT_EQ(activation_shape(reshape, {2, 3}), (Shape{3, 2}));
  EXPECT_EQ(apply(reshape, {2, 3}, {1, 2, 3, 4, 5, 6}), (Vec{1, 2, 3, 4, 5, 6}));
}

TEST(FunctionsValues, BadSliceOrReshapeIsAShapeError) {
  Activation slice = parse_activation(spec("slice", {}, {{"rows", "(0,5)"}}), Span{});
  try {
    activation_shape(slice, {3, 1});
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Shape);
    EXPECT_NE(e.message().find("3x1"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("slice(rows=(0,5))"), std::string::npos) << e.message();
  }
  Activation reshape = parse_activation(spec("reshape", {"2", "2"}), Span{});
  EXPECT_THROW(activation_shape(reshape, {3, 1}), Error);
  EXPECT_EQ(activation_shape(reshape, {1, 4}), (Shape{2, 2}));
}

// ---- combinations --------------------------------------------------------------------------

TEST(FunctionsValues, ElementwiseCombinationsBroadcastScalars) {
  const std::vector<Shape> shapes = {{3, 1}, {1, 1}, {3, 1}};
  const std::vector<Vec> in = {{1, 5, -2}, {2}, {4, 0, -1}};
  EXPECT_EQ(combination_shape(CombinationKind::Sum, shapes), (Shape{3, 1}));
  expect_near_all(combine(CombinationKind::Sum, shapes, in), {7, 7, -1});
  expect_near_all(combine(CombinationKind::Avg, shapes, in), {7.0 / 3, 7.0 / 3, -1.0 / 3});
  expect_near_all(combine(CombinationKind::Max, shapes, in), {4, 5, 2});
  expect_near_all(combine(CombinationKind::Min, shapes, in), {1, 0, -2});
  expect_near_all(combine(CombinationKind::ElProduct, shapes, in), {8, 0, 4});
  expect_near_all(combine(CombinationKind::Count, shapes, in), {3});
  // Batches: two values per input.
  expect_near_all(combine(CombinationKind::Sum, {{1, 1}, {1, 2}}, {{1, 10}, {1, 2, 3, 4}}, 2),
                  {2, 3, 13, 14});
}

TEST(FunctionsValues, MaxCombinationGradientGoesToTheFirstOnTies) {
  const std::vector<Shape> shapes = {{2, 1}, {2, 1}};
  const Vec a = {1, 3}, b = {1, 2};
  const double* in[] = {a.data(), b.data()};
  Vec out(2), gout = {1, 1}, ga(2, 0), gb(2, 0);
  double* gin[] = {ga.data(), gb.data()};
  combination_forward(CombinationKind::Max, shapes, 1, in, out.data());
  combination_backward(CombinationKind::Max, shapes, 1, in, out.data(), gout.data(), gin);
  EXPECT_EQ(ga, (Vec{1, 1}));
  EXPECT_EQ(gb, (Vec{0, 0}));
}

TEST(FunctionsValues, ProductIsAChainedMatrixProduct) {
  // [[1,2],[3,4]] * [5,6]^T = [17, 39]
  expect_near_all(combine(CombinationKind::Product, {{2, 2}, {2, 1}}, {{1, 2, 3, 4}, {5, 6}}), {17, 39});
  // A scaled dot product: 0.5 * [1,2,3] . [4,5,6] = 16
  EXPECT_EQ(combination_shape(CombinationKind::Product, {{1, 1}, {1, 3}, {3, 1}}), (Shape{1, 1}));
  expect_near_all(combine(CombinationKind::Product, {{1, 1}, {1, 3}, {3, 1}}, {{0.5}, {1, 2, 3}, {4, 5, 6}}), {16});
  // Scalars scale wherever they stand; scalars alone multiply.
  expect_near_all(combine(CombinationKind::Product, {{2, 1}, {1, 1}}, {{1, -2}, {3}}), {3, -6});
  expect_near_all(combine(CombinationKind::Product, {{1, 1}, {1, 1}, {1, 1}}, {{2}, {3}, {-1}}), {-6});
  // Outer product and a chain of three: [1,2]^T [3,4] = [[3,4],[6,8]]; then times [1,-1]^T.
  expect_near_all(combine(CombinationKind::Product, {{2, 1}, {1, 2}}, {{1, 2}, {3, 4}}), {3, 4, 6, 8});
  expect_near_all(combine(CombinationKind::Product, {{2, 1}, {1, 2}, {2, 1}}, {{1, 2}, {3, 4}, {1, -1}}), {-1, -2});
  // Batch of two dot products.
  expect_near_all(combine(CombinationKind::Product, {{1, 2}, {2, 1}}, {{1, 2, 3, 4}, {5, 6, 7, 8}}, 2), {17, 53});
}

TEST(FunctionsValues, ConcatCrossSumCosSimSoftmax) {
  EXPECT_EQ(combination_shape(CombinationKind::Concat, {{2, 1}, {1, 1}, {3, 1}}), (Shape{6, 1}));
  expect_near_all(combine(CombinationKind::Concat, {{2, 1}, {1, 1}, {3, 1}}, {{1, 2}, {3}, {4, 5, 6}}),
                  {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(combination_shape(CombinationKind::Concat, {{1, 2}, {1, 3}}), (Shape{1, 5}));
  EXPECT_EQ(combination_shape(CombinationKind::CrossSum, {{2, 1}, {3, 1}}), (Shape{6, 1}));
  expect_near_all(combine(CombinationKind::CrossSum, {{2, 1}, {3, 1}}, {{1, 2}, {10, 20, 30}}),
                  {11, 21, 31, 12, 22, 32});
  expect_near_all(combine(CombinationKind::CosSim, {{2, 1}, {2, 1}}, {{1, 0}, {1, 1}}), {std::sqrt(0.5)});
  expect_near_all(combine(CombinationKind::CosSim, {{3, 1}, {3, 1}}, {{1, 2, 3}, {-2, -4, -6}}), {-1});
  // A zero vector: 0, not NaN, and a finite gradient.
  const std::vector<Shape> shapes = {{2, 1}, {2, 1}};
  const Vec zero = {0, 0}, b = {1, 2};
  const double* in[] = {zero.data(), b.data()};
  Vec out(1), gout = {1}, ga(2, 0), gb(2, 0);
  double* gin[] = {ga.data(), gb.data()};
  combination_forward(CombinationKind::CosSim, shapes, 1, in, out.data());
  combination_backward(CombinationKind::CosSim, shapes, 1, in, out.data(), gout.data(), gin);
  EXPECT_EQ(out[0], 0.0);
  for (double g : ga) EXPECT_TRUE(std::isfinite(g));
  for (double g : gb) EXPECT_EQ(g, 0.0);
  EXPECT_EQ(combination_shape(CombinationKind::Softmax, {{1, 1}, {1, 1}, {1, 1}}), (Shape{3, 1}));
  expect_near_all(combine(CombinationKind::Softmax, {{1, 1}, {1, 1}, {1, 1}}, {{1}, {2}, {3}}),
                  {0.09003057317038046, 0.24472847105479767, 0.6652409557748219});
}

TEST(FunctionsValues, CombinationShapeMismatchesNameBothShapes) {
  auto expect_shape_error = [](CombinationKind c, std::vector<Shape> shapes, std::string a, std::string b) {
    try {
      combination_shape(c, shapes);
      FAIL() << "expected a shape error for " << to_string(c);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Shape);
      EXPECT_NE(e.message().find(a), std::string::npos) << e.message();
      EXPECT_NE(e.message().find(b), std::string::npos) << e.message();
      EXPECT_NE(e.message().find(to_string(c)), std::string::npos) << e.message();
    }
  };
  expect_shape_error(CombinationKind::Sum, {{3, 1}, {1, 3}}, "3x1", "1x3");
  expect_shape_error(CombinationKind::ElProduct, {{2, 1}, {1, 1}, {3, 1}}, "2x1", "3x1");
  expect_shape_error(CombinationKind::Product, {{3, 1}, {3, 1}}, "3x1", "3x1");
  expect_shape_error(CombinationKind::Product, {{2, 3}, {1, 1}, {2, 1}}, "2x3", "2x1");
  expect_shape_error(CombinationKind::Concat, {{2, 2}, {3, 1}}, "2x2", "3x1");
  expect_shape_error(CombinationKind::CrossSum, {{2, 2}, {3, 1}}, "2x2", "3x1");
  expect_shape_error(CombinationKind::CosSim, {{2, 1}, {3, 1}}, "2x1", "3x1");
  EXPECT_THROW(combination_shape(CombinationKind::CrossSum, {{2, 1}}), Error);
}

// ---- aggregations --------------------------------------------------------------------------

TEST(FunctionsValues, SegmentReductions) {
  // Segments: {1, 4, -2}, {}, {3}, {0.5, 0.5}
  const std::vector<uint32_t> offsets = {0, 3, 3, 4, 6};
  const Vec x = {1, 4, -2, 3, 0.5, 0.5};
  expect_near_all(aggregate(AggregationKind::Sum, {1, 1}, offsets, x), {3, 0, 3, 1});
  expect_near_all(aggregate(AggregationKind::Avg, {1, 1}, offsets, x), {1, 0, 3, 0.5});
  expect_near_all(aggregate(AggregationKind::Max, {1, 1}, offsets, x), {4, 0, 3, 0.5});
  expect_near_all(aggregate(AggregationKind::Min, {1, 1}, offsets, x), {-2, 0, 3, 0.5});
  expect_near_all(aggregate(AggregationKind::Count, {1, 1}, offsets, x), {3, 0, 1, 2});
  // Element-wise max over vectors (not the vector with the largest sum).
  expect_near_all(aggregate(AggregationKind::Max, {2, 1}, {0, 2}, {5, 0, 1, 3}), {5, 3});
  // Concat stacks a segment's values: 2 segments of 2 column vectors of size 2.
  EXPECT_EQ(aggregation_shape(AggregationKind::Concat, {2, 1}, 2), (Shape{4, 1}));
  expect_near_all(aggregate(AggregationKind::Concat, {2, 1}, {0, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
                  {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_THROW(aggregate(AggregationKind::Concat, {1, 1}, {0, 2, 3}, {1, 2, 3}), Error);
  EXPECT_THROW(aggregate(AggregationKind::Softmax, {1, 1}, {0, 2}, {1, 2}), Error);
}

TEST(FunctionsValues, SegmentMaxGradientGoesToTheFirstOnTies) {
  const std::vector<uint32_t> offsets = {0, 3};
  const Vec x = {2, 5, 5}, gy = {1};
  Vec y(1), gx(3, 0.0);
  aggregation_forward(AggregationKind::Max, {1, 1}, 1, offsets.data(), x.data(), y.data());
  aggregation_backward(AggregationKind::Max, {1, 1}, 1, offsets.data(), x.data(), y.data(), gy.data(), gx.data());
  EXPECT_EQ(gx, (Vec{0, 1, 0}));
}

TEST(FunctionsValues, SegmentSoftmaxNormalisesEachEntryAcrossTheSegment) {
  const std::vector<uint32_t> offsets = {0, 3, 3, 4};
  // Scalars: segment {1, 2, 3}, empty, {42}.
  Vec x = {1, 2, 3, 42}, y(4, -1.0);
  segment_softmax_forward({1, 1}, 3, offsets.data(), x.data(), y.data());
  expect_near_all(y, {0.09003057317038046, 0.24472847105479767, 0.6652409557748219, 1.0});
  // 2-vectors: entry 0 across {0, 0, 1000}, entry 1 across {5, 5, 5}.
  Vec xv = {0, 5, 0, 5, 1000, 5}, yv(6);
  segment_softmax_forward({2, 1}, 1, offsets.data(), xv.data(), yv.data());
  expect_near_all(yv, {0, 1.0 / 3, 0, 1.0 / 3, 1, 1.0 / 3});
}

TEST(FunctionsValues, ElementwiseActivationsRunInPlace) {
  for (auto kind : {ActivationKind::Sigmoid, ActivationKind::Tanh, ActivationKind::Relu,
                    ActivationKind::Exp, ActivationKind::Reverse, ActivationKind::Lukasiewicz}) {
    Vec x = {-1.5, 0.25, 2.0}, in_place = x;
    Vec expected = apply(act(kind), {3, 1}, x);
    activation_forward(act(kind), {3, 1}, 1, in_place.data(), in_place.data());
    EXPECT_EQ(in_place, expected) << to_string(act(kind));
  }
}

TEST(FunctionsValues, NanInputsDoNotCrashWholeValueActivations) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Vec y = apply(act(ActivationKind::Sparsemax), {4, 1}, {0.5, nan, 0.1, 2.0});
  for (double v : y) EXPECT_TRUE(std::isnan(v));
  y = apply(act(ActivationKind::Softmax), {2, 1}, {nan, 1.0});
  for (double v : y) EXPECT_TRUE(std::isnan(v));
}

TEST(FunctionsValues, CombinationsOfNoInputs) {
  const std::vector<Shape> none;
  const std::vector<Vec> no_values;
  EXPECT_EQ(combination_shape(CombinationKind::Sum, none), (Shape{1, 1}));
  expect_near_all(combine(CombinationKind::Sum, none, no_values, 2), {0, 0});
  expect_near_all(combine(CombinationKind::Avg, none, no_values, 1), {0});
  expect_near_all(combine(CombinationKind::Max, none, no_values, 1), {0});
  expect_near_all(combine(CombinationKind::Count, none, no_values, 1), {0});
  expect_near_all(combine(CombinationKind::Product, none, no_values, 2), {1, 1});
  expect_near_all(combine(CombinationKind::ElProduct, none, no_values, 1), {1});
  EXPECT_THROW(combination_shape(CombinationKind::Concat, none), Error);
  EXPECT_THROW(combination_shape(CombinationKind::Softmax, none), Error);
  EXPECT_THROW(combination_shape(CombinationKind::CosSim, none), Error);
}

// ---- names -----------------------------------------------------------------------------------

TEST(FunctionsParse, ActivationNamesAndAliases) {
  EXPECT_EQ(parse_activation(spec("Sigmoid"), Span{}).kind, ActivationKind::Sigmoid);
  EXPECT_EQ(parse_activation(spec("leaky_relu"), Span{}).kind, ActivationKind::LeakyRelu);
  EXPECT_EQ(parse_activation(spec("leakyrelu"), Span{}).kind, ActivationKind::LeakyRelu);
  EXPECT_EQ(parse_activation(spec("LEAKY_RELU"), Span{}).kind, ActivationKind::LeakyRelu);
  EXPECT_EQ(parse_activation(spec("linear"), Span{}).kind, ActivationKind::Identity);
  EXPECT_EQ(parse_activation(spec("identity"), Span{}).kind, ActivationKind::Identity);
  EXPECT_EQ(parse_activation(spec("transp"), Span{}).kind, ActivationKind::Transpose);
  EXPECT_EQ(parse_activation(spec("layer_norm"), Span{}).kind, ActivationKind::Norm);
  EXPECT_TRUE(parse_activation(spec("tanh"), Span{}).elementwise());
  EXPECT_FALSE(parse_activation(spec("softmax"), Span{}).elementwise());
  Activation s = parse_activation(spec("slice", {"(0,2)", "(1,3)"}), Span{});
  EXPECT_EQ(std::vector<int>({s.row_begin, s.row_end, s.col_begin, s.col_end}), std::vector<int>({0, 2, 1, 3}));
  Activation r = parse_activation(spec("reshape", {"(2,3)"}), Span{});
  EXPECT_EQ(r.rows, 2);
  EXPECT_EQ(r.cols, 3);
}

TEST(FunctionsParse, ToStringRoundTrips) {
  for (const char* name : {"identity", "sigmoid", "tanh", "relu", "leaky_relu", "exp", "log", "sqrt",
                           "inverse", "reverse", "signum", "lukasiewicz", "softmax", "sparsemax",
                           "norm", "transpose"}) {
    Activation a = parse_activation(spec(name), Span{});
    EXPECT_EQ(to_string(a), name);
  }
  Activation s = parse_activation(spec("slice", {}, {{"rows", "(0, 2)"}, {"cols", "(1,3)"}}), Span{});
  EXPECT_EQ(to_string(s), "slice(rows=(0,2), cols=(1,3))");
  EXPECT_EQ(to_string(parse_activation(spec("reshape", {"2", "3"}), Span{})), "reshape(2,3)");
  for (const char* name : {"sum", "avg", "max", "min", "count", "product", "elproduct", "concat",
                           "crosssum", "cossim", "softmax"})
    EXPECT_EQ(to_string(parse_combination(spec(name), Span{})), name);
  EXPECT_EQ(parse_combination(spec("cross_sum"), Span{}), CombinationKind::CrossSum);
  EXPECT_EQ(parse_combination(spec("Average"), Span{}), CombinationKind::Avg);
  for (const char* name : {"sum", "avg", "max", "min", "count", "concat", "softmax"})
    EXPECT_EQ(to_string(parse_aggregation(spec(name), Span{})), name);
  Aggregation soft = parse_aggregation(spec("softmax", {"J", "K"}), Span{});
  EXPECT_EQ(soft.kind, AggregationKind::Softmax);
  EXPECT_EQ(soft.over, (std::vector<std::string>{"J", "K"}));
  EXPECT_EQ(to_string(soft), "softmax(J, K)");
}

TEST(FunctionsParse, UnknownNamesAndBadArgumentsNameTheSpan) {
  auto file = std::make_shared<lrnn::SourceFile>(lrnn::SourceFile{"t.txt", "a :- b. [activation=sigmod]\n"});
  Span span{file, 1, 21, 6};
  try {
    parse_activation(spec("sigmod"), span);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Semantic);
    EXPECT_EQ(e.message().rfind("unknown activation 'sigmod'; expected one of identity, sigmoid", 0), 0u)
        << e.message();
    EXPECT_NE(std::string(e.what()).find("t.txt:1:21"), std::string::npos);
  }
  EXPECT_THROW(parse_combination(spec("dot"), span), Error);
  EXPECT_THROW(parse_aggregation(spec("median"), span), Error);
  EXPECT_THROW(parse_activation(spec("sigmoid", {"2"}), span), Error);
  EXPECT_THROW(parse_activation(spec("slice", {}, {{"rows", "(2,1)"}}), span), Error);
  EXPECT_THROW(parse_activation(spec("slice", {}, {{"rows", "(a,1)"}}), span), Error);
  EXPECT_THROW(parse_activation(spec("slice", {}, {{"depth", "(0,1)"}}), span), Error);
  EXPECT_THROW(parse_activation(spec("slice"), span), Error);
  EXPECT_THROW(parse_activation(spec("reshape", {"0", "3"}), span), Error);
  EXPECT_THROW(parse_activation(spec("reshape", {"x"}), span), Error);
  EXPECT_THROW(parse_aggregation(spec("softmax", {"j"}), span), Error);
  EXPECT_THROW(parse_aggregation(spec("sum", {"J"}), span), Error);
}

}  // namespace
