// bench_small_gemm: the small-GEMM kernels (src/exec/small_gemm.hpp) against Eigen's
// product of the same operands (the peer: what the kernels replace), 1 thread, for the
// shapes of per-sample weight products (a GCN layer on one NCI1 graph: 30 rows, depth
// 37 or 32, width 32), a hidden width of 128, a large group, a single row and the width 10
// of PyNeuraLogic's templates (widths under 16 run as one block of their own vectors:
// small_gemm_narrow). Prints one
// line per shape and scalar type (best of 5 timings, ns per call, Eigen / kernel) and
// writes bench/results/small_gemm.json.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "exec/scalar.hpp"
#include "exec/small_gemm.hpp"

namespace {

using lrnn::exec::CMapM;
using lrnn::exec::MapM;

// Best of 5 timings of `f`, ns per call, each over ~2e7 multiply-adds.
template <class F>
double best_ns(long flops, F f) {
  const long calls = std::max(1L, 20000000L / flops);
  double best = 1e300;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i) f();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / calls);
  }
  return best;
}

// The three products of a weight W (n x k) on m inputs X (m x k): forward Z = X W^T,
// backward gX += gZ W and gW += gZ^T X; each by the kernel and by Eigen.
template <class T>
nlohmann::json measure(long m, long k, long n) {
  std::vector<T> X(m * k, T(0.5)), W(n * k, T(0.1)), Z(m * n), gZ(m * n, T(0.2)), gX(m * k), gW(n * k);
  const long flops = m * k * n;
  const std::array<double, 6> ns = {
      best_ns(flops, [&] { lrnn::exec::product_abt<T>(m, k, n, X.data(), W.data(), Z.data()); }),
      best_ns(flops, [&] { MapM<T>(Z.data(), m, n).noalias() = CMapM<T>(X.data(), m, k) * CMapM<T>(W.data(), n, k).transpose(); }),
      best_ns(flops, [&] { lrnn::exec::add_product_ab<T>(m, n, k, gZ.data(), W.data(), gX.data()); }),
      best_ns(flops, [&] { MapM<T>(gX.data(), m, k).noalias() += CMapM<T>(gZ.data(), m, n) * CMapM<T>(W.data(), n, k); }),
      best_ns(flops, [&] { lrnn::exec::add_product_atb<T>(n, m, k, gZ.data(), X.data(), gW.data()); }),
      best_ns(flops, [&] { MapM<T>(gW.data(), n, k).noalias() += CMapM<T>(gZ.data(), m, n).transpose() * CMapM<T>(X.data(), m, k); })};
  const char* type = sizeof(T) == 4 ? "float32" : "float64";
  std::printf("%s m %5ld k %4ld n %4ld | X W^T %9.0f vs %9.0f (%.2fx) | gZ W %9.0f vs %9.0f (%.2fx) | gZ^T X %9.0f vs %9.0f (%.2fx)\n",
              type, m, k, n, ns[0], ns[1], ns[1] / ns[0], ns[2], ns[3], ns[3] / ns[2], ns[4], ns[5], ns[5] / ns[4]);
  nlohmann::json row = {{"dtype", type}, {"m", m}, {"k", k}, {"n", n}};
  const char* names[] = {"forward", "input_gradient", "weight_gradient"};
  for (int op = 0; op < 3; ++op)
    row[names[op]] = {{"kernel_ns", ns[2 * op]}, {"eigen_ns", ns[2 * op + 1]}, {"eigen_over_kernel", ns[2 * op + 1] / ns[2 * op]}};
  return row;
}

}  // namespace

int main() {
  Eigen::setNbThreads(1);  // the kernels run on one thread: so does Eigen's product
  std::printf("ns per call, kernel vs Eigen (Eigen / kernel); m rows, depth k, weight n x k\n");
  nlohmann::json out = nlohmann::json::array();
  const std::vector<std::array<long, 3>> shapes = {{30, 37, 32}, {30, 32, 32}, {30, 128, 128}, {2000, 128, 128}, {1, 32, 32},
                                                    {30, 37, 10}, {30, 10, 10}, {18, 7, 10}, {30, 37, 5}};
  for (const auto& [m, k, n] : shapes) {
    out.push_back(measure<float>(m, k, n));
    out.push_back(measure<double>(m, k, n));
  }
  std::filesystem::create_directories("bench/results");
  std::ofstream("bench/results/small_gemm.json") << out.dump(2) << "\n";
}
