// Rule-body planning (grounder_impl.hpp): the order in which a rule's literals are
// matched, and how each one's arguments are matched.
#include <algorithm>
#include <cmath>

#include "logic/grounder_impl.hpp"

namespace lrnn::logic::detail {

// make_plan's state: what is placed and bound so far.
struct Grounder::RulePlanner {
  Grounder& g;
  const CompiledRule& cr;
  const uint32_t delta_lit;
  const std::vector<char>& recursive;
  const bool frozen;
  Plan plan;
  std::vector<char> placed, bound;

  RulePlanner(Grounder& grounder, const CompiledRule& rule, uint32_t delta, const std::vector<char>& rec, bool fr)
      : g(grounder), cr(rule), delta_lit(delta), recursive(rec), frozen(fr), placed(rule.body.size(), 0),
        bound(rule.var_names.size(), 0) {}

  bool arg_bound(const ArgRef& a) const { return !a.is_var || bound[a.value]; }
  // "before the delta literal" in the written order decides old vs full (each derivation
  // is then found exactly once per iteration).
  Range range_of(uint32_t i) const {
    if (i == delta_lit) return Range::Delta;
    if (delta_lit != kNone && recursive[i] && i < delta_lit) return Range::Old;
    return Range::Full;
  }
  static double range_size(const Relation& r, Range range) {
    switch (range) {
      case Range::Full: return r.delta_end;
      case Range::Old: return r.delta_begin;
      case Range::Delta: return r.delta_end - r.delta_begin;
    }
    return 0;
  }

  void place(uint32_t i) {
    const BodyLiteral& bl = cr.body[i];
    Step st;
    st.lit = i;
    st.actions = uint32_t(plan.actions.size());
    if (bl.kind == Kind::Builtin) place_builtin(bl, st);
    else if (bl.kind == Kind::Domain) place_domain(bl, st);
    else place_atom(bl, i, st);
    placed[i] = 1;
    plan.steps.push_back(st);
  }

  void place_builtin(const BodyLiteral& bl, Step& st) {
    const ArgRef* args = cr.lit_args(bl);
    st.op = Step::Builtin;
    auto unbound_var = [&](uint32_t k) { return args[k].is_var && !bound[args[k].value]; };
    if (is_arithmetic(bl.op) && unbound_var(2)) st.out_arg = 2;
    if (bl.op == BuiltinOp::Next) st.out_arg = unbound_var(1) ? 1 : (unbound_var(0) ? 0 : kNone);
    if (bl.op == BuiltinOp::In && unbound_var(0)) st.out_arg = 0;
    for (uint32_t k = 0; k < bl.arity; ++k)
      plan.actions.push_back({args[k].is_var ? ArgAction::Bound : ArgAction::Const, args[k].value});
    if (st.out_arg != kNone) {
      plan.actions[st.actions + st.out_arg].kind = ArgAction::Bind;
      bound[args[st.out_arg].value] = 1;
    }
  }

  void place_domain(const BodyLiteral& bl, Step& st) {
    const ArgRef* args = cr.lit_args(bl);
    st.op = Step::Domain;
    plan.actions.push_back({ArgAction::Bind, args[0].value});
    bound[args[0].value] = 1;
  }

  // A positive or negated atom: its arguments are constants, bound variables (repeated
  // ones compared), or new bindings; that decides a scan, a lookup or a membership test.
  void place_atom(const BodyLiteral& bl, uint32_t i, Step& st) {
    const ArgRef* args = cr.lit_args(bl);
    st.pred = bl.pred;
    st.range = bl.kind == Kind::Negated ? Range::Full : range_of(i);
    // A one-variable literal scanned while builtins bound its variable: a range scan.
    std::vector<RangeBound> range;
    if (bl.kind == Kind::Positive && bl.arity == 1 && args[0].is_var && !bound[args[0].value] &&
        (frozen || !g.in_stratum_[bl.pred]))
      range = range_bounds(cr, args[0].value, bound);
    uint64_t mask = 0;
    bool all_bound = true;
    std::vector<uint32_t> bound_here;
    for (uint32_t k = 0; k < bl.arity; ++k) {
      const ArgRef& a = args[k];
      if (!a.is_var) {
        plan.actions.push_back({ArgAction::Const, a.value});
        mask |= uint64_t{1} << k;
      } else if (bound[a.value]) {
        bool same = std::find(bound_here.begin(), bound_here.end(), a.value) != bound_here.end();
        plan.actions.push_back({same ? ArgAction::Same : ArgAction::Bound, a.value});
        if (!same) mask |= uint64_t{1} << k;
      } else {
        plan.actions.push_back({ArgAction::Bind, a.value});
        bound[a.value] = 1;
        bound_here.push_back(a.value);
        all_bound = false;
      }
    }
    if (bl.kind == Kind::Negated) {
      st.op = Step::NotMember;
    } else if (all_bound) {
      st.op = Step::Member;
    } else if (mask == 0 && !range.empty()) {
      st.op = Step::RangeScan;
      st.index = uint32_t(plan.ranges.size());
      plan.ranges.push_back(std::move(range));
    } else if (mask == 0) {
      st.op = Step::Scan;
    } else {
      st.op = Step::Lookup;
      st.index = g.rels_[bl.pred].index_for(mask);
      // A relation of a lower stratum is complete: its index can be frozen too.
      if (frozen || !g.in_stratum_[bl.pred]) {
        g.rels_[bl.pred].freeze_index(st.index);
        st.op = Step::LookupFrozen;
      }
    }
  }

  // The first unplaced check or binding builtin whose inputs are bound (kNone if none).
  uint32_t first_ready() const {
    for (uint32_t i = 0; i < cr.body.size(); ++i) {
      if (placed[i]) continue;
      const BodyLiteral& bl = cr.body[i];
      const ArgRef* args = cr.lit_args(bl);
      bool ready = false;
      if (bl.kind == Kind::Builtin) {
        if (is_arithmetic(bl.op)) {
          ready = arg_bound(args[0]) && arg_bound(args[1]);
        } else if (bl.op == BuiltinOp::Next) {
          ready = arg_bound(args[0]) || arg_bound(args[1]);
        } else if (bl.op == BuiltinOp::In) {
          ready = true;
          for (uint32_t k = 1; k < bl.arity; ++k) ready = ready && arg_bound(args[k]);
        } else {
          ready = true;
          for (uint32_t k = 0; k < bl.arity; ++k) ready = ready && arg_bound(args[k]);
        }
      } else if (bl.kind == Kind::Positive || bl.kind == Kind::Negated) {
        ready = true;
        for (uint32_t k = 0; k < bl.arity; ++k) ready = ready && arg_bound(args[k]);
      }
      if (ready) return i;
    }
    return kNone;
  }

  // The positive literal (or domain) expected to match the fewest rows.
  uint32_t cheapest_generator() const {
    uint32_t best = kNone;
    double best_cost = 0;
    for (uint32_t i = 0; i < cr.body.size(); ++i) {
      if (placed[i]) continue;
      const BodyLiteral& bl = cr.body[i];
      double cost;
      if (bl.kind == Kind::Positive) {
        const ArgRef* args = cr.lit_args(bl);
        uint32_t n_bound = 0;
        for (uint32_t k = 0; k < bl.arity; ++k) n_bound += arg_bound(args[k]);
        double size = range_size(g.rels_[bl.pred], range_of(i));
        cost = bl.arity == 0 ? 1.0 : std::pow(std::max(size, 1.0), double(bl.arity - n_bound) / bl.arity);
        if (size == 0) cost = 0;
      } else if (bl.kind == Kind::Domain) {
        cost = double(g.domain_.size()) + 0.5;  // after an equally large relation
      } else {
        continue;  // a builtin or negation waits for its inputs
      }
      if (best == kNone || cost < best_cost) best = i, best_cost = cost;
    }
    if (best == kNone) throw Error(ErrorKind::Runtime, cr.span, "internal: no literal of this rule can be evaluated");
    return best;
  }
};

// Orders a rule body: builtins and fully bound literals as soon as their inputs are
// bound, otherwise the positive literal expected to match the fewest rows.
// `frozen`: the model is complete (enumeration), so lookups may use CSR indexes.
Plan Grounder::make_plan(const CompiledRule& cr, uint32_t delta_lit, const std::vector<char>& recursive, bool frozen) {
  RulePlanner planner(*this, cr, delta_lit, recursive, frozen);
  if (delta_lit != kNone) planner.place(delta_lit);
  while (planner.plan.steps.size() < cr.body.size()) {
    const uint32_t next = planner.first_ready();  // checks and binding builtins go first
    planner.place(next != kNone ? next : planner.cheapest_generator());
  }
  return std::move(planner.plan);
}

}  // namespace lrnn::logic::detail
