// Aggregation kernels: segment reductions over CSR offsets (segment s covers input
// values [offsets[s], offsets[s+1])), and the segment softmax of attention.
#include <algorithm>
#include <cmath>
#include <vector>

#include "exec/functions.hpp"
#include "exec/parallel.hpp"

namespace lrnn::exec {

namespace {

// Concat needs one segment length for the whole batch (the output shape depends on it).
uint32_t common_segment_length(size_t segments, const uint32_t* offsets) {
  if (segments == 0) return 0;
  const uint32_t len = offsets[1] - offsets[0];
  for (size_t s = 1; s < segments; ++s)
    if (offsets[s + 1] - offsets[s] != len)
      throw Error(ErrorKind::Shape,
                  "aggregation 'concat' needs the same number of groundings for every head, but one "
                  "head has " + std::to_string(len) + " and another " +
                  std::to_string(offsets[s + 1] - offsets[s]));
  return len;
}

}  // namespace

template <class T>
void aggregation_forward(AggregationKind a, Shape in, size_t segments, const uint32_t* offsets,
                         const T* x, T* y) {
  const size_t n = static_cast<size_t>(in.size());
  switch (a) {
    case AggregationKind::Sum:
    case AggregationKind::Avg:
      for (size_t s = 0; s < segments; ++s) {
        T* ys = y + s * n;
        std::fill(ys, ys + n, T(0.0));
        const uint32_t b = offsets[s], e = offsets[s + 1];
        for (uint32_t j = b; j < e; ++j) {
          const T* xj = x + size_t(j) * n;
          for (size_t i = 0; i < n; ++i) ys[i] += xj[i];
        }
        if (a == AggregationKind::Avg && e > b) {
          const T inv = T(1.0) / T(e - b);
          for (size_t i = 0; i < n; ++i) ys[i] *= inv;
        }
      }
      return;
    case AggregationKind::Max:
    case AggregationKind::Min: {
      const bool is_max = a == AggregationKind::Max;
      for (size_t s = 0; s < segments; ++s) {
        T* ys = y + s * n;
        const uint32_t b = offsets[s], e = offsets[s + 1];
        if (b == e) {
          std::fill(ys, ys + n, T(0.0));
          continue;
        }
        std::copy(x + size_t(b) * n, x + size_t(b + 1) * n, ys);
        for (uint32_t j = b + 1; j < e; ++j) {
          const T* xj = x + size_t(j) * n;
          for (size_t i = 0; i < n; ++i)
            if (is_max ? xj[i] > ys[i] : xj[i] < ys[i]) ys[i] = xj[i];
        }
      }
      return;
    }
    case AggregationKind::Count:
      for (size_t s = 0; s < segments; ++s) y[s] = T(offsets[s + 1] - offsets[s]);
      return;
    case AggregationKind::Product:
      for (size_t s = 0; s < segments; ++s) {
        T* ys = y + s * n;
        const uint32_t b = offsets[s], e = offsets[s + 1];
        std::fill(ys, ys + n, b == e ? T(0.0) : T(1.0));  // an empty segment gives 0, as every kind
        for (uint32_t j = b; j < e; ++j) {
          const T* xj = x + size_t(j) * n;
          for (size_t i = 0; i < n; ++i) ys[i] *= xj[i];
        }
      }
      return;
    case AggregationKind::Concat: {
      // Segments are contiguous and of equal length: the stacked values are the input.
      common_segment_length(segments, offsets);
      if (segments > 0)
        std::copy(x + size_t(offsets[0]) * n, x + size_t(offsets[segments]) * n, y);
      return;
    }
    case AggregationKind::Softmax:
      throw Error(ErrorKind::Runtime,
                  "softmax aggregation is computed by segment_softmax_forward followed by a sum "
                  "aggregation, not by aggregation_forward");
  }
}

template <class T>
void aggregation_backward(AggregationKind a, Shape in, size_t segments, const uint32_t* offsets,
                          const T* x, const T* y, const T* gy, T* gx) {
  const size_t n = static_cast<size_t>(in.size());
  switch (a) {
    case AggregationKind::Sum:
    case AggregationKind::Avg:
      for (size_t s = 0; s < segments; ++s) {
        const uint32_t b = offsets[s], e = offsets[s + 1];
        if (b == e) continue;
        const T scale = a == AggregationKind::Avg ? T(1.0) / T(e - b) : T(1.0);
        const T* gs = gy + s * n;
        for (uint32_t j = b; j < e; ++j) {
          T* gj = gx + size_t(j) * n;
          for (size_t i = 0; i < n; ++i) gj[i] += scale * gs[i];
        }
      }
      return;
    case AggregationKind::Max:
    case AggregationKind::Min: {
      // Each entry's gradient goes to the first value attaining the extreme (recomputed
      // from x, so the result does not depend on y being bit-identical).
      const bool is_max = a == AggregationKind::Max;
      for (size_t s = 0; s < segments; ++s) {
        const uint32_t b = offsets[s], e = offsets[s + 1];
        if (b == e) continue;
        const T* gs = gy + s * n;
        for (size_t i = 0; i < n; ++i) {
          uint32_t arg = b;
          T best = x[size_t(b) * n + i];
          for (uint32_t j = b + 1; j < e; ++j) {
            const T v = x[size_t(j) * n + i];
            if (is_max ? v > best : v < best) {
              best = v;
              arg = j;
            }
          }
          gx[size_t(arg) * n + i] += gs[i];
        }
      }
      return;
    }
    case AggregationKind::Count:
      return;  // depends on the structure only
    case AggregationKind::Product:
      // d y / d x_j = the product of the other values, recomputed (dividing y by x_j fails at 0)
      for (size_t s = 0; s < segments; ++s) {
        const uint32_t b = offsets[s], e = offsets[s + 1];
        const T* gs = gy + s * n;
        for (uint32_t j = b; j < e; ++j)
          for (size_t i = 0; i < n; ++i) {
            T others = T(1.0);
            for (uint32_t k = b; k < e; ++k)
              if (k != j) others *= x[size_t(k) * n + i];
            gx[size_t(j) * n + i] += gs[i] * others;
          }
      }
      return;
    case AggregationKind::Concat: {
      common_segment_length(segments, offsets);
      if (segments == 0) return;
      const size_t begin = size_t(offsets[0]) * n, end = size_t(offsets[segments]) * n;
      for (size_t j = begin; j < end; ++j) gx[j] += gy[j - begin];
      return;
    }
    case AggregationKind::Softmax:
      throw Error(ErrorKind::Runtime,
                  "softmax aggregation is differentiated by segment_softmax_backward, not by "
                  "aggregation_backward");
  }
}

// Softmax segments are spread over threads only for large groups (exp is costly enough
// to pay for the fork/join from about this many scores on).
constexpr uint32_t kParallelSoftmaxEntries = 1u << 17;

template <class T>
void segment_softmax_forward(Shape in, size_t segments, const uint32_t* offsets, const T* x,
                             T* y) {
  const size_t n = static_cast<size_t>(in.size());
  if (n == 1) {  // scalar scores (attention): vectorised per segment, segments in parallel
    parallel_for_if(offsets[segments] > kParallelSoftmaxEntries, segments, [&](size_t s) {
      const uint32_t b = offsets[s], e = offsets[s + 1];
      if (b == e) return;
      const Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> xs(x + b, e - b);
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> ys(y + b, e - b);
      ys = (xs - xs.maxCoeff()).exp();
      ys *= T(1.0) / ys.sum();
    });
    return;
  }
  // Vector values: walk each segment value by value (contiguous rows), keeping the
  // per-entry maximum and sum in scratch allocated once.
  std::vector<T> max(n), sum(n);
  for (size_t s = 0; s < segments; ++s) {
    const uint32_t b = offsets[s], e = offsets[s + 1];
    if (b == e) continue;
    std::copy(x + size_t(b) * n, x + size_t(b + 1) * n, max.begin());
    for (uint32_t j = b + 1; j < e; ++j)
      for (size_t i = 0; i < n; ++i) max[i] = std::max(max[i], x[size_t(j) * n + i]);
    std::fill(sum.begin(), sum.end(), T(0.0));
    for (uint32_t j = b; j < e; ++j)
      for (size_t i = 0; i < n; ++i) sum[i] += (y[size_t(j) * n + i] = std::exp(x[size_t(j) * n + i] - max[i]));
    for (size_t i = 0; i < n; ++i) sum[i] = T(1.0) / sum[i];
    for (uint32_t j = b; j < e; ++j)
      for (size_t i = 0; i < n; ++i) y[size_t(j) * n + i] *= sum[i];
  }
}

template <class T>
void segment_softmax_backward(Shape in, size_t segments, const uint32_t* offsets, const T* y,
                              const T* gy, T* gx) {
  // gx[j][i] += y[j][i] (gy[j][i] - sum_k y[k][i] gy[k][i]) over the segment.
  const size_t n = static_cast<size_t>(in.size());
  if (n == 1) {
    parallel_for_if(offsets[segments] > kParallelSoftmaxEntries, segments, [&](size_t s) {
      const uint32_t b = offsets[s], e = offsets[s + 1];
      const Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> ys(y + b, e - b), gys(gy + b, e - b);
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(gx + b, e - b) += ys * (gys - (ys * gys).sum());
    });
    return;
  }
  std::vector<T> dot(n);
  for (size_t s = 0; s < segments; ++s) {
    const uint32_t b = offsets[s], e = offsets[s + 1];
    if (b == e) continue;
    std::fill(dot.begin(), dot.end(), T(0.0));
    for (uint32_t j = b; j < e; ++j)
      for (size_t i = 0; i < n; ++i) dot[i] += y[size_t(j) * n + i] * gy[size_t(j) * n + i];
    for (uint32_t j = b; j < e; ++j)
      for (size_t i = 0; i < n; ++i) {
        const size_t k = size_t(j) * n + i;
        gx[k] += y[k] * (gy[k] - dot[i]);
      }
  }
}

// The two scalar types of execution (exec/scalar.hpp).
template void aggregation_forward<double>(AggregationKind, Shape, size_t, const uint32_t*, const double*, double*);
template void aggregation_backward<double>(AggregationKind, Shape, size_t, const uint32_t*, const double*, const double*, const double*, double*);
template void segment_softmax_forward<double>(Shape, size_t, const uint32_t*, const double*, double*);
template void segment_softmax_backward<double>(Shape, size_t, const uint32_t*, const double*, const double*, double*);
template void aggregation_forward<float>(AggregationKind, Shape, size_t, const uint32_t*, const float*, float*);
template void aggregation_backward<float>(AggregationKind, Shape, size_t, const uint32_t*, const float*, const float*, const float*, float*);
template void segment_softmax_forward<float>(Shape, size_t, const uint32_t*, const float*, float*);
template void segment_softmax_backward<float>(Shape, size_t, const uint32_t*, const float*, const float*, float*);

}  // namespace lrnn::exec
