// The shared-head-rows rewrite (registry.hpp; docs/semantics.md "Plan rewrites"): rules of
// one depth that end in column vectors for the same atoms, which sum them, write one set of
// rows. A GraphSAGE layer, h = W1 x + W2 avg(x_nbr), as PyNeuraLogic and lrnn.nn write it
// (weights on the heads),
//
//   {10,10} h(X) :- x(X).
//   {10,10} h(X) :- x(Y), *edge(Y, X). [aggregation=avg]
//
// or with the weights on the inputs (`h(X) :- {10,10} x(X).`, ...): planned plainly, each
// rule writes rows of its own and the atoms sum the two (a gather of two inputs per atom,
// its slots and its backward scatter). Here the first rule's last kernel stores the rows
// and each later rule's adds to them (RuleGroup::adds_to_out): a head weight's GEMM
// (add_product_abt), a transform sum's per-head sums or its GEMM over the heads' summed
// inputs; each entry is computed from zero and then added, as the atoms' sum adds it. The
// atoms are then those rows where the training plan keeps atoms in place
// (AtomGroup::in_input_rows: the ReLU applied there), and backward reads dL/d(pre) there
// for every rule.
//
// The first rule's rows qualify when its last kernel writes them whole (then an add could
// as well), or when they are its own transformed rows, one per head, through a weight no
// other rule reads (a rule of the same weight may read a transform's rows:
// TransformSum::owns_transform). A later rule adds when its last kernel is one of those
// above (a head weight's GEMM; a transform sum's per-head sums or GEMM, not its transformed
// rows themselves), into atoms of the same predicate whose combination is a sum, with the
// same heads in the same order (a node without neighbours gives the neighbour rule fewer
// heads: no sharing) and the same column shape. An average of the atoms' inputs would
// divide by their count, a max compare them: neither can read one sum. Rule neurons then
// have no values of their own: training and evaluation plans only
// (PlanOptions::share_head_rows), the second count of `lrnn ground --stats`.
#include "exec/plan_builder.hpp"
#include "exec/rewrites/registry.hpp"

const lrnn::exec::RewriteInfo lrnn::exec::rewrites::kSharedHeadRows{"shared_head_rows",
    "rules into the same summed atoms add their values to one set of rows; training plans only",
    "docs/semantics.md \"Plan rewrites\""};

namespace lrnn::exec::planning {

namespace {

// Whether G's heads are column vectors of atoms that sum their inputs: the rows one sum of
// several rules' values can stand for.
bool into_summed_columns(const RuleGroup& G, const neural::TemplateModel& model, const neural::RuleSpec& spec) {
  return !G.softmax && G.m > 0 && G.out_shape.cols == 1 &&
         model.predicates[spec.head_predicate].combination == AggregationKind::Sum;
}

// Whether G's last stage is one kernel over its heads that could add instead of store: a
// matrix head weight's GEMM, or (no head weight) a transform sum's per-head sums or its GEMM
// over the heads' summed inputs.
bool last_stage_can_add(const RuleGroup& G) {
  if (G.head_weight != neural::kNoParam) return G.head_mode == WeightMode::MatMul && G.agg_shape.cols == 1;
  return G.transform.enabled && !G.transform.rows_are_heads;
}

}  // namespace

bool PlanBuilder::share_head_rows(RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                                  const MemberScan& scan) {
  if (!options.share_head_rows || !enabled(Rewrite::SharedHeadRows) || !into_summed_columns(G, model, spec) ||
      !last_stage_can_add(G))
    return false;
  for (const HeadRows& rows : head_rows) {
    const RuleGroup& first = plan.rule_groups[rows.group];
    if (model.rules[first.rule].head_predicate != spec.head_predicate || !(first.out_shape == G.out_shape) ||
        rows.heads.size() != G.m)
      continue;
    uint32_t j = 0;
    while (j < G.m && rows.heads[j] == head_atom(G, j, members, scan)) ++j;
    if (j < G.m) continue;
    G.out_off = first.out_off;
    G.adds_to_out = true;
    ++plan.rewrites[bit(Rewrite::SharedHeadRows)];
    return true;
  }
  return false;
}

// G's rows can take later groups' products when its last stage writes them whole (an add
// could as well) or they are its transformed rows that no other rule reads.
void PlanBuilder::note_head_rows(const RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                                 const MemberScan& scan) {
  if (!options.share_head_rows || !enabled(Rewrite::SharedHeadRows) || !into_summed_columns(G, model, spec)) return;
  if (!last_stage_can_add(G) && !(G.head_weight == neural::kNoParam && transform_rows_alone(G))) return;
  HeadRows rows{static_cast<uint32_t>(plan.rule_groups.size()), std::vector<Ref>(G.m)};
  for (uint32_t j = 0; j < G.m; ++j) rows.heads[j] = head_atom(G, j, members, scan);
  head_rows.push_back(std::move(rows));
}

}  // namespace lrnn::exec::planning
