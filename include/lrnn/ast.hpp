// The parsed form of templates, examples and queries (docs/language.md). Produced by the
// parser (src/syntax), the Python DSL, the zoo and the RASP lowering; consumed by the
// printer, the grounder (src/logic) and the neural stage. Plain data: no behaviour
// beyond equality, so every stage can build and read it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lrnn/diagnostics.hpp"

namespace lrnn {

// A weight or a value as written: `0.5`, `[1, 2]`, `[[1, 2], [3, 4]]`, `{3, 3}`,
// `<...>` (fixed), `$name=...` (named, shared), `$name` (reference to a named weight),
// sparse `[n|i:v, ...]` (stored dense; `sparse` remembers the written form).
// The largest value (weight, fact value or neuron output) lrnn builds: 2^26 entries, 512 MB
// in float64. A shape beyond it is refused with an error naming where it comes from rather
// than overflowing a size computation or exhausting memory (docs/semantics.md, "Limits").
inline constexpr int64_t kMaxValueEntries = int64_t{1} << 26;
// The most arguments a predicate of a template may have: relation indexes key an atom's bound
// columns by a 64-bit mask (logic/relation.hpp).
inline constexpr int kMaxArity = 64;

struct ValueSpec {
  enum class Kind : uint8_t {
    Scalar,     // 1x1, data has one entry
    Vector,     // column vector: rows = n, cols = 1
    Matrix,     // rows x cols, data row-major
    Dims,       // `{r}` / `{r,c}`: shape only, randomly initialised; data empty
    Reference,  // `$name` alone: shape and data come from the named weight's definition
  };
  Kind kind = Kind::Scalar;
  int rows = 1, cols = 1;
  std::vector<double> data;  // row-major, rows*cols entries (empty for Dims/Reference)
  bool fixed = false;        // written inside <...>
  std::string name;          // `$name`, empty if unnamed
  bool sparse = false;       // written as [n|i:v, ...]
  // `{3}` is a column vector (3x1), `{1,3}` a row vector, `{3,3}` a matrix.
  bool dims_is_vector = false;  // Dims written with one number
  Span span;
  bool operator==(const ValueSpec&) const = default;

  static ValueSpec scalar(double v, bool fixed = false) {
    ValueSpec s;
    s.kind = Kind::Scalar;
    s.data = {v};
    s.fixed = fixed;
    return s;
  }
};

// A term: variable (`X`, `_`), constant (`a`, `'New York'`), number (`3`, `-0.5`).
// A term may carry a type (`woman:Y` has type "woman").
struct Term {
  enum class Kind : uint8_t { Variable, Constant, Number, String };
  Kind kind = Kind::Constant;
  std::string text;  // variable/constant name, number as written, string unquoted
  std::string type;  // empty if untyped
  Span span;
  bool operator==(const Term&) const = default;

  bool is_variable() const { return kind == Kind::Variable; }
  static Term variable(std::string name) { return Term{Kind::Variable, std::move(name), {}, {}}; }
  static Term constant(std::string name) { return Term{Kind::Constant, std::move(name), {}, {}}; }
  static Term number(std::string text) { return Term{Kind::Number, std::move(text), {}, {}}; }
};

// An atom with its prefixes and weight: `0.5 ~a(X)^T`, `@leq(J, I)`, `*edge(X, Y)`.
struct Literal {
  std::string predicate;  // without the @ / * prefix
  std::vector<Term> args;
  bool builtin = false;       // @name
  bool hidden = false;        // *name: logic only, never a neuron
  bool negated = false;       // !name: negation as failure (stratified)
  bool soft_negated = false;  // ~name: input x enters as 1 - x
  bool transposed = false;    // name(...)^T
  std::optional<ValueSpec> weight;  // body: weight; head: head weight; fact/query: value/target
  Span span;
  bool operator==(const Literal&) const = default;

  int arity() const { return static_cast<int>(args.size()); }
};

// A metadata value: `sigmoid`, `softmax(J)`, `slice(rows=(0,2), cols=(1,3))`,
// `reshape(2,3)`, `true`, `0.5`. Positional arguments and keyword values are kept as
// their canonical text (a tuple `(0,2)` is the string "(0,2)").
struct FunctionSpec {
  std::string name;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> kwargs;
  bool has_parens = false;  // `softmax()` vs `softmax`
  bool operator==(const FunctionSpec&) const = default;
};

struct MetaEntry {
  std::string key;  // activation | transformation | combination | aggregation | learnable | ...
  FunctionSpec value;
  Span span;
  bool operator==(const MetaEntry&) const = default;
};

// head :- body. (or <=), optional `, offset` and `[metadata]`.
struct Rule {
  Literal head;
  std::vector<Literal> body;
  std::optional<ValueSpec> offset;  // bias written as a weight-only body element
  std::vector<MetaEntry> meta;
  Span span;
  bool operator==(const Rule&) const = default;
};

// `name/arity [metadata]` and/or `name/arity value` (the atom's offset).
struct PredicateDecl {
  std::string name;
  int arity = 0;
  std::vector<MetaEntry> meta;
  std::optional<ValueSpec> offset;
  Span span;
  bool operator==(const PredicateDecl&) const = default;
};

// A template: rules, (learnable or fixed) facts and predicate declarations, with every
// `import` already inlined. Statement kinds keep their relative order.
struct TemplateAst {
  std::vector<Rule> rules;
  std::vector<Literal> facts;  // weight = value (a template fact with a weight is learnable)
  std::vector<PredicateDecl> predicates;
  Sources sources;  // every file read (main file first, then imports); not compared
  bool operator==(const TemplateAst& o) const {
    return rules == o.rules && facts == o.facts && predicates == o.predicates;
  }
};

// One example: its facts (each optionally valued) and, for a labelled example
// `<1> xor :- <0> a, <1> b.`, its own query (weight = target).
struct ExampleAst {
  std::string id;  // `id :- ...`, empty if unnamed
  std::vector<Literal> facts;
  std::vector<Literal> queries;  // labelled examples only
  Span span;
  bool operator==(const ExampleAst&) const = default;
};

// One line of a queries file: `1.0 predict.` or `id :- 1.0 q1, 0.0 q2.`
struct QueryLineAst {
  std::string id;                // empty if unnamed
  std::vector<Literal> queries;  // weight = target (absent: no target, inference only)
  // `0.25 id :- 1.0 q.`: the line's importance, a factor on its queries' loss and gradient
  // (PyNeuraLogic's weighted query `R.id[0.25] <= R.q[1.0]`); 1 unless written.
  double importance = 1.0;
  Span span;
  bool operator==(const QueryLineAst&) const = default;
};

}  // namespace lrnn
