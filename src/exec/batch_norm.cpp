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
template <class T>
void batch_norm_forward(std::span<const NormSite<T>> sites, const std::string& predicate, BatchStats& stats) {
  const size_t size = sites.empty() ? 0 : row_size(sites[0]);
  stats.rows = 0;
  stats.mean.assign(size, 0.0);
  stats.var.assign(size, 0.0);
  for (const NormSite<T>& s : sites) {
    const T* x = s.ws->values.data() + s.x_off;
    for (uint32_t j = 0; j < s.group->m; ++j)
      for (size_t i = 0; i < size; ++i) stats.mean[i] += T(0) + x[j * size + i];
    stats.rows += s.group->m;
  }
  if (stats.rows < 2)
    throw Error(ErrorKind::Runtime, "normalization=batch of " + predicate + ": the training batch holds " +
                                        std::to_string(stats.rows) +
                                        " atom of it, and batch statistics need at least 2 (use a larger batch)");
  const double n = static_cast<double>(stats.rows);
  for (double& m : stats.mean) m /= n;
  for (const NormSite<T>& s : sites) {
    const T* x = s.ws->values.data() + s.x_off;
    for (uint32_t j = 0; j < s.group->m; ++j)
      for (size_t i = 0; i < size; ++i) {
        const double d = (T(0) + x[j * size + i]) - stats.mean[i];
        stats.var[i] += d * d;
      }
  }
  stats.inv_std.resize(size);
  for (size_t i = 0; i < size; ++i) {
    stats.var[i] /= n;
    stats.inv_std[i] = 1.0 / std::sqrt(stats.var[i] + neural::kBatchNormEps);
  }
  for (const NormSite<T>& s : sites) {
    const T* x = s.ws->values.data() + s.x_off;
    T* xh = s.ws->values.data() + s.group->norm_off;
    for (uint32_t j = 0; j < s.group->m; ++j)
      for (size_t i = 0; i < size; ++i)
        xh[j * size + i] = static_cast<T>(((T(0) + x[j * size + i]) - stats.mean[i]) * stats.inv_std[i]);
  }
}

template <class T>
void batch_norm_backward(std::span<const NormSite<T>> sites, const BatchStats& stats) {
  const size_t size = stats.mean.size();
  std::vector<double> sum_g(size, 0.0), sum_gx(size, 0.0);
  for (const NormSite<T>& s : sites) {
    const T* g = s.ws->grads.data() + s.group->norm_off;
    const T* xh = s.ws->values.data() + s.group->norm_off;
    for (uint32_t j = 0; j < s.group->m; ++j)
      for (size_t i = 0; i < size; ++i) {
        sum_g[i] += g[j * size + i];
        sum_gx[i] += static_cast<double>(g[j * size + i]) * xh[j * size + i];
      }
  }
  const double n = static_cast<double>(stats.rows);
  for (size_t i = 0; i < size; ++i) {
    sum_g[i] /= n;
    sum_gx[i] /= n;
  }
  for (const NormSite<T>& s : sites) {
    const T* g = s.ws->grads.data() + s.group->norm_off;
    const T* xh = s.ws->values.data() + s.group->norm_off;
    T* gx = s.ws->grads.data() + s.x_off;
    for (uint32_t j = 0; j < s.group->m; ++j)
      for (size_t i = 0; i < size; ++i) {
        const size_t k = j * size + i;
        gx[k] += static_cast<T>(stats.inv_std[i] * (g[k] - sum_g[i] - xh[k] * sum_gx[i]));
      }
  }
}

template void batch_norm_forward<double>(std::span<const NormSite<double>>, const std::string&, BatchStats&);
template void batch_norm_forward<float>(std::span<const NormSite<float>>, const std::string&, BatchStats&);
template void batch_norm_backward<double>(std::span<const NormSite<double>>, const BatchStats&);
template void batch_norm_backward<float>(std::span<const NormSite<float>>, const BatchStats&);

}  // namespace lrnn::exec
