// The scalar type of execution: every kernel is a template on T, instantiated for double
// (the default, and what every exactness test uses) and float (Dtype::F32). These are the
// Eigen views the kernels take of flat row-major buffers of T.
#pragma once

// Every file reaches Eigen through this header. GCC 12's AVX-512 intrinsics (immintrin.h,
// reached through Eigen/Core) initialise a placeholder register from itself (`__m512 __Y =
// __Y;`), which -Wmaybe-uninitialized reports once per inlined use: about 1,400 false
// warnings with -march=native (GCC bug 105593, fixed in GCC 13). The warning is turned off
// for the locations inside these headers only; the project's own code keeps it.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Core>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace lrnn::exec {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MapM = Eigen::Map<RowMat<T>>;
template <class T>
using CMapM = Eigen::Map<const RowMat<T>>;
template <class T>
using MatMap = MapM<T>;
template <class T>
using ConstMatMap = CMapM<T>;
template <class T>
using MapV = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>;
template <class T>
using CMapV = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>;

}  // namespace lrnn::exec
