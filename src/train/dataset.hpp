// Examples paired with their queries (docs/language.md "Examples and queries"): what the trainer
// grounds, one Sample per example.
#pragma once

#include <set>
#include <span>
#include <string>
#include <vector>

#include "lrnn/ast.hpp"
#include "lrnn/training.hpp"

namespace lrnn::train {

struct Sample {
  ExampleAst example;
  std::vector<Literal> queries;  // weight = target (absent: inference only)
  std::vector<double> importance;  // per query: a factor on its loss (empty: every query 1)
  double importance_of(size_t q) const { return importance.empty() ? 1.0 : importance[q]; }
  // per query: its part of a query split (empty: every query trains)
  std::vector<QuerySplit> split;
  QuerySplit split_of(size_t q) const { return split.empty() ? QuerySplit::Train : split[q]; }
};

// Pairs examples with query lines: a labelled example holds its own queries; N examples
// and N query lines pair line by line; a single example serves every query line; named
// ones pair by id. `queries` may be empty when the examples are labelled. Throws
// lrnn::Error naming the offending line when nothing pairs.
// `line_split` (if not empty) puts each query line's queries in the part `line_split[l]` of
// a query split (one entry per line; the lines of per-split query files, `lrnn train
// --val-queries`); `example_of` (if given) receives, per sample, the index of its example.
std::vector<Sample> pair_samples(std::vector<ExampleAst> examples, const std::vector<QueryLineAst>& queries,
                                 const std::vector<QuerySplit>& line_split = {},
                                 std::vector<uint32_t>* example_of = nullptr);
// The same from query lines the caller gives up: their literals are moved into the samples
// instead of copied (a graph's query per node: millions of literals).
std::vector<Sample> pair_samples(std::vector<ExampleAst> examples, std::vector<QueryLineAst>&& queries,
                                 const std::vector<QuerySplit>& line_split = {},
                                 std::vector<uint32_t>* example_of = nullptr);

// A literal's predicate as "name/arity", the key every check of predicates uses.
std::string predicate_key(const Literal& l);

// A query whose predicate (name/arity) no rule head, template fact or example fact defines
// can never be derived: its value would be a silent 0 (a typo trains against nothing).
// Throws lrnn::Error at the first such query, naming it and the closest defined predicate.
void check_queries_defined(const TemplateAst& tmpl, std::span<const Sample> samples);
// The same with the examples' fact predicates given as "name/arity" keys (`samples` are
// read for their queries only).
void check_queries_defined(const TemplateAst& tmpl, std::set<std::string> fact_keys, std::span<const Sample> samples);

// Each query of `samples` (sample by sample, query by query) assigned to a part: `split` has
// one entry per query of them all. Throws lrnn::Error when the count differs.
void assign_query_splits(std::span<Sample> samples, std::span<const QuerySplit> split);
// A seeded random split of `n` queries: round(validation * n) validation and round(test * n)
// test queries, round(train * n) training queries (all the rest when the three fractions
// sum to 1), any left over in no split. The fractions must be in [0, 1] and sum to at most
// 1 (lrnn::Error naming the one at fault). The same seed gives the same split everywhere.
std::vector<QuerySplit> random_query_split(size_t n, double train, double validation, double test, uint64_t seed);

// The target of a query literal as a flat array (empty if it has none).
std::vector<double> target_of(const Literal& query);

}  // namespace lrnn::train
