// Grounding one example against a compiled Program: the least model (semi-naive, per
// stratum) and then every ground rule per template rule, written into a GroundSample.
#pragma once

#include <cstdint>
#include <vector>

#include "logic/grounding.hpp"
#include "logic/program.hpp"
#include "lrnn/ast.hpp"
#include "lrnn/training.hpp"

namespace lrnn::logic {

// A score rule and the weighted-sum rule reading it that may be grounded as a PairBlock
// (grounding.hpp): neural::pair_block_rules finds them (their combinations, aggregations
// and weights allow it); the grounder checks the rules' literals (pair_block_structure) and
// each example's atoms.
struct PairBlockRules {
  uint32_t score_rule = 0, sum_rule = 0;
};

// Whether rules score_rule and sum_rule of `program` have the literals of a PairBlock
// (grounding.hpp), the pair predicate w is read by the sum rule alone and derived by the
// score rule alone, the sum rule's head predicate is derived by it alone, and no stratum of
// the program is recursive. Logic only: the neural side checks what the rules compute.
bool pair_block_structure(const Program& program, uint32_t score_rule, uint32_t sum_rule);

struct GroundingOptions {
  // Ground rules (over all template rules of one example) beyond which grounding stops
  // with ErrorKind::Limit naming the rule being enumerated.
  size_t max_ground_rules = kDefaultMaxGroundRules;
  // Atoms of the least model beyond which grounding stops with ErrorKind::Limit (also
  // what ends an infinite model such as n(Y) :- n(X), @add(X, 1, Y).).
  size_t max_atoms = kDefaultMaxAtoms;
  // false: count ground rules (stats.ground_rules, GroundRuleSet::rule set, arrays empty)
  // without storing them; no atom-level relevance pruning.
  bool store_ground_rules = true;
  // false: compute the least model only (query answering); no ground rules at all.
  bool enumerate = true;
  // Keep only the atoms and ground rules that support a query atom (when there are
  // queries). Predicate-level pruning (skipping rules that cannot reach a query) is
  // always on when there are queries.
  bool prune = true;
  // The least model's one firing of a non-recursive rule records its ground rules (they
  // are what enumeration would list, in its order) and appends heads that every
  // substitution makes distinct without hashing them. false: every head is hashed and
  // every rule enumerated again after the model (the general path; tests compare both).
  bool record_while_firing = true;
  // Per template rule: whether its ground rules keep their variables' bindings
  // (GroundRuleSet::bindings; without, n_vars is 0). Empty: every rule keeps them.
  // neuralize reads them for softmax groups only; a big graph's edge rules would hold two
  // more ids per grounding (a fifth of the ground sample) for nothing.
  std::vector<uint8_t> rule_keeps_bindings;
  // Rule pairs to ground as PairBlocks where an example allows it (every key J with a
  // value v(J), no w fact, no query on w, keys ascending under a comparison); elsewhere
  // they are grounded rule by rule. Empty: no blocks (what every reader of ground rules
  // but neuralize and build_plan expects).
  std::vector<PairBlockRules> pair_blocks;
};

// Grounds `example` (its facts; its labelled queries are ignored) with `queries` as the
// queries to support. Thread-safe for concurrent calls on one Program.
GroundSample ground(const Program& program, const ExampleAst& example,
                    const std::vector<Literal>& queries, const GroundingOptions& options = {});
// The same over the facts of `facts` (fact indices of the sample are its indices).
GroundSample ground(const Program& program, const FactSource& facts, const std::vector<Literal>& queries,
                    const GroundingOptions& options = {});

// Grounds examples[i] with queries[i] for every i, on `threads` threads (results in
// order; the first error, if any, is rethrown after all threads stop).
std::vector<GroundSample> ground_many(const Program& program, const std::vector<const ExampleAst*>& examples,
                                      const std::vector<std::vector<Literal>>& queries,
                                      const GroundingOptions& options = {}, int threads = 1);

// Answers of a goal against the least model of the template plus `facts`: one row of
// symbol ids per answer, holding the values of the goal's named variables in order of
// first occurrence (`_` is not reported), rows sorted (Symbols::compare) and distinct.
// A ground goal yields one empty row if true, none if false.
struct GoalAnswers {
  std::vector<std::string> variables;
  std::vector<std::vector<uint32_t>> rows;
};
GoalAnswers answer_goal(const Program& program, const ExampleAst& facts, const Literal& goal,
                        const GroundingOptions& options = {});

}  // namespace lrnn::logic
