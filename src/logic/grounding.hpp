// The contract between the logic stage and the neural stage: what grounding one example
// produces. Flat arrays only (ids and offsets); no per-atom or per-rule heap objects.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lrnn/ast.hpp"

namespace lrnn::logic {

// The pipeline's one "no index" sentinel (neural uses it too; symbols keep it free).
inline constexpr uint32_t kNone = 0xFFFFFFFFu;

class Symbols;

// The facts of one example as grounding and neuralization read them: one at a time, by
// index. An ExampleAst's own literals (ExampleFacts), or a compact store that decodes each
// fact on demand (train::SampleStore), so that a big example (one graph of millions of
// edges) is never held whole as Literal objects (~450 bytes per edge fact).
class FactSource {
 public:
  virtual ~FactSource() = default;
  virtual size_t size() const = 0;
  // Fact i: a literal of the source, or `scratch` filled with it (then valid until the
  // next call with that scratch; reusing one scratch reuses its strings' memory).
  virtual const Literal& fact(size_t i, Literal& scratch) const = 0;
  // Fact i's value (nullptr: written without one), without reading the rest of the fact.
  virtual const ValueSpec* value(size_t i) const = 0;

  // What the grounder reads of a fact: its predicate, whether it is a builtin, and its
  // arguments as constants of a symbol table (Symbols::intern_term of each).
  struct Interned {
    std::string_view predicate;  // valid until the next call
    bool builtin = false;
    std::vector<uint32_t> args;
  };
  // Fact i as Interned without building its literal, where the source can (a store that
  // holds each distinct term once interns it once, not once per fact: a big graph's node
  // names, ~20 times each); false where it cannot or the fact needs fact()'s error (a
  // variable, a number that does not parse), and then `out` is unspecified.
  virtual bool interned(size_t, Symbols&, Interned&) const { return false; }
};

// An ExampleAst's facts as a FactSource (the example must outlive it).
class ExampleFacts final : public FactSource {
 public:
  explicit ExampleFacts(const ExampleAst& example) : facts_(example.facts) {}
  size_t size() const override { return facts_.size(); }
  const Literal& fact(size_t i, Literal&) const override { return facts_[i]; }
  const ValueSpec* value(size_t i) const override { return facts_[i].weight ? &*facts_[i].weight : nullptr; }

 private:
  const std::vector<Literal>& facts_;
};

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

// Attention's score rule and the weighted sum that reads it, grounded as one block
// (GroundingOptions::pair_blocks) instead of n^2 pair atoms w(I, J) and 2 n^2 ground rules.
// Each row is a query I, each column a key J:
//   score rule  w(I, J) :- <ground literals>, <literal of J alone>, <literal of I alone>
//                          [, @leq(J, I) or @lt(J, I) or @geq(I, J) or @gt(I, J)].
//   sum rule    a(I) :- w(I, J), <literal of J alone>.
// (literals in any order), or with a sliding window instead of the comparison:
//   <@sub(I, J, D)> and bounds on D (@geq(D, lo), @leq(D, hi), @gt, @lt) [softmax(J, D)].
// Pairs are numbered row by row: row r pairs with columns first(r) .. first(r) + band(r) - 1
// (every column without a comparison; with one, the columns ascend and the band is the
// prefix the comparison allows; with a window, the run of keys inside it). The pair atoms w(I, J) are not atoms of the
// sample: nothing but the sum rule reads them. Ids are atom ids of the sample (local atom
// ids once neuralized, neural::SampleNetwork::pair_blocks).
inline constexpr uint32_t kRowInput = 0xFFFFFFFEu;     // PairBlock::score_inputs: the literal of I
inline constexpr uint32_t kColumnInput = 0xFFFFFFFDu;  // PairBlock::score_inputs: the literal of J
struct PairBlock {
  uint32_t score_rule = 0, sum_rule = 0;  // template rule indices
  // Per input literal of the score rule (input-literal order): the atom of a ground literal
  // (d_k), kRowInput or kColumnInput.
  std::vector<uint32_t> score_inputs;
  uint32_t sum_pair_input = 0;  // the sum rule's input slot of w(I, J) (its other input is v(J))
  std::vector<uint32_t> row_atom, head_atom, row_symbol;         // per row: q(I), a(I), I
  std::vector<uint32_t> column_atom, value_atom, column_symbol;  // per column: k(J), v(J), J
  // Per row: how many columns it pairs with; empty: all of them. And from which column on
  // (a sliding window); empty: from the first.
  std::vector<uint32_t> band, band_first;
  uint32_t level = kNone;  // the sum rule's stratum (GroundRuleSet::level of its ground rules)
  size_t rows() const { return row_atom.size(); }
  size_t columns() const { return column_atom.size(); }
  uint32_t band_of(size_t r) const { return band.empty() ? uint32_t(column_atom.size()) : band[r]; }
  uint32_t first_of(size_t r) const { return band_first.empty() ? 0 : band_first[r]; }
  // The bytes of its arrays (lrnn/memory.hpp).
  uint64_t bytes() const {
    uint64_t n = score_inputs.size() + band.size() + band_first.size();
    for (auto* v : {&row_atom, &head_atom, &row_symbol, &column_atom, &value_atom, &column_symbol}) n += v->size();
    return 4 * n;
  }
  size_t pairs() const {
    if (band.empty()) return rows() * columns();
    size_t n = 0;
    for (uint32_t b : band) n += b;
    return n;
  }
  // Calls f(id) with every atom id the block holds (a reference when the block is not
  // const): its heads, rows, columns, values and the score rule's ground literals, what
  // relevance keeps whole and renumbering maps.
  template <class F>
  void for_each_atom(F&& f) { visit_atoms(*this, f); }
  template <class F>
  void for_each_atom(F&& f) const { visit_atoms(*this, f); }

 private:
  template <class Self, class F>
  static void visit_atoms(Self& self, F& f) {
    for (auto* atoms : {&self.head_atom, &self.row_atom, &self.column_atom, &self.value_atom})
      for (auto& a : *atoms) f(a);
    for (auto& a : self.score_inputs)
      if (a != kRowInput && a != kColumnInput) f(a);
  }
};

// Rule sets and pair blocks (index sets.size() + b) from the highest level down, rule sets
// before blocks of one level (grounder and neuralize both walk relevance in this order).
template <class BlockLevel>
std::vector<uint32_t> by_level_descending(const std::vector<GroundRuleSet>& sets, size_t n_blocks,
                                          BlockLevel block_level) {
  std::vector<uint32_t> order(sets.size() + n_blocks);
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto level = [&](uint32_t i) { return i < sets.size() ? sets[i].level : block_level(i - sets.size()); };
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return level(a) > level(b); });
  return order;
}

// One example grounded against a template: the (query-relevant part of the) least model
// and every ground rule. Atom ids are dense 0..num_atoms()-1.
struct GroundSample {
  std::vector<uint32_t> atom_pred;        // predicate id (Program::predicate_name) per atom
  std::vector<uint32_t> atom_args_begin;  // num_atoms()+1 offsets into atom_args
  std::vector<uint32_t> atom_args;        // symbol ids (Symbols::name)
  // Where an atom's input value comes from besides rules (kNone if it has none):
  std::vector<uint32_t> atom_example_fact;   // index into ExampleAst::facts (FactSource)
  std::vector<uint32_t> atom_template_fact;  // index into TemplateAst::facts
  // The value of each builtin @op_eval(a, b) atom (a neuron input that is neither a fact
  // nor derived), by atom id, ascending.
  std::vector<std::pair<uint32_t, double>> computed_values;
  std::vector<GroundRuleSet> rules;  // template rules with >= 1 grounding, by rule index
  // Score and weighted-sum rules grounded as blocks (their rules then have no GroundRuleSet).
  std::vector<PairBlock> pair_blocks;
  // Per query of the example (in order), the atom ids it matches (a query with variables
  // may match several; an underivable ground query matches none).
  std::vector<std::vector<uint32_t>> query_atoms;

  struct Stats {
    size_t facts = 0;         // example facts (after dedup)
    size_t derived = 0;       // atoms derived by rules (not facts), a PairBlock's pairs included
    size_t ground_rules = 0;  // sum of GroundRuleSet sizes, plus 2 per pair of a PairBlock
    double seconds = 0;
  } stats;

  size_t num_atoms() const { return atom_pred.size(); }
  // The bytes of its arrays (lrnn/memory.hpp): what neuralizing it about takes again.
  uint64_t bytes() const {
    uint64_t b = 4 * (atom_pred.size() + atom_args_begin.size() + atom_args.size() + atom_example_fact.size() +
                      atom_template_fact.size()) +
                 16 * computed_values.size();
    for (const GroundRuleSet& r : rules) b += 4 * (r.head.size() + r.inputs.size() + r.bindings.size());
    for (const PairBlock& pb : pair_blocks) b += pb.bytes();
    return b;
  }
};

}  // namespace lrnn::logic
