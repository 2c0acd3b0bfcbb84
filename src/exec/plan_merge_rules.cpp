// Rules that sum W x into the same atoms through one weight W, planned as one group
// (PlanOptions::merge_shared_weight_rules; docs/semantics.md "Plan rewrites"). A GCN
// layer's self rule and neighbour rule become W (x_self + sum x_nbr): the heads' summed
// inputs take one GEMM, and the layer's atoms can be the group's sum rows
// (AtomGroup::in_input_rows). The same values up to the order of additions
// (tests/unit/exec_merge_shared_weight_test.cpp). PyNeuraLogic's spelling of the neighbour
// rule, `W h(Y), <0.0> edge(Y, X)`, has its zero literal folded out first, so both
// spellings plan alike (tests/unit/exec_rewrites_test.cpp).
#include "exec/plan_builder.hpp"

namespace lrnn::exec::planning {

// The input of rule r (over its groundings `members`) that a merge sums, W x: its only
// input, or its only one not under a fixed zero scalar weight on scalar values in a sum
// (the fold-zero-literals rewrite's case: those add 0, and a scalar 0 changes no shape);
// kNoValue when r is not such a rule (offset, activation, softmax, head weight, an
// aggregation other than a sum or an average over one grounding per head, ...).
uint32_t PlanBuilder::merge_input(uint32_t r, const std::vector<Ref>& members) const {
  const neural::RuleSpec& spec = model.rules[r];
  if (spec.head_weight != neural::kNoParam || spec.offset != neural::kNoParam ||
      spec.activation.kind != ActivationKind::Identity || spec.softmax ||
      !(spec.combination == CombinationKind::Sum || spec.combination == CombinationKind::Avg) || spec.inputs.empty())
    return kNoValue;
  uint32_t kept = 0;
  if (spec.inputs.size() > 1) {
    if (spec.combination != CombinationKind::Sum || !enabled(Rewrite::FoldZeroLiterals)) return kNoValue;
    kept = kNoValue;
    for (uint32_t i = 0; i < spec.inputs.size(); ++i) {
      const uint32_t w = spec.inputs[i].weight;
      const bool zero = fixed_zero_weight(model, w) && model.params.info(w).shape.scalar() &&
                        std::all_of(members.begin(), members.end(), [&](const Ref& m) {
                          const neural::SampleNetwork& net = *samples[m.first];
                          return plan.atom_shapes[m.first][net.inputs[net.inputs_begin[m.second] + i]].scalar();
                        });
      if (zero) continue;
      if (kept != kNoValue) return kNoValue;
      kept = i;
    }
    if (kept == kNoValue) return kNoValue;
  }
  const neural::InputSpec& in = spec.inputs[kept];
  if (in.weight == neural::kNoParam || in.soft_negated || in.transposed) return kNoValue;
  if (spec.aggregation.kind == AggregationKind::Sum) return kept;
  if (spec.aggregation.kind != AggregationKind::Avg) return kNoValue;
  for (size_t k = 1; k < members.size(); ++k)  // members come sorted by (sample, head)
    if (same_head(members[k], members[k - 1])) return kNoValue;
  return kept;
}

// Rule r, merged with its input `kept` (merge_input) and zero literals beside it: planned
// from its spec reduced to that input (spec_of), its ground rules read at that input's
// position; the zero weights are noted as the fold-zero-literals rewrite notes them.
void PlanBuilder::reduce_to_merge_input(uint32_t r, uint32_t kept) {
  const neural::RuleSpec& spec = model.rules[r];
  if (spec.inputs.size() == 1 || reduced_rules.count(r)) return;
  neural::RuleSpec reduced = spec;
  reduced.inputs = {spec.inputs[kept]};
  std::vector<uint32_t> zeros;
  for (uint32_t i = 0; i < spec.inputs.size(); ++i)
    if (i != kept) zeros.push_back(spec.inputs[i].weight);
  note_assumed(plan.folded_zero_weights, zeros);
  ++plan.rewrites[bit(Rewrite::FoldZeroLiterals)];
  reduced_rules.emplace(r, std::make_pair(kept, std::move(reduced)));
}

// The buckets of depth `depth` (from `first` on) whose rules sum W x through the same
// weight into the same atoms as an earlier bucket's rule (the atoms adding their rules'
// values) move their members into it, in order of (sample, head), the earlier rule's
// groundings first within a head; they are left empty. (An average over one grounding per
// head is that grounding's value: a self rule's.) Each rule's merge input is found once,
// from its own members.
void PlanBuilder::merge_shared_weight_rules(std::map<std::pair<uint32_t, uint32_t>, std::vector<Ref>>::iterator first,
                                            uint32_t depth) {
  struct Kept {
    std::vector<Ref>* members;
    uint32_t rule, input;  // input: the rule's merge_input
  };
  std::vector<Kept> kept;
  const auto sums = [&](uint32_t r) { return model.rules[r].aggregation.kind == AggregationKind::Sum; };
  const auto shares_weight = [&](const Kept& a, uint32_t b, uint32_t b_input) {
    const neural::RuleSpec &A = model.rules[a.rule], &B = model.rules[b];
    return a.input != kNoValue && b_input != kNoValue && A.head_predicate == B.head_predicate &&
           model.predicates[A.head_predicate].combination == AggregationKind::Sum &&
           A.inputs[a.input].weight == B.inputs[b_input].weight;
  };
  for (auto it = first; it != rule_buckets.end() && it->first.first == depth; ++it) {
    const uint32_t r = it->first.second;
    const uint32_t input = merge_input(r, it->second);
    size_t k = 0;
    // The merged group is planned as a rule that sums (an average over one grounding per
    // head stays what it was only alone).
    while (k < kept.size() && !((sums(kept[k].rule) || sums(r)) && shares_weight(kept[k], r, input))) ++k;
    if (k == kept.size()) {
      kept.push_back({&it->second, r, input});
      continue;
    }
    std::vector<Ref>& earlier = *kept[k].members;
    reduce_to_merge_input(kept[k].rule, kept[k].input);
    reduce_to_merge_input(r, input);
    const auto key = [&](const Ref& m) { return std::make_pair(m.first, samples[m.first]->head[m.second]); };
    std::vector<Ref> merged;
    merged.reserve(earlier.size() + it->second.size());
    std::merge(earlier.begin(), earlier.end(), it->second.begin(), it->second.end(), std::back_inserter(merged),
               [&](const Ref& x, const Ref& y) { return key(x) < key(y); });
    std::vector<Ref>().swap(earlier);
    std::vector<Ref>().swap(it->second);
    if (sums(kept[k].rule)) {
      earlier = std::move(merged);
    } else {  // planned as rule r, which sums
      it->second = std::move(merged);
      kept[k] = {&it->second, r, input};
    }
    ++plan.rewrites[bit(Rewrite::TransformSum)];
  }
}

}  // namespace lrnn::exec::planning
