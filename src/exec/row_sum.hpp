// The in-order sum of a few rows: the transform sum's heads and the atom sums add a head's
// rows one after another. For the common widths (W known at compile time) the sum is kept
// in a local array the compiler holds in vector registers: summed into the output row in
// memory, each addition waited for the store of the one before (store-to-load forwarding
// on the critical path). The same additions in the same order either way: the same bits.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "exec/multiply_add.hpp"

namespace lrnn::exec {

// f(std::integral_constant<int, W>{}) with W the row width `size` when it is one of the
// common widths the row loops are compiled for (8 and 10, the widths of small templates
// such as PyNeuraLogic's benchmark table's; 16, 32, 64), else W = 0 (a runtime width).
template <class F>
inline void with_row_width(long size, F&& f) {
  switch (size) {
    case 8: return f(std::integral_constant<int, 8>{});
    case 10: return f(std::integral_constant<int, 10>{});
    case 16: return f(std::integral_constant<int, 16>{});
    case 32: return f(std::integral_constant<int, 32>{});
    case 64: return f(std::integral_constant<int, 64>{});
    default: return f(std::integral_constant<int, 0>{});
  }
}

namespace detail {

// acc[0, size) = start + row(begin) + row(begin + 1) + ... + row(end - 1), entry by entry,
// where start is 0 (kFromZero; then begin < end) or acc's own values. W > 0: size is W,
// known at compile time; W = 0: `runtime_size` entries.
//
// For W > 0 the rows are added as 32-byte vectors (GCC/Clang vector extensions: AVX
// registers where the build targets them, pairs of SSE ones otherwise), the sum held in
// registers and stored once. Written as a loop over entries, GCC vectorized the sum across
// rows with gather instructions, each waiting on the one before: half the time of a big
// graph's transform sum. Lane-wise additions in the same order: the same bits.
template <bool kFromZero, int W, class T, class Row>
inline void accumulate_rows(uint32_t begin, uint32_t end, Row&& row, T* acc, long runtime_size) {
  if constexpr (W > 0 && W * sizeof(T) % 32 == 0) {
    typedef T Lanes __attribute__((vector_size(32)));
    constexpr int kLanes = 32 / sizeof(T), kChunks = W / kLanes;
    Lanes sum[kChunks];
    if constexpr (kFromZero) {
      const T* x0 = row(begin);
      for (int c = 0; c < kChunks; ++c) {
        Lanes x;
        std::memcpy(&x, x0 + c * kLanes, sizeof x);
        sum[c] = Lanes{} + x;  // 0 + x: the bits of adding to zeros, -0 too
      }
    } else {
      std::memcpy(sum, acc, sizeof sum);
    }
    for (uint32_t k = kFromZero ? begin + 1 : begin; k < end; ++k) {
      const T* xk = row(k);
      for (int c = 0; c < kChunks; ++c) {
        Lanes x;
        std::memcpy(&x, xk + c * kLanes, sizeof x);
        sum[c] += x;
      }
    }
    std::memcpy(acc, sum, sizeof sum);
  } else if constexpr (W > 0 && W * sizeof(T) % 16 == 0 && W * sizeof(T) > 64) {
    // Whole 64-byte vectors, then one of 32 and/or one of 16 bytes (10 doubles: 64 + 16).
    // Left to the compiler, the 10-double row was a vector of 8 and two scalars per row.
    typedef T V64 __attribute__((vector_size(64)));
    typedef T V32 __attribute__((vector_size(32)));
    typedef T V16 __attribute__((vector_size(16)));
    constexpr size_t kBytes = W * sizeof(T), kWhole = kBytes / 64, kRest = kBytes % 64;
    constexpr bool k32 = kRest >= 32, k16 = kRest % 32 == 16;
    constexpr size_t kAt32 = kWhole * 64 / sizeof(T), kAt16 = kAt32 + (k32 ? 32 / sizeof(T) : 0);
    V64 whole[kWhole];
    V32 part32{};
    V16 part16{};
    auto load = [](auto& into, const T* from) { std::memcpy(&into, from, sizeof into); };
    if constexpr (kFromZero) {
      const T* x0 = row(begin);
      for (size_t c = 0; c < kWhole; ++c) {
        load(whole[c], x0 + c * (64 / sizeof(T)));
        whole[c] = V64{} + whole[c];  // 0 + x: the bits of adding to zeros, -0 too
      }
      if constexpr (k32) load(part32, x0 + kAt32), part32 = V32{} + part32;
      if constexpr (k16) load(part16, x0 + kAt16), part16 = V16{} + part16;
    } else {
      for (size_t c = 0; c < kWhole; ++c) load(whole[c], acc + c * (64 / sizeof(T)));
      if constexpr (k32) load(part32, acc + kAt32);
      if constexpr (k16) load(part16, acc + kAt16);
    }
    for (uint32_t k = kFromZero ? begin + 1 : begin; k < end; ++k) {
      const T* xk = row(k);
      for (size_t c = 0; c < kWhole; ++c) {
        V64 x;
        load(x, xk + c * (64 / sizeof(T)));
        whole[c] += x;
      }
      if constexpr (k32) {
        V32 x;
        load(x, xk + kAt32);
        part32 += x;
      }
      if constexpr (k16) {
        V16 x;
        load(x, xk + kAt16);
        part16 += x;
      }
    }
    std::memcpy(acc, whole, sizeof whole);
    if constexpr (k32) std::memcpy(acc + kAt32, &part32, sizeof part32);
    if constexpr (k16) std::memcpy(acc + kAt16, &part16, sizeof part16);
  } else {
    const long size = W > 0 ? W : runtime_size;
    if constexpr (kFromZero) {
      const T* x0 = row(begin);
      for (long e = 0; e < size; ++e) acc[e] = T(0.0) + x0[e];  // 0 + x: the bits of adding to zeros, -0 too
    }
    for (uint32_t k = kFromZero ? begin + 1 : begin; k < end; ++k) {
      const T* x = row(k);
      for (long e = 0; e < size; ++e) acc[e] += x[e];
    }
  }
}

}  // namespace detail

// acc[0, size) = 0 + row(begin) + row(begin + 1) + ... + row(end - 1), entry by entry;
// begin < end. W > 0: size is W (acc a local array, held in registers); W = 0:
// `runtime_size` entries, acc any row (the output row itself).
template <int W, class T, class Row>
inline void sum_rows(uint32_t begin, uint32_t end, Row&& row, T* acc, long runtime_size = W) {
  detail::accumulate_rows<true, W>(begin, end, row, acc, runtime_size);
}

// acc[0, size) += row(begin) + row(begin + 1) + ... + row(end - 1), one row after another
// onto acc's values (a row's gradient gathered from the heads that read it).
template <int W, class T, class Row>
inline void add_rows(uint32_t begin, uint32_t end, Row&& row, T* acc, long runtime_size = W) {
  detail::accumulate_rows<false, W>(begin, end, row, acc, runtime_size);
}

// gx[0, size) += gy[0, size), the two rows never overlapping (__restrict).
template <int W, class T>
inline void add_disjoint_row(T* __restrict gx, const T* __restrict gy, long size) {
  for (long e = 0; e < (W > 0 ? W : size); ++e) gx[e] += gy[e];
}

// gx[0, size) += scale * gy[0, size), entry by entry (axpy's arithmetic; W > 0: size is W,
// known at compile time): a backward pass adding a head's gradient row to its inputs' rows,
// which lie in the same gradient buffer but never overlap. For a sum (scale 1) the rows are
// said not to overlap (add_disjoint_row), and the compiler adds them in vectors: without it
// each store might change gy, and at small widths (10 doubles: PyNeuraLogic's benchmark
// table) it added entry by entry. 1 * y is y: the same bits. An average's rows keep the
// plain loop: told the rows are disjoint, the compiler rounds scale * gy once per head and
// adds that, where the loop fuses the multiply into each addition (the bits change).
//
// At a width known at compile time the average's row is read into registers first and each
// entry is one explicit fused multiply-add where the processor has one (what the plain
// loop's `gx += scale * gy` compiles to there; separately rounded where it has none): the
// compiler then adds in vectors, and no reordering can split the multiply from the add.
// A GraphSAGE layer's neighbour average added entry by entry otherwise.

template <int W, class T>
inline void add_scaled_row(T* gx, const T* gy, T scale, long runtime_size = W) {
  const long size = W > 0 ? W : runtime_size;
  if (scale == T(1.0)) return add_disjoint_row<W>(gx, gy, size);
  if constexpr (W > 0) {
    T y[W];
    for (int e = 0; e < W; ++e) y[e] = gy[e];
    for (int e = 0; e < W; ++e) gx[e] = multiply_add(scale, y[e], gx[e]);
  } else {
    for (long e = 0; e < size; ++e) gx[e] += scale * gy[e];
  }
}
}  // namespace lrnn::exec
