// A loop over [0, n) that is an OpenMP parallel loop only when asked. `#pragma omp parallel
// for if (false)` is not free: libgomp still allocates, starts and tears down a team of one
// thread (a malloc, a free and futex calls per region). Small groups run that region per
// kernel call, so at batch 1 (mutagenesis: ~20 gathers per sample step) it cost ~15% of a
// step; this helper takes the plain loop instead. The static schedule is the one the
// kernels used, so which thread writes which index is unchanged.
#pragma once

#include <cstddef>

namespace lrnn::exec {

template <class Body>
void parallel_for_if(bool parallel, size_t n, Body&& body) {
  if (!parallel) {
    for (size_t k = 0; k < n; ++k) body(k);
    return;
  }
  const long count = static_cast<long>(n);
#pragma omp parallel for schedule(static)
  for (long k = 0; k < count; ++k) body(static_cast<size_t>(k));
}

}  // namespace lrnn::exec
