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

struct GroundingOptions {
  // Ground rules (over all template rules of one example) beyond which grounding stops
  // with ErrorKind::Limit naming the rule being enumerated.
  size_t max_ground_rules = kDefaultMaxGroundRules;
  // Atoms of the least model beyond which grounding stops with ErrorKind::Limit (also
  // what ends an infinite model such as n(Y) :- n(X), @add(X, 1, Y).).
  size_t max_atoms = 50'000'000;
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
};

// Grounds `example` (its facts; its labelled queries are ignored) with `queries` as the
// queries to support. Thread-safe for concurrent calls on one Program.
GroundSample ground(const Program& program, const ExampleAst& example,
                    const std::vector<Literal>& queries, const GroundingOptions& options = {});

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
