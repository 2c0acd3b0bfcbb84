// One-hot rows (rewrites/one_hot_inputs.cpp): what the plan checks of its data when it is
// built and the transform kernels check of each pass's.
#pragma once

#include <cstdint>
#include <type_traits>

namespace lrnn::exec {

// The position of x's one nonzero entry when x (n entries) is one-hot: that entry exactly 1
// and every other exactly 0 (-0 too); kOneHotNone otherwise (NaN, infinity, another value,
// no 1 or two of them).
inline constexpr uint32_t kOneHotNone = 0xFFFFFFFFu;
template <class T>
inline uint32_t hot_entry(const T* x, uint32_t n) {
  // Counted without branches, in lanes as wide as T: the loop is a few vector compares per
  // row. A branch per entry (stop at the first that is not 0) mispredicted once a row at
  // its 1: on NCI1's 37-wide labels the check then cost more than the GEMM row (perf).
  using Count = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  Count ones = 0, others = 0, at = 0;
  for (uint32_t e = 0; e < n; ++e) {
    const bool one = x[e] == T(1);
    ones += one;
    others += !one & (x[e] != T(0));
    at += one ? Count(e) : Count(0);
  }
  return ones == 1 && others == 0 ? uint32_t(at) : kOneHotNone;
}

}  // namespace lrnn::exec
