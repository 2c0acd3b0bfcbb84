// One-hot rows (rewrites/one_hot_inputs.cpp): what the plan checks of its data when it is
// built and the transform kernels check of each pass's.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace lrnn::exec {

// The position of x's one nonzero entry when x (n entries) is one-hot: that entry exactly 1
// and every other exactly 0 (-0 too); kOneHotNone otherwise (NaN, infinity, another value,
// no 1 or two of them).
inline constexpr uint32_t kOneHotNone = 0xFFFFFFFFu;

#if defined(__AVX512F__)
// hot_entry by AVX-512 masks, in lanes of 8 doubles or 16 floats: a lane is "one" when it
// compares equal to 1 and "other" when it is unequal to 0 (NaN too) and not one; the tail's
// lanes past n load as 0 (a masked load reads nothing there).
template <class T>
inline uint32_t hot_entry_masks(const T* x, uint32_t n) {
  constexpr uint32_t kLanes = 64 / sizeof(T);
  uint32_t ones = 0, others = 0, at = 0;
  for (uint32_t e = 0; e < n; e += kLanes) {
    const uint32_t live = n - e >= kLanes ? (1u << kLanes) - 1 : (1u << (n - e)) - 1;
    uint32_t one, nonzero;
    if constexpr (sizeof(T) == 8) {
      const __m512d v = _mm512_maskz_loadu_pd(__mmask8(live), x + e);
      one = _mm512_cmp_pd_mask(v, _mm512_set1_pd(1.0), _CMP_EQ_OQ);
      nonzero = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_NEQ_UQ);
    } else {
      const __m512 v = _mm512_maskz_loadu_ps(__mmask16(live), x + e);
      one = _mm512_cmp_ps_mask(v, _mm512_set1_ps(1.0f), _CMP_EQ_OQ);
      nonzero = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NEQ_UQ);
    }
    ones += uint32_t(__builtin_popcount(one));
    others |= nonzero & ~one;
    at += one ? e + uint32_t(__builtin_ctz(one)) : 0u;
  }
  return ones == 1 && others == 0 ? at : kOneHotNone;
}
#endif
template <class T>
inline uint32_t hot_entry(const T* x, uint32_t n) {
#if defined(__AVX512F__)
  // With AVX-512, a row is a few compares into bit masks, its tail read through a mask: the
  // generic loop below, vectorised by the compiler, left the tail to scalar compares and
  // summed its counts across lanes, ~3x the time on NCI1's 37-wide rows (a tenth of a
  // batch-1 GCN's epoch).
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) return hot_entry_masks(x, n);
#endif

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
