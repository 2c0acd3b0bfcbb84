// exec/vector_math: the array tanh and exp that the tanh, sigmoid and exp activations use
// (libmvec where the build has it) stay within 4 ulp of <cmath>'s, keep the special values,
// and give an entry the same bits wherever it sits in an array.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "exec/vector_math.hpp"

namespace {

using lrnn::exec::exp_each;
using lrnn::exec::tanh_each;

template <class T>
double ulps_apart(T got, T want) {
  if (got == want) return 0;
  const T ulp = std::nextafter(std::abs(want), std::numeric_limits<T>::infinity()) - std::abs(want);
  return double(std::abs(got - want) / ulp);
}

template <class T>
std::vector<T> sample_inputs(double spread) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0.0, spread);
  std::vector<T> x(4099);
  for (auto& v : x) v = T(normal(rng));
  return x;
}

template <class T>
void expect_close_to_libm(const char* name, void (*each)(const T*, T*, size_t), T (*scalar)(T), double spread) {
  const std::vector<T> x = sample_inputs<T>(spread);
  std::vector<T> y(x.size());
  each(x.data(), y.data(), x.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, ulps_apart(y[i], scalar(x[i])));
  EXPECT_LE(worst, 4.0) << name << " (" << lrnn::exec::vector_math_name() << ")";
}

TEST(VectorMath, TanhAndExpWithinFourUlpOfLibm) {
  expect_close_to_libm<double>("tanh", tanh_each, [](double v) { return std::tanh(v); }, 3.0);
  expect_close_to_libm<float>("tanhf", tanh_each, [](float v) { return std::tanh(v); }, 3.0);
  expect_close_to_libm<double>("exp", exp_each, [](double v) { return std::exp(v); }, 40.0);
  expect_close_to_libm<float>("expf", exp_each, [](float v) { return std::exp(v); }, 20.0);
}

TEST(VectorMath, SpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> x = {0.0, -0.0, 1e-300, -1e-310, 40.0, -800.0, inf, -inf, std::nan("")};
  std::vector<double> t(x.size()), e(x.size());
  tanh_each(x.data(), t.data(), x.size());
  exp_each(x.data(), e.data(), x.size());
  EXPECT_EQ(t[0], 0.0);
  EXPECT_TRUE(std::signbit(t[1]));
  EXPECT_EQ(t[2], 1e-300);
  EXPECT_EQ(t[3], -1e-310);
  EXPECT_EQ(t[4], 1.0);
  EXPECT_EQ(t[5], -1.0);
  EXPECT_EQ(t[6], 1.0);
  EXPECT_EQ(t[7], -1.0);
  EXPECT_TRUE(std::isnan(t[8]));
  EXPECT_EQ(e[0], 1.0);
  EXPECT_EQ(e[1], 1.0);
  EXPECT_EQ(e[4], std::exp(40.0));
  EXPECT_EQ(e[5], 0.0);
  EXPECT_EQ(e[6], inf);
  EXPECT_EQ(e[7], 0.0);
  EXPECT_TRUE(std::isnan(e[8]));
}

// The same value at every offset and in every array length (whole lane groups and the
// padded last one), and in place.
TEST(VectorMath, AnEntrysBitsDoNotDependOnItsPosition) {
  const std::vector<double> x = sample_inputs<double>(2.0);
  std::vector<double> whole(x.size());
  tanh_each(x.data(), whole.data(), x.size());
  for (size_t offset = 0; offset < 9; ++offset)
    for (size_t length = 1; length < 12; ++length) {
      std::vector<double> part(length);
      tanh_each(x.data() + offset, part.data(), length);
      for (size_t i = 0; i < length; ++i) ASSERT_EQ(part[i], whole[offset + i]) << offset << " " << length;
    }
  std::vector<double> in_place = x;
  tanh_each(in_place.data(), in_place.data(), in_place.size());
  EXPECT_EQ(in_place, whole);
}

}  // namespace
