#include "exec/vector_math.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
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

// The register type a vector function takes (deduced: GCC warns when a vector type is
// named as a template argument, its alignment attribute dropped).
template <auto F>
struct RegisterOf;
template <class R, class A, R (*F)(A)>
struct RegisterOf<F> {
  using type = A;
};

// The lanes of one vector function call, loaded and stored through memcpy (unaligned, and
// one spelling for every register type).
template <class T, auto Tanh, auto Exp>
struct VectorOps {
  using Reg = typename RegisterOf<Tanh>::type;
  static constexpr size_t kLanes = sizeof(Reg) / sizeof(T);
  static Reg load(const T* p) {
    Reg r;
    std::memcpy(&r, p, sizeof r);
    return r;
  }
  static void store(T* p, Reg r) { std::memcpy(p, &r, sizeof r); }
  static Reg tanh(Reg r) { return Tanh(r); }
  static Reg exp(Reg r) { return Exp(r); }
};

// One vector width per build and per type, so one entry's value never depends on the path.
#if defined(__AVX2__)
using Double = VectorOps<double, _ZGVdN4v_tanh, _ZGVdN4v_exp>;
using Float = VectorOps<float, _ZGVdN8v_tanhf, _ZGVdN8v_expf>;
constexpr const char* kName = "libmvec AVX2";
#else
using Double = VectorOps<double, _ZGVbN2v_tanh, _ZGVbN2v_exp>;
using Float = VectorOps<float, _ZGVbN4v_tanhf, _ZGVbN4v_expf>;
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
