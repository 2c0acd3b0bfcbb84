// The in-order sum of a few rows of W entries (W known at compile time), kept in a local
// array the compiler holds in vector registers: the transform sum's heads and the fused atom
// sums add a head's rows one after another, and summed into the output row in memory,
// each addition waited for the store of the one before (store-to-load forwarding on the
// critical path). The same additions in the same order: the same bits.
#pragma once

#include <cstdint>

namespace lrnn::exec {

// acc = 0 + row(begin) + row(begin + 1) + ... + row(end - 1), entry by entry; begin < end.
template <int W, class T, class Row>
inline void sum_rows(uint32_t begin, uint32_t end, Row&& row, T (&acc)[W]) {
  const T* x0 = row(begin);
  for (int e = 0; e < W; ++e) acc[e] = T(0.0) + x0[e];  // 0 + x: the bits of adding to zeros, -0 too
  for (uint32_t k = begin + 1; k < end; ++k) {
    const T* x = row(k);
    for (int e = 0; e < W; ++e) acc[e] += x[e];
  }
}

}  // namespace lrnn::exec
