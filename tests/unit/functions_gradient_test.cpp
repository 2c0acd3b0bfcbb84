// Finite-difference gradient checks for every activation, combination and aggregation
// kernel: the backward pass must match central differences of L = <gy, f(x)> (step 1e-6,
// relative tolerance 1e-6) on random float64 inputs from a fixed seed, over scalars,
// column vectors, row vectors, matrices and broadcast cases. Backward must accumulate.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "exec/functions.hpp"

namespace {

using namespace lrnn::exec;
using Vec = std::vector<double>;

constexpr double kStep = 1e-6;
constexpr double kTol = 1e-6;
constexpr double kAccumulateBase = 0.25;  // gradients start here to prove backward adds

// Random values in [lo, hi], optionally kept at least `gap` away from the given kinks.
Vec random_values(std::mt19937_64& rng, size_t n, double lo = -2.0, double hi = 2.0,
                  std::vector<double> kinks = {}, double gap = 0.05) {
  std::uniform_real_distribution<double> u(lo, hi);  // test data only: need not be portable
  Vec v(n);
  for (auto& x : v) {
    do x = u(rng);
    while (std::any_of(kinks.begin(), kinks.end(), [&](double k) { return std::abs(x - k) < gap; }));
  }
  return v;
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Compares the analytic gradient (after subtracting the accumulation base) of each input
// with central differences of `loss` w.r.t. every entry of that input.
void expect_matches_finite_differences(const std::function<double(const std::vector<Vec>&)>& loss,
                                       std::vector<Vec> inputs, const std::vector<Vec>& analytic,
                                       const std::string& what) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(analytic[i].size(), inputs[i].size()) << what;
    for (size_t e = 0; e < inputs[i].size(); ++e) {
      const double saved = inputs[i][e];
      inputs[i][e] = saved + kStep;
      const double up = loss(inputs);
      inputs[i][e] = saved - kStep;
      const double down = loss(inputs);
      inputs[i][e] = saved;
      const double numeric = (up - down) / (2 * kStep);
      const double a = analytic[i][e] - kAccumulateBase;
      EXPECT_NEAR(a, numeric, kTol * std::max({1.0, std::abs(a), std::abs(numeric)}))
          << what << ": input " << i << " entry " << e;
    }
  }
}

// ---- activations ------------------------------------------------------------------------

void check_activation(const Activation& a, Shape in, const Vec& x, std::mt19937_64& rng) {
  const size_t count = x.size() / in.size();
  const Shape out = activation_shape(a, in);
  const Vec gy = random_values(rng, count * out.size());
  Vec y(count * out.size());
  activation_forward(a, in, count, x.data(), y.data());
  Vec gx(x.size(), kAccumulateBase);
  activation_backward(a, in, count, x.data(), y.data(), gy.data(), gx.data());
  auto loss = [&](const std::vector<Vec>& xs) {
    Vec yy(y.size());
    activation_forward(a, in, count, xs[0].data(), yy.data());
    return dot(gy, yy);
  };
  expect_matches_finite_differences(loss, {x}, {gx},
                                    to_string(a) + " on " + std::to_string(count) + " x " + to_string(in));
}

const std::vector<Shape> kShapes = {{1, 1}, {3, 1}, {1, 4}, {2, 3}};

Activation act(ActivationKind k) {
  Activation a;
  a.kind = k;
  return a;
}

TEST(FunctionsGradient, ElementwiseActivationsOnEveryShape) {
  std::mt19937_64 rng(11);
  struct Case {
    ActivationKind kind;
    double lo, hi;
    std::vector<double> kinks;
  };
  const std::vector<Case> cases = {
      {ActivationKind::Identity, -2, 2, {}},    {ActivationKind::Sigmoid, -4, 4, {}},
      {ActivationKind::Tanh, -2, 2, {}},        {ActivationKind::Relu, -2, 2, {0.0}},
      {ActivationKind::LeakyRelu, -2, 2, {0.0}}, {ActivationKind::Exp, -2, 2, {}},
      {ActivationKind::Log, 0.3, 3, {}},        {ActivationKind::Sqrt, 0.3, 3, {}},
      {ActivationKind::Inverse, 0.3, 3, {}},    {ActivationKind::Inverse, -3, -0.3, {}},
      {ActivationKind::Reverse, -2, 2, {}},     {ActivationKind::Signum, -2, 2, {0.0}},
      {ActivationKind::Lukasiewicz, -0.5, 1.5, {0.0, 1.0}},
  };
  for (const auto& c : cases)
    for (Shape s : kShapes) {
      const size_t count = 3;
      check_activation(act(c.kind), s, random_values(rng, count * s.size(), c.lo, c.hi, c.kinks), rng);
    }
}

TEST(FunctionsGradient, LeakyReluWithItsOwnSlope) {
  // leaky_relu(alpha) (issue 11): values x or alpha * x, and the gradient to match
  std::mt19937_64 rng(21);
  for (double slope : {0.2, 0.5, -0.1, 2.0}) {
    Activation a = act(ActivationKind::LeakyRelu);
    a.slope = slope;
    const Vec x = {-2.0, -0.5, 0.75, 3.0};
    Vec y(4);
    activation_forward(a, {4, 1}, 1, x.data(), y.data());
    EXPECT_EQ(y, (Vec{-2.0 * slope, -0.5 * slope, 0.75, 3.0})) << slope;
    for (Shape s : kShapes) check_activation(a, s, random_values(rng, 3 * s.size(), -2, 2, {0.0}), rng);
  }
}

TEST(FunctionsGradient, WholeValueActivations) {
  std::mt19937_64 rng(12);
  for (auto kind : {ActivationKind::Softmax, ActivationKind::Sparsemax, ActivationKind::Norm,
                    ActivationKind::Transpose})
    for (Shape s : kShapes) check_activation(act(kind), s, random_values(rng, 4 * s.size()), rng);
  // Sparsemax with a support of several entries (small spread) and of one entry.
  check_activation(act(ActivationKind::Sparsemax), {5, 1}, random_values(rng, 20, -0.3, 0.3), rng);
  check_activation(act(ActivationKind::Sparsemax), {4, 1}, {3.0, 0.1, -0.2, 0.4}, rng);
  // Norm of a long vector and of a matrix.
  check_activation(act(ActivationKind::Norm), {16, 1}, random_values(rng, 32, -3, 3), rng);
}

TEST(FunctionsGradient, SliceAndReshape) {
  std::mt19937_64 rng(13);
  Activation slice = act(ActivationKind::Slice);
  slice.row_begin = 0, slice.row_end = 2, slice.col_begin = 1, slice.col_end = 3;
  check_activation(slice, {3, 4}, random_values(rng, 2 * 12), rng);
  Activation rows_only = act(ActivationKind::Slice);
  rows_only.row_begin = 1, rows_only.row_end = 3;
  check_activation(rows_only, {4, 1}, random_values(rng, 3 * 4), rng);
  Activation cols_only = act(ActivationKind::Slice);
  cols_only.col_begin = 2, cols_only.col_end = 5;
  check_activation(cols_only, {2, 5}, random_values(rng, 3 * 10), rng);
  Activation reshape = act(ActivationKind::Reshape);
  reshape.rows = 3, reshape.cols = 2;
  check_activation(reshape, {2, 3}, random_values(rng, 3 * 6), rng);
  check_activation(reshape, {6, 1}, random_values(rng, 2 * 6), rng);
}

// ---- combinations ------------------------------------------------------------------------

void check_combination(CombinationKind c, const std::vector<Shape>& shapes, std::mt19937_64& rng,
                       double lo = -2.0, double hi = 2.0, size_t count = 3) {
  std::vector<Vec> inputs;
  for (Shape s : shapes) inputs.push_back(random_values(rng, count * s.size(), lo, hi));
  const Shape out = combination_shape(c, shapes);
  const Vec gout = random_values(rng, count * out.size());
  auto forward = [&](const std::vector<Vec>& xs) {
    std::vector<const double*> ptrs;
    for (const auto& x : xs) ptrs.push_back(x.data());
    Vec y(count * out.size());
    combination_forward(c, shapes, count, ptrs.data(), y.data());
    return y;
  };
  const Vec y = forward(inputs);
  std::vector<Vec> grads;
  for (const auto& x : inputs) grads.emplace_back(x.size(), kAccumulateBase);
  std::vector<const double*> ptrs;
  std::vector<double*> gptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ptrs.push_back(inputs[i].data());
    gptrs.push_back(grads[i].data());
  }
  combination_backward(c, shapes, count, ptrs.data(), y.data(), gout.data(), gptrs.data());
  std::string what = "combination " + to_string(c) + " of";
  for (Shape s : shapes) what += " " + to_string(s);
  expect_matches_finite_differences([&](const std::vector<Vec>& xs) { return dot(gout, forward(xs)); },
                                    inputs, grads, what);

  // Null gradient slots are skipped, and the others are unchanged by that (up to rounding:
  // a matrix chain may then be multiplied in another order, and with FMA the last bits
  // differ).
  if (shapes.size() >= 2) {
    std::vector<Vec> partial;
    for (const auto& x : inputs) partial.emplace_back(x.size(), kAccumulateBase);
    std::vector<double*> some(gptrs.size());
    for (size_t i = 0; i < some.size(); ++i) some[i] = i == 0 ? nullptr : partial[i].data();
    combination_backward(c, shapes, count, ptrs.data(), y.data(), gout.data(), some.data());
    for (size_t i = 1; i < some.size(); ++i)
      for (size_t e = 0; e < partial[i].size(); ++e)
        EXPECT_NEAR(partial[i][e], grads[i][e], 1e-13 * std::max(1.0, std::abs(grads[i][e])))
            << what << " with input 0 not needing a gradient";
  }
}

TEST(FunctionsGradient, ElementwiseCombinationsWithBroadcast) {
  std::mt19937_64 rng(21);
  const std::vector<std::vector<Shape>> cases = {
      {{3, 1}},
      {{1, 1}, {1, 1}},
      {{3, 1}, {3, 1}},
      {{1, 1}, {3, 1}, {3, 1}},
      {{2, 3}, {2, 3}, {1, 1}},
      {{1, 4}, {1, 4}},
      {{1, 1}, {1, 4}, {1, 1}, {1, 4}},
  };
  for (auto kind : {CombinationKind::Sum, CombinationKind::Avg, CombinationKind::Max,
                    CombinationKind::Min, CombinationKind::ElProduct})
    for (const auto& shapes : cases) check_combination(kind, shapes, rng);
}

TEST(FunctionsGradient, ProductChainsScalarsAndDotProducts) {
  std::mt19937_64 rng(22);
  const std::vector<std::vector<Shape>> cases = {
      {{1, 1}, {1, 1}},                                  // scalar product
      {{1, 1}, {1, 1}, {1, 1}},                          // three scalars
      {{1, 1}, {3, 1}},                                  // scalar scales a vector
      {{2, 3}},                                          // one matrix
      {{2, 3}, {3, 1}},                                  // matrix times vector
      {{1, 3}, {3, 1}},                                  // dot product
      {{1, 1}, {1, 3}, {3, 1}},                          // scaled dot product (attention)
      {{3, 1}, {1, 3}},                                  // outer product
      {{1, 1}, {4, 3}, {3, 1}},                          // scaled matrix times vector
      {{1, 3}, {3, 2}, {1, 1}},                          // row vector times matrix, scaled
      {{2, 3}, {3, 4}, {4, 2}},                          // chain of three
      {{1, 1}, {2, 2}, {2, 3}, {1, 1}, {3, 1}, {1, 1}},  // chain with scalars between
      {{1, 2}, {2, 2}, {2, 2}, {2, 1}},                  // chain ending in a 1x1
  };
  for (const auto& shapes : cases) check_combination(CombinationKind::Product, shapes, rng);
  // Larger matrix-vector and matrix-matrix products (loop and Eigen paths).
  check_combination(CombinationKind::Product, {{20, 24}, {24, 12}}, rng, -1, 1, 1);
  check_combination(CombinationKind::Product, {{1, 1}, {18, 16}, {16, 20}}, rng, -1, 1, 2);
}

TEST(FunctionsGradient, StructuralCombinations) {
  std::mt19937_64 rng(23);
  check_combination(CombinationKind::Concat, {{3, 1}, {1, 1}, {2, 1}}, rng);
  check_combination(CombinationKind::Concat, {{1, 3}, {1, 2}}, rng);
  check_combination(CombinationKind::Concat, {{2, 2}, {1, 2}}, rng);
  check_combination(CombinationKind::CrossSum, {{2, 1}, {3, 1}}, rng);
  check_combination(CombinationKind::CrossSum, {{1, 1}, {3, 1}}, rng);
  check_combination(CombinationKind::CrossSum, {{1, 2}, {3, 1}}, rng);
  check_combination(CombinationKind::CosSim, {{3, 1}, {3, 1}}, rng);
  check_combination(CombinationKind::CosSim, {{1, 4}, {1, 4}}, rng);
  check_combination(CombinationKind::CosSim, {{2, 2}, {2, 2}}, rng);
  check_combination(CombinationKind::CosSim, {{1, 1}, {1, 1}}, rng, 0.5, 2.0);
  check_combination(CombinationKind::Softmax, {{1, 1}, {1, 1}, {1, 1}}, rng);
  check_combination(CombinationKind::Softmax, {{1, 1}}, rng);
  check_combination(CombinationKind::Softmax, {{1, 1}, {2, 1}}, rng);
}

TEST(FunctionsGradient, CountCombinationHasNoGradient) {
  const std::vector<Shape> shapes = {{2, 1}, {1, 1}};
  Vec a = {1, 2, 3, 4}, b = {5, 6};
  const double* in[] = {a.data(), b.data()};
  Vec out(2), gout = {1.0, -2.0}, ga(4, 0.5), gb(2, 0.5);
  combination_forward(CombinationKind::Count, shapes, 2, in, out.data());
  EXPECT_EQ(out, (Vec{2.0, 2.0}));
  double* gin[] = {ga.data(), gb.data()};
  combination_backward(CombinationKind::Count, shapes, 2, in, out.data(), gout.data(), gin);
  EXPECT_EQ(ga, Vec(4, 0.5));
  EXPECT_EQ(gb, Vec(2, 0.5));
}

// ---- aggregations ------------------------------------------------------------------------

void check_aggregation(AggregationKind a, Shape in, const std::vector<uint32_t>& offsets,
                       std::mt19937_64& rng) {
  const size_t segments = offsets.size() - 1;
  const Vec x = random_values(rng, offsets.back() * in.size());
  const size_t len = offsets[1] - offsets[0];
  const Shape out = aggregation_shape(a, in, len);
  const Vec gy = random_values(rng, segments * out.size());
  auto forward = [&](const std::vector<Vec>& xs) {
    Vec y(segments * out.size());
    aggregation_forward(a, in, segments, offsets.data(), xs[0].data(), y.data());
    return y;
  };
  const Vec y = forward({x});
  Vec gx(x.size(), kAccumulateBase);
  aggregation_backward(a, in, segments, offsets.data(), x.data(), y.data(), gy.data(), gx.data());
  expect_matches_finite_differences([&](const std::vector<Vec>& xs) { return dot(gy, forward(xs)); },
                                    {x}, {gx}, "aggregation " + to_string(Aggregation{a, {}}) + " of " + to_string(in));
}

TEST(FunctionsGradient, SegmentReductionsIncludingEmptySegments) {
  std::mt19937_64 rng(31);
  const std::vector<uint32_t> offsets = {0, 3, 3, 5, 9, 10};
  for (auto kind : {AggregationKind::Sum, AggregationKind::Avg, AggregationKind::Max,
                    AggregationKind::Min, AggregationKind::Count, AggregationKind::Product})
    for (Shape s : kShapes) check_aggregation(kind, s, offsets, rng);
  for (Shape s : kShapes) check_aggregation(AggregationKind::Concat, s, {0, 2, 4, 6}, rng);
  check_aggregation(AggregationKind::Concat, {3, 1}, {0, 3}, rng);
}

TEST(FunctionsGradient, SegmentSoftmax) {
  std::mt19937_64 rng(32);
  const std::vector<uint32_t> offsets = {0, 3, 3, 4, 8};
  for (Shape s : kShapes) {
    const size_t segments = offsets.size() - 1;
    const Vec x = random_values(rng, offsets.back() * s.size());
    const Vec gy = random_values(rng, x.size());
    auto forward = [&](const std::vector<Vec>& xs) {
      Vec y(xs[0].size());
      segment_softmax_forward(s, segments, offsets.data(), xs[0].data(), y.data());
      return y;
    };
    const Vec y = forward({x});
    Vec gx(x.size(), kAccumulateBase);
    segment_softmax_backward(s, segments, offsets.data(), y.data(), gy.data(), gx.data());
    expect_matches_finite_differences([&](const std::vector<Vec>& xs) { return dot(gy, forward(xs)); },
                                      {x}, {gx}, "segment softmax of " + to_string(s));
  }
}

}  // namespace
