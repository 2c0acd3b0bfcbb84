// Activation kernels: one switch per call, then a flat loop over every entry of the
// batch (element-wise) or over every value (whole-value functions).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "exec/functions.hpp"
#include "exec/vector_math.hpp"

namespace lrnn::exec {

namespace {

template <class T>
constexpr T kNormEps = 1e-5;  // PyTorch's layer_norm default

// Mean (written to `mean`) and 1 / sqrt(biased variance + eps) of one value's n entries;
// forward and backward of `norm` share it so both see the same statistics.
template <class T>
inline T norm_statistics(const T* x, int n, T& mean) {
  mean = 0;
  for (int i = 0; i < n; ++i) mean += x[i];
  mean /= n;
  T var = 0;
  for (int i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= n;
  return T(1.0) / std::sqrt(var + kNormEps<T>);
}

// The logistic function without overflow: with e = exp(-|x|), 1 / (1 + e) for x >= 0 and
// e / (1 + e) below. The exponentials go through exp_each a block at a time (x and y may be
// the same array: each block's signs are read before its values are written).
template <class T>
void stable_sigmoid_each(const T* x, T* y, size_t total) {
  constexpr size_t kBlock = 64;
  T e[kBlock];
  for (size_t b = 0; b < total; b += kBlock) {
    const size_t m = std::min(kBlock, total - b);
    for (size_t i = 0; i < m; ++i) e[i] = -std::abs(x[b + i]);
    exp_each(e, e, m);
    for (size_t i = 0; i < m; ++i) {
      y[b + i] = x[b + i] >= 0 ? T(1.0) / (T(1.0) + e[i]) : e[i] / (T(1.0) + e[i]);
    }
  }
}


// Sparsemax (Martins & Astudillo 2016): the Euclidean projection of x onto the simplex.
// `sorted` is scratch of n entries.
template <class T>
void sparsemax_value(int n, const T* x, T* y, T* sorted) {
  // NaN has no order (sorting it is undefined behaviour): a NaN input gives a NaN value.
  for (int i = 0; i < n; ++i)
    if (std::isnan(x[i])) {
      std::fill(y, y + n, std::numeric_limits<T>::quiet_NaN());
      return;
    }
  std::copy(x, x + n, sorted);
  std::sort(sorted, sorted + n, [](T a, T b) { return a > b; });
  T cumulative = 0, tau_sum = 0;
  int k = 0;
  for (int j = 0; j < n; ++j) {
    cumulative += sorted[j];
    // z_(j) is in the support iff 1 + (j+1) z_(j) > sum_{i<=j} z_(i).
    if (T(1.0) + (j + 1) * sorted[j] > cumulative) {
      k = j + 1;
      tau_sum = cumulative;
    }
  }
  T tau = (tau_sum - T(1.0)) / k;
  for (int i = 0; i < n; ++i) y[i] = std::max<T>(x[i] - tau, T(0.0));
}

}  // namespace

template <class T>
void activation_forward(const Activation& a, Shape in, size_t count, const T* x, T* y) {
  const size_t total = count * static_cast<size_t>(in.size());
  const int n = in.size();
  switch (a.kind) {
    case ActivationKind::Identity:
      std::copy(x, x + total, y);
      return;
    case ActivationKind::Sigmoid:
      stable_sigmoid_each(x, y, total);
      return;
    case ActivationKind::Tanh:
      tanh_each(x, y, total);
      return;
    case ActivationKind::Relu:
      for (size_t i = 0; i < total; ++i) y[i] = x[i] > 0 ? x[i] : T(0.0);
      return;
    case ActivationKind::LeakyRelu:
      for (size_t i = 0; i < total; ++i) y[i] = x[i] > 0 ? x[i] : a.slope * x[i];
      return;
    case ActivationKind::Exp:
      exp_each(x, y, total);
      return;
    case ActivationKind::Log:
      for (size_t i = 0; i < total; ++i) y[i] = std::log(x[i]);
      return;
    case ActivationKind::Sqrt:
      for (size_t i = 0; i < total; ++i) y[i] = std::sqrt(x[i]);
      return;
    case ActivationKind::Inverse:
      for (size_t i = 0; i < total; ++i) y[i] = T(1.0) / x[i];
      return;
    case ActivationKind::Reverse:
      for (size_t i = 0; i < total; ++i) y[i] = T(1.0) - x[i];
      return;
    case ActivationKind::Signum:
      for (size_t i = 0; i < total; ++i) y[i] = x[i] > 0 ? T(1.0) : T(0.0);
      return;
    case ActivationKind::Lukasiewicz:
      for (size_t i = 0; i < total; ++i) y[i] = std::min<T>(T(1.0), std::max<T>(T(0.0), x[i]));
      return;
    case ActivationKind::Softmax:
      for (size_t v = 0; v < count; ++v) softmax_entries(n, x + v * n, y + v * n);
      return;
    case ActivationKind::Sparsemax: {
      std::vector<T> sorted(n);
      for (size_t v = 0; v < count; ++v) sparsemax_value(n, x + v * n, y + v * n, sorted.data());
      return;
    }
    case ActivationKind::Norm:
      for (size_t v = 0; v < count; ++v) {
        const T* xv = x + v * n;
        T* yv = y + v * n;
        T mean;
        const T inv_sigma = norm_statistics(xv, n, mean);
        for (int i = 0; i < n; ++i) yv[i] = (xv[i] - mean) * inv_sigma;
      }
      return;
    case ActivationKind::Transpose:
      if (in.rows == 1 || in.cols == 1) {  // vectors: same entries, other orientation
        std::copy(x, x + total, y);
        return;
      }
      for (size_t v = 0; v < count; ++v) {
        const T* xv = x + v * n;
        T* yv = y + v * n;
        for (int r = 0; r < in.rows; ++r)
          for (int c = 0; c < in.cols; ++c) yv[c * in.rows + r] = xv[r * in.cols + c];
      }
      return;
    case ActivationKind::Slice: {
      Shape out = activation_shape(a, in);
      SliceBounds b = slice_bounds(a, in);
      const int m = out.size();
      for (size_t v = 0; v < count; ++v) {
        const T* xv = x + v * n;
        T* yv = y + v * m;
        for (int r = b.r0; r < b.r1; ++r)
          std::copy(xv + r * in.cols + b.c0, xv + r * in.cols + b.c1, yv + (r - b.r0) * out.cols);
      }
      return;
    }
    case ActivationKind::Reshape:
      activation_shape(a, in);  // validates the entry count
      std::copy(x, x + total, y);  // row-major data is unchanged
      return;
  }
}

template <class T>
void activation_backward(const Activation& a, Shape in, size_t count, const T* x,
                         const T* y, const T* gy, T* gx) {
  const size_t total = count * static_cast<size_t>(in.size());
  const int n = in.size();
  switch (a.kind) {
    case ActivationKind::Identity:
    case ActivationKind::Reshape:
      for (size_t i = 0; i < total; ++i) gx[i] += gy[i];
      return;
    case ActivationKind::Sigmoid:
      for (size_t i = 0; i < total; ++i) gx[i] += gy[i] * y[i] * (T(1.0) - y[i]);
      return;
    case ActivationKind::Tanh:
      for (size_t i = 0; i < total; ++i) gx[i] += gy[i] * (T(1.0) - y[i] * y[i]);
      return;
    case ActivationKind::Relu:
      for (size_t i = 0; i < total; ++i) gx[i] += x[i] > 0 ? gy[i] : T(0.0);
      return;
    case ActivationKind::LeakyRelu:
      for (size_t i = 0; i < total; ++i) gx[i] += x[i] > 0 ? gy[i] : a.slope * gy[i];
      return;
    case ActivationKind::Exp:
      for (size_t i = 0; i < total; ++i) gx[i] += gy[i] * y[i];
      return;
    case ActivationKind::Log:
      for (size_t i = 0; i < total; ++i) gx[i] += gy[i] / x[i];
      return;
    case ActivationKind::Sqrt:
      for (size_t i = 0; i < total; ++i) gx[i] += gy[i] * T(0.5) / y[i];
      return;
    case ActivationKind::Inverse:
      for (size_t i = 0; i < total; ++i) gx[i] -= gy[i] * y[i] * y[i];
      return;
    case ActivationKind::Reverse:
      for (size_t i = 0; i < total; ++i) gx[i] -= gy[i];
      return;
    case ActivationKind::Signum:
      return;  // piecewise constant: zero gradient
    case ActivationKind::Lukasiewicz:
      // Like PyTorch's clamp: the gradient passes where min <= x <= max.
      for (size_t i = 0; i < total; ++i)
        if (x[i] >= T(0.0) && x[i] <= T(1.0)) gx[i] += gy[i];
      return;
    case ActivationKind::Softmax:
      for (size_t v = 0; v < count; ++v) {
        const T* yv = y + v * n;
        const T* gyv = gy + v * n;
        T* gxv = gx + v * n;
        T dot = 0;
        for (int i = 0; i < n; ++i) dot += gyv[i] * yv[i];
        for (int i = 0; i < n; ++i) gxv[i] += yv[i] * (gyv[i] - dot);
      }
      return;
    case ActivationKind::Sparsemax:
      // Jacobian diag(s) - s s^T / |S| on the support S (s = indicator of y > 0).
      for (size_t v = 0; v < count; ++v) {
        const T* yv = y + v * n;
        const T* gyv = gy + v * n;
        T* gxv = gx + v * n;
        T sum = 0;
        int support = 0;
        for (int i = 0; i < n; ++i)
          if (yv[i] > 0) {
            sum += gyv[i];
            ++support;
          }
        T mean = support ? sum / support : T(0.0);
        for (int i = 0; i < n; ++i)
          if (yv[i] > 0) gxv[i] += gyv[i] - mean;
      }
      return;
    case ActivationKind::Norm:
      // y = (x - mean) / sigma: dx = (gy - mean(gy) - y mean(gy y)) / sigma.
      for (size_t v = 0; v < count; ++v) {
        const T* xv = x + v * n;
        const T* yv = y + v * n;
        const T* gyv = gy + v * n;
        T* gxv = gx + v * n;
        T mean;
        const T inv_sigma = norm_statistics(xv, n, mean);
        T mean_g = 0, mean_gy = 0;
        for (int i = 0; i < n; ++i) {
          mean_g += gyv[i];
          mean_gy += gyv[i] * yv[i];
        }
        mean_g /= n;
        mean_gy /= n;
        for (int i = 0; i < n; ++i) gxv[i] += (gyv[i] - mean_g - yv[i] * mean_gy) * inv_sigma;
      }
      return;
    case ActivationKind::Transpose:
      if (in.rows == 1 || in.cols == 1) {
        for (size_t i = 0; i < total; ++i) gx[i] += gy[i];
        return;
      }
      for (size_t v = 0; v < count; ++v) {
        const T* gyv = gy + v * n;
        T* gxv = gx + v * n;
        for (int r = 0; r < in.rows; ++r)
          for (int c = 0; c < in.cols; ++c) gxv[r * in.cols + c] += gyv[c * in.rows + r];
      }
      return;
    case ActivationKind::Slice: {
      Shape out = activation_shape(a, in);
      SliceBounds b = slice_bounds(a, in);
      const int m = out.size();
      for (size_t v = 0; v < count; ++v) {
        const T* gyv = gy + v * m;
        T* gxv = gx + v * n;
        for (int r = b.r0; r < b.r1; ++r)
          for (int c = b.c0; c < b.c1; ++c)
            gxv[r * in.cols + c] += gyv[(r - b.r0) * out.cols + (c - b.c0)];
      }
      return;
    }
  }
}

// The two scalar types of execution (exec/scalar.hpp).
template void activation_forward<double>(const Activation&, Shape, size_t, const double*, double*);
template void activation_backward<double>(const Activation&, Shape, size_t, const double*, const double*, const double*, double*);
template void activation_forward<float>(const Activation&, Shape, size_t, const float*, float*);
template void activation_backward<float>(const Activation&, Shape, size_t, const float*, const float*, const float*, float*);

}  // namespace lrnn::exec
