// The direct-product rewrite (registry.hpp; docs/semantics.md "Plan rewrites"): a product
// of unweighted inputs (or a rule of one such input) is computed from the values where they
// lie, with no per-grounding gather; when the groundings' inputs form a dense block or row
// bands (a causal mask) the product runs as tiles (exec/dense_tiles.hpp).
#include <algorithm>
#include <utility>

#include "exec/dense_tiles.hpp"
#include "exec/plan_builder.hpp"
#include "exec/rewrites/registry.hpp"

const lrnn::exec::RewriteInfo lrnn::exec::rewrites::kDirectProduct{"direct_product",
    "products of unweighted inputs read where they lie, not gathered per grounding",
    "docs/semantics.md \"Plan rewrites\""};

namespace lrnn::exec::planning {

namespace {

// Whether `c` of one value is that value (a rule of one input then computes its input,
// which a product of one factor computes in place).
bool identity_on_one_input(CombinationKind c) {
  switch (c) {
    case CombinationKind::Sum:
    case CombinationKind::Avg:
    case CombinationKind::Max:
    case CombinationKind::Min:
    case CombinationKind::Product:
    case CombinationKind::ElProduct:
      return true;
    default:
      return false;
  }
}
// Sets d.scalar_off when every scalar factor other than `varying` is one value for every
// member of G (false if one is not).
bool take_constant_scalars(const RuleGroup& G, DirectProduct& d, int varying) {
  std::vector<uint32_t> offs;
  for (int j : d.scalars) {
    if (j == varying) continue;
    const std::vector<uint32_t>& src = G.inputs[j].src;
    if (std::any_of(src.begin(), src.end(), [&](uint32_t o) { return o != src[0]; })) return false;
    offs.push_back(src[0]);
  }
  d.scalar_off = std::move(offs);
  return true;
}

// Row bands of members whose rows are the runs of `head` (one key per run, rows back to
// back from the first key: key[k] == key[0] + row * len) and whose columns `col` advance
// by len within a run (see DirectProduct::banded). Run starts come from `starts` when given
// (head segments), else from changes of `head`. False if the members do not form bands.
bool find_bands(const std::vector<uint32_t>* head, const std::vector<uint32_t>* starts,
                const std::vector<uint32_t>& col, uint32_t len, DirectProduct& d) {
  const size_t n = col.size();
  if (n == 0 || len == 0) return false;
  d.band_begin.clear();
  d.band_first.clear();
  const uint32_t col_off = *std::min_element(col.begin(), col.end());
  uint32_t next_start = 0;
  for (size_t k = 0; k < n; ++k) {
    const bool row_start = starts ? k == (*starts)[next_start] : k == 0 || (*head)[k] != (*head)[k - 1];
    if (row_start) {
      const uint64_t row = d.band_begin.size();
      if (head && uint64_t((*head)[k]) != uint64_t((*head)[0]) + row * len) return false;
      if ((col[k] - col_off) % len != 0) return false;
      d.band_begin.push_back(static_cast<uint32_t>(k));
      d.band_first.push_back((col[k] - col_off) / len);
      if (starts) ++next_start;
    } else if (uint64_t(col[k]) != uint64_t(col[k - 1]) + len) {
      return false;
    }
  }
  d.band_begin.push_back(static_cast<uint32_t>(n));
  d.rows = static_cast<uint32_t>(d.band_first.size());
  d.cols = 0;
  for (uint32_t i = 0; i < d.rows; ++i)
    d.cols = std::max(d.cols, d.band_first[i] + d.band_begin[i + 1] - d.band_begin[i]);
  d.inner_off = col_off;
  // Tiles read every column between their bands: each must be an input some member reads
  // (rows of other samples or other atoms may lie in a gap).
  std::vector<int64_t> cover(size_t(d.cols) + 1, 0);
  for (uint32_t i = 0; i < d.rows; ++i) {
    ++cover[d.band_first[i]];
    --cover[d.band_first[i] + d.band_begin[i + 1] - d.band_begin[i]];
  }
  int64_t covered = 0;
  for (uint32_t c = 0; c < d.cols; ++c)
    if ((covered += cover[c]) == 0) return false;
  return true;
}

}  // namespace

// Which DirectProduct (if any) computes a product of these inputs. Shapes are those after
// the (absent) weight and transpose: a transposed vector is the same entries read as a row.
// A rule of one unweighted input (a GIN layer's neighbour sum `agg(I) :- h(J), edge(J, I)`)
// is a product of one factor: read where it is, not gathered per grounding.
DirectProduct plan_direct_product(CombinationKind combination, const std::vector<InputBlock>& inputs) {
  const bool one_input = inputs.size() == 1 && identity_on_one_input(combination);
  if ((combination != CombinationKind::Product && !one_input) || inputs.empty()) return {};
  DirectProduct d;
  std::vector<int> mats;
  for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
    const InputBlock& B = inputs[i];
    if (B.mode != WeightMode::None || B.soft_negated || real_transpose(B)) return {};
    (B.out_shape.scalar() ? d.scalars : mats).push_back(i);
  }
  if (mats.empty()) {
    d.kind = DirectProduct::Kind::Scalars;
  } else if (mats.size() == 1) {
    d.kind = DirectProduct::Kind::Scale;
    d.a = mats[0];
    d.len = inputs[d.a].out_shape.size();
  } else if (mats.size() == 2 && inputs[mats[0]].out_shape.rows == 1 && inputs[mats[1]].out_shape.cols == 1) {
    d.kind = DirectProduct::Kind::Dot;
    d.a = mats[0];
    d.b = mats[1];
    d.len = inputs[d.a].out_shape.cols;
  } else {
    return {};  // a longer matrix chain: gathered and multiplied by Eigen
  }
  return d;
}
// Sets d.banded when the members of G that form no dense block form row bands (a causal
// mask) whose tiles hold at most twice as many entries as the members: a sliding window
// narrower than a tile stays with the per-member products.
void plan_banded_block(const RuleGroup& G, DirectProduct& d) {
  using Kind = DirectProduct::Kind;
  const uint32_t len = static_cast<uint32_t>(d.len);
  auto accept = [&](int outer, int inner, uint32_t outer_off) {
    plan_tiles(d);
    if (banded_tile_entries(d) > 2 * size_t(G.n) + kTileRows) return false;
    d.banded = true;
    d.outer = outer;
    d.inner = inner;
    d.outer_off = outer_off;
    return true;
  };
  if (d.kind == Kind::Dot && !d.fused_sum) {
    for (const auto& [outer, inner] : {std::pair{d.a, d.b}, std::pair{d.b, d.a}}) {
      const std::vector<uint32_t>& xo = G.inputs[outer].src;
      if (find_bands(&xo, nullptr, G.inputs[inner].src, len, d) && take_constant_scalars(G, d, -1) &&
          accept(outer, inner, xo[0]))
        return;
    }
    d.band_begin.clear();
    d.band_first.clear();
    d.tile_begin.clear();
    return;
  }
  if (d.kind == Kind::Scale && d.fused_sum && G.m > 0) {
    if (!find_bands(nullptr, &G.head_segments, G.inputs[d.a].src, len, d)) return;
    for (int w : d.scalars) {
      const std::vector<uint32_t>& xw = G.inputs[w].src;
      bool in_member_order = true;
      for (uint32_t k = 0; k < G.n && in_member_order; ++k) in_member_order = xw[k] == xw[0] + k;
      if (in_member_order && take_constant_scalars(G, d, w) && accept(w, d.a, xw[0])) return;
    }
  }
  d.band_begin.clear();
  d.band_first.clear();
  d.tile_begin.clear();
}

bool plan_input_rows(RuleGroup& G) {
  DirectProduct& d = G.direct;
  // A product of one factor alone, summed: each head's aggregate is its one input's row.
  if (!sums_input_rows(d)) return false;
  // The head weight writes rows of its own (matrix products on column vectors): without
  // it the aggregates would be the rows' atoms, which an atom group may change in place.
  if (G.n == 0 || G.m != G.n || G.head_weight == neural::kNoParam || G.head_mode != WeightMode::MatMul ||
      G.agg_shape.cols != 1)
    return false;
  const std::vector<uint32_t>& src = G.inputs[d.a].src;
  if (!rows_in_order(src, static_cast<uint32_t>(d.len))) return false;
  d.input_rows = true;
  G.agg_off = src[0];
  return true;
}

// Sets d.dense (see DirectProduct) when the members of G form a dense block.
void plan_dense_block(const RuleGroup& G, DirectProduct& d) {
  using Kind = DirectProduct::Kind;
  const uint32_t n = G.n;
  if (n == 0) return;
  auto constant_scalars = [&](int varying) { return take_constant_scalars(G, d, varying); };
  const uint32_t len = static_cast<uint32_t>(d.len);
  if (d.kind == Kind::Dot && !d.fused_sum) {
    // Which of the two inputs stays put along the first run of members?
    for (const auto& [outer, inner] : {std::pair{d.a, d.b}, std::pair{d.b, d.a}}) {
      const std::vector<uint32_t>& xo = G.inputs[outer].src;
      const std::vector<uint32_t>& xi = G.inputs[inner].src;
      uint32_t cols = 1;
      while (cols < n && xo[cols] == xo[0]) ++cols;
      if (n % cols != 0) continue;
      const uint32_t rows = n / cols;
      bool ok = true;
      for (uint32_t i = 0; i < rows && ok; ++i)
        for (uint32_t j = 0; j < cols && ok; ++j) {
          const uint32_t k = i * cols + j;
          ok = xo[k] == xo[0] + i * len && xi[k] == xi[0] + j * len;
        }
      if (!ok || !constant_scalars(-1)) continue;
      d.dense = true;
      d.rows = rows;
      d.cols = cols;
      d.outer = outer;
      d.inner = inner;
      d.outer_off = xo[0];
      d.inner_off = xi[0];
      return;
    }
    return;
  }
  if (d.kind == Kind::Scale && d.fused_sum) {
    const uint32_t rows = G.m, cols = G.m ? G.head_segments[1] : 0;
    if (cols == 0 || static_cast<uint64_t>(rows) * cols != n) return;
    for (uint32_t i = 0; i <= rows; ++i)
      if (G.head_segments[i] != i * cols) return;
    const std::vector<uint32_t>& xi = G.inputs[d.a].src;
    for (uint32_t k = 0; k < n; ++k)
      if (xi[k] != xi[0] + (k % cols) * len) return;
    for (int w : d.scalars) {
      const std::vector<uint32_t>& xw = G.inputs[w].src;
      bool row_major = true, col_major = true;
      for (uint32_t k = 0; k < n && (row_major || col_major); ++k) {
        row_major = row_major && xw[k] == xw[0] + k;
        col_major = col_major && xw[k] == xw[0] + (k % cols) * rows + k / cols;
      }
      if (!(row_major || col_major) || !constant_scalars(w)) continue;
      d.outer_transposed = !row_major;
      d.dense = true;
      d.rows = rows;
      d.cols = cols;
      d.outer = w;
      d.inner = d.a;
      d.outer_off = xw[0];
      d.inner_off = xi[0];
      return;
    }
  }
}

}  // namespace lrnn::exec::planning
