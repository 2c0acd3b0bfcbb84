// The contract between the logic stage and the neural stage: what grounding one example
// produces. Flat arrays only (ids and offsets); no per-atom or per-rule heap objects.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lrnn/ast.hpp"

namespace lrnn::logic {

// The pipeline's one "no index" sentinel (neural uses it too; symbols keep it free).
inline constexpr uint32_t kNone = 0xFFFFFFFFu;

// All groundings of one template rule in one example. Row g is one ground rule.
struct GroundRuleSet {
  uint32_t rule = 0;      // index into TemplateAst::rules
  uint32_t n_inputs = 0;  // input literals of the rule (see Program::input_literals)
  uint32_t n_vars = 0;    // variables of the rule (see Program::rule_variables)
  std::vector<uint32_t> head;      // ground head atom id, per grounding
  std::vector<uint32_t> inputs;    // size() * n_inputs atom ids, in input-literal order
  std::vector<uint32_t> bindings;  // size() * n_vars symbol ids, in rule-variable order
  // When no rule of the sample is recursive: the rule's stratum, and every input atom of
  // these ground rules is derived (if at all) only by rule sets of lower levels, so the
  // ground rules form no cycle. kNone when that is not known.
  uint32_t level = kNone;
  size_t size() const { return head.size(); }
};

// One example grounded against a template: the (query-relevant part of the) least model
// and every ground rule. Atom ids are dense 0..num_atoms()-1.
struct GroundSample {
  std::vector<uint32_t> atom_pred;        // predicate id (Program::predicate_name) per atom
  std::vector<uint32_t> atom_args_begin;  // num_atoms()+1 offsets into atom_args
  std::vector<uint32_t> atom_args;        // symbol ids (Symbols::name)
  // Where an atom's input value comes from besides rules (kNone if it has none):
  std::vector<uint32_t> atom_example_fact;   // index into ExampleAst::facts
  std::vector<uint32_t> atom_template_fact;  // index into TemplateAst::facts
  // The value of each builtin @op_eval(a, b) atom (a neuron input that is neither a fact
  // nor derived), by atom id, ascending.
  std::vector<std::pair<uint32_t, double>> computed_values;
  std::vector<GroundRuleSet> rules;  // template rules with >= 1 grounding, by rule index
  // Per query of the example (in order), the atom ids it matches (a query with variables
  // may match several; an underivable ground query matches none).
  std::vector<std::vector<uint32_t>> query_atoms;

  struct Stats {
    size_t facts = 0;         // example facts (after dedup)
    size_t derived = 0;       // atoms derived by rules (not facts)
    size_t ground_rules = 0;  // sum of GroundRuleSet sizes
    double seconds = 0;
  } stats;

  size_t num_atoms() const { return atom_pred.size(); }
};

}  // namespace lrnn::logic
