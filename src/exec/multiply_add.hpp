// a b + c in one rounding where the processor has FMA instructions, else two: what the
// compiler makes of `c + a * b` when it may fuse (GCC's default), written out so that a
// kernel keeps it whatever the compiler does with the code around it (the row sums'
// averages, exec/row_sum.hpp; the optimizers, compiled without contraction,
// train/numerics_optimizers.cpp).
#pragma once

#include <cmath>

namespace lrnn::exec {

template <class T>
inline T multiply_add(T a, T b, T c) {
#ifdef __FMA__
  return std::fma(a, b, c);
#else
  return c + a * b;
#endif
}

}  // namespace lrnn::exec
