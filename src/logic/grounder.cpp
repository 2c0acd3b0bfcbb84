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
#include "logic/pair_block.hpp"
#include "logic/range_scan.hpp"
#include "logic/relation.hpp"
#include "logic/row_set.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/memory.hpp"

namespace lrnn::logic {

namespace {

using Kind = BodyLiteral::Kind;

// Sorts keys in 16-bit digits, least significant first (a digit all keys share is
// skipped): a counting pass and a scatter per digit, where a comparison sort of a graph's
// 2M packed edges took several times as long.
void radix_sort(std::vector<uint64_t>& keys) {
  if (keys.size() < 2) return;
  std::vector<uint64_t> sorted(keys.size());
  std::vector<uint32_t> start(size_t{1} << 16);
  for (int shift = 0; shift < 64; shift += 16) {
    std::fill(start.begin(), start.end(), 0);
    for (const uint64_t k : keys) ++start[(k >> shift) & 0xFFFF];
    if (start[(keys[0] >> shift) & 0xFFFF] == keys.size()) continue;
    uint32_t sum = 0;
    for (uint32_t& c : start) {
      const uint32_t n = c;
      c = sum;
      sum += n;
    }
    for (const uint64_t k : keys) sorted[start[(k >> shift) & 0xFFFF]++] = k;
    keys.swap(sorted);
  }
}

// How one argument of a literal is handled when the literal is matched.
struct ArgAction {
  enum : uint8_t { Const, Bound, Bind, Same } kind;
  uint32_t value;  // symbol id (Const) or variable index
};

enum class Range : uint8_t { Full, Old, Delta };

struct Step {
  enum Op : uint8_t { Scan, RangeScan, Lookup, LookupFrozen, Member, NotMember, Builtin, Domain } op;
  Range range = Range::Full;
  uint32_t lit = 0;
  uint32_t pred = kNone;
  uint32_t index = kNone;   // Lookup: index of the relation; RangeScan: its Plan::ranges entry
  uint32_t actions = 0;     // into Plan::actions, one per argument
  uint32_t out_arg = kNone; // Builtin: the argument it binds, kNone if it only checks
};

struct Plan {
  std::vector<Step> steps;
  std::vector<ArgAction> actions;
  std::vector<std::vector<RangeBound>> ranges;  // per RangeScan step
};

class Grounder {
 public:
  Grounder(const Program& program, const GroundingOptions& options)
      : prog_(program), opt_(options), syms_(program.symbols()) {
    rels_.reserve(program.num_predicates());
    for (uint32_t p = 0; p < program.num_predicates(); ++p)
      rels_.emplace_back(uint32_t(program.predicate_arity(p)));
    in_stratum_.assign(program.num_predicates(), 0);
  }

  // Loads the facts and computes the least model of the predicates the queries need.
  void compute_model(const FactSource& facts, const std::vector<Literal>& queries) {
    select_relevant(queries);
    select_pair_blocks(queries);
    load_facts(facts);
    for (uint32_t s = 0; s < prog_.strata().size(); ++s) evaluate_stratum(prog_.strata()[s]);
  }

  GroundSample build_sample(const std::vector<Literal>& queries);
  GoalAnswers answer(const Literal& goal);

 private:
  // A pair block this example may build: built (its atoms relation rows, then provisional
  // ids) when its sum rule fires.
  struct PendingBlock {
    PairBlockShape shape;
    std::optional<PairBlock> block;
  };

  // ---- building a sample (build_sample's steps) ----
  std::vector<uint32_t> atom_id_bases() const;
  void count_atoms(GroundSample::Stats& stats);
  std::vector<GroundRuleSet> enumerate_ground_rules(const std::vector<uint32_t>& base, std::vector<size_t>& counted);
  GroundRuleSet enumerate_rule(uint32_t r, const std::vector<uint32_t>& base, size_t& total, size_t& count);
  Error ground_rule_limit(const CompiledRule& cr) const;
  void set_levels(std::vector<GroundRuleSet>& sets) const;
  bool keep_without_recursion(const std::vector<GroundRuleSet>& sets, std::vector<char>& keep) const;
  void write_pair_blocks(GroundSample& sample, const std::vector<uint32_t>& new_id);
  std::vector<char> atoms_to_keep(const std::vector<GroundRuleSet>& sets,
                                  const std::vector<std::vector<std::pair<uint32_t, uint32_t>>>& query_matches,
                                  const std::vector<uint32_t>& base) const;
  std::vector<uint32_t> write_atoms(GroundSample& sample, const std::vector<char>& keep, const std::vector<uint32_t>& base);
  void write_ground_rules(GroundSample& sample, std::vector<GroundRuleSet>& sets, const std::vector<size_t>& counted,
                          const std::vector<uint32_t>& new_id) const;

  // ---- setup ----
  void select_relevant(const std::vector<Literal>& queries) {
    const size_t n = prog_.num_predicates();
    std::vector<uint32_t> roots;
    for (const Literal& q : queries) {
      uint32_t p = q.builtin ? kNone : prog_.predicate_id(q.predicate, q.arity());
      if (p != kNone) roots.push_back(p);
    }
    has_queries_ = !queries.empty();
    if (!has_queries_) {
      logic_relevant_.assign(n, 1);
      neural_relevant_.assign(n, 1);
      return;
    }
    auto closure = [&](const std::vector<std::vector<uint32_t>>& deps) {
      std::vector<char> seen(n, 0);
      std::vector<uint32_t> stack = roots;
      for (uint32_t p : roots) seen[p] = 1;
      while (!stack.empty()) {
        uint32_t p = stack.back();
        stack.pop_back();
        for (uint32_t d : deps[p])
          if (!seen[d]) seen[d] = 1, stack.push_back(d);
      }
      return seen;
    };
    logic_relevant_ = closure(prog_.logic_deps());
    neural_relevant_ = closure(prog_.input_deps());
  }

  // Fact f as the grounder reads it (FactSource::interned, else from its literal).
  void read_fact(const FactSource& facts, uint32_t f, FactSource::Interned& out, Literal& scratch) {
    if (facts.interned(f, syms_, out)) return;
    const Literal& l = facts.fact(f, scratch);
    out.predicate = l.predicate;
    out.builtin = l.builtin;
    out.args.clear();
    for (const Term& t : l.args) {
      if (t.is_variable()) {
        throw Error(ErrorKind::Semantic, t.span, "an example fact must be ground, found variable " + t.text);
      }
      out.args.push_back(syms_.intern_term(t));
    }
  }

  // Facts are inserted in batches whose hash slots are prefetched first (as fire's heads
  // are): a big graph's edge relation hashes 2M tuples into a table far larger than the
  // caches, so each insert was a cache and TLB miss waited for in turn.
  void load_facts(const FactSource& facts) {
    FactSource::Interned fact;
    Literal scratch;
    std::string last_predicate;  // facts come in runs of one predicate: one lookup per run
    int last_arity = -1;
    uint32_t last_id = kNone;
    constexpr uint32_t kBatch = 32;
    struct Pending {
      uint32_t pred, fact, begin;  // begin: into tuples
    };
    std::vector<Pending> pending;
    std::vector<uint32_t> tuples;
    pending.reserve(kBatch);
    // Binary relations are appended unhashed and checked for repeated facts afterwards
    // (remove_repeated_facts): a graph's edges would otherwise fill a whole-tuple hash
    // table of ~64 MB at 2M edges, which nothing probes after loading.
    std::vector<char> unchecked(rels_.size(), 0);
    for (uint32_t p = 0; p < rels_.size(); ++p) unchecked[p] = rels_[p].arity() == 2 && rels_[p].rows() == 0;
    auto flush = [&]() {
      for (const Pending& q : pending) rels_[q.pred].prefetch(tuples.data() + q.begin);
      for (const Pending& q : pending) {
        Relation& rel = rels_[q.pred];
        auto [row, inserted] = rel.insert(tuples.data() + q.begin);
        if (inserted) ++total_atoms_;
        if (rel.example_fact(row) == kNone) rel.set_example_fact(row, q.fact);
      }
      pending.clear();
      tuples.clear();
    };
    for (uint32_t f = 0; f < facts.size(); ++f) {
      read_fact(facts, f, fact, scratch);
      const std::vector<uint32_t>& tuple = fact.args;
      const int arity = static_cast<int>(tuple.size());
      if (!fact.builtin && (arity != last_arity || fact.predicate != last_predicate)) {
        last_predicate = fact.predicate;
        last_arity = arity;
        last_id = prog_.predicate_id(last_predicate, arity);
      }
      const uint32_t p = fact.builtin ? kNone : last_id;
      if (prog_.uses_domain()) domain_.insert(domain_.end(), tuple.begin(), tuple.end());
      if (p == kNone) continue;  // no rule reads it and no query can name it
      if (unchecked[p]) {
        const uint32_t row = rels_[p].append_distinct(tuple.data());
        rels_[p].set_example_fact(row, f);
        ++total_atoms_;
        continue;
      }
      pending.push_back({p, f, uint32_t(tuples.size())});
      tuples.insert(tuples.end(), tuple.begin(), tuple.end());
      if (pending.size() == kBatch) flush();
    }
    flush();
    for (uint32_t p = 0; p < rels_.size(); ++p)
      if (unchecked[p]) remove_repeated_facts(rels_[p]);
    for (Relation& r : rels_) r.delta_begin = r.delta_end = r.rows();
    if (prog_.uses_domain()) {
      domain_.insert(domain_.end(), prog_.template_constants().begin(),
                     prog_.template_constants().end());
      std::sort(domain_.begin(), domain_.end());
      domain_.erase(std::unique(domain_.begin(), domain_.end()), domain_.end());
    }
  }

  // A binary relation loaded unhashed made distinct: when a fact repeats (found by
  // sorting the packed pairs), the relation is rebuilt in load order with each tuple's
  // first fact, the relation hashed loading would have built.
  void remove_repeated_facts(Relation& rel) {
    std::vector<uint64_t> pairs(rel.rows());
    for (uint32_t r = 0; r < rel.rows(); ++r) pairs[r] = uint64_t(rel.row(r)[0]) << 32 | rel.row(r)[1];
    radix_sort(pairs);
    if (std::adjacent_find(pairs.begin(), pairs.end()) == pairs.end()) return;
    Relation distinct(2);
    for (uint32_t r = 0; r < rel.rows(); ++r) {
      const auto [row, inserted] = distinct.insert(rel.row(r));
      if (inserted) distinct.set_example_fact(row, rel.example_fact(r));
      else --total_atoms_;
    }
    rel = std::move(distinct);
  }

  // ---- planning ----
  // Orders a rule body: builtins and fully bound literals as soon as their inputs are
  // bound, otherwise the positive literal expected to match the fewest rows.
  // `frozen`: the model is complete (enumeration), so lookups may use CSR indexes.
  Plan make_plan(const CompiledRule& cr, uint32_t delta_lit, const std::vector<char>& recursive,
                 bool frozen = false) {
    RulePlanner planner(*this, cr, delta_lit, recursive, frozen);
    if (delta_lit != kNone) planner.place(delta_lit);
    while (planner.plan.steps.size() < cr.body.size()) {
      const uint32_t next = planner.first_ready();  // checks and binding builtins go first
      planner.place(next != kNone ? next : planner.cheapest_generator());
    }
    return std::move(planner.plan);
  }

  // make_plan's state: what is placed and bound so far.
  struct RulePlanner {
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

  // ---- evaluation ----
  struct Bounds {
    uint32_t lo, hi;
  };
  Bounds bounds(const Relation& r, Range g) const {
    switch (g) {
      case Range::Full: return {0, r.delta_end};
      case Range::Old: return {0, r.delta_begin};
      case Range::Delta: return {r.delta_begin, r.delta_end};
    }
    return {0, 0};
  }

  uint32_t value_of(const ArgAction& a) const { return a.kind == ArgAction::Const ? a.value : bind_[a.value]; }

  // The interval [lo, hi] of a range scan's variable under the current bindings; false
  // when a bound's base is not a small integer (the scan then reads every row).
  bool interval(const std::vector<RangeBound>& range, int64_t& lo, int64_t& hi) const {
    lo = std::numeric_limits<int64_t>::min();
    hi = std::numeric_limits<int64_t>::max();
    for (const RangeBound& b : range) {
      const uint32_t v = b.base_is_var ? bind_[b.base] : b.base;
      if (!Symbols::is_small_int(v)) return false;
      const int64_t x = Symbols::small_int(v) + b.offset;
      if (b.upper) hi = std::min(hi, x);
      else lo = std::max(lo, x);
    }
    return true;
  }

  // The value index of a complete one-column relation (built on first use).
  const ValueIndex& value_index(uint32_t pred) {
    if (value_index_.size() <= pred) value_index_.resize(prog_.num_predicates());
    if (!value_index_[pred]) value_index_[pred] = std::make_unique<ValueIndex>(rels_[pred]);
    return *value_index_[pred];
  }

  // Applies Bind/Same actions of a matched tuple; false if a repeated variable differs.
  bool match(const Plan& plan, const Step& st, uint32_t arity, const uint32_t* tuple) {
    const ArgAction* acts = plan.actions.data() + st.actions;
    for (uint32_t k = 0; k < arity; ++k) {
      const ArgAction& a = acts[k];
      if (a.kind == ArgAction::Bind) {
        bind_[a.value] = tuple[k];
      } else if (a.kind == ArgAction::Same) {
        if (bind_[a.value] != tuple[k]) return false;
      }
    }
    return true;
  }

  template <class Emit>
  void run(const Plan& plan, uint32_t s, Emit& emit) {
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
  void run_range_scan(const Plan& plan, uint32_t s, const Step& st, Emit& emit) {
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
  void run_builtin(const Plan& plan, uint32_t s, const Step& st, const ArgAction* acts, Emit& emit) {
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
  void run_arithmetic(const Plan& plan, uint32_t s, const Step& st, const ArgAction* acts, Emit& emit) {
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

  // The provisional id (past every relation's atoms) of the atom @op_eval(a, b).
  uint32_t eval_atom(uint32_t pred, uint32_t a, uint32_t b, double value) {
    auto [it, inserted] = eval_ids_.try_emplace({pred, a, b}, uint32_t(eval_values_.size()));
    if (inserted) {
      eval_atoms_.insert(eval_atoms_.end(), {pred, a, b});
      eval_values_.push_back(value);
    }
    return it->second;
  }

  // The provisional atom id of input literal `bl` matched at `row`.
  uint32_t input_atom(const BodyLiteral& bl, const std::vector<uint32_t>& base, uint32_t row) const {
    return bl.kind == Kind::Builtin ? eval_base_ + row : base[bl.pred] + row;
  }

  void head_tuple(const CompiledRule& cr, uint32_t* out) const {
    const ArgRef* h = cr.head_args();
    for (uint32_t k = 0; k < cr.head_arity; ++k) out[k] = h[k].is_var ? bind_[h[k].value] : h[k].value;
  }

  void prepare_rule(const CompiledRule& cr) {
    rule_ = &cr;
    bind_.assign(cr.var_names.size(), kNone);
    rows_.assign(cr.body.size(), kNone);
  }

  // Fires a rule for one plan, inserting new head tuples. Head tuples are inserted in
  // batches whose hash slots are prefetched first: on large relations the probes are
  // memory-bound. (Rows inserted while the rule runs are never read by it: every range
  // ends at delta_end.) With a `capture`, the firing also records its ground rules (see
  // Capture). `distinct`: every substitution gives a new head tuple (distinct_heads on an
  // empty head relation), so tuples are appended without a hash probe.
  void fire(const CompiledRule& cr, const Plan& plan, Capture* capture = nullptr, bool distinct = false) {
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

  Error atom_limit(const CompiledRule& cr) const {
    return Error(ErrorKind::Limit, cr.span,
                 "grounding exceeded " + std::to_string(opt_.max_atoms) + " atoms while deriving " +
                     prog_.predicate_name(cr.head_pred) + " (GroundingOptions::max_atoms)");
  }
  Error model_limit(const CompiledRule& cr) const {
    return Error(ErrorKind::Limit, cr.span,
                 "grounding exceeded " + std::to_string(opt_.max_ground_rules) +
                     " ground rules (GroundingOptions::max_ground_rules) while computing the least model of " +
                     prog_.predicate_name(cr.head_pred) + " (each body substitution counts)");
  }

  // Whether rule r's one firing in the least model can record its ground rules: a
  // template rule a query's network needs, not recursive (fired once, with every body
  // relation complete, so its plan and the order of its substitutions are those of
  // enumerate_rule), stored, and without @op_eval inputs (their atoms are numbered only
  // while enumerating).
  bool can_capture(uint32_t r) const {
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
  static bool distinct_heads(const CompiledRule& cr, const Plan& plan) {
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
  double substitutions_bound(const CompiledRule& cr, const Plan& plan) const {
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
  void fire_once(uint32_t r, const Plan& plan) {
    const CompiledRule& cr = prog_.compiled_rules()[r];
    if (!opt_.record_while_firing) return fire(cr, plan);
    const bool distinct = rels_[cr.head_pred].rows() == 0 && distinct_heads(cr, plan);
    const double bound = substitutions_bound(cr, plan);
    constexpr double kMaxReserve = double(1 << 24);
    const bool reserve = bound <= kMaxReserve && bound <= double(opt_.max_ground_rules);
    if (distinct && reserve) rels_[cr.head_pred].reserve(size_t(bound));
    if (!can_capture(r)) return fire(cr, plan, nullptr, distinct);
    if (captured_.size() <= r) captured_.resize(prog_.num_rules());
    captured_[r] = std::make_unique<Capture>(cr, r);
    if (reserve) captured_[r]->reserve(size_t(bound));
    fire(cr, plan, captured_[r].get(), distinct);
  }

  void evaluate_stratum(const Stratum& stratum) {
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

  // ---- pair blocks (pair_block.hpp) ----
  // The listed rule pairs that may be grounded as blocks in this example: they pass
  // pair_block_structure, their ground rules are stored and recorded while firing, a
  // query's network needs the sum rule's head and no query names the pair predicate w.
  void select_pair_blocks(const std::vector<Literal>& queries) {
    if (opt_.pair_blocks.empty() || !opt_.store_ground_rules || !opt_.enumerate || !opt_.record_while_firing) return;
    block_of_rule_.assign(prog_.num_rules(), kNone);
    for (const PairBlockRules& rules : opt_.pair_blocks) {
      std::optional<PairBlockShape> shape = pair_block_shape(prog_, rules.score_rule, rules.sum_rule);
      if (!shape || !logic_relevant_[shape->head_pred] || !neural_relevant_[shape->head_pred]) continue;
      if (block_of_rule_[rules.score_rule] != kNone || block_of_rule_[rules.sum_rule] != kNone) continue;
      const uint32_t w = shape->pair_pred;
      if (std::any_of(queries.begin(), queries.end(), [&](const Literal& q) {
            return !q.builtin && prog_.predicate_id(q.predicate, q.arity()) == w;
          }))
        continue;
      block_of_rule_[rules.score_rule] = block_of_rule_[rules.sum_rule] = uint32_t(blocks_.size());
      blocks_.push_back({std::move(*shape), std::nullopt});
    }
  }

  // A pair block's rules: the score rule's firing waits for the sum rule's, which builds
  // the block (every relation the two read is complete then) or, where the example allows
  // none, fires the score rule as its own stratum would have and leaves the sum rule to
  // fire as usual. True: rule r is done.
  bool fire_pair_block_rule(uint32_t r) {
    PendingBlock* pending = pending_block(r);
    if (!pending) return false;
    PendingBlock& pb = *pending;
    if (r == pb.shape.score_rule) return true;
    pb.block = build_pair_block(pb.shape, rels_, syms_);
    if (pb.block) {
      derive_block_heads(pb);
      return true;
    }
    const CompiledRule& score = prog_.compiled_rules()[pb.shape.score_rule];
    fire_once(pb.shape.score_rule, make_plan(score, kNone, std::vector<char>(score.body.size(), 0)));
    Relation& w = rels_[pb.shape.pair_pred];
    w.delta_begin = w.delta_end = w.rows();  // complete, as after its own stratum
    return false;
  }

  // The heads a(I) of a built block, one per row, and the two rules' substitutions counted
  // against the limits as their firings would have counted them.
  void derive_block_heads(PendingBlock& pb) {
    PairBlock& block = *pb.block;
    const auto& rules = prog_.compiled_rules();
    for (uint32_t r : {pb.shape.score_rule, pb.shape.sum_rule})
      if ((model_substitutions_ += block.pairs()) > opt_.max_ground_rules) throw model_limit(rules[r]);
    const CompiledRule& sum = rules[pb.shape.sum_rule];
    Relation& head = rels_[sum.head_pred];
    for (const uint32_t i : block.row_symbol) {
      auto [row, inserted] = head.insert(&i);
      if (inserted && ++total_atoms_ > opt_.max_atoms) throw atom_limit(sum);
      if (inserted) add_bytes(atom_bytes_for(1), sum);
      block.head_atom.push_back(row);
    }
  }

  // The pending block of template rule r (its score or sum rule), or null.
  PendingBlock* pending_block(uint32_t r) {
    return r < block_of_rule_.size() && block_of_rule_[r] != kNone ? &blocks_[block_of_rule_[r]] : nullptr;
  }

  // The block built for template rule r, or null.
  const PairBlock* built_pair_block(uint32_t r) {
    const PendingBlock* pb = pending_block(r);
    return pb && pb->block ? &*pb->block : nullptr;
  }

  // The atoms a query literal matches: (predicate, row) pairs.
  std::vector<std::pair<uint32_t, uint32_t>> match_query(const Literal& q,
                                                         std::vector<uint32_t>* var_values = nullptr,
                                                         std::vector<std::string>* var_names = nullptr) {
    std::vector<std::pair<uint32_t, uint32_t>> out;
    if (q.builtin) return out;
    uint32_t p = prog_.predicate_id(q.predicate, q.arity());
    // Variables: index per distinct named variable; `_` matches anything.
    std::vector<int> var_of(q.args.size(), -1);
    std::vector<std::string> names;
    std::vector<uint32_t> consts(q.args.size(), kNone);
    for (size_t k = 0; k < q.args.size(); ++k) {
      const Term& t = q.args[k];
      if (!t.is_variable()) {
        consts[k] = syms_.intern_term(t);
      } else if (t.text != "_") {
        auto it = std::find(names.begin(), names.end(), t.text);
        var_of[k] = int(it - names.begin());
        if (it == names.end()) names.push_back(t.text);
      }
    }
    if (var_names) *var_names = names;
    if (p == kNone) return out;
    const Relation& rel = rels_[p];
    // A ground query is one lookup (n queries out(0..n-1) would otherwise scan n rows each).
    if (!consts.empty() && std::none_of(consts.begin(), consts.end(), [](uint32_t c) { return c == kNone; })) {
      const uint32_t r = rel.arity() == consts.size() ? rel.find(consts.data()) : kNone;
      if (r != kNone) out.emplace_back(p, r);
      return out;
    }
    std::vector<uint32_t> vals(names.size());
    std::vector<char> set(names.size());
    for (uint32_t r = 0; r < rel.rows(); ++r) {
      const uint32_t* t = rel.row(r);
      std::fill(set.begin(), set.end(), 0);
      bool ok = true;
      for (size_t k = 0; k < q.args.size() && ok; ++k) {
        if (consts[k] != kNone) {
          ok = t[k] == consts[k];
        } else if (var_of[k] >= 0) {
          if (set[var_of[k]]) {
            ok = vals[var_of[k]] == t[k];
          } else {
            vals[var_of[k]] = t[k];
            set[var_of[k]] = 1;
          }
        }
      }
      if (!ok) continue;
      out.emplace_back(p, r);
      if (var_values) var_values->insert(var_values->end(), vals.begin(), vals.end());
    }
    return out;
  }

  const Program& prog_;
  const GroundingOptions& opt_;
  Symbols& syms_;
  std::vector<Relation> rels_;
  std::vector<uint32_t> domain_;
  std::vector<char> logic_relevant_, neural_relevant_;
  std::vector<char> in_stratum_;  // predicates of the stratum being evaluated
  std::vector<std::unique_ptr<ValueIndex>> value_index_;  // per predicate (range scans)
  std::vector<std::unique_ptr<Capture>> captured_;  // per template rule: recorded by its firing
  // Pair blocks this example may build (select_pair_blocks); per template rule, its entry.
  std::vector<PendingBlock> blocks_;
  std::vector<uint32_t> block_of_rule_;
  bool has_queries_ = false;
  size_t total_atoms_ = 0;
  size_t model_substitutions_ = 0;  // body substitutions enumerated by the least model
  size_t ground_rules_ = 0;         // stored by enumeration
  // The memory budget (lrnn/memory.hpp): the bytes of the derived atoms and the stored
  // ground rules, estimated per row as they are added and reserved a chunk at a time, so
  // the budget is asked once per chunk, not per row. Held until the grounder ends.
  uint64_t bytes_ = 0;
  MemoryReservation memory_;
  // Estimated bytes per row: a derived atom (its 4-byte arguments with half again for the
  // array's growth, its hash slot and index entries) and a stored ground rule (head, inputs
  // and bindings, with growth). Measured peaks: 16 bytes per atom of n(X) :- n(Y), @add(..)
  // (estimated 30), 84 per atom of a 16-argument p (estimated 120).
  static constexpr uint64_t atom_bytes_for(uint32_t arity) { return 6 * uint64_t(arity) + 24; }
  static uint64_t ground_rule_bytes(const CompiledRule& cr) {
    return 6 * (1 + uint64_t(cr.input_literals.size()) + uint64_t(cr.var_names.size()));
  }
  void add_bytes(uint64_t bytes, const CompiledRule& cr) {
    if ((bytes_ += bytes) > memory_.bytes()) [[unlikely]] reserve_bytes(cr);
  }
  // Reserves up to bytes_ and a chunk beyond (so the next rows need no call), or exactly
  // bytes_ near the limit; past it, refuses naming the rule being grounded.
  void reserve_bytes(const CompiledRule& cr) {
    constexpr uint64_t kChunk = uint64_t{8} << 20;
    if (memory_.try_grow(bytes_ + kChunk - memory_.bytes()) || memory_.try_grow(bytes_ - memory_.bytes())) return;
    memory_.refuse(bytes_ - memory_.bytes(),
                   "grounding (" + std::to_string(total_atoms_) + " atoms and " +
                       std::to_string(std::max(model_substitutions_, ground_rules_)) + " ground rules so far, " +
                       format_memory_size(bytes_) + " estimated) while deriving " + prog_.predicate_name(cr.head_pred) +
                       " by this rule",
                   cr.span);
  }
  // The rule being evaluated: variable bindings and the matched row per literal.
  const CompiledRule* rule_ = nullptr;
  std::vector<uint32_t> bind_, rows_;
  // @op_eval atoms, created while ground rules are enumerated: (pred, a, b) and value per
  // atom, provisional ids from eval_base_ on.
  bool enumerating_ = false;
  uint32_t eval_base_ = 0;
  std::map<std::array<uint32_t, 3>, uint32_t> eval_ids_;
  std::vector<uint32_t> eval_atoms_;
  std::vector<double> eval_values_;
};

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
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> query_matches;
  for (const Literal& q : queries) query_matches.push_back(match_query(q));
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
  set.n_vars = uint32_t(cr.var_names.size());
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
    for (uint32_t v : bind_) set.bindings.push_back(v);
    if (++n_pending == kBatch) flush();
  };
  run(plan, 0, emit);
  flush();
  return set;
}

Error Grounder::ground_rule_limit(const CompiledRule& cr) const {
  return Error(ErrorKind::Limit, cr.span,
               "grounding exceeded " + std::to_string(opt_.max_ground_rules) +
                   " ground rules (GroundingOptions::max_ground_rules) while enumerating this rule");
}

// Which provisional atoms to keep: those supporting a query (when pruning), else all
// atoms of logically relevant predicates and the query atoms.
std::vector<char> Grounder::atoms_to_keep(const std::vector<GroundRuleSet>& sets,
                                          const std::vector<std::vector<std::pair<uint32_t, uint32_t>>>& query_matches,
                                          const std::vector<uint32_t>& base) const {
  const uint32_t n_preds = uint32_t(prog_.num_predicates());
  const uint32_t n_prov = base[n_preds] + uint32_t(eval_values_.size());
  std::vector<char> keep(n_prov, 0);
  for (auto& qm : query_matches)
    for (auto [p, r] : qm) keep[base[p] + r] = 1;
  const bool prune = opt_.prune && has_queries_ && opt_.store_ground_rules;
  if (!prune) {
    for (uint32_t p = 0; p < n_preds; ++p)
      if (logic_relevant_[p]) std::fill(keep.begin() + base[p], keep.begin() + base[p + 1], 1);
    std::fill(keep.begin() + base[n_preds], keep.end(), 1);
    return keep;
  }
  if (keep_without_recursion(sets, keep)) return keep;
  if (std::any_of(blocks_.begin(), blocks_.end(), [](const PendingBlock& pb) { return pb.block.has_value(); }))
    throw Error(ErrorKind::Runtime, "internal: a pair block in a grounding whose rule sets have no levels");
  // Ground rules by head atom (CSR), then a walk down from the query atoms.
  std::vector<uint32_t> start(n_prov + 1, 0);
  for (const auto& s : sets)
    for (uint32_t h : s.head) ++start[h + 1];
  for (uint32_t a = 0; a < n_prov; ++a) start[a + 1] += start[a];
  std::vector<uint32_t> fill(start.begin(), start.end() - 1);
  std::vector<std::pair<uint32_t, uint32_t>> by_head(start[n_prov]);
  for (uint32_t si = 0; si < sets.size(); ++si)
    for (uint32_t g = 0; g < sets[si].size(); ++g) by_head[fill[sets[si].head[g]]++] = {si, g};
  std::vector<uint32_t> stack;
  for (uint32_t a = 0; a < n_prov; ++a)
    if (keep[a]) stack.push_back(a);
  while (!stack.empty()) {
    uint32_t a = stack.back();
    stack.pop_back();
    for (uint32_t k = start[a]; k < start[a + 1]; ++k) {
      const GroundRuleSet& s = sets[by_head[k].first];
      const uint32_t* in = s.inputs.data() + size_t(by_head[k].second) * s.n_inputs;
      for (uint32_t i = 0; i < s.n_inputs; ++i)
        if (!keep[in[i]]) keep[in[i]] = 1, stack.push_back(in[i]);
    }
  }
  return keep;
}

// atoms_to_keep's walk when the rule sets have levels (no recursion): a ground rule's
// inputs are derived only by rule sets of lower levels, so taking the rule sets from the
// highest level down, every ground rule that can reach an atom is seen before the rule
// sets deriving it, and one pass per rule set (marking the inputs of each ground rule
// whose head is kept) marks what the walk would, without the index of ground rules by
// head. False (keep untouched beyond the query atoms) without levels.
bool Grounder::keep_without_recursion(const std::vector<GroundRuleSet>& sets, std::vector<char>& keep) const {
  for (const GroundRuleSet& s : sets)
    if (s.level == kNone) return false;
  // The rule sets, then the pair blocks (at their sum rule's level: taken whole).
  const std::vector<uint32_t> order =
      by_level_descending(sets, blocks_.size(), [&](size_t b) { return blocks_[b].shape.level; });
  for (uint32_t si : order) {
    if (si >= sets.size()) {
      if (const auto& block = blocks_[si - sets.size()].block) keep_pair_block(*block, keep);
      continue;
    }
    const GroundRuleSet& s = sets[si];
    for (size_t g = 0; g < s.size(); ++g)
      if (keep[s.head[g]])
        for (uint32_t i = 0; i < s.n_inputs; ++i) keep[s.inputs[g * s.n_inputs + i]] = 1;
  }
  return true;
}

// The kept atoms, renumbered densely; returns provisional id -> new id (kNone: dropped).
std::vector<uint32_t> Grounder::write_atoms(GroundSample& sample, const std::vector<char>& keep,
                                            const std::vector<uint32_t>& base) {
  std::vector<uint32_t> new_id(keep.size(), kNone);
  size_t n_kept = 0, n_args = 0;
  for (uint32_t p = 0; p < prog_.num_predicates(); ++p)
    for (uint32_t r = 0; r < rels_[p].rows(); ++r)
      if (keep[base[p] + r]) ++n_kept, n_args += rels_[p].arity();
  n_kept += eval_values_.size(), n_args += 2 * eval_values_.size();
  sample.atom_pred.reserve(n_kept);
  sample.atom_args_begin.reserve(n_kept + 1);
  sample.atom_args.reserve(n_args);
  sample.atom_example_fact.reserve(n_kept);
  sample.atom_template_fact.reserve(n_kept);
  sample.atom_args_begin.push_back(0);
  for (uint32_t p = 0; p < prog_.num_predicates(); ++p) {
    // Runs of kept rows are appended at once (their arguments lie back to back).
    const Relation& rel = rels_[p];
    const char* kept = keep.data() + base[p];
    const uint32_t arity = rel.arity();
    for (uint32_t r = 0; r < rel.rows();) {
      if (!kept[r]) {
        ++r;
        continue;
      }
      uint32_t e = r + 1;
      while (e < rel.rows() && kept[e]) ++e;
      const uint32_t first = uint32_t(sample.atom_pred.size());
      for (uint32_t t = r; t < e; ++t) new_id[base[p] + t] = first + (t - r);
      sample.atom_pred.insert(sample.atom_pred.end(), e - r, p);
      sample.atom_args.insert(sample.atom_args.end(), rel.row(r), rel.row(r) + size_t(e - r) * arity);
      for (uint32_t t = r; t < e; ++t) {
        sample.atom_args_begin.push_back(sample.atom_args_begin.back() + arity);
        sample.atom_example_fact.push_back(rel.example_fact(t));
        sample.atom_template_fact.push_back(rel.template_fact(t));
      }
      r = e;
    }
  }
  for (uint32_t k = 0; k < eval_values_.size(); ++k) {
    if (!keep[eval_base_ + k]) continue;
    const uint32_t id = uint32_t(sample.atom_pred.size());
    new_id[eval_base_ + k] = id;
    sample.atom_pred.push_back(eval_atoms_[3 * k]);
    sample.atom_args.insert(sample.atom_args.end(), eval_atoms_.begin() + 3 * k + 1, eval_atoms_.begin() + 3 * k + 3);
    sample.atom_args_begin.push_back(uint32_t(sample.atom_args.size()));
    sample.atom_example_fact.push_back(kNone);
    sample.atom_template_fact.push_back(kNone);
    sample.computed_values.emplace_back(id, eval_values_[k]);
  }
  return new_id;
}

// Remaps a set's atoms to their new ids in place, dropping the ground rules whose head was
// pruned (no copy: the arrays can hold hundreds of millions of ids).
void remap_ground_rules(GroundRuleSet& s, const std::vector<uint32_t>& new_id) {
  size_t w = 0;
  for (size_t g = 0; g < s.size(); ++g) {
    uint32_t h = new_id[s.head[g]];
    if (h == kNone) continue;
    s.head[w] = h;
    for (uint32_t i = 0; i < s.n_inputs; ++i) s.inputs[w * s.n_inputs + i] = new_id[s.inputs[g * s.n_inputs + i]];
    if (w != g)
      std::copy(s.bindings.begin() + g * s.n_vars, s.bindings.begin() + (g + 1) * s.n_vars,
                s.bindings.begin() + w * s.n_vars);
    ++w;
  }
  s.head.resize(w);
  s.inputs.resize(w * s.n_inputs);
  s.bindings.resize(w * s.n_vars);
}

void Grounder::write_ground_rules(GroundSample& sample, std::vector<GroundRuleSet>& sets,
                                  const std::vector<size_t>& counted, const std::vector<uint32_t>& new_id) const {
  size_t n_ground = 0;
  for (size_t si = 0; si < sets.size(); ++si) {
    GroundRuleSet& s = sets[si];
    if (!opt_.store_ground_rules) {
      n_ground += counted[si];
      continue;
    }
    remap_ground_rules(s, new_id);
    if (s.size() == 0) continue;
    n_ground += s.size();
    sample.rules.push_back(std::move(s));
  }
  if (!opt_.store_ground_rules) {
    // Counting mode: one empty set per rule that had groundings, its count in stats.
    for (auto& s : sets) sample.rules.push_back(GroundRuleSet{s.rule, s.n_inputs, s.n_vars, {}, {}, {}, kNone});
  }
  sample.stats.ground_rules = n_ground;
}

// The built blocks with final atom ids (a block none of whose heads is kept is dropped);
// each pair counts as two ground rules, a score and a weighted sum.
void Grounder::write_pair_blocks(GroundSample& sample, const std::vector<uint32_t>& new_id) {
  for (PendingBlock& pb : blocks_) {
    if (!pb.block || !remap_pair_block(*pb.block, new_id)) continue;
    sample.stats.ground_rules += 2 * pb.block->pairs();
    sample.pair_blocks.push_back(std::move(*pb.block));
  }
}

GoalAnswers Grounder::answer(const Literal& goal) {
  GoalAnswers out;
  std::vector<uint32_t> values;
  auto matches = match_query(goal, &values, &out.variables);
  const size_t w = out.variables.size();
  std::vector<std::vector<uint32_t>> rows;
  for (size_t i = 0; i < matches.size(); ++i)
    rows.emplace_back(values.begin() + i * w, values.begin() + (i + 1) * w);
  std::sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    for (size_t k = 0; k < a.size(); ++k) {
      int c = syms_.compare(a[k], b[k]);
      if (c) return c < 0;
    }
    return false;
  });
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  out.rows = std::move(rows);
  return out;
}

}  // namespace

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
