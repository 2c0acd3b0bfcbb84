// The order in which a grid listed one way round is visited the other way round. Attention's
// n^2 pair entries are numbered key by key but wanted query by query (and the reverse);
// transposing them entry by entry writes (or reads) one entry a row apart, a cache and TLB
// miss each at n^2 entries. Visited in strips of a few columns instead, the reads and the
// writes each move along a few streams. Used by neuralize (the weighted sum's ground
// rules) and by the plan (the scores' members, the pair atoms' offsets).
#pragma once

#include <algorithm>
#include <cstddef>

namespace lrnn::neural {

// Calls visit(i, j) for every cell of a rows x cols grid: row by row within strips of
// kGridStrip columns, strip after strip.
inline constexpr size_t kGridStrip = 16;
template <class Visit>
inline void visit_in_column_strips(size_t rows, size_t cols, Visit&& visit) {
  for (size_t j0 = 0; j0 < cols; j0 += kGridStrip)
    for (size_t i = 0; i < rows; ++i)
      for (size_t j = j0; j < std::min(cols, j0 + kGridStrip); ++j) visit(i, j);
}

}  // namespace lrnn::neural
