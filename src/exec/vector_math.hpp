#pragma once
// Element-wise tanh and exp over arrays, through glibc's vector math library (libmvec)
// where the build found it (LRNN_LIBMVEC), else the scalar <cmath> functions.
//
// Why: a scalar tanh costs ~22 ns on this project's machines, and the tanh transformations
// of a message-passing template (bench/mutagenesis.py) spent a fifth of an epoch in it;
// libmvec's 4-wide AVX2 tanh costs ~3 ns (2-wide SSE: ~7 ns). Its results are within 4 ulp
// of the scalar ones (glibc's documented bound; 3 ulp measured), not bit-equal to them.
//
// Every entry goes through the same vector function, the last partial group padded, so an
// entry's result depends on its value alone, never on where in an array it sits: values stay
// the same whatever a plan's layout, batch or rank split (docs/distributed.md's determinism).
#include <cstddef>

namespace lrnn::exec {

void tanh_each(const double* x, double* y, size_t n);
void tanh_each(const float* x, float* y, size_t n);
void exp_each(const double* x, double* y, size_t n);
void exp_each(const float* x, float* y, size_t n);

// Which implementation this build uses ("libmvec AVX2", "libmvec SSE2" or "scalar libm").
const char* vector_math_name();

}  // namespace lrnn::exec
