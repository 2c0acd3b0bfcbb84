// Which score and weighted-sum rules may be grounded as one logic::PairBlock: what the rules
// compute must be what the plan's block groups compute (exec/plan.cpp), and their literals
// what the grounder can enumerate as a block (logic::pair_block_structure).
#include <algorithm>

#include "neural/network.hpp"

namespace lrnn::neural {

namespace {

bool plain_inputs(const RuleSpec& spec) {
  return std::all_of(spec.inputs.begin(), spec.inputs.end(),
                     [](const InputSpec& in) { return in.weight == kNoParam && !in.soft_negated; });
}

// The score rule w(I, J): a product normalised by softmax over J alone (the groundings that
// share I, the head's first variable, normalise together).
bool score_rule_fits(const RuleSpec& spec) {
  return spec.softmax && spec.combination == CombinationKind::Product && spec.softmax_group_vars.size() == 1 &&
         spec.softmax_group_vars[0] == 0 && plain_inputs(spec);
}

// The pair atoms w(I, J) are their one rule input (no atom neuron of their own), as the
// plan's pass-through of one contribution makes them. Their values' shape is known only
// once planned, so a `product` (refused there for a matrix) is never a block.
bool pair_atoms_pass_through(const PredicateSpec& p) { return passes_one_input(p, Shape{1, 1}) && !p.scalars_only; }

// The weighted sum a(I) :- w(I, J), v(J): the products summed or averaged per head, nothing
// in between (the plan's fused direct sum).
bool sum_rule_fits(const RuleSpec& spec) {
  const bool summed = spec.aggregation.kind == AggregationKind::Sum || spec.aggregation.kind == AggregationKind::Avg;
  return !spec.softmax && summed && spec.combination == CombinationKind::Product && spec.offset == kNoParam &&
         spec.activation.kind == ActivationKind::Identity && spec.inputs.size() == 2 && plain_inputs(spec) &&
         std::none_of(spec.inputs.begin(), spec.inputs.end(), [](const InputSpec& in) { return in.transposed; });
}

}  // namespace

std::vector<logic::PairBlockRules> pair_block_rules(const TemplateModel& model, const logic::Program& program) {
  std::vector<logic::PairBlockRules> out;
  if (!model.batch_norms.empty()) return out;  // batch norm may move depths the blocks fix
  const auto& rules = model.ast().rules;
  for (uint32_t score = 0; score < model.rules.size(); ++score) {
    const RuleSpec& s = model.rules[score];
    if (!score_rule_fits(s) || !pair_atoms_pass_through(model.predicates[s.head_predicate])) continue;
    for (uint32_t sum = 0; sum < model.rules.size(); ++sum) {
      if (sum == score || !sum_rule_fits(model.rules[sum])) continue;
      const bool reads_pairs = std::any_of(rules[sum].body.begin(), rules[sum].body.end(), [&](const Literal& l) {
        return !l.builtin && l.predicate == rules[score].head.predicate && l.arity() == rules[score].head.arity();
      });
      if (reads_pairs && logic::pair_block_structure(program, score, sum)) out.push_back({score, sum});
    }
  }
  return out;
}

}  // namespace lrnn::neural
