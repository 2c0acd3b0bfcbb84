// Small GEMMs (exec/small_gemm.hpp) on random shapes, float and double: every block width
// (8, 16, 32, 64), widths of several blocks and a remainder (37, 48, 100, 128), every narrow
// width 1-15 (one block of vectors, halves, quarters and scalars, or Eigen's product for a
// width of 1), row counts 1, 3, 17
// and 64 (whole and partial row blocks), depths 0, 1 and 37, and a depth past the kernel's
// limit. Each entry is checked against a long double sum, and where the kernel runs, to the
// bit against its contract: the FMA chain over the depth in order from zero, then added to
// the destination.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "exec/plan.hpp"
#include "exec/small_gemm.hpp"
#include "lrnn/lrnn.hpp"
#include "model_gradient_check.hpp"

namespace {

using lrnn::exec::add_product_ab;
using lrnn::exec::add_product_abt;
using lrnn::exec::add_product_atb;
using lrnn::exec::product_abt;

using lrnn::exec::small_gemm_block;

// The columns the blocks leave (widest first), as small_gemm.cpp runs them.
template <class T>
long tail_after_blocks(long n) {
  long j = 0;
  for (long w : {64, 32, 16, 8})
    if (small_gemm_block<T>(w))
      for (; n - j >= w; j += w) {
      }
  return n - j;
}

// Whether column j of a width-n product is the kernel's: a block's, or a padded tail's.
template <class T>
bool kernel_column(long n, long j) {
  const long tail = tail_after_blocks<T>(n);
  return j < n - tail || lrnn::exec::pads_tail<T>(tail);
}

// B (n x k, row-major) transposed: k x n.
template <class T>
std::vector<T> transpose(const T* B, long n, long k) {
  std::vector<T> t(size_t(n * k));
  for (long r = 0; r < n; ++r)
    for (long c = 0; c < k; ++c) t[size_t(c * n + r)] = B[r * k + c];
  return t;
}

template <class T>
std::vector<T> random_values(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> v(count);
  for (T& x : v) x = T(u(rng));
  return v;
}

// One product: C (m x n) (+)= sum over d < k of a(i, d) b(d, j), run by `run` on buffers
// A and B whose entries a and b read.
template <class T>
struct Case {
  long m, k, n;
  bool accumulate;
  std::function<T(const std::vector<T>&, long, long)> a, b;
  std::function<void(const T*, const T*, T*)> run;
};

template <class T>
void expect_product(const Case<T>& c, const std::function<bool(long)>& exact_column) {
  const std::vector<T> A = random_values<T>(size_t(c.m * c.k), 1), B = random_values<T>(size_t(c.k * c.n), 2);
  const std::vector<T> C0 = c.accumulate ? random_values<T>(size_t(c.m * c.n), 3) : std::vector<T>(size_t(c.m * c.n), T(7));
  std::vector<T> C = C0;
  c.run(A.data(), B.data(), C.data());
  const double tolerance = sizeof(T) == 8 ? 1e-13 : 1e-5;
  for (long i = 0; i < c.m; ++i)
    for (long j = 0; j < c.n; ++j) {
      long double sum = 0, scale = 0;
      T chain = T(0);
      for (long d = 0; d < c.k; ++d) {
        sum += (long double)c.a(A, i, d) * c.b(B, d, j);
        scale += std::fabs((long double)c.a(A, i, d) * c.b(B, d, j));
        chain = std::fma(c.a(A, i, d), c.b(B, d, j), chain);
      }
      const T start = c.accumulate ? C0[i * c.n + j] : T(0);
      const T got = C[i * c.n + j];
      EXPECT_NEAR(double(got), double(start + sum), tolerance * double(scale + std::fabs(start) + 1))
          << "m " << c.m << " k " << c.k << " n " << c.n << " at " << i << "," << j;
#ifdef EIGEN_VECTORIZE_FMA
      if (exact_column(j)) EXPECT_EQ(got, c.accumulate ? T(start + chain) : chain) << "m " << c.m << " k " << c.k << " n " << c.n;
#else
      (void)exact_column;
#endif
    }
}

// The four products of one shape, each against the sum and, on the kernel's columns, its
// FMA chain.
template <class T>
void expect_products(long m, long k, long n) {
  // C = A B^T, B (n x k)
  expect_product<T>({m, k, n, false,
                     [=](const std::vector<T>& A, long i, long d) { return A[i * k + d]; },
                     [=](const std::vector<T>& B, long d, long j) { return B[j * k + d]; },
                     [=](const T* A, const T* B, T* C) { product_abt(m, k, n, A, B, C); }},
                    [=](long j) { return k > 0 && kernel_column<T>(n, j); });
  // C += A B^T: a second head weight into the same rows (RuleGroup::adds_to_out)
  expect_product<T>({m, k, n, true,
                     [=](const std::vector<T>& A, long i, long d) { return A[i * k + d]; },
                     [=](const std::vector<T>& B, long d, long j) { return B[j * k + d]; },
                     [=](const T* A, const T* B, T* C) { add_product_abt(m, k, n, A, B, C); }},
                    [=](long j) { return k > 0 && kernel_column<T>(n, j); });
  // The same two given B^T (ParamView::transposed): read in its place, the same entries.
  expect_product<T>({m, k, n, false,
                     [=](const std::vector<T>& A, long i, long d) { return A[i * k + d]; },
                     [=](const std::vector<T>& B, long d, long j) { return B[j * k + d]; },
                     [=](const T* A, const T* B, T* C) { product_abt(m, k, n, A, B, C, transpose(B, n, k).data()); }},
                    [=](long j) { return k > 0 && kernel_column<T>(n, j); });
  expect_product<T>({m, k, n, true,
                     [=](const std::vector<T>& A, long i, long d) { return A[i * k + d]; },
                     [=](const std::vector<T>& B, long d, long j) { return B[j * k + d]; },
                     [=](const T* A, const T* B, T* C) { add_product_abt(m, k, n, A, B, C, transpose(B, n, k).data()); }},
                    [=](long j) { return k > 0 && kernel_column<T>(n, j); });
  // C += A B, B (k x n)
  expect_product<T>({m, k, n, true,
                     [=](const std::vector<T>& A, long i, long d) { return A[i * k + d]; },
                     [=](const std::vector<T>& B, long d, long j) { return B[d * n + j]; },
                     [=](const T* A, const T* B, T* C) { add_product_ab(m, k, n, A, B, C); }},
                    [=](long j) { return kernel_column<T>(n, j); });
  // C += A^T B, A (k x m): the kernel on C's rows for every whole block, the columns
  // left (37: 5) as rows of C^T when m is a kernel width, else padded.
  expect_product<T>({m, k, n, true,
                     [=](const std::vector<T>& A, long i, long d) { return A[d * m + i]; },
                     [=](const std::vector<T>& B, long d, long j) { return B[d * n + j]; },
                     [=](const T* A, const T* B, T* C) { add_product_atb(m, k, n, A, B, C); }},
                    [=](long j) { return kernel_column<T>(n, j) || small_gemm_block<T>(m); });
}

template <class T>
void check_all_shapes() {
  for (long m : {1, 3, 17, 64})
    for (long k : {0, 1, 8, 10, 37})  // (8 x 8 and 10 x 10 weights: transposed by fixed-size copies)
      for (long n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 32, 37, 48, 64, 100, 128})
        expect_products<T>(m, k, n);
}

TEST(SmallGemm, MatchesTheSumAndTheFmaChainOnEveryShape) {
  check_all_shapes<double>();
  check_all_shapes<float>();
}

// The padded tail's buffer is kept from call to call with only its r columns written, its
// padding left as earlier calls wrote it: a run of calls with the same tail and growing and
// shrinking depths, then wider and narrower tails and back, each product still the sum (and
// the kernel's FMA chain).
TEST(SmallGemm, PaddedTailIgnoresWhatEarlierCallsLeftInItsPadding) {
  const long shapes[][3] = {{3, 37, 3}, {3, 5, 3}, {3, 60, 3}, {17, 2, 3}, {3, 37, 10}, {3, 37, 3},
                            {3, 37, 13}, {64, 9, 5}, {3, 61, 3}, {3, 4, 3}};
  for (const auto& [m, k, n] : shapes) {
    expect_products<double>(m, k, n);
    expect_products<float>(m, k, n);
  }
}

// Past the depth limit the product is Eigen's, still right (a width of 10 is no block).
TEST(SmallGemm, LongDepthTakesEigensProduct) {
  const long m = 3, k = 600, n = 10;
  expect_product<double>({m, k, n, true,
                          [=](const std::vector<double>& A, long i, long d) { return A[d * m + i]; },
                          [=](const std::vector<double>& B, long d, long j) { return B[d * n + j]; },
                          [=](const double* A, const double* B, double* C) { add_product_atb(m, k, n, A, B, C); }},
                         [](long) { return false; });
}

// A deep C += A^T B of narrow operands (a big graph's weight gradient) runs in depth
// slices of 512, each slice's FMA chain from zero added to C in turn: where n is one block
// width and m at most the widest (add_product_atb); other shapes take Eigen's product,
// checked against the sum only.
template <class T>
void expect_sliced_depth(long m, long k, long n) {
  const bool sliced_on_kernel = small_gemm_block<T>(n) && m <= lrnn::exec::kSmallGemmMaxWidth<T>;
  const std::vector<T> A = random_values<T>(size_t(m * k), 1), B = random_values<T>(size_t(k * n), 2);
  const std::vector<T> C0 = random_values<T>(size_t(m * n), 3);
  std::vector<T> C = C0;
  add_product_atb(m, k, n, A.data(), B.data(), C.data());
  const double tolerance = sizeof(T) == 8 ? 1e-13 : 1e-5;
  for (long i = 0; i < m; ++i)
    for (long j = 0; j < n; ++j) {
      long double sum = 0, scale = 0;
      T sliced = C0[i * n + j];
      for (long d0 = 0; d0 < k; d0 += 512) {
        T chain = T(0);
        for (long d = d0; d < std::min(k, d0 + 512); ++d) chain = std::fma(A[d * m + i], B[d * n + j], chain);
        sliced += chain;
      }
      for (long d = 0; d < k; ++d) {
        sum += (long double)A[d * m + i] * B[d * n + j];
        scale += std::fabs((long double)A[d * m + i] * B[d * n + j]);
      }
      EXPECT_NEAR(double(C[i * n + j]), double(C0[i * n + j] + sum), tolerance * double(scale + 1)) << i << "," << j;
#ifdef EIGEN_VECTORIZE_FMA
      if (sliced_on_kernel) EXPECT_EQ(C[i * n + j], sliced) << "m " << m << " k " << k << " n " << n << " at " << i << "," << j;
#else
      (void)sliced;
      (void)sliced_on_kernel;
#endif
    }
}

// The shapes are the build's own (the widest block: 32 doubles and 64 floats with AVX-512,
// 16 and 32 with AVX2), so that the slices run on the kernel on every vector width; the
// fixed shapes of AVX-512 are kept too, on Eigen's product where the build has no such block.
template <class T>
void expect_sliced_shapes(long k) {
  constexpr long widest = lrnn::exec::kSmallGemmMaxWidth<T>;
  expect_sliced_depth<T>(3, k, widest);
  expect_sliced_depth<T>(widest, k, widest);
  expect_sliced_depth<T>(1, k, 16);
}

TEST(SmallGemm, LongDepthOfNarrowOperandsRunsInSlices) {
  for (long k : {513, 1300, 2048}) {
    expect_sliced_shapes<double>(k);
    expect_sliced_shapes<float>(k);
    expect_sliced_depth<double>(3, k, 32);
    expect_sliced_depth<double>(32, k, 32);
    expect_sliced_depth<float>(32, k, 16);
    expect_sliced_depth<float>(1, k, 64);
  }
}

// product_abt keeps transposed copies of recent right operands per thread: a weight
// changed in place (an optimizer step) or more weights than copies are never served stale.
TEST(SmallGemm, TransposedWeightFollowsItsValues) {
  const long m = 5, k = 7, n = 32;
  const std::vector<double> A = random_values<double>(size_t(m * k), 4);
  std::vector<std::vector<double>> weights;
  for (unsigned w = 0; w < 12; ++w) weights.push_back(random_values<double>(size_t(n * k), 10 + w));
  auto expected = [&](const std::vector<double>& B, long i, long j) {
    double s = 0;
    for (long d = 0; d < k; ++d) s = std::fma(A[i * k + d], B[j * k + d], s);
    return s;
  };
  std::vector<double> C(size_t(m * n));
  auto check = [&](const std::vector<double>& B, int round) {
    product_abt(m, k, n, A.data(), B.data(), C.data());
    for (long i = 0; i < m; ++i)
      for (long j = 0; j < n; ++j) ASSERT_NEAR(C[i * n + j], expected(B, i, j), 1e-14) << "round " << round;
  };
  for (int round = 0; round < 3; ++round) {
    for (std::vector<double>& B : weights) {
      check(B, round);
      B[3 * k + 2] += 0.5;  // in place, as an update would
      check(B, round);
    }
    for (size_t w = 0; w < 4; ++w) check(weights[w], round);  // fewer weights than copies
    for (size_t w = 0; w < 4; ++w) {
      weights[w][0] -= 0.25;
      check(weights[w], round);
    }
  }
}

// A float mirror keeps each weight the kernels may take transposed beside its values (a
// vector's as it is), made afresh by every refresh (after an update, the new values');
// weights past the kernels' size have none, nor do double views.
TEST(SmallGemm, FloatMirrorKeepsTheKernelsTransposes) {
  lrnn::neural::Parameters params;
  auto add = [&](const char* name, uint32_t rows, uint32_t cols) {
    lrnn::neural::ParamInfo info;
    info.name = name;
    info.shape = {int(rows), int(cols)};
    return params.add(info, random_values<double>(size_t(rows) * cols, rows + cols));
  };
  const uint32_t w = add("w", 3, 5), v = add("v", 1, 7), big = add("big", 300, 300);
  lrnn::exec::ParamMirror mirror;
  for (int round = 0; round < 2; ++round) {
    const lrnn::exec::ParamView<float> view = mirror.refresh(params);
    ASSERT_NE(view.transposed(w), nullptr);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 5; ++c) EXPECT_EQ(view.transposed(w)[c * 3 + r], float(params.data(w)[r * 5 + c]));
    for (int c = 0; c < 7; ++c) EXPECT_EQ(view.transposed(v)[c], float(params.data(v)[c]));  // a row's is its column
    EXPECT_GT(long(params.info(big).shape.size()), lrnn::exec::kSmallGemmMaxTransposed);
    params.data(w)[1 * 5 + 4] += 0.5;  // an update: the next refresh transposes it anew
  }
  EXPECT_EQ(lrnn::exec::view_of(params).transposed(w), nullptr);  // double views keep none
}

// A rule with several weighted inputs takes the per-grounding products (exec/executor.cpp
// weight_forward / weight_backward), at width 16 through the kernels: the first layer's
// weight gradient (16 x 2) on the kernel's columns, the second layer's every product.
TEST(SmallGemm, GroundingProductsMatchFiniteDifferences) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(
      "<0.3> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[-0.75, 0.4]> x(3), edge(1, 2), edge(2, 1), "
      "edge(2, 3), edge(3, 2).\n");
  lrnn::Settings settings;
  settings.seed = 5;
  lrnn::Model model(lrnn::Template::from_string(
                        "h(X) :- {16,2} x(X), {16,2} x(Y), *edge(X, Y). [activation=tanh]\n"
                        "g(X) :- {16,16} h(X), {16,16} h(Y), *edge(Y, X). [activation=tanh]\n"
                        "o :- {1,16} g(X). [aggregation=avg]\n"),
                    settings);
  lrnn_test::GradientCheck check;
  lrnn_test::expect_gradients_match_finite_differences(model, data, &check);
  EXPECT_EQ(check.checked, 2u * 32u + 2u * 256u + 16u);
  EXPECT_GT(check.largest, 1e-3);
}

}  // namespace
