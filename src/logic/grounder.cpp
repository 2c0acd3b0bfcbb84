// The least model and the ground rules of a sample (grounder.hpp): the grounder's
// evaluation and the steps of build_sample; its other parts are listed in grounder_impl.hpp.
#include "logic/grounder.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "logic/capture.hpp"
#include "logic/grounder_impl.hpp"
#include "logic/pair_block.hpp"
#include "logic/range_scan.hpp"
#include "logic/relation.hpp"
#include "logic/row_set.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/memory.hpp"

namespace lrnn::logic {

namespace detail {

template <class Emit>
void Grounder::run(const Plan& plan, uint32_t s, Emit& emit) {
  if (s == plan.steps.size()) {
    emit();
    return;
  }
  const Step& st = plan.steps[s];
  const ArgAction* acts = plan.actions.data() + st.actions;
  switch (st.op) {
    case Step::Scan: {
      const Relation& rel = rels_[st.pred];
      Bounds b = bounds(rel, st.range);
      const uint32_t arity = rel.arity();
      for (uint32_t r = b.lo; r < b.hi; ++r) {
        if (!match(plan, st, arity, rel.row(r))) continue;
        rows_[st.lit] = r;
        run(plan, s + 1, emit);
      }
      return;
    }
    case Step::RangeScan:
      run_range_scan(plan, s, st, emit);
      return;
    case Step::Lookup: {
      const Relation& rel = rels_[st.pred];
      Bounds b = bounds(rel, st.range);
      const uint32_t arity = rel.arity();
      const Index& ix = rel.index(st.index);
      uint32_t key[64];
      const auto& cols = ix.cols();
      for (size_t i = 0; i < cols.size(); ++i) key[i] = value_of(acts[cols[i]]);
      for (uint32_t r = ix.find(key, rel.data(), arity); r != kNone; r = rel.index(st.index).next(r)) {
        if (r >= b.hi) continue;
        if (r < b.lo) break;
        if (!match(plan, st, arity, rel.row(r))) continue;
        rows_[st.lit] = r;
        run(plan, s + 1, emit);
      }
      return;
    }
    case Step::LookupFrozen: {
      const Relation& rel = rels_[st.pred];
      const uint32_t arity = rel.arity();
      const Index& ix = rel.index(st.index);
      uint32_t key[64];
      const auto& cols = ix.cols();
      for (size_t i = 0; i < cols.size(); ++i) key[i] = value_of(acts[cols[i]]);
      auto [begin, end] = ix.frozen_group(key, rel.data(), arity);
      const uint32_t* rows = ix.frozen_rows();
      const uint32_t* tuples = ix.frozen_tuples();
      for (uint32_t i = begin; i < end; ++i) {
        if (!match(plan, st, arity, tuples + size_t(i) * arity)) continue;
        rows_[st.lit] = rows[i];
        run(plan, s + 1, emit);
      }
      return;
    }
    case Step::Member:
    case Step::NotMember: {
      const Relation& rel = rels_[st.pred];
      uint32_t tuple[64];
      for (uint32_t k = 0; k < rel.arity(); ++k) tuple[k] = value_of(acts[k]);
      uint32_t r = rel.find(tuple);
      if (st.op == Step::NotMember) {
        if (r == kNone) run(plan, s + 1, emit);
        return;
      }
      Bounds b = bounds(rel, st.range);
      if (r != kNone && r >= b.lo && r < b.hi) {
        rows_[st.lit] = r;
        run(plan, s + 1, emit);
      }
      return;
    }
    case Step::Domain: {
      for (uint32_t c : domain_) {
        bind_[acts[0].value] = c;
        run(plan, s + 1, emit);
      }
      return;
    }
    case Step::Builtin:
      run_builtin(plan, s, st, acts, emit);
      return;
  }
}

// The rows of a range scan's literal inside its interval (all rows in range when a
// bound is no small integer), in row order.
template <class Emit>
void Grounder::run_range_scan(const Plan& plan, uint32_t s, const Step& st, Emit& emit) {
  const Relation& rel = rels_[st.pred];
  const Bounds b = bounds(rel, st.range);
  std::vector<uint32_t> rows;
  int64_t lo, hi;
  if (interval(plan.ranges[st.index], lo, hi)) {
    value_index(st.pred).candidates(lo, hi, b.lo, b.hi, rows);
  } else {
    for (uint32_t r = b.lo; r < b.hi; ++r) rows.push_back(r);
  }
  for (uint32_t r : rows) {
    if (!match(plan, st, 1, rel.row(r))) continue;
    rows_[st.lit] = r;
    run(plan, s + 1, emit);
  }
}

template <class Emit>
void Grounder::run_builtin(const Plan& plan, uint32_t s, const Step& st, const ArgAction* acts, Emit& emit) {
  const CompiledRule& cr = *rule_;
  const BodyLiteral& bl = cr.body[st.lit];
  const uint32_t n = bl.arity;
  auto val = [&](uint32_t k) { return value_of(acts[k]); };
  auto cmp = [&]() { return syms_.compare(val(0), val(1)); };
  if (is_eval(bl.op)) {  // holds for two numbers; an input whose value is a op b
    const uint32_t a = val(0), b = val(1);
    if (!syms_.is_number(a) || !syms_.is_number(b)) return;
    const double value = eval_value(bl.op, syms_.number(a), syms_.number(b));
    if (std::isnan(value)) return;  // a mod 0 has no value (a / 0 is inf, as in PyNeuraLogic)
    if (enumerating_) rows_[st.lit] = eval_atom(bl.pred, a, b, value);
    run(plan, s + 1, emit);
    return;
  }
  switch (bl.op) {
    case BuiltinOp::Eq: if (val(0) == val(1)) run(plan, s + 1, emit); return;
    case BuiltinOp::Neq: if (val(0) != val(1)) run(plan, s + 1, emit); return;
    case BuiltinOp::Lt: if (cmp() < 0) run(plan, s + 1, emit); return;
    case BuiltinOp::Leq: if (cmp() <= 0) run(plan, s + 1, emit); return;
    case BuiltinOp::Gt: if (cmp() > 0) run(plan, s + 1, emit); return;
    case BuiltinOp::Geq: if (cmp() >= 0) run(plan, s + 1, emit); return;
    case BuiltinOp::True: run(plan, s + 1, emit); return;
    case BuiltinOp::False: return;
    case BuiltinOp::AllDiff: {
      for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = i + 1; j < n; ++j)
          if (val(i) == val(j)) return;
      run(plan, s + 1, emit);
      return;
    }
    case BuiltinOp::In: {
      if (st.out_arg == kNone) {
        for (uint32_t k = 1; k < n; ++k)
          if (val(k) == val(0)) {
            run(plan, s + 1, emit);
            return;
          }
        return;
      }
      for (uint32_t k = 1; k < n; ++k) {
        bool repeated = false;
        for (uint32_t j = 1; j < k; ++j) repeated = repeated || val(j) == val(k);
        if (repeated) continue;
        bind_[acts[0].value] = val(k);
        run(plan, s + 1, emit);
      }
      return;
    }
    case BuiltinOp::Next: {
      uint32_t in = st.out_arg == 0 ? 1 : 0;
      uint32_t x = val(in);
      if (!syms_.is_number(x)) return;
      double v = syms_.number(x);
      if (std::nearbyint(v) != v) return;
      double other = in == 0 ? v + 1 : v - 1;
      if (st.out_arg == kNone) {
        uint32_t y = val(1);
        if (syms_.is_number(y) && syms_.number(y) == other) run(plan, s + 1, emit);
        return;
      }
      bind_[acts[st.out_arg].value] = syms_.intern_number(other);
      run(plan, s + 1, emit);
      return;
    }
    default: break;
  }
  run_arithmetic(plan, s, st, acts, emit);
}

// Arithmetic: c = a op b, c bound here or (already bound) checked.
template <class Emit>
void Grounder::run_arithmetic(const Plan& plan, uint32_t s, const Step& st, const ArgAction* acts, Emit& emit) {
  const BodyLiteral& bl = rule_->body[st.lit];
  auto val = [&](uint32_t k) { return value_of(acts[k]); };
  uint32_t a = val(0), b = val(1);
  if (!syms_.is_number(a) || !syms_.is_number(b)) return;
  double result;
  if (Symbols::is_small_int(a) && Symbols::is_small_int(b)) {
    int64_t x = Symbols::small_int(a), y = Symbols::small_int(b);
    // A small integer sum, difference or product binds without a trip through doubles
    // (what intern_number would return; attention windows do this once per pair).
    const bool exact = bl.op == BuiltinOp::Add || bl.op == BuiltinOp::Sub || bl.op == BuiltinOp::Mul;
    const int64_t z = bl.op == BuiltinOp::Add ? x + y : bl.op == BuiltinOp::Sub ? x - y : x * y;
    if (exact && st.out_arg != kNone && z >= Symbols::kIntMin && z <= Symbols::kIntMax) {
      bind_[acts[2].value] = Symbols::encode_int(z);
      run(plan, s + 1, emit);
      return;
    }
    switch (bl.op) {
      case BuiltinOp::Add: result = double(x + y); break;
      case BuiltinOp::Sub: result = double(x - y); break;
      case BuiltinOp::Mul: result = double(x * y); break;
      case BuiltinOp::Div:
        if (y == 0) return;
        result = x % y == 0 ? double(x / y) : double(x) / double(y);
        break;
      default: {  // Mod: floored, the sign of the divisor (as Python's %)
        if (y == 0) return;
        int64_t m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        result = double(m);
      }
    }
  } else {
    double x = syms_.number(a), y = syms_.number(b);
    switch (bl.op) {
      case BuiltinOp::Add: result = x + y; break;
      case BuiltinOp::Sub: result = x - y; break;
      case BuiltinOp::Mul: result = x * y; break;
      case BuiltinOp::Div:
        if (y == 0) return;
        result = x / y;
        break;
      default:
        if (y == 0) return;
        result = x - y * std::floor(x / y);
    }
  }
  if (!std::isfinite(result)) return;
  if (st.out_arg == kNone) {
    uint32_t c = val(2);
    if (syms_.is_number(c) && syms_.number(c) == result) run(plan, s + 1, emit);
    return;
  }
  bind_[acts[2].value] = syms_.intern_number(result);
  run(plan, s + 1, emit);
}

// Fires a rule for one plan, inserting new head tuples. Head tuples are inserted in
// batches whose hash slots are prefetched first: on large relations the probes are
// memory-bound. (Rows inserted while the rule runs are never read by it: every range
// ends at delta_end.) With a `capture`, the firing also records its ground rules (see
// Capture). `distinct`: every substitution gives a new head tuple (distinct_heads on an
// empty head relation), so tuples are appended without a hash probe.
void Grounder::fire(const CompiledRule& cr, const Plan& plan, Capture* capture, bool distinct) {
  prepare_rule(cr);
  Relation& head = rels_[cr.head_pred];
  const uint32_t arity = cr.head_arity;
  const uint64_t atom_bytes = atom_bytes_for(arity), captured_bytes = ground_rule_bytes(cr);
  constexpr uint32_t kBatch = 32;
  std::vector<uint32_t> pending(size_t(kBatch) * std::max<uint32_t>(arity, 1));
  std::array<uint32_t, kBatch> recorded;  // per pending tuple: its captured grounding, or kNone
  uint32_t n_pending = 0;
  auto flush = [&]() {
    if (!distinct)
      for (uint32_t i = 0; i < n_pending; ++i) head.prefetch(pending.data() + size_t(i) * arity);
    for (uint32_t i = 0; i < n_pending; ++i) {
      const uint32_t* tuple = pending.data() + size_t(i) * arity;
      auto [row, inserted] = distinct ? std::pair{head.append_distinct(tuple), true} : head.insert(tuple);
      if (capture && recorded[i] != kNone) capture->set_head(recorded[i], row);
      if (inserted && ++total_atoms_ > opt_.max_atoms) throw atom_limit(cr);
      if (inserted) add_bytes(atom_bytes, cr);
      if (cr.is_fact && head.template_fact(row) == kNone) head.set_template_fact(row, cr.source);
    }
    n_pending = 0;
  };
  auto emit = [&]() {
    // Every body substitution is a ground rule to be: the least model may not enumerate
    // more than the ground-rule limit allows either (`q :- e(A), e(B), e(C).` derives one
    // atom from 10^9 substitutions over 1000 constants, which no atom limit catches).
    if (++model_substitutions_ > opt_.max_ground_rules) throw model_limit(cr);
    head_tuple(cr, pending.data() + size_t(n_pending) * arity);
    if (capture) {
      recorded[n_pending] = capture->record(pending.data() + size_t(n_pending) * arity, rows_, bind_);
      if (recorded[n_pending] != kNone) add_bytes(captured_bytes, cr);
    }
    if (++n_pending == kBatch) flush();
  };
  run(plan, 0, emit);
  flush();
}

// Whether rule r's one firing in the least model can record its ground rules: a
// template rule a query's network needs, not recursive (fired once, with every body
// relation complete, so its plan and the order of its substitutions are those of
// enumerate_rule), stored, and without @op_eval inputs (their atoms are numbered only
// while enumerating).
bool Grounder::can_capture(uint32_t r) const {
  const CompiledRule& cr = prog_.compiled_rules()[r];
  if (!opt_.enumerate || !opt_.store_ground_rules || r >= prog_.num_rules() || !neural_relevant_[cr.head_pred])
    return false;
  return std::none_of(cr.body.begin(), cr.body.end(),
                      [](const BodyLiteral& bl) { return bl.kind == Kind::Builtin && is_eval(bl.op); });
}

// Whether every substitution the plan enumerates gives another head tuple: each
// variable is a head variable or the result of arithmetic on variables bound before it
// (so, step by step, a function of the head variables), and a step binds its new
// variables to one value per match, different for different matches (a relation's rows
// are distinct, so are the domain's values and @in's alternatives). Then distinct
// substitutions have distinct head tuples.
bool Grounder::distinct_heads(const CompiledRule& cr, const Plan& plan) {
  std::vector<char> in_head(cr.var_names.size(), 0);
  const ArgRef* h = cr.head_args();
  for (uint32_t k = 0; k < cr.head_arity; ++k)
    if (h[k].is_var) in_head[h[k].value] = 1;
  for (const Step& st : plan.steps) {
    const BodyLiteral& bl = cr.body[st.lit];
    const bool functional = st.op == Step::Builtin && (is_arithmetic(bl.op) || bl.op == BuiltinOp::Next);
    const uint32_t n_args = bl.kind == Kind::Domain ? 1 : bl.arity;
    for (uint32_t k = 0; k < n_args; ++k) {
      const ArgAction& a = plan.actions[st.actions + k];
      if (a.kind == ArgAction::Bind && !in_head[a.value] && !functional) return false;
    }
  }
  return true;
}

// At most how many substitutions the plan enumerates: the product of what its
// generators read (relation rows, the largest group of a frozen index, domain values,
// @in alternatives).
double Grounder::substitutions_bound(const CompiledRule& cr, const Plan& plan) const {
  double bound = 1;
  for (const Step& st : plan.steps) {
    if (st.op == Step::LookupFrozen) bound *= double(rels_[st.pred].index(st.index).frozen_largest_group());
    else if (st.op == Step::Scan || st.op == Step::RangeScan || st.op == Step::Lookup) bound *= rels_[st.pred].rows();
    else if (st.op == Step::Domain) bound *= double(domain_.size());
    else if (st.op == Step::Builtin && cr.body[st.lit].op == BuiltinOp::In) bound *= cr.body[st.lit].arity;
  }
  return bound;
}

// Fires a non-recursive rule (its only firing), recording its ground rules when it can.
// The arrays it fills are reserved for the most substitutions it can enumerate (address
// space only: pages no grounding reaches are never touched), up to 2^24 substitutions
// (a few hundred MB of address space: a filtered join's bound can be far above what it
// yields, and a kernel that checks allocations against memory could refuse more).
void Grounder::fire_once(uint32_t r, const Plan& plan) {
  const CompiledRule& cr = prog_.compiled_rules()[r];
  if (!opt_.record_while_firing) return fire(cr, plan);
  const bool distinct = rels_[cr.head_pred].rows() == 0 && distinct_heads(cr, plan);
  const double bound = substitutions_bound(cr, plan);
  constexpr double kMaxReserve = double(1 << 24);
  const bool reserve = bound <= kMaxReserve && bound <= double(opt_.max_ground_rules);
  if (distinct && reserve) rels_[cr.head_pred].reserve(size_t(bound));
  if (!can_capture(r)) return fire(cr, plan, nullptr, distinct);
  if (captured_.size() <= r) captured_.resize(prog_.num_rules());
  captured_[r] = std::make_unique<Capture>(cr, r, keeps_bindings(r));
  if (reserve) captured_[r]->reserve(size_t(bound));
  fire(cr, plan, captured_[r].get(), distinct);
}

void Grounder::evaluate_stratum(const Stratum& stratum) {
  std::vector<uint32_t> rules;
  for (uint32_t r : stratum.rules)
    if (logic_relevant_[prog_.compiled_rules()[r].head_pred]) rules.push_back(r);
  if (rules.empty()) return;
  std::vector<char>& in_stratum = in_stratum_;
  for (uint32_t p : stratum.preds) in_stratum[p] = 1;
  // Facts already in the stratum's relations count as the first delta.
  for (uint32_t p : stratum.preds) rels_[p].delta_begin = 0, rels_[p].delta_end = rels_[p].rows();
  bool first = true;
  for (;;) {
    for (uint32_t r : rules) {
      const CompiledRule& cr = prog_.compiled_rules()[r];
      std::vector<char> recursive(cr.body.size(), 0);
      bool any_recursive = false;
      for (uint32_t i = 0; i < cr.body.size(); ++i) {
        recursive[i] = cr.body[i].kind == Kind::Positive && in_stratum[cr.body[i].pred];
        any_recursive = any_recursive || recursive[i];
      }
      if (!any_recursive) {
        if (first && !fire_pair_block_rule(r)) fire_once(r, make_plan(cr, kNone, recursive));
        continue;
      }
      for (uint32_t i = 0; i < cr.body.size(); ++i) {
        if (!recursive[i]) continue;
        const Relation& d = rels_[cr.body[i].pred];
        if (d.delta_end == d.delta_begin) continue;
        fire(cr, make_plan(cr, i, recursive));
      }
    }
    first = false;
    bool changed = false;
    for (uint32_t p : stratum.preds) {
      Relation& rel = rels_[p];
      rel.delta_begin = rel.delta_end;
      rel.delta_end = rel.rows();
      changed = changed || rel.delta_end > rel.delta_begin;
    }
    if (!changed || !stratum.recursive) break;
  }
  for (uint32_t p : stratum.preds) rels_[p].delta_begin = rels_[p].delta_end = rels_[p].rows(), in_stratum[p] = 0;
}

GroundSample Grounder::build_sample(const std::vector<Literal>& queries) {
  GroundSample sample;
  const std::vector<uint32_t> base = atom_id_bases();
  count_atoms(sample.stats);
  std::vector<size_t> counted;  // counting mode: ground rules per set
  std::vector<GroundRuleSet> sets = enumerate_ground_rules(base, counted);
  set_levels(sets);
  for (PendingBlock& pb : blocks_) {
    if (!pb.block) continue;
    offset_pair_block(*pb.block, pb.shape, base);
    sample.stats.derived += pb.block->pairs();
  }
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> query_matches = match_queries(queries);
  const std::vector<char> keep = atoms_to_keep(sets, query_matches, base);
  const std::vector<uint32_t> new_id = write_atoms(sample, keep, base);
  for (auto& qm : query_matches) {
    std::vector<uint32_t> ids;
    for (auto [p, r] : qm) ids.push_back(new_id[base[p] + r]);
    sample.query_atoms.push_back(std::move(ids));
  }
  write_ground_rules(sample, sets, counted, new_id);
  write_pair_blocks(sample, new_id);
  return sample;
}

// Provisional atom ids: predicate base + row (base[n_preds] atoms in all).
std::vector<uint32_t> Grounder::atom_id_bases() const {
  const uint32_t n_preds = uint32_t(prog_.num_predicates());
  std::vector<uint32_t> base(n_preds + 1, 0);
  for (uint32_t p = 0; p < n_preds; ++p) base[p + 1] = base[p] + rels_[p].rows();
  return base;
}

void Grounder::count_atoms(GroundSample::Stats& stats) {
  for (uint32_t p = 0; p < prog_.num_predicates(); ++p) {
    for (uint32_t r = 0; r < rels_[p].rows(); ++r) {
      if (rels_[p].example_fact(r) != kNone) {
        ++stats.facts;
      } else if (rels_[p].template_fact(r) == kNone) {
        ++stats.derived;
      }
    }
  }
}

// The ground rules of every template rule whose head a query needs (counted only, with
// their counts in `counted`, when the options do not store them).
std::vector<GroundRuleSet> Grounder::enumerate_ground_rules(const std::vector<uint32_t>& base,
                                                            std::vector<size_t>& counted) {
  std::vector<GroundRuleSet> sets;
  if (!opt_.enumerate) return sets;
  enumerating_ = true;
  eval_base_ = base[prog_.num_predicates()];
  size_t total = 0;
  for (uint32_t r = 0; r < prog_.num_rules(); ++r) {
    if (!neural_relevant_[prog_.compiled_rules()[r].head_pred]) continue;
    if (const PairBlock* block = built_pair_block(r)) {  // its pairs count as ground rules
      if ((total += block->pairs()) > opt_.max_ground_rules) throw ground_rule_limit(prog_.compiled_rules()[r]);
      continue;
    }
    size_t count = 0;
    GroundRuleSet set;
    if (r < captured_.size() && captured_[r]) {
      count = captured_[r]->size();
      if ((total += count) > opt_.max_ground_rules) throw ground_rule_limit(prog_.compiled_rules()[r]);
      set = captured_[r]->take(base);
      captured_[r].reset();
    } else {
      set = enumerate_rule(r, base, total, count);
    }
    if (count > 0) {
      if (!opt_.store_ground_rules) set.head.clear();
      sets.push_back(std::move(set));
      if (!opt_.store_ground_rules) counted.push_back(count);
    }
  }
  return sets;
}

// Each rule set's level (its rule's stratum) when no rule set's rule is recursive.
void Grounder::set_levels(std::vector<GroundRuleSet>& sets) const {
  const auto& rules = prog_.compiled_rules();
  for (const GroundRuleSet& s : sets)
    if (prog_.strata()[rules[s.rule].stratum].recursive) return;
  for (GroundRuleSet& s : sets) s.level = rules[s.rule].stratum;
}

// Every ground rule of template rule `r` (deduplicated where the rule needs it); `total`
// counts across rules against GroundingOptions::max_ground_rules.
GroundRuleSet Grounder::enumerate_rule(uint32_t r, const std::vector<uint32_t>& base, size_t& total, size_t& count) {
  const CompiledRule& cr = prog_.compiled_rules()[r];
  std::vector<char> no_recursion(cr.body.size(), 0);
  Plan plan = make_plan(cr, kNone, no_recursion, /*frozen=*/true);
  prepare_rule(cr);
  GroundRuleSet set;
  set.rule = r;
  set.n_inputs = uint32_t(cr.input_literals.size());
  set.n_vars = keeps_bindings(r) ? uint32_t(cr.var_names.size()) : 0;
  std::vector<uint32_t> input_lits(set.n_inputs);
  for (uint32_t i = 0; i < cr.body.size(); ++i)
    if (cr.body[i].input_slot != kNone) input_lits[cr.body[i].input_slot] = i;
  const bool dedup = cr.needs_dedup && !cr.duplicate_grounding;
  const bool store = opt_.store_ground_rules;
  const uint64_t rule_bytes = ground_rule_bytes(cr);
  const uint32_t head_arity = cr.head_arity;
  // Dedup key: the head tuple and the input atoms (no head lookup needed).
  RowSet seen(head_arity + set.n_inputs);
  std::vector<uint32_t> key(head_arity + set.n_inputs);
  Relation& head = rels_[cr.head_pred];
  // Head atom ids are resolved in prefetched batches (see fire()).
  constexpr uint32_t kBatch = 32;
  std::vector<uint32_t> pending(size_t(kBatch) * std::max<uint32_t>(head_arity, 1));
  uint32_t n_pending = 0;
  auto flush = [&]() {
    const size_t first = set.head.size() - n_pending;
    for (uint32_t i = 0; i < n_pending; ++i) head.prefetch(pending.data() + size_t(i) * head_arity);
    for (uint32_t i = 0; i < n_pending; ++i)
      set.head[first + i] = base[cr.head_pred] + head.find(pending.data() + size_t(i) * head_arity);
    n_pending = 0;
  };
  auto emit = [&]() {
    if (dedup) {
      head_tuple(cr, key.data());
      for (uint32_t i = 0; i < set.n_inputs; ++i) {
        const BodyLiteral& bl = cr.body[input_lits[i]];
        key[head_arity + i] = input_atom(bl, base, rows_[input_lits[i]]);
      }
      if (!seen.insert(key.data())) return;
    }
    if (++total > opt_.max_ground_rules) throw ground_rule_limit(cr);
    ++count;
    if (!store) return;
    ++ground_rules_;
    add_bytes(rule_bytes, cr);
    head_tuple(cr, pending.data() + size_t(n_pending) * head_arity);
    set.head.push_back(kNone);
    for (uint32_t i = 0; i < set.n_inputs; ++i) {
      const BodyLiteral& bl = cr.body[input_lits[i]];
      set.inputs.push_back(input_atom(bl, base, rows_[input_lits[i]]));
    }
    if (set.n_vars)
      for (uint32_t v : bind_) set.bindings.push_back(v);
    if (++n_pending == kBatch) flush();
  };
  run(plan, 0, emit);
  flush();
  return set;
}

}  // namespace detail

using detail::Grounder;

GroundSample ground(const Program& program, const ExampleAst& example,
                    const std::vector<Literal>& queries, const GroundingOptions& options) {
  return ground(program, ExampleFacts(example), queries, options);
}

GroundSample ground(const Program& program, const FactSource& facts, const std::vector<Literal>& queries,
                    const GroundingOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  Grounder g(program, options);
  g.compute_model(facts, queries);
  GroundSample sample = g.build_sample(queries);
  sample.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sample;
}

std::vector<GroundSample> ground_many(const Program& program, const std::vector<const ExampleAst*>& examples,
                                      const std::vector<std::vector<Literal>>& queries,
                                      const GroundingOptions& options, int threads) {
  std::vector<GroundSample> out(examples.size());
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&]() {
    for (size_t i; (i = next.fetch_add(1)) < examples.size();) {
      try {
        static const std::vector<Literal> kNoQueries;
        out[i] = ground(program, *examples[i], i < queries.size() ? queries[i] : kNoQueries, options);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(examples.size());
      }
    }
  };
  threads = std::max(1, std::min<int>(threads, int(examples.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
  return out;
}

GoalAnswers answer_goal(const Program& program, const ExampleAst& facts, const Literal& goal,
                        const GroundingOptions& given) {
  GroundingOptions options = given;
  options.enumerate = false;
  Grounder g(program, options);
  g.compute_model(ExampleFacts(facts), {goal});
  return g.answer(goal);
}

}  // namespace lrnn::logic
