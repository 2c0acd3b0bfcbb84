// Plan::hot_only_facts: whether the data facts' slots can go unwritten in a pass
// (docs/semantics.md "Plan rewrites", under one_hot_inputs).
//
// A training pass over one small graph (NCI1 at batch 1) filled its data facts' slots twice:
// zeros and the few nonzero values before forward (sparse facts), zeros into their
// gradients after backward. For node labels one-hot over 37 classes that is 17.6 KB of
// float64 per graph, 3-4% of the epoch, and when the only reader of those slots is a
// one-hot transform that found every row one-hot (write_hot_rows), nothing reads the values
// and nothing writes the gradients. This file decides the "nothing" once per plan, from
// every offset a step can read a value at: the input blocks' per-grounding sources (which
// every derived read, a direct product's rows, dense and banded blocks, a transform's
// distinct rows, is taken from), the atom groups' inputs and rows, and the outputs. A
// group whose members carry no sources (a banded block's implicit members) makes the
// answer "no". Backward writes gradients only where its step read values (each kernel's
// transpose), so the same walk covers them.
#include "exec/plan_builder.hpp"

namespace lrnn::exec::planning {

namespace {

// Whether G reads the data facts (offsets below `end`) only as a one-hot transform's rows,
// and writes none of their gradients: a transform not summed first that takes no input
// gradient, and owns its one-hot rows or reads the rows of an earlier group that does
// (whose own sources include G's, and are checked as its).
bool reads_facts_as_hot_rows(const RuleGroup& G) {
  const TransformSum& t = G.transform;
  return t.enabled && !t.sum_first && !t.input_gradients && G.inputs.size() == 1 &&
         (t.one_hot_inputs || !t.owns_transform);
}

// Whether some step of G may read a value below `end` other than as a one-hot row.
bool rule_group_reads_below(const RuleGroup& G, uint32_t end) {
  for (const InputBlock& B : G.inputs) {
    if (B.src.size() != G.n) return G.n != 0;  // members without sources: unknown
    const bool below = std::any_of(B.src.begin(), B.src.end(), [end](uint32_t off) { return off < end; });
    if (below && !reads_facts_as_hot_rows(G)) return true;
  }
  return false;
}

bool atom_group_reads_below(const AtomGroup& A, uint32_t end) {
  if (std::any_of(A.src.begin(), A.src.end(), [end](uint32_t off) { return off < end; })) return true;
  return (A.in_input_rows || A.x_in_inputs) && A.red_off < end;
}

}  // namespace

uint32_t hot_only_facts(const Plan& plan, size_t data_values, const PlanOptions& options) {
  // Callers that read fact gradients, learnable example facts (written and differentiated
  // every pass) and a partitioned sample's ghosts (data slots the exchange writes) keep the
  // fills.
  if (options.fact_gradients || !plan.example_fact_off.empty() || options.data_gradients_from != 0xFFFFFFFFu)
    return 0;
  const uint32_t end = static_cast<uint32_t>(data_values);
  if (end == 0) return 0;
  bool hot_reader = false;
  for (const RuleGroup& G : plan.rule_groups) {
    if (rule_group_reads_below(G, end)) return 0;
    hot_reader = hot_reader || (G.transform.enabled && G.transform.one_hot_inputs);
  }
  for (const AtomGroup& A : plan.atom_groups)
    if (atom_group_reads_below(A, end)) return 0;
  for (const OutputRef& o : plan.outputs)
    if (o.offset != kNoValue && o.offset < end) return 0;
  for (uint32_t off : plan.param_fact_off)
    if (off < end) return 0;
  return hot_reader ? end : 0;
}

}  // namespace lrnn::exec::planning
