#include "exec/plan.hpp"

#include "exec/atom_sum.hpp"
#include "neural/grid_order.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "exec/dense_tiles.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/memory.hpp"

namespace lrnn::exec {

namespace {

std::string text(Shape s) { return std::to_string(s.rows) + "x" + std::to_string(s.cols); }

std::string literal_text(const Literal& l) {
  std::string t = (l.soft_negated ? "~" : "") + l.predicate;
  if (!l.args.empty()) {
    t += "(";
    for (size_t i = 0; i < l.args.size(); ++i) t += (i ? ", " : "") + l.args[i].text;
    t += ")";
  }
  if (l.transposed) t += "^T";
  return t;
}

std::string rule_name(const neural::TemplateModel& model, uint32_t r) {
  return "rule " + std::to_string(r + 1) + " (head " + literal_text(model.ast().rules[r].head) + ")";
}

class Allocator {
 public:
  uint32_t take(size_t n) {
    uint64_t at = cursor_;
    cursor_ += n;
    if (cursor_ > 0xFFFFFFF0ULL)
      throw Error(ErrorKind::Limit, "the network needs more than 4 billion values");
    // Every value is a double of the workspace (and of its gradients when training): the
    // plan asks the memory budget each 1M values, before any workspace is made.
    if (cursor_ >= checked_ + (1u << 20)) {
      check_memory(16 * cursor_, "a network of " + std::to_string(cursor_) + " values (its workspace and gradients)");
      checked_ = cursor_;
    }
    return static_cast<uint32_t>(at);
  }
  uint32_t size() const { return static_cast<uint32_t>(cursor_); }

 private:
  uint64_t cursor_ = 0, checked_ = 0;
};

// The aggregated shape of a rule group: the aggregation's shape rule (neural/functions) for
// its segments, which for concat must all be equally long.
Shape group_aggregation_shape(AggregationKind kind, Shape in, const std::vector<uint32_t>& seg,
                              const std::string& where, const Span& span) {
  const uint32_t len = seg.size() > 1 ? seg[1] - seg[0] : 0;
  if (kind == AggregationKind::Concat)
    for (size_t j = 1; j + 1 < seg.size(); ++j)
      if (seg[j + 1] - seg[j] != len)
        throw Error(ErrorKind::Shape, span,
                    where + ": concat aggregation needs the same number of groundings for every head, found " +
                        std::to_string(len) + " and " + std::to_string(seg[j + 1] - seg[j]));
  try {
    return aggregation_shape(kind, in, len);
  } catch (const Error& e) {
    throw Error(ErrorKind::Shape, span, where + ": " + e.message());
  }
}

bool real_transpose(const InputBlock& B) {
  return B.transposed && B.wout_shape.rows > 1 && B.wout_shape.cols > 1;
}

void check_atom_offset_shape(const neural::TemplateModel& model, uint32_t offset, Shape red_shape,
                             const std::string& where) {
  const Shape b = model.params.info(offset).shape;
  if (!b.scalar() && !(b == red_shape))
    throw Error(ErrorKind::Shape, model.params.info(offset).span,
                where + ": offset shape " + text(b) + " differs from the atom value's shape " + text(red_shape));
}

// Whether G's groundings can be summed per head from their distinct inputs' transforms
// (TransformSum): one column-vector input under a matrix weight, combined alone, with no
// offset, activation or softmax before a sum or average aggregation.
bool transform_sum_applies(const RuleGroup& G, const neural::RuleSpec& spec) {
  if (G.direct.kind != DirectProduct::Kind::None || G.inputs.size() != 1) return false;
  const InputBlock& B = G.inputs[0];
  const bool one_input_combination =
      spec.combination == CombinationKind::Sum || spec.combination == CombinationKind::Avg;
  const bool summed = spec.aggregation.kind == AggregationKind::Sum || spec.aggregation.kind == AggregationKind::Avg;
  return B.mode == WeightMode::MatMul && B.raw_shape.cols == 1 && !B.soft_negated && !B.transposed &&
         one_input_combination && spec.offset == neural::kNoParam &&
         spec.activation.kind == ActivationKind::Identity && !spec.softmax && summed;
}

// sources = the distinct values of src, ascending; row_of[k] = the position of src[k] in
// them. Inputs usually span a range of a few values per grounding: a table over that range
// finds them in linear time; otherwise sort and binary search.
void distinct_sources(const std::vector<uint32_t>& src, uint32_t size, std::vector<uint32_t>& sources,
                      std::vector<uint32_t>& row_of) {
  sources.clear();
  row_of.resize(src.size());
  if (src.empty()) return;
  bool back_to_back = true;  // the common case of one grounding per input atom, in order
  for (size_t k = 1; k < src.size() && back_to_back; ++k) back_to_back = src[k] == src[0] + k * size;
  if (back_to_back) {
    sources = src;
    for (size_t k = 0; k < src.size(); ++k) row_of[k] = static_cast<uint32_t>(k);
    return;
  }
  const auto [lo, hi] = std::minmax_element(src.begin(), src.end());
  const size_t range = size_t(*hi - *lo) + 1;
  if (range <= 4 * src.size() * size_t(size) + 64) {
    std::vector<uint32_t> row_at(range, kNoValue);
    for (uint32_t offset : src) row_at[offset - *lo] = 0;
    // Distinct atoms' values never overlap: after one, the next starts `size` further on.
    for (size_t i = 0; i < range;) {
      if (row_at[i] == kNoValue) {
        ++i;
        continue;
      }
      row_at[i] = static_cast<uint32_t>(sources.size());
      sources.push_back(static_cast<uint32_t>(*lo + i));
      i += size;
    }
    for (size_t k = 0; k < src.size(); ++k) row_of[k] = row_at[src[k] - *lo];
    return;
  }
  sources = src;
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  for (size_t k = 0; k < src.size(); ++k)
    row_of[k] = static_cast<uint32_t>(std::lower_bound(sources.begin(), sources.end(), src[k]) - sources.begin());
}

// The position of each of `sources` among `owner`'s (both ascending and distinct), or
// nothing when one of them is not there. A GCN layer's neighbour rule reads the inputs of
// the nodes that have a neighbour, a subset of its self rule's (every node): it then sums
// the self rule's transformed rows instead of gathering and transforming its own.
std::vector<uint32_t> rows_among(const std::vector<uint32_t>& sources, const std::vector<uint32_t>& owner) {
  std::vector<uint32_t> rows(sources.size());
  size_t j = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    while (j < owner.size() && owner[j] < sources[i]) ++j;
    if (j == owner.size() || owner[j] != sources[i]) return {};
    rows[i] = static_cast<uint32_t>(j);
  }
  return rows;
}

// The distinct inputs of G's one input block and each grounding's row among them; takes
// room for the gathered inputs (unless they lie back to back) and their transforms.
void plan_transform_sum(RuleGroup& G, Allocator& alloc, const RuleGroup* same_depth_begin,
                        const RuleGroup* same_depth_end, uint32_t heads, bool sum_first) {
  InputBlock& B = G.inputs[0];
  TransformSum& t = G.transform;
  t.enabled = true;
  const uint32_t in = static_cast<uint32_t>(B.raw_shape.size());
  distinct_sources(B.src, in, t.sources, t.row_of);
  const size_t u = t.sources.size();
  t.contiguous = true;
  for (size_t r = 1; r < u && t.contiguous; ++r) t.contiguous = t.sources[r] == t.sources[0] + r * in;
  B.x_off = B.w_off = B.z_off = kNoValue;
  for (const RuleGroup* other = same_depth_begin; other != same_depth_end; ++other) {
    const TransformSum& o = other->transform;
    if (!o.enabled || !o.owns_transform || o.sum_first || other->inputs[0].weight != B.weight) continue;
    const std::vector<uint32_t> rows = rows_among(t.sources, o.sources);
    if (rows.empty() && !t.sources.empty()) continue;
    for (uint32_t& r : t.row_of) r = rows[r];
    t.sources = o.sources;
    t.contiguous = o.contiguous;
    t.owns_transform = false;
    t.x_off = o.x_off;
    t.t_off = o.t_off;
    return;
  }
  if (sum_first && heads > 0 && u >= 2 * size_t(heads)) {
    t.sum_first = true;
    t.x_off = t.t_off = kNoValue;
    t.s_off = alloc.take(size_t(heads) * in);
    return;
  }
  t.x_off = t.contiguous ? t.sources[0] : alloc.take(u * in);
  t.t_off = alloc.take(u * B.wout_shape.size());
}

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

}  // namespace

WeightMode weight_mode(Shape w, Shape x, Shape& out) {
  if (w.scalar()) {
    out = x;
    return WeightMode::Scalar;
  }
  if (x.scalar()) {
    out = w;
    return WeightMode::Outer;
  }
  if (w.cols == x.rows) {
    out = checked_shape(w.rows, x.cols, "a weight of shape " + text(w) + " applied to a value of shape " + text(x));
    return WeightMode::MatMul;
  }
  if (w == x) {
    out = x;
    return WeightMode::Elementwise;
  }
  throw Error(ErrorKind::Shape, "weight of shape " + text(w) + " cannot apply to a value of shape " + text(x));
}

namespace {

using Ref = std::pair<uint32_t, uint32_t>;  // (sample, local atom / ground rule)

// A rule group's value at the atom neuron it feeds: (sample, atom) <- (value offset, shape).
struct Contribution {
  uint32_t sample, atom, offset;
  Shape shape;
};

// Merges sample networks into one plan, depth by depth: the rule groups of a depth, then
// the atom groups they feed (build_plan's steps, one function each).
class PlanBuilder {
 public:
  PlanBuilder(const neural::TemplateModel& model, const std::vector<const neural::SampleNetwork*>& samples,
              const PlanOptions& options)
      : model(model), samples(samples), n_samples(samples.size()), options(options) {}

  Plan build() {
    plan.atom_offsets.resize(n_samples);
    plan.atom_shapes.resize(n_samples);
    for (size_t s = 0; s < n_samples; ++s) {
      plan.atom_offsets[s].assign(samples[s]->num_atoms(), kNoValue);
      plan.atom_shapes[s].assign(samples[s]->num_atoms(), Shape{1, 1});
    }
    place_facts();
    bucket_by_depth();
    auto rule_it = rule_buckets.begin();
    auto atom_it = atom_buckets.begin();
    for (uint32_t depth = 1; depth <= max_depth; ++depth) {
      contributions.assign(model.predicates.size(), {});
      depth_first_group = plan.rule_groups.size();
      for (; rule_it != rule_buckets.end() && rule_it->first.first == depth; ++rule_it)
        add_rule_group(rule_it->first.second, std::move(rule_it->second));  // (not copied: n^2 for attention)
      add_pair_block_groups(depth);
      for (; atom_it != atom_buckets.end() && atom_it->first.first == depth; ++atom_it)
        add_atom_group(atom_it->first.second, atom_it->second);
    }
    if (!options.fact_gradients) drop_fact_input_gradients();
    place_outputs();
    plan.num_values = alloc.size();
    return std::move(plan);
  }

 private:
  // Transforms that read only data facts (offsets below data_values: forward copies the
  // data there) compute no input gradient. With learnable example facts among the data,
  // every transform keeps it (their gradients are read).
  void drop_fact_input_gradients() {
    if (!plan.example_fact_off.empty()) return;
    const size_t data_end = data_values;
    for (RuleGroup& G : plan.rule_groups) {
      TransformSum& t = G.transform;
      if (!t.enabled || t.sources.empty()) continue;
      const size_t last = *std::max_element(t.sources.begin(), t.sources.end());
      t.input_gradients = last + G.inputs[0].raw_shape.size() > data_end;
    }
  }

  const neural::TemplateModel& model;
  const std::vector<const neural::SampleNetwork*>& samples;
  const size_t n_samples;
  const PlanOptions options;
  Plan plan;
  Allocator alloc;
  std::vector<std::vector<uint32_t>> fact_off;       // per sample and fact: value offset
  size_t data_values = 0;  // the data facts' values, first in the values (plan.data's size)
  std::map<std::pair<uint32_t, uint32_t>, std::vector<Ref>> atom_buckets, rule_buckets;
  uint32_t max_depth = 0;
  // Per sample and atom: position in its group (made when a group first sorts its inputs).
  std::vector<std::vector<uint32_t>> atom_position;
  std::vector<std::vector<Contribution>> contributions;  // per predicate, this depth
  size_t depth_first_group = 0;                      // first rule group of this depth

  void place_facts() {
    // Facts: data first (one contiguous copy per forward), then template facts.
    fact_off.resize(n_samples);
    for (size_t s = 0; s < n_samples; ++s) data_values += samples[s]->fact_data.size();
    if (options.fact_values) plan.data.reserve(data_values);
    for (size_t s = 0; s < n_samples; ++s) {
      const neural::SampleNetwork& net = *samples[s];
      fact_off[s].assign(net.num_facts(), kNoValue);
      for (size_t f = 0; f < net.num_facts(); ++f) {
        if (net.fact_template[f] != neural::kNone) continue;
        const size_t size = net.fact_data_begin[f + 1] - net.fact_data_begin[f];
        fact_off[s][f] = alloc.take(size);
        if (options.fact_values)
          plan.data.insert(plan.data.end(), net.fact_data.begin() + net.fact_data_begin[f],
                           net.fact_data.begin() + net.fact_data_begin[f + 1]);
        if (!net.fact_example_param.empty() && net.fact_example_param[f] != neural::kNone) {
          plan.example_fact_off.push_back(fact_off[s][f]);
          plan.example_fact_param.push_back(net.fact_example_param[f]);
        }
      }
    }
    for (size_t s = 0; s < n_samples; ++s) {
      const neural::SampleNetwork& net = *samples[s];
      for (size_t f = 0; f < net.num_facts(); ++f) {
        if (net.fact_template[f] == neural::kNone) continue;
        fact_off[s][f] = alloc.take(net.fact_shape[f].size());
        plan.param_fact_off.push_back(fact_off[s][f]);
        plan.param_fact_param.push_back(model.facts[net.fact_template[f]].param);
      }
      for (size_t l = 0; l < net.num_atoms(); ++l) {
        if (net.atom_depth[l] == 0) {
          const uint32_t f = net.atom_fact[l];
          plan.atom_offsets[s][l] = fact_off[s][f];
          plan.atom_shapes[s][l] = net.fact_shape[f];
        }
      }
    }
  }

  // Buckets: derived atoms by (depth, predicate), ground rules by (head depth, rule).
  // Counted first, so each bucket is filled without regrowing (attention's buckets hold
  // n^2 members); consecutive members mostly share a bucket (ground rules come sorted by
  // rule), so the map is searched once per run of equal keys.
  void bucket_by_depth() {
    using Key = std::pair<uint32_t, uint32_t>;
    auto for_each_member = [&](auto visit) {  // visit(is_atom, key, ref): atoms, then ground rules
      for (uint32_t s = 0; s < n_samples; ++s) {
        const neural::SampleNetwork& net = *samples[s];
        for (uint32_t l = 0; l < net.num_atoms(); ++l)
          if (net.atom_depth[l] != 0) visit(true, Key{net.atom_depth[l], net.atom_predicate[l]}, Ref{s, l});
        for (uint32_t g = 0; g < net.num_ground_rules(); ++g)
          visit(false, Key{net.atom_depth[net.head[g]], net.rule[g]}, Ref{s, g});
      }
    };
    std::map<Key, size_t> atom_counts, rule_counts;
    for_each_member([&, last = Key{0, 0}, count = static_cast<size_t*>(nullptr), last_atom = false](
                        bool atom, const Key& key, const Ref&) mutable {
      if (!count || key != last || atom != last_atom) count = &(atom ? atom_counts : rule_counts)[key];
      last = key, last_atom = atom;
      ++*count;
      if (atom) max_depth = std::max(max_depth, key.first);
    });
    for (const auto& [key, n] : atom_counts) atom_buckets[key].reserve(n);
    for (const auto& [key, n] : rule_counts) rule_buckets[key].reserve(n);
    for_each_member([&, last = Key{0, 0}, bucket = static_cast<std::vector<Ref>*>(nullptr), last_atom = false](
                        bool atom, const Key& key, const Ref& ref) mutable {
      if (!bucket || key != last || atom != last_atom) bucket = &(atom ? atom_buckets : rule_buckets)[key];
      last = key, last_atom = atom;
      bucket->push_back(ref);
    });
  }

  // A ground rule's softmax segment (sample, group), and whether two share a head atom.
  std::pair<uint32_t, uint32_t> softmax_key(const Ref& ref) const {
    return std::make_pair(ref.first, samples[ref.first]->softmax_group[ref.second]);
  }
  bool same_head(const Ref& a, const Ref& b) const {
    return a.first == b.first && samples[a.first]->head[a.second] == samples[b.first]->head[b.second];
  }

  // The atom of ground rule `ref`'s input i.
  uint32_t input_atom(const Ref& ref, size_t i) const {
    const neural::SampleNetwork& net = *samples[ref.first];
    return net.inputs[net.inputs_begin[ref.second] + i];
  }

  // Input i of rule r over its groundings `members`: where each input value lives, its
  // shape (the same for all) and how the literal's weight applies to it. `scanned`: the
  // values' offsets and shape, already found by scan_members.
  InputBlock input_block(uint32_t r, size_t i, const std::vector<Ref>& members, InputBlock* scanned) const {
    const neural::InputSpec& in = model.rules[r].inputs[i];
    const Literal& lit = model.ast().rules[r].body[in.body_index];
    InputBlock B;
    if (scanned) B = std::move(*scanned);
    else input_values(B, r, i, members);
    B.soft_negated = in.soft_negated;
    B.transposed = in.transposed;
    B.weight = in.weight;
    if (B.weight != neural::kNoParam) {
      const Shape w = model.params.info(B.weight).shape;
      try {
        B.mode = weight_mode(w, B.raw_shape, B.wout_shape);
      } catch (const Error&) {
        throw Error(ErrorKind::Shape, lit.span,
                    rule_name(model, r) + ", literal " + literal_text(lit) + ": weight shape " + text(w) +
                        " cannot apply to input shape " + text(B.raw_shape));
      }
    } else {
      B.wout_shape = B.raw_shape;
    }
    B.out_shape = B.transposed ? Shape{B.wout_shape.cols, B.wout_shape.rows} : B.wout_shape;
    return B;
  }

  // B.src and B.raw_shape of input i of rule r; throws naming the literal when its values
  // differ in shape.
  void input_values(InputBlock& B, uint32_t r, size_t i, const std::vector<Ref>& members) const {
    const Literal& lit = model.ast().rules[r].body[model.rules[r].inputs[i].body_index];
    B.src.resize(members.size());
    if (!members.empty()) B.raw_shape = plan.atom_shapes[members[0].first][input_atom(members[0], i)];
    // Members come in runs of one sample: its arrays are looked up once per run (attention
    // has n^2 members in one run).
    for (size_t k = 0; k < members.size();) {
      const uint32_t s = members[k].first;
      const neural::SampleNetwork& net = *samples[s];
      const uint32_t* begin = net.inputs_begin.data();
      const uint32_t* atoms = net.inputs.data() + i;
      const uint32_t* offsets = plan.atom_offsets[s].data();
      const Shape* shapes = plan.atom_shapes[s].data();
      for (; k < members.size() && members[k].first == s; ++k) {
        const uint32_t atom = atoms[begin[members[k].second]];
        if (!(shapes[atom] == B.raw_shape))
          throw Error(ErrorKind::Shape, lit.span,
                      rule_name(model, r) + ", literal " + literal_text(lit) +
                          ": input values have different shapes " + text(B.raw_shape) + " and " + text(shapes[atom]));
        B.src[k] = offsets[atom];
      }
    }
  }

  // What scan_members found about a rule group's members.
  struct MemberScan {
    bool done = false;              // scan_members ran and succeeded
    bool softmax_in_order = false;  // softmax keys never decrease: G.softmax_segments are set
    std::vector<InputBlock> blocks;
    std::vector<uint32_t> head_atoms;  // per head segment
  };

  // One pass over the members reading each one's ground rule once, where the per-input,
  // per-head and per-segment steps read it once each (attention's scores list their ground
  // rules n apart, so each pass costs a cache miss per member): every input's value offsets
  // and shape, the head segments with each head's atom, and, when the softmax keys never
  // decrease, the softmax segments (softmax_in_order). False, with nothing kept, when an
  // input's values differ in shape (input_values then names the literal).
  bool scan_members(RuleGroup& G, size_t n_inputs, bool softmax, const std::vector<Ref>& members,
                    MemberScan& scan) const {
    std::vector<InputBlock>& blocks = scan.blocks;
    std::vector<uint32_t>& head_atoms = scan.head_atoms;
    bool& softmax_in_order = scan.softmax_in_order;
    const size_t n = members.size();
    blocks.assign(n_inputs, InputBlock{});
    for (size_t i = 0; i < n_inputs; ++i) {
      blocks[i].src.resize(n);
      if (n) blocks[i].raw_shape = plan.atom_shapes[members[0].first][input_atom(members[0], i)];
    }
    G.head_segments.assign(1, 0);
    if (softmax) G.softmax_segments.assign(1, 0);
    softmax_in_order = softmax;
    head_atoms.clear();
    uint32_t last_head = 0, last_group = 0;
    for (size_t k = 0; k < n;) {
      const uint32_t s = members[k].first;
      const neural::SampleNetwork& net = *samples[s];
      const uint32_t* begin = net.inputs_begin.data();
      const uint32_t* offsets = plan.atom_offsets[s].data();
      const Shape* shapes = plan.atom_shapes[s].data();
      for (bool new_sample = true; k < n && members[k].first == s; ++k, new_sample = false) {
        const uint32_t g = members[k].second, h = net.head[g];
        if (k == 0 || new_sample || h != last_head) {
          if (k) G.head_segments.push_back(static_cast<uint32_t>(k));
          head_atoms.push_back(h);
        }
        if (softmax_in_order) {
          const uint32_t group = net.softmax_group[g];
          if (k && !new_sample && group < last_group) softmax_in_order = false;
          else if (k && (new_sample || group != last_group)) G.softmax_segments.push_back(static_cast<uint32_t>(k));
          last_group = group;
        }
        last_head = h;
        const uint32_t* atoms = net.inputs.data() + begin[g];
        for (size_t i = 0; i < n_inputs; ++i) {
          if (!(shapes[atoms[i]] == blocks[i].raw_shape)) return false;
          blocks[i].src[k] = offsets[atoms[i]];
        }
      }
    }
    if (n) G.head_segments.push_back(static_cast<uint32_t>(n));
    if (n && softmax_in_order) G.softmax_segments.push_back(static_cast<uint32_t>(n));
    return true;
  }

  // The members [b, e) of one sample form a grid when their softmax groups repeat one run
  // of consecutive groups, rows = the run's length, over and over (cols times: full
  // attention's scores listed key by key); then the stable sort by group is the grid's
  // transposition. Returns rows, or 0 when the members form no grid (or one run only).
  static uint32_t grid_rows(const neural::SampleNetwork& net, const std::vector<Ref>& members, size_t b, size_t e) {
    const auto group = [&](size_t k) { return net.softmax_group[members[k].second]; };
    const uint32_t first = group(b);
    size_t rows = 1;
    while (b + rows < e && group(b + rows) == first + rows) ++rows;
    if (rows == e - b || (e - b) % rows != 0) return 0;
    for (size_t k = b + rows; k < e; ++k)
      if (group(k) != first + (k - b) % rows) return 0;
    return static_cast<uint32_t>(rows);
  }

  // When every head has one grounding (attention weights w(I, J)) the members may be
  // listed in any order: listing them by softmax segment makes every segment a contiguous
  // run, so no permutation is needed (and full attention's scores are one row-major block
  // per query). Members come sorted by (sample, head). Returns whether it reordered them.
  // With `scan` (the in-order shortcuts), the reordering pass is also scan_members' pass:
  // each member's ground rule is read in the network's order (sequential reads) and what
  // it gives is written at the member's new position, and the softmax segments come from
  // the counting sort itself (scan->done false, with the order still made, when an input's
  // values differ in shape: input_values then names the literal).
  bool order_by_softmax_segment(std::vector<Ref>& members, RuleGroup& G, size_t n_inputs, MemberScan* scan) const {
    bool one_per_head = true;
    for (size_t k = 1; k < members.size() && one_per_head; ++k) one_per_head = !same_head(members[k], members[k - 1]);
    const auto by_segment = [&](const Ref& a, const Ref& b) { return softmax_key(a) < softmax_key(b); };
    if (!one_per_head || std::is_sorted(members.begin(), members.end(), by_segment)) return false;
    const size_t n = members.size();
    bool scanning = scan != nullptr;
    if (scan) {
      scan->blocks.assign(n_inputs, InputBlock{});
      for (size_t i = 0; i < n_inputs; ++i) {
        scan->blocks[i].src.resize(n);
        scan->blocks[i].raw_shape = plan.atom_shapes[members[0].first][input_atom(members[0], i)];
      }
      scan->head_atoms.resize(n);
      G.softmax_segments.clear();
    }
    // Members are in sample order already: a stable counting sort by group within each
    // sample's run is the stable sort by (sample, group), in linear time.
    std::vector<Ref> sorted(n);
    for (size_t b = 0; b < n;) {
      const uint32_t s = members[b].first;
      const neural::SampleNetwork& net = *samples[s];
      const uint32_t* offsets = plan.atom_offsets[s].data();
      const Shape* shapes = plan.atom_shapes[s].data();
      size_t e = b;
      uint32_t groups = 0;
      for (; e < n && members[e].first == s; ++e) groups = std::max(groups, net.softmax_group[members[e].second] + 1);
      std::vector<uint32_t> start(size_t(groups) + 1, 0);
      for (size_t k = b; k < e; ++k) ++start[net.softmax_group[members[k].second] + 1];
      for (uint32_t q = 0; q < groups; ++q) start[q + 1] += start[q];
      if (scan)
        for (uint32_t q = 0; q < groups; ++q)
          if (start[q + 1] > start[q]) G.softmax_segments.push_back(static_cast<uint32_t>(b + start[q]));
      auto place = [&](size_t k, size_t at) {
        const uint32_t g = members[k].second;
        sorted[at] = members[k];
        if (!scanning) return;
        scan->head_atoms[at] = net.head[g];
        const uint32_t* atoms = net.inputs.data() + net.inputs_begin[g];
        for (size_t i = 0; i < n_inputs && scanning; ++i) {
          scanning = shapes[atoms[i]] == scan->blocks[i].raw_shape;
          scan->blocks[i].src[at] = offsets[atoms[i]];
        }
      };
      const uint32_t rows = scan ? grid_rows(net, members, b, e) : 0;  // (the general sort without shortcuts)
      if (rows > 0) {
        // The sort is a transposition (member j * rows + i goes to i * cols + j), done in
        // column strips (neural/grid_order.hpp).
        const size_t cols = (e - b) / rows;
        neural::visit_in_column_strips(rows, cols, [&](size_t i, size_t j) { place(b + j * rows + i, b + i * cols + j); });
      } else {
        for (size_t k = b; k < e; ++k) place(k, b + start[net.softmax_group[members[k].second]]++);
      }
      b = e;
    }
    members = std::move(sorted);
    if (scanning) {
      G.softmax_segments.push_back(static_cast<uint32_t>(n));
      G.head_segments.resize(n + 1);
      for (size_t k = 0; k <= n; ++k) G.head_segments[k] = static_cast<uint32_t>(k);
      scan->softmax_in_order = true;
      scan->done = true;
    } else if (scan) {
      *scan = MemberScan{};
      G.softmax_segments.clear();
    }
    return true;
  }

  // ---- pair blocks (neural::SampleNetwork::pair_blocks) ----
  // Each block's scores are a rule group at its pair depth and its weighted sums one at its
  // head depth. Pairs are listed row by row (query-major), so each row is a softmax segment
  // and the sums' head segments; when the rows, columns and values lie back to back in the
  // value buffer the groups are dense (no mask) or banded (a causal mask) products whose
  // members need no per-pair arrays; otherwise the per-pair input offsets are written out
  // and the general detection and kernels run.
  std::vector<std::vector<uint32_t>> block_score_group;  // per sample and block: its scores' rule group

  void add_pair_block_groups(uint32_t depth) {
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
  static std::vector<uint32_t> block_row_begin(const logic::PairBlock& b) {
    std::vector<uint32_t> begin(b.rows() + 1, 0);
    for (size_t r = 0; r < b.rows(); ++r) begin[r + 1] = begin[r] + b.band_of(r);
    return begin;
  }

  // The value offsets of `atoms` when they lie back to back (atom i at first + i * len) with
  // one shape (returned, with `first`); false otherwise. Throws naming the literal when the
  // shapes differ.
  bool back_to_back(uint32_t s, const std::vector<uint32_t>& atoms, uint32_t r, size_t input, Shape& shape,
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
  void write_score_sources(uint32_t s, const logic::PairBlock& b, size_t i, std::vector<uint32_t>& src) const {
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
  uint32_t add_block_scores(uint32_t s, const logic::PairBlock& b) {
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
  void add_block_sums(uint32_t s, const logic::PairBlock& b, const RuleGroup& scores) {
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
  bool plan_block_inputs(RuleGroup& G, const neural::RuleSpec& spec, MemberScan& scan, bool fast, Fits direct_fits,
                         Sources sources_of, std::vector<Shape>& z_shapes) {
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
  static bool block_tiles_fit(const logic::PairBlock& b, const std::vector<uint32_t>& row_begin) {
    if (b.band.empty()) return true;
    DirectProduct d;
    set_block_shape(d, b, row_begin);
    return banded_tile_entries(d) <= 2 * b.pairs() + kTileRows;
  }

  // A dense block (every row pairs with every column) or a banded one (row r with the
  // columns first(r) .. first(r) + band(r) - 1), run as tiles when they hold at most twice
  // the pairs.
  static void set_block_shape(DirectProduct& d, const logic::PairBlock& b, const std::vector<uint32_t>& row_begin) {
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

  // All ground rules of template rule r at this depth: one RuleGroup, planned in steps
  // (their order is the order of the value buffer's allocations).
  void add_rule_group(const uint32_t r, std::vector<Ref> members) {
    const neural::RuleSpec& spec = model.rules[r];
    RuleGroup G = new_rule_group(r, members.size());
    MemberScan scan;
    MemberScan* scanning = options.in_order_shortcuts ? &scan : nullptr;
    const bool reordered = spec.softmax && order_by_softmax_segment(members, G, spec.inputs.size(), scanning);
    if (scanning && !reordered) scan.done = scan_members(G, spec.inputs.size(), spec.softmax, members, scan);
    const std::vector<Shape> z_shapes = plan_rule_inputs(G, spec, members, scan);
    plan_combination_and_activation(G, spec, z_shapes);
    plan_head_segments(G, members, scan.done);
    if (G.softmax) plan_softmax_segments(G, members, scan.done && scan.softmax_in_order);
    plan_aggregation_and_head_weight(G, spec);
    add_contributions(G, spec, members, scan);
    add_rule_step(std::move(G));
  }

  // A group of n ground rules of template rule r, its functions set from the rule.
  RuleGroup new_rule_group(uint32_t r, size_t n) const {
    RuleGroup G;
    G.rule = r;
    G.n = static_cast<uint32_t>(n);
    G.combination = model.rules[r].combination;
    G.activation = model.rules[r].activation;
    return G;
  }

  // Appends G and the step that runs it; returns G's index.
  uint32_t add_rule_step(RuleGroup G) {
    plan.steps.push_back({false, static_cast<uint32_t>(plan.rule_groups.size())});
    plan.rule_groups.push_back(std::move(G));
    return static_cast<uint32_t>(plan.rule_groups.size() - 1);
  }

  // The input blocks (weights applied, transposes) and where their values live; a direct
  // product or a transform-sum needs no per-grounding inputs. Returns the inputs' shapes.
  std::vector<Shape> plan_rule_inputs(RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                                      MemberScan& scan) {
    const uint32_t r = G.rule;
    std::vector<Shape> z_shapes;
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
      G.inputs.push_back(input_block(r, i, members, scan.done ? &scan.blocks[i] : nullptr));
      z_shapes.push_back(G.inputs.back().out_shape);
    }
    G.direct = plan_direct_product(G.combination, G.inputs);
    if (transform_sum_applies(G, spec)) {
      const RuleGroup* groups = plan.rule_groups.data();
      // The distinct heads (members come sorted by (sample, head)): whether to sum first.
      uint32_t heads = 0;
      if (options.transform_sum_first) {
        if (scan.done) heads = static_cast<uint32_t>(G.head_segments.size() - 1);
        else
          for (size_t k = 0; k < members.size(); ++k) heads += k == 0 || !same_head(members[k], members[k - 1]);
      }
      plan_transform_sum(G, alloc, groups + depth_first_group, groups + plan.rule_groups.size(), heads,
                         options.transform_sum_first);
    } else if (G.direct.kind == DirectProduct::Kind::None) {
      for (InputBlock& B : G.inputs) {
        B.x_off = alloc.take(static_cast<size_t>(G.n) * B.raw_shape.size());
        B.w_off = B.mode == WeightMode::None ? B.x_off
                                              : alloc.take(static_cast<size_t>(G.n) * B.wout_shape.size());
        B.z_off = real_transpose(B) ? alloc.take(static_cast<size_t>(G.n) * B.out_shape.size()) : B.w_off;
      }
    } else {
      for (InputBlock& B : G.inputs) B.x_off = B.w_off = B.z_off = kNoValue;
    }
    return z_shapes;
  }

  // The combined value's shape, the offset and the activation, and their buffers.
  void plan_combination_and_activation(RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Shape>& z_shapes) {
    const uint32_t r = G.rule;
    const Rule& rule = model.ast().rules[r];
    if (z_shapes.empty()) {
      G.comb_shape = {1, 1};
    } else {
      try {
        G.comb_shape = combination_shape(spec.combination, z_shapes);
      } catch (const Error& e) {
        throw Error(ErrorKind::Shape, rule.span, rule_name(model, r) + ": " + e.message());
      }
    }
    G.offset = spec.offset;
    G.softmax = spec.softmax;
    G.aggregation = spec.softmax ? AggregationKind::Sum : spec.aggregation.kind;
    G.direct.fused_sum = G.direct.kind != DirectProduct::Kind::None && G.offset == neural::kNoParam &&
                         G.activation.kind == ActivationKind::Identity && !G.softmax &&
                         (G.aggregation == AggregationKind::Sum || G.aggregation == AggregationKind::Avg);
    // A fused sum never stores the per-grounding values: no room is taken for them.
    const size_t per_rule = G.direct.fused_sum || G.transform.enabled ? 0 : G.n;
    G.comb_off = alloc.take(per_rule * G.comb_shape.size());
    G.pre_off = G.comb_off;
    if (G.offset != neural::kNoParam) {
      const Shape b = model.params.info(G.offset).shape;
      if (!b.scalar() && !(b == G.comb_shape))
        throw Error(ErrorKind::Shape, rule.offset ? rule.offset->span : rule.span,
                    rule_name(model, r) + ": offset shape " + text(b) +
                        " differs from the combined value's shape " + text(G.comb_shape));
      G.pre_off = alloc.take(static_cast<size_t>(G.n) * G.comb_shape.size());
    }
    try {
      G.act_shape = activation_shape(spec.activation, G.comb_shape);
    } catch (const Error& e) {
      throw Error(ErrorKind::Shape, rule.span, rule_name(model, r) + ": " + e.message());
    }
    // An identity activation leaves the values where they are.
    G.act_off = G.direct.fused_sum || G.transform.enabled || G.activation.kind == ActivationKind::Identity
                    ? G.pre_off
                    : alloc.take(per_rule * G.act_shape.size());
  }

  // Head segments (unless `scanned`): members are sorted by (sample, head).
  void plan_head_segments(RuleGroup& G, const std::vector<Ref>& members, bool scanned) {
    if (!scanned) {
      G.head_segments.assign(1, 0);
      for (uint32_t k = 1; k <= G.n; ++k)
        if (k == G.n || !same_head(members[k], members[k - 1])) G.head_segments.push_back(k);
    }
    G.m = static_cast<uint32_t>(G.head_segments.size() - 1);
    if (G.direct.kind != DirectProduct::Kind::None) {
      plan_dense_block(G, G.direct);
      if (!G.direct.dense) plan_banded_block(G, G.direct);
    }
  }

  // Softmax segments: groundings of one sample agreeing on the non-normalised variables.
  // (`in_order`: scan_members found them contiguous and set G.softmax_segments.)
  void plan_softmax_segments(RuleGroup& G, const std::vector<Ref>& members, bool in_order) {
    auto key = [&](uint32_t k) { return softmax_key(members[k]); };
    bool identity = in_order;
    if (!identity) {
      G.softmax_perm.resize(G.n);
      for (uint32_t k = 0; k < G.n; ++k) G.softmax_perm[k] = k;
      const auto by_key = [&](uint32_t a, uint32_t b) { return key(a) < key(b); };
      // Already in segment order when every head has one grounding (attention): no sort.
      if (!std::is_sorted(G.softmax_perm.begin(), G.softmax_perm.end(), by_key))
        std::stable_sort(G.softmax_perm.begin(), G.softmax_perm.end(), by_key);
      G.softmax_segments.assign(1, 0);
      for (uint32_t k = 1; k <= G.n; ++k)
        if (k == G.n || key(G.softmax_perm[k]) != key(G.softmax_perm[k - 1])) G.softmax_segments.push_back(k);
      identity = true;
      for (uint32_t k = 0; k < G.n && identity; ++k) identity = G.softmax_perm[k] == k;
    }
    const size_t len = static_cast<size_t>(G.n) * G.act_shape.size();
    if (identity) {
      G.softmax_perm.clear();  // segments already contiguous: nothing to permute
      G.perm_off = G.act_off;
      G.psoft_off = alloc.take(len);
      G.soft_off = G.psoft_off;
    } else {
      G.perm_off = alloc.take(len);
      G.psoft_off = alloc.take(len);
      G.soft_off = alloc.take(len);
    }
  }

  // The aggregation over each head's groundings and the head weight after it.
  void plan_aggregation_and_head_weight(RuleGroup& G, const neural::RuleSpec& spec) {
    const uint32_t r = G.rule;
    const Rule& rule = model.ast().rules[r];
    G.agg_shape = group_aggregation_shape(G.aggregation, G.act_shape, G.head_segments, rule_name(model, r), rule.span);
    // One grounding per head and a sum/avg/max/min: each aggregate is its one input.
    G.identity_aggregation =
        G.m == G.n && !G.direct.fused_sum && !G.transform.enabled && neural::single_value_identity(G.aggregation);
    if (G.transform.enabled) {
      TransformSum& t = G.transform;
      t.rows_are_heads = G.m == G.n && t.sources.size() == G.n;
      for (uint32_t k = 0; k < G.n && t.rows_are_heads; ++k) t.rows_are_heads = t.row_of[k] == k;
    }
    if (G.identity_aggregation) G.agg_off = G.softmax ? G.soft_off : G.act_off;
    else if (G.transform.rows_are_heads) G.agg_off = G.transform.t_off;
    else G.agg_off = alloc.take(static_cast<size_t>(G.m) * G.agg_shape.size());
    G.head_weight = spec.head_weight;
    G.out_shape = G.agg_shape;
    G.out_off = G.agg_off;
    if (G.head_weight != neural::kNoParam) {
      const Shape w = model.params.info(G.head_weight).shape;
      try {
        G.head_mode = weight_mode(w, G.agg_shape, G.out_shape);
      } catch (const Error&) {
        throw Error(ErrorKind::Shape, rule.head.span,
                    rule_name(model, r) + ": head weight shape " + text(w) +
                        " cannot apply to the aggregated value's shape " + text(G.agg_shape));
      }
      G.out_off = alloc.take(static_cast<size_t>(G.m) * G.out_shape.size());
    }
  }

  // Each head's value is a contribution to its atom.
  void add_contributions(const RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                         const MemberScan& scan) {
    std::vector<Contribution>& list = contributions[spec.head_predicate];
    if (list.capacity() < list.size() + G.m) list.reserve(std::max(list.size() + G.m, 2 * list.capacity()));
    for (uint32_t j = 0; j < G.m; ++j) {
      const auto [s, g] = members[G.head_segments[j]];
      const uint32_t atom = scan.done ? scan.head_atoms[j] : samples[s]->head[g];
      list.push_back({s, atom, G.out_off + j * static_cast<uint32_t>(G.out_shape.size()), G.out_shape});
    }
  }

  // When every one of the m atoms of predicate p at this depth has exactly one contribution
  // (attention's pair atoms w(I, J): one ground rule each, no fact value), a pass-through
  // group's atoms take their input's value offset straight from the contributions, in
  // whatever order they come (softmax order for the weights), without sorting them by atom.
  // False, with nothing changed, when an atom has none or several.
  bool pass_contributions_through(uint32_t p, size_t m, const std::vector<Contribution>& list, Shape shape) {
    if (list.size() != m) return false;
    // Set as visited; an atom already placed (a second contribution, a fact) or of another
    // predicate stops it, and what was set is unset (an unplaced atom's shape is 1x1).
    size_t set = 0;
    bool ok = true;
    for_each_by_atom(list, [&](const Contribution& c) {
      if (!ok) return;
      uint32_t& off = plan.atom_offsets[c.sample][c.atom];
      ok = off == kNoValue && samples[c.sample]->atom_predicate[c.atom] == p;
      if (!ok) return;
      off = c.offset;
      plan.atom_shapes[c.sample][c.atom] = shape;
      ++set;
    });
    if (ok) return true;
    size_t undone = 0;
    for_each_by_atom(list, [&](const Contribution& c) {
      if (undone++ >= set) return;
      plan.atom_offsets[c.sample][c.atom] = kNoValue;
      plan.atom_shapes[c.sample][c.atom] = Shape{1, 1};
    });
    return false;
  }

  // Visits every contribution of `list` once: in list order, or, when the list's atoms are
  // a grid numbered the other way round (entry i * cols + j is atom a0 + j * rows + i, all
  // of one sample: attention's pair atoms w(I, J), numbered key by key and listed query by
  // query), in column strips (neural/grid_order.hpp).
  template <class Visit>
  static void for_each_by_atom(const std::vector<Contribution>& list, Visit visit) {
    const size_t n = list.size();
    size_t cols = 1;
    const uint32_t a0 = n ? list[0].atom : 0, step = n > 1 ? list[1].atom - a0 : 0;
    while (cols < n && list[cols].atom == a0 + cols * step && list[cols].sample == list[0].sample) ++cols;
    const size_t rows = cols > 1 && cols < n && n % cols == 0 ? n / cols : 0;
    bool grid = rows > 1 && step == rows;
    for (size_t k = 0; k < n && grid; ++k)
      grid = list[k].sample == list[0].sample && list[k].atom == a0 + (k % cols) * rows + k / cols;
    if (!grid) {
      for (const Contribution& c : list) visit(c);
      return;
    }
    neural::visit_in_column_strips(rows, cols, [&](size_t i, size_t j) { visit(list[i * cols + j]); });
  }

  // A.segments and A.src: the contributions sorted by atom (stable: rule order kept).
  void sort_contributions_by_atom(AtomGroup& A, const std::vector<Ref>& members, const std::vector<Contribution>& list,
                                  const std::string& where) {
    if (atom_position.empty()) {
      atom_position.resize(n_samples);
      for (size_t s = 0; s < n_samples; ++s) atom_position[s].assign(samples[s]->num_atoms(), kNoValue);
    }
    // Each derived atom is in one group, so the entries of other groups never collide.
    for (uint32_t j = 0; j < A.m; ++j) atom_position[members[j].first][members[j].second] = j;
    std::vector<uint32_t> count(A.m + 1, 0);
    std::vector<uint32_t> pos_of(list.size());
    for (size_t c = 0; c < list.size(); ++c) {
      const uint32_t j = atom_position[list[c].sample][list[c].atom];
      if (j >= A.m || !(members[j] == Ref{list[c].sample, list[c].atom}))
        throw Error(ErrorKind::Runtime, where + ": contribution to an unknown atom");
      pos_of[c] = j;
      ++count[j + 1];
    }
    for (uint32_t j = 0; j < A.m; ++j) count[j + 1] += count[j];
    A.segments = count;
    A.src.resize(list.size());
    std::vector<uint32_t> fill(count.begin(), count.end() - 1);
    for (size_t c = 0; c < list.size(); ++c) A.src[fill[pos_of[c]]++] = list[c].offset;
  }

  // All derived atoms of predicate p at this depth: one AtomGroup (none when each atom is
  // its one input).
  void add_atom_group(const uint32_t p, const std::vector<Ref>& members) {
    const neural::PredicateSpec& pred = model.predicates[p];
    const std::string where = "atoms of " + pred.key();
    AtomGroup A;
    A.predicate = p;
    A.m = static_cast<uint32_t>(members.size());
    std::vector<Contribution>& list = contributions[p];
    for (uint32_t j = 0; j < A.m; ++j) {
      const auto [s, l] = members[j];
      const uint32_t f = samples[s]->atom_fact[l];
      if (f != neural::kNone) list.push_back({s, l, fact_off[s][f], samples[s]->fact_shape[f]});
    }
    A.in_shape = list.empty() ? Shape{1, 1} : list[0].shape;
    for (const Contribution& c : list)
      if (!(c.shape == A.in_shape))
        throw Error(ErrorKind::Shape, where + ": the rules deriving them (and their fact values) "
                                              "give different shapes " +
                                          text(A.in_shape) + " and " + text(c.shape));
    // (A product of matrices is refused below, even of one input.)
    const bool passes_one_input = neural::passes_one_input(pred, A.in_shape);
    if (options.in_order_shortcuts && passes_one_input && pass_contributions_through(p, A.m, list, A.in_shape))
      return;
    sort_contributions_by_atom(A, members, list, where);
    A.combination = pred.combination;
    if (pred.scalars_only && !A.in_shape.scalar())
      throw Error(ErrorKind::Shape, where + ": combination 'product' of atoms multiplies matrices, which lrnn "
                                            "does for rule inputs only; the rules give " + text(A.in_shape) +
                                            " values (use elproduct for an element-wise product)");
    // Atoms with one input each, combined by sum/avg/max/min, without offset and with an
    // identity activation are their input: they take its value offset and run no step.
    bool one_input_each = true;
    for (uint32_t j = 0; j <= A.m && one_input_each; ++j) one_input_each = A.segments[j] == j;
    const bool pass_through = one_input_each && passes_one_input;
    if (pass_through) {
      for (uint32_t j = 0; j < A.m; ++j) {
        const auto [s, l] = members[j];
        plan.atom_offsets[s][l] = A.src[j];
        plan.atom_shapes[s][l] = A.in_shape;
      }
      return;
    }
    const Shape red_shape = A.combination == AggregationKind::Count ? Shape{1, 1} : A.in_shape;
    A.summed_in_place = A.combination == AggregationKind::Sum || A.combination == AggregationKind::Avg;
    A.c_off = A.summed_in_place ? kNoValue : alloc.take(A.src.size() * A.in_shape.size());
    A.red_off = alloc.take(static_cast<size_t>(A.m) * red_shape.size());
    A.offset = pred.offset;
    A.pre_off = A.red_off;
    if (A.offset != neural::kNoParam && !A.summed_in_place) {
      A.pre_off = alloc.take(static_cast<size_t>(A.m) * red_shape.size());
    }
    if (A.offset != neural::kNoParam) check_atom_offset_shape(model, A.offset, red_shape, where);
    if (pred.norm != neural::kNoParam) plan_batch_norm(A, model.batch_norms[pred.norm], red_shape, where);
    A.activation = pred.activation;
    A.out_shape = activation_shape(A.activation, red_shape);
    A.out_off = options.in_place_atoms && fusable_atom_sum(A) ? A.red_off
                                                              : alloc.take(static_cast<size_t>(A.m) * A.out_shape.size());
    for (uint32_t j = 0; j < A.m; ++j) {
      const auto [s, l] = members[j];
      plan.atom_offsets[s][l] = A.out_off + j * static_cast<uint32_t>(A.out_shape.size());
      plan.atom_shapes[s][l] = A.out_shape;
    }
    if (A.norm != neural::kNoParam) plan.norm_steps.push_back(static_cast<uint32_t>(plan.steps.size()));
    plan.steps.push_back({true, static_cast<uint32_t>(plan.atom_groups.size())});
    plan.atom_groups.push_back(std::move(A));
  }

  // x^ and the scaled, shifted values get slots of their own (the offset is then never
  // added in place: red_off keeps the unnormalised sums that backward reads through x^).
  void plan_batch_norm(AtomGroup& A, const neural::BatchNormSpec& norm, Shape red_shape, const std::string& where) {
    if (A.combination == AggregationKind::Count)
      throw Error(ErrorKind::Semantic, where + ": normalization=batch of a count combination is not supported");
    const Shape shape = model.params.info(norm.scale).shape;
    if (!(shape == red_shape))
      throw Error(ErrorKind::Shape, model.params.info(norm.scale).span,
                  where + ": normalization=batch takes its shape " + text(shape) +
                      " from the predicate's offset, but the atoms' values are " + text(red_shape));
    A.norm = model.predicates[A.predicate].norm;
    A.norm_scale = norm.scale;
    A.norm_mean = norm.mean;
    A.norm_var = norm.var;
    A.norm_off = alloc.take(static_cast<size_t>(A.m) * red_shape.size());
    if (A.pre_off == A.red_off) A.pre_off = alloc.take(static_cast<size_t>(A.m) * red_shape.size());
  }

  void place_outputs() {
    for (uint32_t s = 0; s < n_samples; ++s) {
      const neural::SampleNetwork& net = *samples[s];
      for (uint32_t q = 0; q < net.query_atoms.size(); ++q) {
        if (net.query_atoms[q].empty()) {
          plan.outputs.push_back({s, q, kNoValue, kNoValue, {1, 1}});
          continue;
        }
        for (uint32_t l : net.query_atoms[q])
          plan.outputs.push_back({s, q, l, plan.atom_offsets[s][l], plan.atom_shapes[s][l]});
      }
    }
  }
};

}  // namespace

Plan build_plan(const neural::TemplateModel& model,
                const std::vector<const neural::SampleNetwork*>& samples, const PlanOptions& options) {
  return PlanBuilder(model, samples, options).build();
}

}  // namespace lrnn::exec
