#include "exec/vector_math.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#if defined(LRNN_LIBMVEC)
#include <immintrin.h>

// glibc's libmvec entry points (x86_64 vector function ABI names: 'b' = SSE, 'd' = AVX2,
// N = lanes, v = one vector argument). glibc declares them only under -ffast-math; the
// names and types are its stable ABI since 2.35 (tanh) and 2.22 (exp).
extern "C" {
__m128d _ZGVbN2v_tanh(__m128d);
__m128 _ZGVbN4v_tanhf(__m128);
__m128d _ZGVbN2v_exp(__m128d);
__m128 _ZGVbN4v_expf(__m128);
#if defined(__AVX2__)
__m256d _ZGVdN4v_tanh(__m256d);
__m256 _ZGVdN8v_tanhf(__m256);
__m256d _ZGVdN4v_exp(__m256d);
__m256 _ZGVdN8v_expf(__m256);
#endif
}
#endif

namespace lrnn::exec {

namespace {

#if defined(LRNN_LIBMVEC)

// One vector width per build and per type, so one entry's value never depends on the path.
#if defined(__AVX2__)
struct Double {
  using Reg = __m256d;
  static constexpr size_t kLanes = 4;
  static Reg load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, Reg r) { _mm256_storeu_pd(p, r); }
  static Reg tanh(Reg r) { return _ZGVdN4v_tanh(r); }
  static Reg exp(Reg r) { return _ZGVdN4v_exp(r); }
};
struct Float {
  using Reg = __m256;
  static constexpr size_t kLanes = 8;
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static Reg tanh(Reg r) { return _ZGVdN8v_tanhf(r); }
  static Reg exp(Reg r) { return _ZGVdN8v_expf(r); }
};
constexpr const char* kName = "libmvec AVX2";
#else
struct Double {
  using Reg = __m128d;
  static constexpr size_t kLanes = 2;
  static Reg load(const double* p) { return _mm_loadu_pd(p); }
  static void store(double* p, Reg r) { _mm_storeu_pd(p, r); }
  static Reg tanh(Reg r) { return _ZGVbN2v_tanh(r); }
  static Reg exp(Reg r) { return _ZGVbN2v_exp(r); }
};
struct Float {
  using Reg = __m128;
  static constexpr size_t kLanes = 4;
  static Reg load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm_storeu_ps(p, r); }
  static Reg tanh(Reg r) { return _ZGVbN4v_tanhf(r); }
  static Reg exp(Reg r) { return _ZGVbN4v_expf(r); }
};
constexpr const char* kName = "libmvec SSE2";
#endif

// f over whole groups of lanes, then the last partial group through a padded copy (x and y
// may be the same array).
template <class V, class T, class F>
void each(const T* x, T* y, size_t n, F f) {
  size_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(y + i, f(V::load(x + i)));
  if (i == n) return;
  T in[V::kLanes] = {}, out[V::kLanes];
  std::copy(x + i, x + n, in);
  V::store(out, f(V::load(in)));
  std::copy(out, out + (n - i), y + i);
}

template <class T>
using Lanes = std::conditional_t<std::is_same_v<T, double>, Double, Float>;

template <class T>
void tanh_lanes(const T* x, T* y, size_t n) {
  each<Lanes<T>>(x, y, n, [](auto r) { return Lanes<T>::tanh(r); });
}
template <class T>
void exp_lanes(const T* x, T* y, size_t n) {
  each<Lanes<T>>(x, y, n, [](auto r) { return Lanes<T>::exp(r); });
}

#else

constexpr const char* kName = "scalar libm";

template <class T>
void tanh_lanes(const T* x, T* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}
template <class T>
void exp_lanes(const T* x, T* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

#endif

}  // namespace

void tanh_each(const double* x, double* y, size_t n) { tanh_lanes(x, y, n); }
void tanh_each(const float* x, float* y, size_t n) { tanh_lanes(x, y, n); }
void exp_each(const double* x, double* y, size_t n) { exp_lanes(x, y, n); }
void exp_each(const float* x, float* y, size_t n) { exp_lanes(x, y, n); }

const char* vector_math_name() { return kName; }

}  // namespace lrnn::exec
