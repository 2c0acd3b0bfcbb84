// The pair-block rewrite (see plan_builder.hpp): a pair block's ground rules, never listed
// one by one, planned as two rule groups.
#include <algorithm>

#include "exec/dense_tiles.hpp"
#include "exec/plan_builder.hpp"

namespace lrnn::exec::planning {

// ---- pair blocks (neural::SampleNetwork::pair_blocks) ----
// Each block's scores are a rule group at its pair depth and its weighted sums one at its
// head depth. Pairs are listed row by row (query-major), so each row is a softmax segment
// and the sums' head segments; when the rows, columns and values lie back to back in the
// value buffer the groups are dense (no mask) or banded (a causal mask) products whose
// members need no per-pair arrays; otherwise the per-pair input offsets are written out
// and the general detection and kernels run.

void PlanBuilder::add_pair_block_groups(uint32_t depth) {
  if (block_score_group.empty()) block_score_group.resize(n_samples);
  for (uint32_t s = 0; s < n_samples; ++s) {
    const auto& blocks = samples[s]->pair_blocks;
    block_score_group[s].resize(blocks.size(), kNoValue);
    for (size_t b = 0; b < blocks.size(); ++b) {
      if (blocks[b].pair_depth == depth) block_score_group[s][b] = add_block_scores(s, blocks[b].block);
      if (blocks[b].head_depth == depth)
        add_block_sums(s, blocks[b].block, plan.rule_groups.at(block_score_group[s][b]));
    }
  }
}

// Row r's first pair (rows + 1 offsets): the block's softmax segments.
std::vector<uint32_t> PlanBuilder::block_row_begin(const logic::PairBlock& b) {
  std::vector<uint32_t> begin(b.rows() + 1, 0);
  for (size_t r = 0; r < b.rows(); ++r) begin[r + 1] = begin[r] + b.band_of(r);
  return begin;
}

// The value offsets of `atoms` when they lie back to back (atom i at first + i * len) with
// one shape (returned, with `first`); false otherwise. Throws naming the literal when the
// shapes differ.
bool PlanBuilder::back_to_back(uint32_t s, const std::vector<uint32_t>& atoms, uint32_t r, size_t input, Shape& shape,
                               uint32_t& first) const {
  const std::vector<uint32_t>& off = plan.atom_offsets[s];
  const std::vector<Shape>& shapes = plan.atom_shapes[s];
  shape = shapes[atoms[0]];
  first = off[atoms[0]];
  bool contiguous = true;
  for (size_t i = 0; i < atoms.size(); ++i) {
    if (!(shapes[atoms[i]] == shape)) {
      const Literal& lit = model.ast().rules[r].body[model.rules[r].inputs[input].body_index];
      throw Error(ErrorKind::Shape, lit.span,
                  rule_name(model, r) + ", literal " + literal_text(lit) + ": input values have different shapes " +
                      text(shape) + " and " + text(shapes[atoms[i]]));
    }
    contiguous = contiguous && off[atoms[i]] == first + i * static_cast<uint64_t>(shape.size());
  }
  return contiguous;
}

// Input `i` of the score rule per pair (row-major): a row's, a column's or one atom's offset.
void PlanBuilder::write_score_sources(uint32_t s, const logic::PairBlock& b, size_t i,
                                      std::vector<uint32_t>& src) const {
  const std::vector<uint32_t>& off = plan.atom_offsets[s];
  const uint32_t a = b.score_inputs[i];
  src.clear();
  src.reserve(b.pairs());
  for (size_t r = 0; r < b.rows(); ++r)
    for (uint32_t c = b.first_of(r); c < b.first_of(r) + b.band_of(r); ++c)
      src.push_back(a == logic::kRowInput      ? off[b.row_atom[r]]
                    : a == logic::kColumnInput ? off[b.column_atom[c]]
                                               : off[a]);
}

// The block's scores: one member per pair, each its own head (the pair atom w(I, J)).
uint32_t PlanBuilder::add_block_scores(uint32_t s, const logic::PairBlock& b) {
  const uint32_t r = b.score_rule;
  const neural::RuleSpec& spec = model.rules[r];
  RuleGroup G = new_rule_group(r, b.pairs());
  MemberScan scan;
  scan.done = scan.softmax_in_order = true;
  scan.blocks.assign(spec.inputs.size(), InputBlock{});
  bool contiguous = true;
  uint32_t row_off = 0, col_off = 0, first = 0;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const uint32_t a = b.score_inputs[i];
    Shape& shape = scan.blocks[i].raw_shape;
    if (a == logic::kRowInput)
      contiguous = back_to_back(s, b.row_atom, r, i, shape, row_off) && contiguous;
    else if (a == logic::kColumnInput)
      contiguous = back_to_back(s, b.column_atom, r, i, shape, col_off) && contiguous;
    else back_to_back(s, {a}, r, i, shape, first);  // one atom: its shape (and a literal to blame)
  }
  const std::vector<uint32_t> row_begin = block_row_begin(b);
  G.softmax_segments = row_begin;
  std::vector<Shape> z_shapes;
  const bool fast = plan_block_inputs(
      G, spec, scan, contiguous && block_tiles_fit(b, row_begin),
      [](const DirectProduct& d) { return d.kind == DirectProduct::Kind::Dot; },
      [&](size_t i, std::vector<uint32_t>& src) { write_score_sources(s, b, i, src); }, z_shapes);
  plan_combination_and_activation(G, spec, z_shapes);
  DirectProduct& d = G.direct;
  if (fast) {
    const int row = static_cast<int>(std::find(b.score_inputs.begin(), b.score_inputs.end(), logic::kRowInput) -
                                     b.score_inputs.begin());
    G.m = G.n;  // one pair per head: the aggregation is the identity, no head segments
    d.outer = row;
    d.inner = row == d.a ? d.b : d.a;
    d.outer_off = row_off;
    d.inner_off = col_off;
    for (int j : d.scalars) d.scalar_off.push_back(plan.atom_offsets[s][b.score_inputs[j]]);
    set_block_shape(d, b, row_begin);
  } else {
    G.head_segments.resize(size_t(G.n) + 1);
    for (uint32_t k = 0; k <= G.n; ++k) G.head_segments[k] = k;
    plan_head_segments(G, {}, true);
  }
  plan_softmax_segments(G, {}, true);
  plan_aggregation_and_head_weight(G, spec);
  return add_rule_step(std::move(G));
}

// The block's weighted sums a(I): head r sums row r's pairs, each a score times v(J).
void PlanBuilder::add_block_sums(uint32_t s, const logic::PairBlock& b, const RuleGroup& scores) {
  const uint32_t r = b.sum_rule;
  const neural::RuleSpec& spec = model.rules[r];
  RuleGroup G = new_rule_group(r, b.pairs());
  MemberScan scan;
  scan.done = true;
  scan.blocks.assign(2, InputBlock{});
  const size_t pair = b.sum_pair_input, value = 1 - pair;
  scan.blocks[pair].raw_shape = scores.out_shape;
  uint32_t value_off = 0;
  const bool contiguous = back_to_back(s, b.value_atom, r, value, scan.blocks[value].raw_shape, value_off);
  const std::vector<uint32_t> row_begin = block_row_begin(b);
  G.head_segments = row_begin;
  const uint32_t score_size = static_cast<uint32_t>(scores.out_shape.size());
  std::vector<Shape> z_shapes;
  // (The sum rule is summed or averaged with nothing in between: a direct product of it is a fused sum.)
  const bool fast = plan_block_inputs(
      G, spec, scan, contiguous && block_tiles_fit(b, row_begin),
      [&](const DirectProduct& d) { return d.kind == DirectProduct::Kind::Scale && d.a == int(value); },
      [&](size_t i, std::vector<uint32_t>& src) {
        src.resize(G.n);
        const std::vector<uint32_t>& off = plan.atom_offsets[s];
        if (i == pair)
          for (uint32_t k = 0; k < G.n; ++k) src[k] = scores.out_off + k * score_size;
        else
          for (size_t row = 0; row < b.rows(); ++row)
            for (uint32_t t = 0; t < b.band_of(row); ++t)
              src[row_begin[row] + t] = off[b.value_atom[b.first_of(row) + t]];
      },
      z_shapes);
  plan_combination_and_activation(G, spec, z_shapes);
  DirectProduct& d = G.direct;
  G.m = static_cast<uint32_t>(b.rows());
  if (fast && !d.fused_sum)
    throw Error(ErrorKind::Runtime, rule_name(model, r) + ": a pair block's weighted sum is not a fused sum");
  if (fast) {
    d.outer = static_cast<int>(pair);
    d.inner = static_cast<int>(value);
    d.outer_off = scores.out_off;
    d.inner_off = value_off;
    set_block_shape(d, b, row_begin);
  } else {
    plan_head_segments(G, {}, true);
  }
  plan_aggregation_and_head_weight(G, spec);
  std::vector<Contribution>& list = contributions[spec.head_predicate];
  const uint32_t size = static_cast<uint32_t>(G.out_shape.size());
  for (uint32_t h = 0; h < G.m; ++h) list.push_back({s, b.head_atom[h], G.out_off + h * size, G.out_shape});
  add_rule_step(std::move(G));
}

// A block group's inputs: without per-pair sources when `fast` (the rows lie back to back,
// the tiles fit) and the product is direct and of the kind `direct_fits` accepts (sources_of
// is then never called), else with them, written once the inputs are planned (planning
// reads only their shapes: a block's inputs carry no weight, so no transform-sum needs the
// sources). Returns whether the sources were left out.
template <class Fits, class Sources>
bool PlanBuilder::plan_block_inputs(RuleGroup& G, const neural::RuleSpec& spec, MemberScan& scan, bool fast,
                                    Fits direct_fits, Sources sources_of, std::vector<Shape>& z_shapes) {
  z_shapes = plan_rule_inputs(G, spec, {}, scan);
  if (G.transform.enabled)
    throw Error(ErrorKind::Runtime, rule_name(model, G.rule) + ": a pair block's rule planned as a transform sum");
  fast = fast && direct_fits(G.direct);
  if (!fast)
    for (size_t i = 0; i < G.inputs.size(); ++i) sources_of(i, G.inputs[i].src);
  return fast;
}

// Whether the tiles of a banded block cover at most twice its pairs (as plan_banded_block
// requires): true for a causal mask over sorted positions, not for any band.
bool PlanBuilder::block_tiles_fit(const logic::PairBlock& b, const std::vector<uint32_t>& row_begin) {
  if (b.band.empty()) return true;
  DirectProduct d;
  set_block_shape(d, b, row_begin);
  return banded_tile_entries(d) <= 2 * b.pairs() + kTileRows;
}

// A dense block (every row pairs with every column) or a banded one (row r with the
// columns first(r) .. first(r) + band(r) - 1), run as tiles when they hold at most twice
// the pairs.
void PlanBuilder::set_block_shape(DirectProduct& d, const logic::PairBlock& b, const std::vector<uint32_t>& row_begin) {
  d.rows = static_cast<uint32_t>(b.rows());
  if (b.band.empty()) {
    d.cols = static_cast<uint32_t>(b.columns());
    d.dense = true;
    return;
  }
  d.cols = 0;
  d.band_first.resize(d.rows);
  for (uint32_t r = 0; r < d.rows; ++r) {
    d.band_first[r] = b.first_of(r);
    d.cols = std::max(d.cols, b.first_of(r) + b.band_of(r));
  }
  d.band_begin = row_begin;
  plan_tiles(d);
  d.banded = true;
}

}  // namespace lrnn::exec::planning
