// Ground rules recorded while the least model fires a rule (grounder.cpp). A non-recursive
// rule fires once, over complete body relations and with the plan enumeration would make,
// so the substitutions of that firing are exactly the ground rules enumeration would list,
// in the same order. Recording them spares the second enumeration and a hash lookup of
// every head atom (attention's n^2 pair atoms w(I, J) were hashed twice).
#pragma once

#include <cstdint>
#include <vector>

#include "logic/grounding.hpp"
#include "logic/program.hpp"
#include "logic/row_set.hpp"

namespace lrnn::logic {

class Capture {
 public:
  // keep_bindings: whether the ground rules keep their variables' bindings (else n_vars 0).
  Capture(const CompiledRule& cr, uint32_t rule, bool keep_bindings)
      : cr_(cr), seen_(cr.head_arity + uint32_t(cr.input_literals.size())) {
    set_.rule = rule;
    set_.n_inputs = uint32_t(cr.input_literals.size());
    set_.n_vars = keep_bindings ? uint32_t(cr.var_names.size()) : 0;
    input_lits_.resize(set_.n_inputs);
    for (uint32_t i = 0; i < cr.body.size(); ++i)
      if (cr.body[i].input_slot != kNone) input_lits_[cr.body[i].input_slot] = i;
    dedup_ = cr.needs_dedup && !cr.duplicate_grounding;
    key_.resize(cr.head_arity + set_.n_inputs);
  }

  // Records the substitution being fired (its head tuple, the matched row per body
  // literal, the variable bindings) unless it repeats a recorded (head, inputs) row of a
  // rule that needs dedup; returns its grounding index, or kNone. The head's row is set
  // later (set_head), once the tuple is inserted.
  uint32_t record(const uint32_t* head_tuple, const std::vector<uint32_t>& rows, const std::vector<uint32_t>& bind) {
    if (dedup_) {
      std::copy(head_tuple, head_tuple + cr_.head_arity, key_.begin());
      for (uint32_t i = 0; i < set_.n_inputs; ++i) key_[cr_.head_arity + i] = rows[input_lits_[i]];
      if (!seen_.insert(key_.data())) return kNone;
    }
    set_.head.push_back(kNone);
    for (uint32_t i = 0; i < set_.n_inputs; ++i) set_.inputs.push_back(rows[input_lits_[i]]);
    if (set_.n_vars)
      for (uint32_t v : bind) set_.bindings.push_back(v);  // (a few values: a range insert costs more)
    return uint32_t(set_.head.size() - 1);
  }
  void set_head(uint32_t grounding, uint32_t row) { set_.head[grounding] = row; }
  // Room for `groundings` ground rules at once: growing by doubling would touch (and
  // fault in) about twice the memory of the final arrays.
  void reserve(size_t groundings) {
    set_.head.reserve(groundings);
    set_.inputs.reserve(groundings * set_.n_inputs);
    set_.bindings.reserve(groundings * set_.n_vars);
  }
  size_t size() const { return set_.size(); }

  // The recorded ground rules with provisional atom ids: rows become ids by adding each
  // predicate's base (Grounder::atom_id_bases).
  GroundRuleSet take(const std::vector<uint32_t>& base) {
    const uint32_t head_base = base[cr_.head_pred];
    for (uint32_t& h : set_.head) h += head_base;
    std::vector<uint32_t> input_base(set_.n_inputs);
    for (uint32_t i = 0; i < set_.n_inputs; ++i) input_base[i] = base[cr_.body[input_lits_[i]].pred];
    for (size_t k = 0; k < set_.inputs.size(); k += set_.n_inputs)
      for (uint32_t i = 0; i < set_.n_inputs; ++i) set_.inputs[k + i] += input_base[i];
    return std::move(set_);
  }

 private:
  const CompiledRule& cr_;
  GroundRuleSet set_;  // head: row in the head relation; inputs: row in each input's relation
  std::vector<uint32_t> input_lits_;  // body literal per input slot
  bool dedup_ = false;
  RowSet seen_;
  std::vector<uint32_t> key_;
};

}  // namespace lrnn::logic
