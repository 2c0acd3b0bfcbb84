// The weight-after-readout rewrite (registry.hpp; docs/semantics.md "Plan rewrites"): a
// layer's head weight moved past the sum or average that is its rows' only reader. A GCN
// whose last layer has no activation, read out by an average, as PyNeuraLogic's benchmark
// table writes it,
//
//   {10,10} l2(X) :- l1(Y), *edge(Y, X). [aggregation=sum]
//   {1,10} predict :- l2(X). [aggregation=avg]
//
// is planned as l2's neighbour sums s_X, one GEMM W s_X per node into l2's rows, and the
// readout's average of those rows: avg_X(W s_X). The same function is W avg_X(s_X): one
// matrix-vector product per readout head instead of a GEMM over every node, forward and
// both GEMMs of backward (at batch 1 on NCI1, a tenth of the GCN's epoch). Here the layer
// (L) keeps its aggregates as its rows, and the readout (R) averages those and applies W to
// its aggregates before its own head weight (RuleGroup::readout_weight).
//
// It applies to a rule group L whose last stage is a square matrix head weight on column
// vectors of its aggregates (a per-head sum's rows, or its input's where they lie:
// DirectProduct::input_rows), whose out rows no atom group touches (L's atoms have no
// activation, offset or normalisation: they are the rows where they lie) and whose rows are
// read by one later rule group R alone (no other group's or atom group's input, no output),
// as R's one unweighted input summed or averaged per head where it lies (a fused direct
// sum: no softmax, no offset, identity activation; no readout weight of its own yet). Since
// R's every member is a row of L, R's head h is avg_k(W s_k) = W avg_k(s_k). One more group
// may have added its head weight's products to L's rows (shared_head_rows: a GraphSAGE
// layer, W1 x + W2 y), the same way: both weights move, R averaging each group's
// aggregates. R's aggregates and readout rows take the slot L's out rows had (R has at most
// as many heads per moved weight as L, else it does not apply), which lies in L's step
// values: still cleared after L's backward, the last to read it (Plan::step_values).
//
// Where L's aggregates are themselves a plain per-head sum or average that nothing else
// reads (a GCN layer's neighbour sums), R reads through them (read_through_sums below): its
// members become the rows they summed, with coefficients, and L computes nothing.
//
// The same values up to the order of additions. L's atoms then hold s, not W s: training
// and evaluation plans only (PlanOptions::share_head_rows), the second count of `lrnn ground
// --stats`; a partitioned sample's plans, whose owned atoms other ranks read outside the
// plan, turn it off (train/ghost_exchange.hpp).
#include <algorithm>
#include <map>
#include <utility>

#include "exec/plan_builder.hpp"
#include "exec/rewrites/registry.hpp"

const lrnn::exec::RewriteInfo lrnn::exec::rewrites::kWeightAfterReadout{"weight_after_readout",
    "a layer's matrix weight applied after the sum or average that alone reads its rows, W avg(x) for avg(W x); "
    "training plans only",
    "docs/semantics.md \"Plan rewrites\""};

namespace lrnn::exec::planning {

namespace {

struct Rows {
  uint32_t begin, end;
  bool holds(uint32_t off) const { return off >= begin && off < end; }
};

// Whether G ends in a square matrix head weight on column vectors of its own aggregates
// (rows in head order: a per-head sum's, or its input's where they lie), with `agg` the
// aggregates' shape.
bool movable_head_weight(const RuleGroup& G, Shape agg) {
  return G.head_weight != neural::kNoParam && G.head_mode == WeightMode::MatMul && G.agg_shape == agg &&
         agg.cols == 1 && G.out_shape == agg && G.out_off != G.agg_off && G.m > 0 &&
         G.readout_weight == neural::kNoParam && (G.direct.input_rows || !G.identity_aggregation);
}

// The groups whose head weights write the rows at `out_off`: the one that stores them, then
// (at most) one that adds (shared_head_rows). Empty when they are not that.
std::vector<size_t> writers_of(const Plan& plan, size_t first) {
  const RuleGroup& F = plan.rule_groups[first];
  if (F.adds_to_out || !movable_head_weight(F, F.agg_shape)) return {};
  std::vector<size_t> writers{first};
  for (size_t a = first + 1; a < plan.rule_groups.size(); ++a) {
    const RuleGroup& A = plan.rule_groups[a];
    if (!A.adds_to_out || A.out_off != F.out_off) continue;
    if (writers.size() == 2 || !movable_head_weight(A, F.agg_shape) || A.direct.input_rows || A.m != F.m) return {};
    writers.push_back(a);
  }
  return writers;
}

// Whether R sums or averages one unweighted input's rows per head where they lie, each
// member a row of `rows` of `size` values.
bool reads_rows_as_readout(const RuleGroup& R, Rows rows, uint32_t size) {
  if (!sums_input_rows(R.direct) || R.direct.input_rows || R.inputs.size() != 1 || R.softmax || R.adds_to_out ||
      R.readout_weight != neural::kNoParam || R.m == 0 || R.offset != neural::kNoParam ||
      (R.aggregation != AggregationKind::Sum && R.aggregation != AggregationKind::Avg))
    return false;
  const InputBlock& B = R.inputs[0];
  if (B.src.size() != R.n || R.n == 0 || static_cast<uint32_t>(B.raw_shape.size()) != size ||
      !(R.agg_shape == B.raw_shape))
    return false;
  return std::all_of(B.src.begin(), B.src.end(),
                     [&](uint32_t off) { return rows.holds(off) && (off - rows.begin) % size == 0; });
}

// Whether some step other than groups `skip`, or an output, reads or writes a value of
// `rows`.
bool other_step_touches(const Plan& plan, Rows rows, const std::vector<size_t>& skip) {
  for (size_t i = 0; i < plan.rule_groups.size(); ++i) {
    if (std::find(skip.begin(), skip.end(), i) != skip.end()) continue;
    const RuleGroup& G = plan.rule_groups[i];
    for (const InputBlock& B : G.inputs) {
      if (B.src.size() != G.n && G.n != 0) return true;  // members without sources: unknown
      if (std::any_of(B.src.begin(), B.src.end(), [&](uint32_t off) { return rows.holds(off); })) return true;
    }
    if (rows.holds(G.agg_off) || rows.holds(G.out_off)) return true;
  }
  for (const AtomGroup& A : plan.atom_groups) {
    if (std::any_of(A.src.begin(), A.src.end(), [&](uint32_t off) { return rows.holds(off); })) return true;
    if (rows.holds(A.red_off) || rows.holds(A.pre_off) || rows.holds(A.out_off) || rows.holds(A.norm_off))
      return true;
  }
  for (const OutputRef& o : plan.outputs)
    if (o.offset != kNoValue && rows.holds(o.offset)) return true;
  return false;
}

// The writers in the order of R's aggregates: the one whose aggregates lie first (readout
// weight, then readout_weight2), so that the second's rows lie readout_shift values after.
std::vector<RuleGroup*> by_aggregates(Plan& plan, const std::vector<size_t>& writers) {
  std::vector<RuleGroup*> groups;
  for (size_t w : writers) groups.push_back(&plan.rule_groups[w]);
  std::sort(groups.begin(), groups.end(),
            [](const RuleGroup* a, const RuleGroup* b) { return a->agg_off < b->agg_off; });
  return groups;
}

// Moves the writers' head weights after R's aggregation (the conditions above hold): R reads
// the first writer's aggregates (or, with two writers, the lower-lying ones, the other's
// `readout_shift` values after them), and its readout rows take the writers' out rows, which
// nothing reads any more. The writers' atoms, whose offsets pointed at those rows, have no
// values of their own from then on.
void move_weights(Plan& plan, const std::vector<size_t>& writers, RuleGroup& R, Rows rows) {
  const std::vector<RuleGroup*> sets = by_aggregates(plan, writers);
  RuleGroup* low = sets[0];
  RuleGroup* high = sets.size() == 2 ? sets[1] : nullptr;
  for (uint32_t& off : R.inputs[0].src) off = low->agg_off + (off - rows.begin);  // the same head's row
  const uint32_t size = R.agg_shape.size();
  uint32_t free_rows = rows.begin;
  const auto take = [&] {
    const uint32_t off = free_rows;
    free_rows += R.m * size;
    return off;
  };
  R.readout_weight = low->head_weight;
  if (R.head_weight == neural::kNoParam) {  // R's readers read its out rows: the products go there
    R.readout_off = R.out_off;
    R.agg_off = take();
  } else {
    R.readout_off = take();
  }
  if (high) {
    R.readout_weight2 = high->head_weight;
    R.readout_shift = high->agg_off - low->agg_off;
    R.readout_agg2_off = take();
  }
  for (size_t w : writers) {
    RuleGroup& G = plan.rule_groups[w];
    G.head_weight = neural::kNoParam;
    G.head_mode = WeightMode::None;
    G.adds_to_out = false;
    G.out_off = G.agg_off;
  }
  for (std::vector<uint32_t>& offsets : plan.atom_offsets)
    for (uint32_t& off : offsets)
      if (rows.holds(off)) off = kNoValue;
}

// Whether G is a plain per-head sum or average of one input's rows of `size` values, into
// aggregates of its own (the rows R can read through).
bool plain_row_sum_of(const RuleGroup& G, uint32_t size) {
  return sums_input_rows(G.direct) && !G.direct.input_rows && G.inputs.size() == 1 && !G.softmax &&
         !G.identity_aggregation && G.offset == neural::kNoParam && G.head_weight == neural::kNoParam &&
         (G.aggregation == AggregationKind::Sum || G.aggregation == AggregationKind::Avg) &&
         G.head_segments.size() == size_t(G.m) + 1 && G.inputs[0].src.size() == G.n &&
         static_cast<uint32_t>(G.inputs[0].raw_shape.size()) == size;
}

// After move_weights: where a writer's rows were a plain per-head sum's or average's (a GCN
// layer's neighbour sums, a GraphSAGE layer's neighbour averages), R reads through them.
// Each head's members become the rows those sums read, each once, in ascending order, with
// its coefficient in each of R's aggregates (RuleGroup::readout_scale, readout_scale2): R's
// own 1 / count (average) times the sum's. The sums themselves are then read by nothing:
// their group keeps no member. A writer whose rows are its input's where they lie (the self
// rule's, DirectProduct::input_rows) gives each row itself. The same values up to the order
// of additions; per graph, a sum over the nodes instead of one over the edges and one over
// the nodes, forward and backward. Not where the rows read through would outnumber the
// members of the sums and of R together (R the sums of a deeper linear layer, reaching
// neighbours of neighbours).
void read_through_sums(Plan& plan, const std::vector<size_t>& writers, RuleGroup& R) {
  const uint32_t size = R.agg_shape.size();
  const std::vector<RuleGroup*> sets = by_aggregates(plan, writers);
  bool some_sum = false;
  for (RuleGroup* G : sets) {
    if (G->direct.input_rows) continue;
    if (!plain_row_sum_of(*G, size)) return;
    const Rows sums{G->agg_off, G->agg_off + G->m * size};
    std::vector<size_t> skip = writers;
    skip.push_back(size_t(&R - plan.rule_groups.data()));
    if (other_step_touches(plan, sums, skip)) return;
    some_sum = true;
  }
  if (!some_sum) return;
  const RuleGroup& low = *sets[0];
  std::vector<uint32_t> src, segments{0};
  std::vector<double> scale, scale2;
  std::map<uint32_t, std::pair<double, double>> head;  // row -> its coefficients, ascending
  for (uint32_t h = 0; h < R.m; ++h) {
    head.clear();
    const double outer = head_scale(R, h);
    for (uint32_t k = R.head_segments[h]; k < R.head_segments[h + 1]; ++k) {
      const uint32_t j = (R.inputs[0].src[k] - low.agg_off) / size;  // the writers' head (row) j
      for (size_t s = 0; s < sets.size(); ++s) {
        const RuleGroup& G = *sets[s];
        const auto add = [&](uint32_t row, double c) { (s == 0 ? head[row].first : head[row].second) += c; };
        if (G.direct.input_rows) {
          add(G.agg_off + j * size, outer);
          continue;
        }
        const double inner = head_scale(G, j);
        for (uint32_t e = G.head_segments[j]; e < G.head_segments[j + 1]; ++e) add(G.inputs[0].src[e], outer * inner);
      }
    }
    for (const auto& [row, c] : head) {
      src.push_back(row);
      scale.push_back(c.first);
      if (sets.size() == 2) scale2.push_back(c.second);
    }
    segments.push_back(static_cast<uint32_t>(src.size()));
  }
  // Only where it is less work: a deeper stack of linear layers reads through to neighbours
  // of neighbours, which may be many more rows than the sums read.
  size_t replaced = R.n;
  for (const RuleGroup* G : sets) replaced += G->direct.input_rows ? 0 : G->n;
  if (src.size() > replaced) return;
  R.n = static_cast<uint32_t>(src.size());
  R.inputs[0].src = std::move(src);
  R.head_segments = std::move(segments);
  R.readout_scale = std::move(scale);
  R.readout_scale2 = std::move(scale2);
  R.head_order.clear();
  for (RuleGroup* G : sets) {
    if (G->direct.input_rows) continue;
    G->m = G->n = 0;
    G->head_segments.assign(1, 0);
    G->inputs[0].src.clear();
    G->head_order.clear();
  }
}

}  // namespace

void PlanBuilder::move_weights_after_readouts() {
  if (!options.share_head_rows || !enabled(Rewrite::WeightAfterReadout)) return;
  for (size_t l = 0; l < plan.rule_groups.size(); ++l) {
    std::vector<size_t> writers = writers_of(plan, l);
    if (writers.empty()) continue;
    const RuleGroup& L = plan.rule_groups[l];
    const uint32_t size = L.out_shape.size();
    const Rows rows{L.out_off, L.out_off + L.m * size};
    for (size_t r = writers.back() + 1; r < plan.rule_groups.size(); ++r) {
      RuleGroup& R = plan.rule_groups[r];
      if (!reads_rows_as_readout(R, rows, size)) continue;
      std::vector<size_t> skip = writers;
      skip.push_back(r);
      if (R.m * writers.size() <= L.m && !other_step_touches(plan, rows, skip)) {
        move_weights(plan, writers, R, rows);
        read_through_sums(plan, writers, R);
        ++plan.rewrites[bit(Rewrite::WeightAfterReadout)];
      }
      break;  // the first group reading the rows
    }
  }
}

}  // namespace lrnn::exec::planning
