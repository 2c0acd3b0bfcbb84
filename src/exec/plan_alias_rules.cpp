// Rules that compute their one input unchanged, planned as aliases of that input
// (PlanOptions::alias_identity_rules). GIN's `in(I) :- h(I)` and `in(I) :- agg(I)` are
// such rules: planned as rule groups, each copied its input into a slot of its own (the
// direct product of one factor) and backward added that slot's gradient back, two copies
// of every node's hidden vector per layer and pass. As aliases, the atom `in` sums h and
// agg where they lie, and its backward adds its gradient straight into theirs: the same
// values added to the same accumulators. Where no other step adding into the input's
// gradient runs between the atom group and the rule group's old place (as in GIN, whose
// rules of that depth read other atoms), the order of those additions is unchanged too
// and the parameter gradients are bit-identical (tests/unit/exec_alias_rules_test.cpp).
#include "exec/plan_builder.hpp"

namespace lrnn::exec::planning {

bool PlanBuilder::alias_identity_rule(RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                                      const MemberScan& scan) {
  // The direct product of one input is the identity on it: unweighted, unnegated, not
  // really transposed, a combination that is the identity on one value.
  if (G.inputs.size() != 1 || spec.inputs.size() != 1 || G.direct.kind == DirectProduct::Kind::None) return false;
  const InputBlock& B = G.inputs[0];
  if (B.mode != WeightMode::None || B.soft_negated || B.transposed || !(B.out_shape == B.raw_shape) ||
      B.src.size() != G.n)
    return false;
  if (spec.offset != neural::kNoParam || spec.activation.kind != ActivationKind::Identity || spec.softmax ||
      spec.head_weight != neural::kNoParam || !neural::single_value_identity(spec.aggregation.kind))
    return false;
  // One grounding per head (members come sorted by (sample, head)).
  if (scan.done) {
    if (G.head_segments.size() != size_t(G.n) + 1) return false;
  } else {
    for (uint32_t k = 1; k < G.n; ++k)
      if (same_head(members[k], members[k - 1])) return false;
  }
  std::vector<Contribution>& list = contributions[spec.head_predicate];
  list.reserve(list.size() + G.n);
  for (uint32_t k = 0; k < G.n; ++k) {
    const auto [s, g] = members[k];
    const uint32_t atom = scan.done ? scan.head_atoms[k] : samples[s]->head[g];
    list.push_back({s, atom, B.src[k], B.raw_shape});
  }
  return true;
}

}  // namespace lrnn::exec::planning
