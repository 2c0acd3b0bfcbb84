// Reading and writing the text format of docs/language.md: templates, examples files,
// queries files, single literals and rules. Every malformed input throws
// lrnn::Error(ErrorKind::Parse, span, "expected X, found Y"), whose what() is
// `file:line:col: error: ...` followed by the source line and a caret.
//
// Decisions the grammar of docs/language.md leaves open (the canonical printer follows them):
// - A body element that is a bare value (`h :- a, 0.5.`, `h :- a, {3}.`) is the rule's
//   offset; at most one per rule; the printer writes it last.
// - After a rule's '.', `[` identifier `=` starts its metadata list; any other `[` starts
//   the next statement (a vector-valued fact `[1, 2] emb(a).`).
// - Predicate declarations: `p/2 [meta]`, `p/2 value`, `p/2 value [meta]`, or a bare
//   `p/2.` (the '.' is required when there is neither value nor metadata). A literal of a
//   declared name with an undeclared arity is a "wrong arity" error.
// - Rule heads and facts cannot be builtin (`@`) or negated (`!`, `~`); hidden (`*`) and
//   transposed heads are accepted and left to later stages.
// - Examples: in `head :- facts.`, a head without value, arguments or prefixes is the
//   example's id; any other head is the example's own query (its value the target).
// - Queries: `id :- q1, q2.` requires a bare id; `q1, q2.` (no id) is also one line.
// - Terms: `3`, `-1`, `0.5`, `1e-3` are Number terms (text as written); quoted strings are
//   String terms (unquoted, escapes \\ \' \" \n \t \r resolved); types apply to one term.
// - Line/column are 1-based; columns count bytes (the caret line counts characters).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lrnn/ast.hpp"

namespace lrnn {

// A whole template. `import path` statements are inlined; their paths are resolved
// relative to the directory of `name` (the current directory for "<string>").
TemplateAst parse_template(std::string_view text, const std::string& name = "<string>");
// Reads `path` (an Io error naming it if unreadable) and parses it as a template.
TemplateAst load_template(const std::string& path);

// An examples file: each example is a conjunction of (optionally valued) facts ending
// with `.`, possibly spanning several lines; `id :- facts.` names it and
// `<1> head :- facts.` (a valued head) makes the head the example's own query.
std::vector<ExampleAst> parse_examples(std::string_view text, const std::string& name = "<string>");
std::vector<ExampleAst> load_examples(const std::string& path);

// A queries file: `1.0 predict.`, `0.0 predict(a, b).`, `id :- 1.0 q1, 0.0 q2.`
std::vector<QueryLineAst> parse_queries(std::string_view text, const std::string& name = "<string>");
std::vector<QueryLineAst> load_queries(const std::string& path);

// One literal, e.g. a CLI goal "reachable(X, charing_cross)" (a trailing '.' is allowed).
Literal parse_literal(std::string_view text, const std::string& name = "<goal>");
// One rule or fact with optional metadata (a trailing '.' is optional). A fact is
// returned as a Rule with an empty body.
Rule parse_rule(std::string_view text, const std::string& name = "<string>");

// Canonical text. parse_template(print_template(t)) == t, and printing is idempotent.
std::string print_template(const TemplateAst& t);
std::string print_rule(const Rule& rule);          // `head :- body, offset. [meta]`
std::string print_literal(const Literal& literal);  // with its weight, prefixes and ^T
std::string print_value(const ValueSpec& value);
std::string print_term(const Term& term);
std::string print_example(const ExampleAst& example);       // one line ending in '.'
std::string print_query_line(const QueryLineAst& line);     // one line ending in '.'
std::string print_meta(const std::vector<MetaEntry>& meta);  // `[key=value, ...]`

}  // namespace lrnn
