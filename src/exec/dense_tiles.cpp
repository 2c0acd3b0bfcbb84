#include "exec/dense_tiles.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cstdint>

namespace lrnn::exec {

namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using MapM = Eigen::Map<RowMat<T>>;
template <typename T>
using CMapM = Eigen::Map<const RowMat<T>>;

// Rows [i0, i1) of a banded block and the columns [c0, c1) their bands span.
struct Tile {
  uint32_t i0, i1, c0, c1;
  uint32_t height() const { return i1 - i0; }
  uint32_t width() const { return c1 - c0; }
};

uint32_t band_size(const DirectProduct& d, uint32_t i) { return d.band_begin[i + 1] - d.band_begin[i]; }

uint32_t tile_count(const DirectProduct& d) { return (d.rows + kTileRows - 1) / kTileRows; }

Tile tile_at(const DirectProduct& d, uint32_t t) {
  Tile x{t * kTileRows, std::min(d.rows, (t + 1) * kTileRows), UINT32_MAX, 0};
  for (uint32_t i = x.i0; i < x.i1; ++i) {
    x.c0 = std::min(x.c0, d.band_first[i]);
    x.c1 = std::max(x.c1, d.band_first[i] + band_size(d, i));
  }
  return x;
}

// Tiles run on every OpenMP thread (disjoint outputs) when the block is this large.
bool parallel_tiles(const DirectProduct& d) {
  return static_cast<double>(banded_tile_entries(d)) * d.len > static_cast<double>(size_t{1} << 22);
}

// The product of the block's constant scalar factors, leaving out factor `skip`.
template <typename T>
T constant_product(const DirectProduct& d, const T* v, size_t skip = SIZE_MAX) {
  T s = T(1);
  for (size_t j = 0; j < d.scalar_off.size(); ++j)
    if (j != skip) s *= v[d.scalar_off[j]];
  return s;
}

// dL/d(constant factor j) = through * (the other constant factors).
template <typename T>
void add_constant_factor_grads(const DirectProduct& d, const T* v, T through, T* g) {
  for (size_t j = 0; j < d.scalar_off.size(); ++j) g[d.scalar_off[j]] += through * constant_product(d, v, j);
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

// 1 / (members of row i) for an average, else 1.
template <typename T>
T row_scale(const DirectProduct& d, bool average, uint32_t i) {
  return average && band_size(d, i) > 0 ? T(1) / T(band_size(d, i)) : T(1);
}

}  // namespace

size_t banded_tile_entries(const DirectProduct& d) {
  size_t entries = 0;
  for (uint32_t t = 0; t < tile_count(d); ++t) {
    const Tile x = tile_at(d, t);
    entries += size_t(x.height()) * x.width();
  }
  return entries;
}

template <typename T>
void banded_dot_forward(const DirectProduct& d, const T* v, T* comb) {
  const T s = constant_product(d, v);
  const int tiles = static_cast<int>(tile_count(d));
#pragma omp parallel for schedule(static) if (parallel_tiles(d))
  for (int t = 0; t < tiles; ++t) {
    const Tile x = tile_at(d, static_cast<uint32_t>(t));
    const RowMat<T> scores = outer_rows(d, v, x) * inner_rows(d, v, x).transpose();
    gather_band<T, false>(d, x, scores, s, comb);
  }
}

template <typename T>
void banded_dot_backward(const DirectProduct& d, const T* v, const T* gcomb, T* g) {
  const T s = constant_product(d, v);
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
  if (!d.scalar_off.empty()) add_constant_factor_grads(d, v, through, g);
}

template <typename T>
void banded_scale_forward(const DirectProduct& d, bool average, const T* v, T* agg) {
  const T s = constant_product(d, v);
  const int tiles = static_cast<int>(tile_count(d));
#pragma omp parallel for schedule(static) if (parallel_tiles(d))
  for (int t = 0; t < tiles; ++t) {
    const Tile x = tile_at(d, static_cast<uint32_t>(t));
    const RowMat<T> sums = spread_band(d, x, v + d.outer_off) * inner_rows(d, v, x);
    for (uint32_t i = x.i0; i < x.i1; ++i)
      MapM<T>(agg + size_t(i) * d.len, 1, d.len) = (s * row_scale<T>(d, average, i)) * sums.row(i - x.i0);
  }
}

template <typename T>
void banded_scale_backward(const DirectProduct& d, bool average, const T* v, const T* gagg, T* g) {
  const T s = constant_product(d, v);
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
  if (!d.scalar_off.empty()) add_constant_factor_grads(d, v, through, g);
}

template void banded_dot_forward<double>(const DirectProduct&, const double*, double*);
template void banded_dot_forward<float>(const DirectProduct&, const float*, float*);
template void banded_dot_backward<double>(const DirectProduct&, const double*, const double*, double*);
template void banded_dot_backward<float>(const DirectProduct&, const float*, const float*, float*);
template void banded_scale_forward<double>(const DirectProduct&, bool, const double*, double*);
template void banded_scale_forward<float>(const DirectProduct&, bool, const float*, float*);
template void banded_scale_backward<double>(const DirectProduct&, bool, const double*, const double*, double*);
template void banded_scale_backward<float>(const DirectProduct&, bool, const float*, const float*, float*);

}  // namespace lrnn::exec
