// One-hot rows (rewrites/one_hot_inputs.cpp): what the plan checks of its data when it is
// built and the transform kernels check of each pass's.
#pragma once

#include <cstdint>

namespace lrnn::exec {

// The position of x's one nonzero entry when x (n entries) is one-hot: that entry exactly 1
// and every other exactly 0 (-0 too); kOneHotNone otherwise (NaN, infinity, another value,
// no 1 or two of them).
inline constexpr uint32_t kOneHotNone = 0xFFFFFFFFu;
template <class T>
inline uint32_t hot_entry(const T* x, uint32_t n) {
  uint32_t hot = kOneHotNone;
  for (uint32_t e = 0; e < n; ++e) {
    if (x[e] == T(0)) continue;
    if (x[e] != T(1) || hot != kOneHotNone) return kOneHotNone;
    hot = e;
  }
  return hot;
}

}  // namespace lrnn::exec
