// The transform-sum rewrite (registry.hpp; docs/semantics.md "Plan rewrites"): a rule group
// whose groundings each transform one input by the same matrix sums per head the transforms
// of its distinct inputs, computed once each (and shared with a same-depth group over the
// same inputs).
#include <algorithm>

#include "exec/plan_builder.hpp"
#include "exec/rewrites/registry.hpp"

const lrnn::exec::RewriteInfo lrnn::exec::rewrites::kTransformSum{"transform_sum",
    "one input under a matrix weight transformed once per distinct input, summed per head",
    "docs/semantics.md \"Plan rewrites\""};

namespace lrnn::exec::planning {

namespace {

// sources = the distinct values of src, ascending; row_of[k] = the position of src[k] in
// them. Inputs usually span a range of a few values per grounding: a table over that range
// finds them in linear time; otherwise sort and binary search.
void distinct_sources(const std::vector<uint32_t>& src, uint32_t size, std::vector<uint32_t>& sources,
                      std::vector<uint32_t>& row_of) {
  sources.clear();
  row_of.resize(src.size());
  if (src.empty()) return;
  if (rows_in_order(src, size)) {  // the common case of one grounding per input atom, in order
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

}  // namespace

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
// The distinct inputs of G's one input block and each grounding's row among them; takes
// room for the gathered inputs (unless they lie back to back) and their transforms.
void plan_transform_sum(RuleGroup& G, Allocator& alloc, const RuleGroup* same_depth_begin,
                        const RuleGroup* same_depth_end, uint32_t heads, bool sum_first, bool data_inputs,
                        double sum_first_ratio) {
  InputBlock& B = G.inputs[0];
  // A big group over data facts (a GCN's first neighbour rule on one big graph) sums its
  // inputs first even where it could share another group's transform: its backward then
  // has no scatter at all (dW = gagg^T S; the facts take no gradient), where summing the
  // shared transformed rows sent every grounding's gradient back to its row, a random
  // read-modify-write of a row per edge, and its forward gathers the narrower inputs. The
  // GEMM it no longer shares costs less than those passes over memory; on small groups
  // (a molecule's) the rows are in cache and sharing stays.
  const bool sum_data_first = data_inputs && heads > 0 && B.src.size() > heads && B.src.size() >= kSumDataFirstMin;
  TransformSum& t = G.transform;
  t.enabled = true;
  const uint32_t in = static_cast<uint32_t>(B.raw_shape.size());
  distinct_sources(B.src, in, t.sources, t.row_of);
  const size_t u = t.sources.size();
  t.contiguous = true;
  for (size_t r = 1; r < u && t.contiguous; ++r) t.contiguous = t.sources[r] == t.sources[0] + r * in;
  B.x_off = B.w_off = B.z_off = kNoValue;
  for (const RuleGroup* other = sum_data_first ? same_depth_end : same_depth_begin; other != same_depth_end; ++other) {
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
  if (sum_data_first || (sum_first && heads > 0 && double(u) >= sum_first_ratio * double(heads) && u > heads)) {
    t.sum_first = true;
    t.x_off = t.t_off = kNoValue;
    t.s_off = alloc.take_rows(size_t(heads), in);
    return;
  }
  t.x_off = t.contiguous ? t.sources[0] : alloc.take_rows(u, in);
  t.t_off = alloc.take_rows(u, B.wout_shape.size());
}

void plan_backward_by_row(RuleGroup& G) {
  TransformSum& t = G.transform;
  t.row_begin.clear();
  t.row_heads.clear();
  const size_t u = t.sources.size(), width = G.inputs[0].wout_shape.size();
  if (!t.enabled || t.sum_first || t.rows_are_heads || u * width < kBackwardByRowMinEntries) return;
  // A counting sort of the groundings by row, stable: a row's groundings in their order.
  t.row_begin.assign(u + 1, 0);
  for (uint32_t r : t.row_of) ++t.row_begin[r + 1];
  for (size_t r = 0; r < u; ++r) t.row_begin[r + 1] += t.row_begin[r];
  std::vector<uint32_t> next(t.row_begin.begin(), t.row_begin.end() - 1);
  t.row_heads.resize(t.row_of.size());
  for (uint32_t h = 0; h < G.m; ++h)
    for (uint32_t k = G.head_segments[h]; k < G.head_segments[h + 1]; ++k) t.row_heads[next[t.row_of[k]]++] = h;
}

}  // namespace lrnn::exec::planning
