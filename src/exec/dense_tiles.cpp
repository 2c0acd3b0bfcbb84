#include "exec/dense_tiles.hpp"
#include "exec/direct_product.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lrnn::exec {

namespace {

// RowMat, MapM, CMapM: exec/scalar.hpp.

// Rows [i0, i1) of a banded block and the columns [c0, c1) their bands span.
struct Tile {
  uint32_t i0, i1, c0, c1;
  uint32_t height() const { return i1 - i0; }
  uint32_t width() const { return c1 - c0; }
};

uint32_t band_size(const DirectProduct& d, uint32_t i) { return d.band_begin[i + 1] - d.band_begin[i]; }

uint32_t tile_count(const DirectProduct& d) { return static_cast<uint32_t>(d.tile_begin.size()) - 1; }

Tile tile_at(const DirectProduct& d, uint32_t t) {
  Tile x{d.tile_begin[t], d.tile_begin[t + 1], UINT32_MAX, 0};
  for (uint32_t i = x.i0; i < x.i1; ++i) {
    x.c0 = std::min(x.c0, d.band_first[i]);
    x.c1 = std::max(x.c1, d.band_first[i] + band_size(d, i));
  }
  return x;
}

// Tiles run on every OpenMP thread when the block is this large: each writes its own rows
// (the same values whichever thread runs it), taken one at a time since a causal block's
// tiles grow with their row.
bool parallel_tiles(const DirectProduct& d) {
  return static_cast<double>(banded_tile_entries(d)) * d.len > static_cast<double>(size_t{1} << 22);
}

// The tile's members spread into a height x width matrix (zero outside the band).
template <typename T>
RowMat<T> spread_band(const DirectProduct& d, const Tile& x, const T* members) {
  RowMat<T> m = RowMat<T>::Zero(x.height(), x.width());
  for (uint32_t i = x.i0; i < x.i1; ++i)
    std::copy_n(members + d.band_begin[i], band_size(d, i), m.data() + size_t(i - x.i0) * x.width() + (d.band_first[i] - x.c0));
  return m;
}

// members[k] (+)= scale * the tile entry of member k.
template <typename T, bool Accumulate>
void gather_band(const DirectProduct& d, const Tile& x, const RowMat<T>& m, T scale, T* members) {
  for (uint32_t i = x.i0; i < x.i1; ++i) {
    const T* row = m.data() + size_t(i - x.i0) * x.width() + (d.band_first[i] - x.c0);
    T* out = members + d.band_begin[i];
    for (uint32_t t = 0; t < band_size(d, i); ++t) out[t] = Accumulate ? out[t] + scale * row[t] : scale * row[t];
  }
}

template <typename T>
CMapM<T> outer_rows(const DirectProduct& d, const T* v, const Tile& x) {
  return CMapM<T>(v + d.outer_off + size_t(x.i0) * d.len, x.height(), d.len);
}
template <typename T>
CMapM<T> inner_rows(const DirectProduct& d, const T* v, const Tile& x) {
  return CMapM<T>(v + d.inner_off + size_t(x.c0) * d.len, x.width(), d.len);
}

// Whether all `count` values at p are finite. A tile multiplies the masked entries by zero
// too: 0 * inf would make NaN where the per-member products never read the value, so the
// kernels run only on finite inputs (and report false otherwise).
template <typename T>
bool all_finite(const T* p, size_t count) {
  bool finite = true;
  for (size_t e = 0; e < count; ++e) finite &= std::isfinite(p[e]);
  return finite;
}

template <typename T>
bool finite_outer_rows(const DirectProduct& d, const T* v) {
  return all_finite(v + d.outer_off, size_t(d.rows) * d.len);
}
template <typename T>
bool finite_inner_rows(const DirectProduct& d, const T* v) {
  return all_finite(v + d.inner_off, size_t(d.cols) * d.len);
}

// 1 / (members of row i) for an average, else 1.
template <typename T>
T row_scale(const DirectProduct& d, bool average, uint32_t i) {
  return average && band_size(d, i) > 0 ? T(1) / T(band_size(d, i)) : T(1);
}

}  // namespace

void plan_tiles(DirectProduct& d) {
  d.tile_begin.assign(1, 0);
  uint32_t end = 0;  // the columns the current tile spans end here
  for (uint32_t i = 0; i < d.rows; ++i) {
    const uint32_t first = d.band_first[i];
    if (i > d.tile_begin.back() && (i - d.tile_begin.back() == kTileRows || first >= end)) {
      d.tile_begin.push_back(i);
      end = 0;
    }
    end = std::max(end, first + band_size(d, i));
  }
  d.tile_begin.push_back(d.rows);
}

size_t banded_tile_entries(const DirectProduct& d) {
  size_t entries = 0;
  for (uint32_t t = 0; t < tile_count(d); ++t) {
    const Tile x = tile_at(d, t);
    entries += size_t(x.height()) * x.width();
  }
  return entries;
}

template <typename T>
bool banded_dot_forward(const DirectProduct& d, const T* v, T* comb) {
  if (!finite_outer_rows(d, v) || !finite_inner_rows(d, v)) return false;
  const T s = constant_factor(d, v);
  const int tiles = static_cast<int>(tile_count(d));
#pragma omp parallel for schedule(dynamic, 1) if (parallel_tiles(d))
  for (int t = 0; t < tiles; ++t) {
    const Tile x = tile_at(d, static_cast<uint32_t>(t));
    const RowMat<T> scores = outer_rows(d, v, x) * inner_rows(d, v, x).transpose();
    gather_band<T, false>(d, x, scores, s, comb);
  }
  return true;
}

template <typename T>
bool banded_dot_backward(const DirectProduct& d, const T* v, const T* gcomb, T* g) {
  if (!finite_outer_rows(d, v) || !finite_inner_rows(d, v) || !all_finite(gcomb, d.band_begin.back())) return false;
  const T s = constant_factor(d, v);
  T through = T(0);  // sum over members of dL/d(product) * (row . column)
  for (uint32_t t = 0; t < tile_count(d); ++t) {
    const Tile x = tile_at(d, t);
    const RowMat<T> gs = spread_band(d, x, gcomb);
    const auto X = outer_rows(d, v, x);
    const auto Y = inner_rows(d, v, x);
    // Both products first: the rows and the columns may be the same atoms (q = k).
    const RowMat<T> gx = gs * Y, gy = gs.transpose() * X;
    MapM<T>(g + d.outer_off + size_t(x.i0) * d.len, x.height(), d.len) += s * gx;
    MapM<T>(g + d.inner_off + size_t(x.c0) * d.len, x.width(), d.len) += s * gy;
    if (!d.scalar_off.empty()) through += gx.cwiseProduct(X).sum();
  }
  if (!d.scalar_off.empty()) constant_factor_grads(d, v, through, g);
  return true;
}

template <typename T>
bool banded_scale_forward(const DirectProduct& d, bool average, const T* v, T* agg) {
  if (!finite_inner_rows(d, v)) return false;
  const T s = constant_factor(d, v);
  const int tiles = static_cast<int>(tile_count(d));
#pragma omp parallel for schedule(dynamic, 1) if (parallel_tiles(d))
  for (int t = 0; t < tiles; ++t) {
    const Tile x = tile_at(d, static_cast<uint32_t>(t));
    const RowMat<T> sums = spread_band(d, x, v + d.outer_off) * inner_rows(d, v, x);
    for (uint32_t i = x.i0; i < x.i1; ++i)
      MapM<T>(agg + size_t(i) * d.len, 1, d.len) = (s * row_scale<T>(d, average, i)) * sums.row(i - x.i0);
  }
  return true;
}

template <typename T>
bool banded_scale_backward(const DirectProduct& d, bool average, const T* v, const T* gagg, T* g) {
  if (!finite_inner_rows(d, v) || !all_finite(gagg, size_t(d.rows) * d.len)) return false;
  const T s = constant_factor(d, v);
  T through = T(0);  // sum over members of (scaled dL/d(sum) . column) * weight
  for (uint32_t t = 0; t < tile_count(d); ++t) {
    const Tile x = tile_at(d, t);
    RowMat<T> gout = CMapM<T>(gagg + size_t(x.i0) * d.len, x.height(), d.len);
    for (uint32_t i = x.i0; i < x.i1; ++i) gout.row(i - x.i0) *= row_scale<T>(d, average, i);
    const auto V = inner_rows(d, v, x);
    const RowMat<T> w = spread_band(d, x, v + d.outer_off);
    const RowMat<T> tw = gout * V.transpose();  // dL/dw before the constant factors
    gather_band<T, true>(d, x, tw, s, g + d.outer_off);
    MapM<T>(g + d.inner_off + size_t(x.c0) * d.len, x.width(), d.len) += s * (w.transpose() * gout);
    if (!d.scalar_off.empty()) through += tw.cwiseProduct(w).sum();
  }
  if (!d.scalar_off.empty()) constant_factor_grads(d, v, through, g);
  return true;
}

template bool banded_dot_forward<double>(const DirectProduct&, const double*, double*);
template bool banded_dot_forward<float>(const DirectProduct&, const float*, float*);
template bool banded_dot_backward<double>(const DirectProduct&, const double*, const double*, double*);
template bool banded_dot_backward<float>(const DirectProduct&, const float*, const float*, float*);
template bool banded_scale_forward<double>(const DirectProduct&, bool, const double*, double*);
template bool banded_scale_forward<float>(const DirectProduct&, bool, const float*, float*);
template bool banded_scale_backward<double>(const DirectProduct&, bool, const double*, const double*, double*);
template bool banded_scale_backward<float>(const DirectProduct&, bool, const float*, const float*, float*);

}  // namespace lrnn::exec
