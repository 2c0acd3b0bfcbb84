// Banded direct products (DirectProduct::banded, plan.hpp) run as dense tiles: a causal
// mask leaves query i the keys 0..i, so the scores of kTileRows queries are one small
// matrix product against the keys their rows span, of which the band is kept (and the
// weighted sums multiply a tile of weights, zero outside the band, by those keys' values).
// The per-member path computes the same sums one dot product at a time; tiles reach GEMM
// speed at the cost of the few masked entries of each diagonal tile.
//
// Written for any scalar type T (explicitly instantiated for double and float); sums run
// in a fixed order, so results are bit-reproducible for a given thread count.
#pragma once

#include <cstddef>

#include "exec/plan.hpp"

namespace lrnn::exec {

// Rows per tile (at most).
inline constexpr uint32_t kTileRows = 64;

// Cuts the rows of a banded block into tiles (DirectProduct::tile_begin): kTileRows rows
// at most, and a new tile wherever a row's band starts past every column of the tile so
// far (the next sequence of a batch), so no tile spans two sequences.
void plan_tiles(DirectProduct& d);

// Entries of the tiles covering a banded block (its members plus the masked entries
// computed alongside them): the plan takes the banded path only when this stays within a
// small multiple of the members.
size_t banded_tile_entries(const DirectProduct& d);

// Each kernel returns false, having written nothing, when a value it would multiply by a
// masked zero is not finite (the caller then runs the per-member products).
//
// comb[member] = the product of its row and column (Dot, not fused).
template <typename T>
bool banded_dot_forward(const DirectProduct& d, const T* v, T* comb);
// g[rows], g[columns], g[constant factors] += their gradients, given gcomb per member.
template <typename T>
bool banded_dot_backward(const DirectProduct& d, const T* v, const T* gcomb, T* g);
// agg[i] = the sum (average when `average`) of row i's members (Scale, fused).
template <typename T>
bool banded_scale_forward(const DirectProduct& d, bool average, const T* v, T* agg);
// g[weights], g[inner rows], g[constant factors] += their gradients, given gagg per row.
template <typename T>
bool banded_scale_backward(const DirectProduct& d, bool average, const T* v, const T* gagg, T* g);

}  // namespace lrnn::exec
