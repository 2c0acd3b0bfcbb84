// The grounder of grounder.hpp, shared by the files that hold its parts: the least model
// (grounder.cpp), the facts it starts from (grounder_facts.cpp), rule-body planning
// (grounder_plan.cpp), pair blocks (grounder_pair_blocks.cpp), the limits and the memory
// budget (grounder_budget.cpp), the sample written out (grounder_output.cpp) and query
// answers (grounder_answer.cpp). An internal header: nothing outside src/logic includes it.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "logic/capture.hpp"
#include "logic/grounder.hpp"
#include "logic/pair_block.hpp"
#include "logic/range_scan.hpp"
#include "logic/relation.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/memory.hpp"

namespace lrnn::logic::detail {

using Kind = BodyLiteral::Kind;

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

  // ---- building a sample (build_sample's steps: grounder.cpp; what is kept and written
  // out: grounder_output.cpp) ----
  std::vector<uint32_t> atom_id_bases() const;
  void count_atoms(GroundSample::Stats& stats);
  std::vector<GroundRuleSet> enumerate_ground_rules(const std::vector<uint32_t>& base, std::vector<size_t>& counted);
  GroundRuleSet enumerate_rule(uint32_t r, const std::vector<uint32_t>& base, size_t& total, size_t& count);
  void set_levels(std::vector<GroundRuleSet>& sets) const;
  bool keep_without_recursion(const std::vector<GroundRuleSet>& sets, std::vector<char>& keep) const;
  void write_pair_blocks(GroundSample& sample, const std::vector<uint32_t>& new_id);
  std::vector<char> atoms_to_keep(const std::vector<GroundRuleSet>& sets,
                                  const std::vector<std::vector<std::pair<uint32_t, uint32_t>>>& query_matches,
                                  const std::vector<uint32_t>& base) const;
  std::vector<uint32_t> write_atoms(GroundSample& sample, const std::vector<char>& keep, const std::vector<uint32_t>& base);
  void write_ground_rules(GroundSample& sample, std::vector<GroundRuleSet>& sets, const std::vector<size_t>& counted,
                          const std::vector<uint32_t>& new_id) const;

  // ---- setup: the relevant predicates and the example's facts (grounder_facts.cpp) ----
  void select_relevant(const std::vector<Literal>& queries);

  void read_fact(const FactSource& facts, uint32_t f, FactSource::Interned& out, Literal& scratch);

  void load_facts(const FactSource& facts);

  void remove_repeated_facts(Relation& rel);

  // ---- planning: the order of a rule body's literals (grounder_plan.cpp) ----
  Plan make_plan(const CompiledRule& cr, uint32_t delta_lit, const std::vector<char>& recursive,
                 bool frozen = false);

  struct RulePlanner;  // make_plan's state (grounder_plan.cpp)

  // ---- evaluation: the least model, stratum by stratum (grounder.cpp) ----
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
  void run(const Plan& plan, uint32_t s, Emit& emit);

  template <class Emit>
  void run_range_scan(const Plan& plan, uint32_t s, const Step& st, Emit& emit);

  template <class Emit>
  void run_builtin(const Plan& plan, uint32_t s, const Step& st, const ArgAction* acts, Emit& emit);

  template <class Emit>
  void run_arithmetic(const Plan& plan, uint32_t s, const Step& st, const ArgAction* acts, Emit& emit);

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

  void fire(const CompiledRule& cr, const Plan& plan, Capture* capture = nullptr, bool distinct = false);


  bool can_capture(uint32_t r) const;

  static bool distinct_heads(const CompiledRule& cr, const Plan& plan);

  double substitutions_bound(const CompiledRule& cr, const Plan& plan) const;

  void fire_once(uint32_t r, const Plan& plan);

  void evaluate_stratum(const Stratum& stratum);

  // ---- pair blocks (pair_block.hpp; grounder_pair_blocks.cpp) ----
  void select_pair_blocks(const std::vector<Literal>& queries);

  bool fire_pair_block_rule(uint32_t r);

  void derive_block_heads(PendingBlock& pb);

  // The pending block of template rule r (its score or sum rule), or null.
  PendingBlock* pending_block(uint32_t r) {
    return r < block_of_rule_.size() && block_of_rule_[r] != kNone ? &blocks_[block_of_rule_[r]] : nullptr;
  }

  // The block built for template rule r, or null.
  const PairBlock* built_pair_block(uint32_t r) {
    const PendingBlock* pb = pending_block(r);
    return pb && pb->block ? &*pb->block : nullptr;
  }

  // ---- the atoms a query matches (grounder_answer.cpp) ----
  // `interned`, when given, holds the ids of q's constant arguments in order (as
  // Symbols::intern_term gives them): match_queries interns a sample's queries together.
  std::vector<std::pair<uint32_t, uint32_t>> match_query(const Literal& q,
                                                         std::vector<uint32_t>* var_values = nullptr,
                                                         std::vector<std::string>* var_names = nullptr,
                                                         const uint32_t* interned = nullptr);
  // match_query of every query, in order.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> match_queries(const std::vector<Literal>& queries);

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
  // Whether template rule r's ground rules keep their bindings (GroundingOptions::rule_keeps_bindings).
  bool keeps_bindings(uint32_t r) const {
    return opt_.rule_keeps_bindings.empty() || (r < opt_.rule_keeps_bindings.size() && opt_.rule_keeps_bindings[r]);
  }
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
  // ---- the limits and the memory budget (grounder_budget.cpp) ----
  void reserve_bytes(const CompiledRule& cr);
  Error atom_limit(const CompiledRule& cr) const;
  Error model_limit(const CompiledRule& cr) const;
  Error ground_rule_limit(const CompiledRule& cr) const;
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

}  // namespace lrnn::logic::detail
