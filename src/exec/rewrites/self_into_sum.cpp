// The self-into-sum rewrite (registry.hpp; docs/semantics.md "Plan rewrites"): atoms that
// sum a node's own value and its neighbours' sum, a GIN layer's h + sum_j h_j as the GIN
// templates write it,
//
//   agg(I) :- h(J), *edge(J, I). [aggregation=sum]
//   in(I) :- h(I).
//   in(I) :- agg(I).
//
// are planned plainly as the neighbour sum's rows (agg's atoms take them as their values)
// and an atom group gathering two inputs per atom into rows of its own (forward a pass
// over both, backward a scatter back to both). Here the own value is the first row each
// head of the neighbour sum adds, and in's atoms are that sum's rows: no group, no slots.
//
// It applies when each atom of the group (a sum; no offset, identity activation, no batch
// norm) has exactly two inputs: row j of a plain per-head row sum (a rule of one
// unweighted input summed per head; no head weight; the same m heads as the group, in its
// order) and one other row, computed at an earlier depth than that sum (so before it runs);
// and, when the sum's heads are atoms of another predicate (agg), those are read by nothing
// else: each is the input of one ground rule of the plan's samples, none is a query's, and
// the samples have no attention blocks. PyNeuraLogic's GIN writes both rules into one
// predicate (`l1(X) :- atom_embed(Y), *edge(Y, X).` beside `l1(X) :- atom_embed(X).`): the
// sum's heads are then the atoms themselves.
// The sum then holds the atoms' values, which its atoms' own (agg's) are not: training and
// evaluation plans only (PlanOptions::share_head_rows). The same values up to the order of
// additions: the own row first, then the neighbours, where the atom group added the
// neighbours' total to it.
#include "exec/plan_builder.hpp"
#include "exec/rewrites/registry.hpp"

const lrnn::exec::RewriteInfo lrnn::exec::rewrites::kSelfIntoSum{"self_into_sum",
    "a node's own value summed into its neighbours' per-head sum, whose rows become the atoms; training plans only",
    "docs/semantics.md \"Plan rewrites\""};

namespace lrnn::exec::planning {

namespace {

// A per-head sum of rows read where they lie: one unweighted input, summed per head into
// rows of its own that nothing adds to.
bool plain_row_sum(const RuleGroup& G) {
  return sums_input_rows(G.direct) && !G.direct.input_rows && G.inputs.size() == 1 && !G.softmax &&
         G.aggregation == AggregationKind::Sum && G.head_weight == neural::kNoParam && !G.adds_to_out &&
         G.out_off == G.agg_off && G.offset == neural::kNoParam && G.m > 0;
}

}  // namespace

// Whether the atoms of predicate p in the plan's samples are each the input of exactly
// one ground rule, and of no query or attention block.
bool PlanBuilder::atoms_read_once(uint32_t p) const {
  for (uint32_t s = 0; s < n_samples; ++s) {
    const neural::SampleNetwork& net = *samples[s];
    if (!net.pair_blocks.empty()) return false;
    for (const auto& atoms : net.query_atoms)
      for (uint32_t l : atoms)
        if (net.atom_predicate[l] == p) return false;
    std::vector<uint8_t> uses(net.num_atoms(), 0);
    for (uint32_t l : net.inputs)
      if (net.atom_predicate[l] == p && uses[l]++) return false;
  }
  return true;
}

bool PlanBuilder::fold_self_into_sum(const AtomGroup& A, const std::vector<Ref>& members) {
  if (!options.share_head_rows || !enabled(Rewrite::SelfIntoSum)) return false;
  const neural::PredicateSpec& pred = model.predicates[A.predicate];
  if (A.combination != AggregationKind::Sum || A.offset != neural::kNoParam ||
      A.activation.kind != ActivationKind::Identity || pred.norm != neural::kNoParam || A.m == 0 ||
      A.src.size() != 2 * size_t(A.m) || A.in_shape.cols != 1)
    return false;
  for (uint32_t j = 0; j <= A.m; ++j)
    if (A.segments[j] != 2 * j) return false;
  const uint32_t size = static_cast<uint32_t>(A.in_shape.size());
  // The plain sum whose rows hold one of atom 0's inputs (its step), then the first value
  // of its depth.
  const auto in_rows = [&](const RuleGroup& G, uint32_t off) {
    return off >= G.agg_off && off < G.agg_off + G.m * size;
  };
  size_t group = plan.rule_groups.size(), step = 0;
  for (size_t k = 0; k < plan.steps.size() && group == plan.rule_groups.size(); ++k) {
    const Step& st = plan.steps[k];
    if (st.atom) continue;
    const RuleGroup& G = plan.rule_groups[st.index];
    if (plain_row_sum(G) && G.out_shape == A.in_shape && (in_rows(G, A.src[0]) || in_rows(G, A.src[1])))
      group = st.index, step = k;
  }
  if (group == plan.rule_groups.size()) return false;
  RuleGroup& G = plan.rule_groups[group];
  if (G.m != A.m) return false;
  size_t depth = 0;
  while (depth + 1 < plan.depth_steps.size() && plan.depth_steps[depth + 1] <= step) ++depth;
  const uint32_t depth_begin = plan.step_values[plan.depth_steps[depth]].first;
  // Per atom j: a row h_j of the sum (its heads come in their own order) and an own row
  // computed before the sum's depth began; the h_j are then a permutation of the heads.
  std::vector<uint32_t> own(A.m), head(A.m);
  std::vector<uint8_t> taken(G.m, 0);
  for (uint32_t j = 0; j < A.m; ++j) {
    const uint32_t a = A.src[2 * j], b = A.src[2 * j + 1];
    const bool a_sum = in_rows(G, a), b_sum = in_rows(G, b);
    if (a_sum == b_sum) return false;
    const uint32_t row = a_sum ? a : b;
    own[j] = a_sum ? b : a;
    if (own[j] + size > depth_begin || (row - G.agg_off) % size != 0) return false;
    head[j] = (row - G.agg_off) / size;
    if (taken[head[j]]++) return false;
  }
  // The sum's rows are its head atoms' values: A's own atoms (PyNeuraLogic's GIN writes
  // both rules into `l1`) or another predicate's (`agg`), which must have no other reader.
  const uint32_t heads = model.rules[G.rule].head_predicate;
  if (heads != A.predicate && !atoms_read_once(heads)) return false;
  // The sum's heads in the atoms' order, each its own row first.
  InputBlock& B = G.inputs[0];
  std::vector<uint32_t> src, segments{0};
  src.reserve(B.src.size() + A.m);
  for (uint32_t j = 0; j < A.m; ++j) {
    src.push_back(own[j]);
    src.insert(src.end(), B.src.begin() + G.head_segments[head[j]], B.src.begin() + G.head_segments[head[j] + 1]);
    segments.push_back(static_cast<uint32_t>(src.size()));
  }
  B.src = std::move(src);
  G.head_segments = std::move(segments);
  G.n = static_cast<uint32_t>(B.src.size());
  for (uint32_t j = 0; j < A.m; ++j) {
    const auto [s, l] = members[j];
    plan.atom_offsets[s][l] = G.agg_off + j * size;
    plan.atom_shapes[s][l] = A.in_shape;
  }
  ++plan.rewrites[bit(Rewrite::SelfIntoSum)];
  return true;
}

}  // namespace lrnn::exec::planning
