// Logic without learning: answering a goal against a template and facts (a Datalog
// engine), grounding examples (`lrnn ground`), and pairing the examples of a dataset with
// their queries (docs/language.md). The grounding engine itself is in src/logic (Program,
// ground()).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "lrnn/ast.hpp"
#include "lrnn/training.hpp"

namespace lrnn::logic {

// One constant of an answer.
struct AnswerValue {
  std::string text;        // as it would be written: `a`, `3`, `0.5`, `'New York'`
  bool is_number = false;
  double number = 0;       // the value when is_number
  bool operator==(const AnswerValue&) const = default;
};

struct QueryResult {
  std::vector<std::string> variables;          // the goal's named variables, first occurrence order
  std::vector<std::vector<AnswerValue>> rows;  // distinct substitutions, sorted
  bool ground = false;                         // the goal has no named variables
  bool holds() const { return !rows.empty(); } // for a ground goal: true / false
};

// Answers `goal` against the least model of `tmpl` with every fact of `facts` (all
// examples' facts together). Sorting: numbers (numerically) before other constants
// (bytewise), column by column. Throws lrnn::Error for an unstratifiable template, an
// unbound builtin variable, or a builtin goal.
// `max_ground_rules` (body substitutions the least model may enumerate) and `max_atoms`
// (atoms it may derive) end a model that is too big, or infinite, with a Limit error
// naming the rule; so does the memory budget (lrnn/memory.hpp).
QueryResult answer_query(const TemplateAst& tmpl, const std::vector<ExampleAst>& facts,
                         const Literal& goal, size_t max_ground_rules = kDefaultMaxGroundRules,
                         size_t max_atoms = kDefaultMaxAtoms);

// The lines `lrnn query` prints: `X=a, Y=3` per row, or `true` / `false` for a ground goal.
std::vector<std::string> format_answers(const QueryResult& result);

// What grounding one example gave (docs/semantics.md "Grounding"): its counts, and its
// ground rules as text when they were asked for.
struct ExampleGrounding {
  size_t facts = 0, derived = 0, atoms = 0, ground_rules = 0;
  double seconds = 0;                          // grounding time
  std::vector<size_t> ground_rules_per_rule;   // per template rule, in file order
  std::vector<std::string> ground_rule_lines;  // `h(a) :- b(a, c), c(c).`, with list_rules only
};

// Grounds examples against one template, compiled once. `max_ground_rules` and `max_atoms`
// end a grounding that is too big with a Limit error naming the rule, as answer_query does.
class Grounder {
 public:
  explicit Grounder(const TemplateAst& tmpl);
  ~Grounder();
  Grounder(const Grounder&) = delete;
  Grounder& operator=(const Grounder&) = delete;
  // Grounds `example`'s facts keeping what supports `queries` (everything without queries).
  ExampleGrounding ground(const ExampleAst& example, const std::vector<Literal>& queries, bool list_rules,
                          size_t max_ground_rules = kDefaultMaxGroundRules,
                          size_t max_atoms = kDefaultMaxAtoms) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One training/grounding sample: an example and the queries it must answer.
struct QueryPairing {
  size_t example = 0;            // index into the examples
  std::vector<Literal> queries;  // labelled examples' own queries first, then the file's
  std::vector<double> importance;  // per query: its line's importance (empty: every query 1)
  bool operator==(const QueryPairing&) const = default;
};

// Pairs examples with the lines of a queries file (docs/language.md):
// - no query lines: each example with its own (labelled) queries;
// - query lines with ids (`id :- ...`): each joins the example with that id;
// - one example: it serves every query line (one pairing per line);
// - N examples and N lines: line by line.
// Anything else (count mismatch, unknown id, mixed named/unnamed lines) is an
// lrnn::Error (Semantic) pointing at the offending line.
std::vector<QueryPairing> pair_queries(const std::vector<ExampleAst>& examples,
                                       const std::vector<QueryLineAst>& query_lines);
// The same, each line's queries moved out of `query_lines` instead of copied (a big graph's
// query per node: millions of literals).
std::vector<QueryPairing> pair_queries(const std::vector<ExampleAst>& examples,
                                       std::vector<QueryLineAst>&& query_lines);

// A named rewrite of the execution plans (docs/semantics.md "Plan rewrites") and the rule
// groups it changed.
struct PlanRewrite {
  std::string name, description;
  size_t rule_groups = 0;           // in the plans that inspection builds (`lrnn ground`, network())
  size_t training_rule_groups = 0;  // in the plans that training and evaluation build
};

// The rewrites applied when each sample of `examples` paired with `query_lines` is grounded
// and planned alone (`lrnn ground --stats`), once with the plan options of inspection and
// once with those of training (which keeps no gradients of the data and no rule neurons of
// its own where a rewrite folds them: some rewrites fire there only): every rewrite, in the
// order they apply, with its rule groups summed over the samples. Grounding errors are
// thrown as training would throw them. (Implemented by the api stage.)
std::vector<PlanRewrite> plan_rewrites(const TemplateAst& tmpl, const std::vector<ExampleAst>& examples,
                                       const std::vector<QueryLineAst>& query_lines,
                                       size_t max_ground_rules = kDefaultMaxGroundRules,
                                       size_t max_atoms = kDefaultMaxAtoms);

}  // namespace lrnn::logic
