// The facts of a big example file mostly have one shape: `<[0.1, -2.3]> x(n17)`,
// `edge(n17, n42)`. Read token by token, each costs a ring-buffer token per number, comma
// and name (about 60% of reading a 2M-edge graph's text); read here straight from the text,
// the same fact costs a third of that. Anything else falls back to the token-by-token parser,
// so the literal, its spans and every error are the general parser's
// (tests/syntax_plain_fact_test.cpp compares the two on the same text).
#pragma once

#include <cstdint>
#include <vector>

#include "lrnn/ast.hpp"
#include "syntax/lexer.hpp"

namespace lrnn::syntax {

// A fact `[value] name(c1, ..., cn)` (or `name` alone) followed by ',' or '.', where the value
// is a number, `[n, ...]`, `<n>` or `<[n, ...]>`, the name and the arguments are lower-case
// identifiers, and only spaces, tabs and line breaks lie between the tokens; with the tokens
// the lexer would have produced for it.
struct PlainFact {
  enum class Value : uint8_t { None, Scalar, Vector };
  Value value = Value::None;
  bool fixed = false;             // the value is written in <...>
  Token value_first, value_last;  // the value's first and last tokens (its span)
  std::vector<double> numbers;    // the value's entries (kept from fact to fact)
  Token name;
  std::vector<Token> args;  // kept from fact to fact
  Token last;               // the literal's last token: ')' or the name
  Lexer::Position end;      // just past `last`
};

// Scans the fact at the position of an idle lexer into `out` and returns true; returns
// false where the text there has any other shape (a comment, a prefix, a variable, a typed,
// numeric or quoted argument, a matrix, a malformed number, `import`, ...): the caller then
// reads it token by token. The lexer itself is not moved.
bool scan_plain_fact(const Lexer& lex, PlainFact& out);

// What the token-by-token parser (Parser::valued_literal_into) makes of the tokens of `f`,
// scanned at `lex`'s position, into `lit`: a new literal, or one read into before and made
// ready again (Parser::reuse_literal: no value, no prefix), a value taking `spare`'s
// buffers. The lexer then continues after the fact as if it had read its tokens.
void take_plain_fact(const PlainFact& f, Lexer& lex, Literal& lit, ValueSpec& spare);

// `v` as a new ValueSpec whose data and name keep their buffers: the streaming parser reads
// fact after fact into one literal, and a feature vector grown from empty for each fact
// took five allocations.
void reset_value(ValueSpec& v);

}  // namespace lrnn::syntax
