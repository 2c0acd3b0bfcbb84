// The scalar type of execution: every kernel is a template on T, instantiated for double
// (the default, and what every exactness test uses) and float (Dtype::F32). These are the
// Eigen views the kernels take of flat row-major buffers of T.
#pragma once

#include <Eigen/Core>

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
