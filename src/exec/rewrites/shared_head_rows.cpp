// The shared-head-rows rewrite (registry.hpp; docs/semantics.md "Plan rewrites"): rules of
// one depth whose head weights map into the same atoms, which sum them, write one set of
// rows. A GraphSAGE layer as PyNeuraLogic and lrnn.nn write it,
//
//   {10,10} h(X) :- x(X).
//   {10,10} h(X) :- x(Y), *edge(Y, X). [aggregation=avg]
//
// is h = W1 x + W2 avg(x_nbr): planned plainly, each rule's head weight writes rows of its
// own and the atoms sum the two (a gather of two inputs per atom, its slots and its
// backward scatter). Here the first rule's GEMM writes the rows and the second adds its
// products to them (RuleGroup::adds_to_out; the small GEMM's entries are each FMA chain
// from zero, then added: W1 x + W2 a in the same order as the atom sum's). The atoms are
// then those rows where the training plan keeps atoms in place (AtomGroup::in_input_rows:
// the ReLU applied there), and backward reads dL/d(pre) there for both rules.
//
// It applies to a group whose head weight is a matrix on column vectors (no softmax) when
// an earlier group of its depth has one too, with the same out shape, into atoms of the
// same predicate, whose combination is a sum, with the same heads in the same order (a node
// without neighbours gives the neighbour rule fewer heads: no sharing). An average of the
// atoms' inputs would divide by their count, a max compare them: neither can read one sum.
// Rule neurons then have no values of their own: training and evaluation plans only
// (PlanOptions::share_head_rows), the second count of `lrnn ground --stats`.
#include "exec/plan_builder.hpp"
#include "exec/rewrites/registry.hpp"

const lrnn::exec::RewriteInfo lrnn::exec::rewrites::kSharedHeadRows{"shared_head_rows",
    "head weights into the same atoms add their products to one set of rows; training plans only",
    "docs/semantics.md \"Plan rewrites\""};

namespace lrnn::exec::planning {

namespace {

// Whether G's head weight is a matrix on column vectors into atoms that sum their inputs:
// the GEMM whose rows later groups can add to.
bool head_gemm_into_sum(const RuleGroup& G, const neural::TemplateModel& model, const neural::RuleSpec& spec) {
  return G.head_weight != neural::kNoParam && G.head_mode == WeightMode::MatMul && G.agg_shape.cols == 1 &&
         !G.softmax && G.m > 0 && model.predicates[spec.head_predicate].combination == AggregationKind::Sum;
}

}  // namespace

bool PlanBuilder::share_head_rows(RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                                  const MemberScan& scan) {
  if (!options.share_head_rows || !enabled(Rewrite::SharedHeadRows) || !head_gemm_into_sum(G, model, spec))
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

void PlanBuilder::note_head_rows(const RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                                 const MemberScan& scan) {
  if (!options.share_head_rows || !enabled(Rewrite::SharedHeadRows) || !head_gemm_into_sum(G, model, spec)) return;
  HeadRows rows{static_cast<uint32_t>(plan.rule_groups.size()), std::vector<Ref>(G.m)};
  for (uint32_t j = 0; j < G.m; ++j) rows.heads[j] = head_atom(G, j, members, scan);
  head_rows.push_back(std::move(rows));
}

}  // namespace lrnn::exec::planning
