// Batch statistics of a normalised predicate over the samples of a training batch.
#include "exec/batch_norm.hpp"

#include <cmath>
#include <string>

#include "lrnn/diagnostics.hpp"

namespace lrnn::exec {

namespace {

template <class T>
size_t row_size(const NormSite<T>& site) {
  const AtomGroup& A = *site.group;
  return A.combination == AggregationKind::Count ? 1 : static_cast<size_t>(A.in_shape.size());
}

}  // namespace

uint32_t norm_input_off(const AtomGroup& A) {
  if (A.x_in_inputs) return A.red_off;  // the rows themselves, planned so
  const bool sum = A.combination == AggregationKind::Sum || A.combination == AggregationKind::Avg;
  if (!A.summed_in_place || !sum || A.m == 0 || A.src.size() != A.m) return A.red_off;
  const uint32_t size = static_cast<uint32_t>(A.in_shape.size());
  for (uint32_t j = 0; j < A.m; ++j)
    if (A.segments[j] != j) return A.red_off;
  return rows_in_order(A.src, size) ? A.src[0] : A.red_off;
}

// Two passes (mean, then squared deviations) in double, in site order: deterministic and
// without the cancellation of a one-pass E[x^2] - E[x]^2.
void batch_norm_begin(BatchStats& stats) {
  stats.rows = 0;
  stats.mean.clear();
  stats.var.clear();
}

template <class T>
void add_to_mean(const NormSite<T>& s, BatchStats& stats) {
  if (stats.rows == 0) {  // the first site sizes the sums
    stats.mean.assign(row_size(s), 0.0);
    stats.var.assign(row_size(s), 0.0);
  }
  const size_t size = stats.mean.size();
  const T* x = s.ws->values.data() + s.x_off;
  double* mean = stats.mean.data();
  for (uint32_t j = 0; j < s.group->m; ++j)
    for (size_t i = 0; i < size; ++i) mean[i] += T(0) + x[j * size + i];
  stats.rows += s.group->m;
}

template <class T>
void batch_norm_statistics(std::span<const NormSite<T>> sites, const std::string& predicate, BatchStats& stats) {
  const size_t size = stats.mean.size();
  if (stats.rows < 2)
    throw Error(ErrorKind::Runtime, "normalization=batch of " + predicate + ": the training batch holds " +
                                        std::to_string(stats.rows) +
                                        " atom of it, and batch statistics need at least 2 (use a larger batch)");
  const double n = static_cast<double>(stats.rows);
  for (double& m : stats.mean) m /= n;
  const double* mean = stats.mean.data();
  double* var = stats.var.data();
  for (const NormSite<T>& s : sites) {
    const T* x = s.ws->values.data() + s.x_off;
    for (uint32_t j = 0; j < s.group->m; ++j)
      for (size_t i = 0; i < size; ++i) {
        const double d = (T(0) + x[j * size + i]) - mean[i];
        var[i] += d * d;
      }
  }
  stats.inv_std.resize(size);
  for (size_t i = 0; i < size; ++i) {
    stats.var[i] /= n;
    stats.inv_std[i] = 1.0 / std::sqrt(stats.var[i] + neural::kBatchNormEps);
  }
}

template <class T>
void normalize(const NormSite<T>& s, const BatchStats& stats) {
  const size_t size = stats.mean.size();
  const double* mean = stats.mean.data();
  const double* inv_std = stats.inv_std.data();
  const T* x = s.ws->values.data() + s.x_off;
  T* xh = s.ws->values.data() + s.group->norm_off;
  for (uint32_t j = 0; j < s.group->m; ++j)
    for (size_t i = 0; i < size; ++i) xh[j * size + i] = static_cast<T>(((T(0) + x[j * size + i]) - mean[i]) * inv_std[i]);
}

template <class T>
void batch_norm_forward(std::span<const NormSite<T>> sites, const std::string& predicate, BatchStats& stats) {
  batch_norm_begin(stats);
  for (const NormSite<T>& s : sites) add_to_mean(s, stats);
  batch_norm_statistics(sites, predicate, stats);
  for (const NormSite<T>& s : sites) normalize(s, stats);
}

void begin_gradient_means(BatchStats& stats) {
  stats.mean_g.assign(stats.mean.size(), 0.0);
  stats.mean_gx.assign(stats.mean.size(), 0.0);
}

template <class T>
void add_to_gradient_means(const NormSite<T>& s, BatchStats& stats) {
  const size_t size = stats.mean.size();
  const T* g = s.ws->grads.data() + s.group->norm_off;
  const T* xh = s.ws->values.data() + s.group->norm_off;
  double* sum_g = stats.mean_g.data();
  double* sum_gx = stats.mean_gx.data();
  for (uint32_t j = 0; j < s.group->m; ++j)
    for (size_t i = 0; i < size; ++i) {
      sum_g[i] += g[j * size + i];
      sum_gx[i] += static_cast<double>(g[j * size + i]) * xh[j * size + i];
    }
}

void finish_gradient_means(BatchStats& stats) {
  const double n = static_cast<double>(stats.rows);
  for (size_t i = 0; i < stats.mean_g.size(); ++i) {
    stats.mean_g[i] /= n;
    stats.mean_gx[i] /= n;
  }
}

template <class T>
void normalize_backward(const NormSite<T>& s, const BatchStats& stats) {
  const size_t size = stats.mean.size();
  const double* inv_std = stats.inv_std.data();
  const double* mean_g = stats.mean_g.data();
  const double* mean_gx = stats.mean_gx.data();
  const T* g = s.ws->grads.data() + s.group->norm_off;
  const T* xh = s.ws->values.data() + s.group->norm_off;
  T* gx = s.ws->grads.data() + s.x_off;
  // x^ over x (plan.hpp): dL/dx takes dL/dx^'s place, as 0 + it; else it adds to x's.
  const bool over = s.x_off == s.group->norm_off;
  for (uint32_t j = 0; j < s.group->m; ++j)
    for (size_t i = 0; i < size; ++i) {
      const size_t k = j * size + i;
      const T dx = static_cast<T>(inv_std[i] * (g[k] - mean_g[i] - xh[k] * mean_gx[i]));
      gx[k] = (over ? T(0) : gx[k]) + dx;
    }
}

template <class T>
void batch_norm_backward(std::span<const NormSite<T>> sites, BatchStats& stats) {
  begin_gradient_means(stats);
  for (const NormSite<T>& s : sites) add_to_gradient_means(s, stats);
  finish_gradient_means(stats);
  for (const NormSite<T>& s : sites) normalize_backward(s, stats);
}

#define LRNN_BATCH_NORM(T)                                                                               \
  template void batch_norm_forward<T>(std::span<const NormSite<T>>, const std::string&, BatchStats&);  \
  template void batch_norm_backward<T>(std::span<const NormSite<T>>, BatchStats&);                     \
  template void add_to_mean<T>(const NormSite<T>&, BatchStats&);                                        \
  template void batch_norm_statistics<T>(std::span<const NormSite<T>>, const std::string&, BatchStats&); \
  template void normalize<T>(const NormSite<T>&, const BatchStats&);                                    \
  template void add_to_gradient_means<T>(const NormSite<T>&, BatchStats&);                              \
  template void normalize_backward<T>(const NormSite<T>&, const BatchStats&);
LRNN_BATCH_NORM(double)
LRNN_BATCH_NORM(float)
#undef LRNN_BATCH_NORM

}  // namespace lrnn::exec
