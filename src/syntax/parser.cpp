// Recursive-descent parser of docs/language.md. Recursion is bounded: statements, bodies and
// value lists are loops; only metadata tuples and imports recurse, both with depth limits.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "lrnn/syntax.hpp"
#include "syntax/builtins.hpp"
#include "syntax/lexer.hpp"
#include "syntax/plain_fact.hpp"
#include "syntax/statements.hpp"

namespace lrnn {

namespace syntax {

namespace {

constexpr int kMaxNesting = 64;      // metadata tuples like ((0,1),(2,3))
constexpr int kMaxImportDepth = 64;  // a chain of imports (cycles are caught earlier)

std::string unquote(std::string_view quoted) {
  std::string out;
  out.reserve(quoted.size());
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c == '\\' && i + 2 < quoted.size()) {
      char e = quoted[++i];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        default: out += e; break;
      }
    } else {
      out += c;
    }
  }
  return out;
}

bool is_value_start(Tok k) {
  return k == Tok::Number || k == Tok::Lt || k == Tok::LBracket || k == Tok::LBrace || k == Tok::Dollar;
}
bool is_literal_start(Tok k) {
  return k == Tok::Ident || k == Tok::Bang || k == Tok::Tilde || k == Tok::At || k == Tok::Star ||
         k == Tok::Variable;  // a variable is rejected with a precise message in literal()
}

}  // namespace

class Parser {
 public:
  explicit Parser(std::shared_ptr<const SourceFile> file) : lex_(std::move(file)) {}

  Lexer& lex() { return lex_; }

  [[noreturn]] void fail(const Token& t, const std::string& message) { lex_.fail(t, message); }
  [[noreturn]] void fail(const Span& s, const std::string& message) {
    throw Error(ErrorKind::Parse, s, message);
  }
  // Messages are built only on failure: these run once per token of the hot path.
  [[noreturn]] void expected(std::string_view what) {
    std::string message = "expected ";
    message.append(what);
    message.append(", found ");
    message.append(describe(lex_.peek()));
    fail(lex_.peek(), message);
  }

  Token expect(Tok kind, const char* what) {
    if (!lex_.at(kind)) expected(what);
    return lex_.next();
  }
  bool accept(Tok kind) {
    if (!lex_.at(kind)) return false;
    lex_.advance();
    return true;
  }
  // The statement-ending '.'. When the next token is on a later line, the caret goes
  // right after the previous token (where the '.' is missing), not on the next line.
  void expect_period(const char* what) {
    if (lex_.at(Tok::Period)) {
      lex_.advance();
      return;
    }
    const Token& found = lex_.peek();
    std::string message = "expected ";
    message.append(what);
    message.append(", found ");
    message.append(describe(found));
    if (found.kind == Tok::End || found.line > lex_.last_line()) fail(lex_.span_after_last(), message);
    fail(found, message);
  }

  bool at_meta() {
    return lex_.at(Tok::LBracket) && (lex_.at(Tok::Ident, 1) || lex_.at(Tok::Variable, 1)) &&
           lex_.at(Tok::Equals, 2);
  }

  // ---- numbers and values ----

  double number(const Token& t) {
    double v = 0;
    const char* begin = t.text.data() + (t.text.front() == '+' ? 1 : 0);  // from_chars rejects '+'
    auto [p, ec] = std::from_chars(begin, t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size())
      fail(t, "number out of range: '" + std::string(t.text) + "'");
    return v;
  }

  int positive_int(const Token& t, const std::string& what) {
    int v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size() || v <= 0)
      fail(t, "expected " + what + " (a positive integer), found " + describe(t));
    return v;
  }

  // A value of rows x cols entries must stay within kMaxValueEntries (computed in 64 bits).
  void check_entries(const Token& at, int64_t rows, int64_t cols) {
    if (rows * cols > kMaxValueEntries)
      fail(at, "a value of " + std::to_string(rows) + "x" + std::to_string(cols) + " = " + std::to_string(rows * cols) +
                   " entries is over the limit of " + std::to_string(kMaxValueEntries) + " entries per value");
  }

  double value_number() {
    if (!lex_.at(Tok::Number)) expected("a number");
    return number(lex_.next());
  }

  // [a, b, ...] after the '[' is consumed; returns the entries.
  void number_list(std::vector<double>& out, const char* close_what) {
    out.push_back(value_number());
    while (accept(Tok::Comma)) out.push_back(value_number());
    expect(Tok::RBracket, close_what);
  }

  void base_value(ValueSpec& v) {
    const Token& t = lex_.peek();
    switch (t.kind) {
      case Tok::Number:
        v.kind = ValueSpec::Kind::Scalar;
        v.rows = v.cols = 1;
        v.data = {number(lex_.next())};
        return;
      case Tok::LBracket: {
        lex_.advance();
        if (lex_.at(Tok::LBracket)) {  // matrix: rows of equal length
          v.kind = ValueSpec::Kind::Matrix;
          int rows = 0;
          size_t cols = 0;
          do {
            Token open = expect(Tok::LBracket, "'[' starting a matrix row");
            size_t before = v.data.size();
            number_list(v.data, "',' or ']' in a matrix row");
            size_t n = v.data.size() - before;
            if (rows == 0) cols = n;
            else if (n != cols)
              fail(lex_.span_from(open), "matrix row " + std::to_string(rows + 1) + " has " + std::to_string(n) +
                                             (n == 1 ? " entry" : " entries") + ", expected " + std::to_string(cols));
            ++rows;
          } while (accept(Tok::Comma));
          expect(Tok::RBracket, "',' or ']' closing the matrix");
          v.rows = rows;
          v.cols = static_cast<int>(cols);
          return;
        }
        if (lex_.at(Tok::Number) && lex_.at(Tok::Pipe, 1)) {  // sparse [n|i:v, ...]
          Token len_tok = lex_.next();
          int n = positive_int(len_tok, "a sparse vector length");
          check_entries(len_tok, n, 1);
          lex_.advance();  // '|'
          v.kind = ValueSpec::Kind::Vector;
          v.sparse = true;
          v.rows = n;
          v.cols = 1;
          v.data.assign(static_cast<size_t>(n), 0.0);
          if (!lex_.at(Tok::RBracket)) {
            do {
              if (!lex_.at(Tok::Number)) expected("an index 'i:value' of the sparse vector");
              Token idx_tok = lex_.next();
              int idx = -1;
              auto [p, ec] = std::from_chars(idx_tok.text.data(), idx_tok.text.data() + idx_tok.text.size(), idx);
              if (ec != std::errc() || p != idx_tok.text.data() + idx_tok.text.size() || idx < 0 || idx >= n)
                fail(idx_tok, "sparse index " + std::string(idx_tok.text) + " out of range [0, " +
                                  std::to_string(n) + ")");
              // `2:-1.5` lexes as `2`, `:-`, `1.5`: a negative entry, not a rule arrow.
              const Token& sep = lex_.peek();
              bool negative = sep.kind == Tok::Implies && sep.text == ":-" && lex_.at(Tok::Number, 1) &&
                              lex_.peek(1).offset == sep.offset + 2;
              if (negative) lex_.next();
              else expect(Tok::Colon, "':' after the sparse index");
              double entry = value_number();
              v.data[static_cast<size_t>(idx)] = negative ? -entry : entry;
            } while (accept(Tok::Comma));
          }
          expect(Tok::RBracket, "',' or ']' closing the sparse vector");
          return;
        }
        v.kind = ValueSpec::Kind::Vector;
        number_list(v.data, "',' or ']' closing the vector");
        v.rows = static_cast<int>(v.data.size());
        v.cols = 1;
        return;
      }
      case Tok::LBrace: {
        lex_.advance();
        v.kind = ValueSpec::Kind::Dims;
        if (!lex_.at(Tok::Number)) expected("a dimension");
        const Token rows_tok = lex_.peek();
        v.rows = positive_int(lex_.next(), "a dimension");
        if (accept(Tok::Comma)) {
          if (!lex_.at(Tok::Number)) expected("a dimension");
          v.cols = positive_int(lex_.next(), "a dimension");
          check_entries(rows_tok, v.rows, v.cols);
          v.dims_is_vector = false;
        } else {
          v.cols = 1;
          check_entries(rows_tok, v.rows, v.cols);
          v.dims_is_vector = true;
        }
        expect(Tok::RBrace, "'}' closing the dimensions (at most two: {rows, cols})");
        return;
      }
      default:
        expected("a value (a number, [vector], [[matrix]] or {dims})");
    }
  }

  std::string weight_name() {
    if (!lex_.at(Tok::Ident) && !lex_.at(Tok::Variable)) expected("a weight name after '$'");
    return std::string(lex_.next().text);
  }

  ValueSpec value() {
    ValueSpec v;
    value_into(v);
    return v;
  }

  // `0.5`, `[..]`, `{..}`, `<...>`, `$w=...`, `$w`, `<$w=...>`
  void value_into(ValueSpec& v) {
    Token first = lex_.peek();
    reset_value(v);
    if (accept(Tok::Dollar)) {
      v.name = weight_name();
      if (!accept(Tok::Equals)) {
        v.kind = ValueSpec::Kind::Reference;
        v.rows = v.cols = 1;
      } else if (accept(Tok::Lt)) {
        v.fixed = true;
        base_value(v);
        expect(Tok::Gt, "'>' closing the fixed value");
      } else {
        base_value(v);
      }
    } else if (accept(Tok::Lt)) {
      v.fixed = true;
      if (accept(Tok::Dollar)) {
        v.name = weight_name();
        if (accept(Tok::Equals)) base_value(v);
        else v.kind = ValueSpec::Kind::Reference;
      } else {
        base_value(v);
      }
      expect(Tok::Gt, "'>' closing the fixed value");
    } else {
      base_value(v);
    }
    lex_.set_span_from(v.span, first);
  }

  // ---- terms and literals ----

  // Fills `out` in place (terms are built straight into the literal's argument vector).
  // A type prefix `woman:Y` is handled iteratively, so `a:b:c:...` cannot recurse.
  void term_into(Term& out) {
    Token type_tok;
    bool typed = false;
    if (lex_.at(Tok::Ident) && lex_.at(Tok::Colon, 1)) {
      type_tok = lex_.next();
      lex_.advance();
      typed = true;
      if (lex_.at(Tok::Ident) && lex_.at(Tok::Colon, 1)) fail(lex_.peek(), "a term has at most one type");
    }
    const Token& t = lex_.peek();
    switch (t.kind) {
      case Tok::Variable: out.kind = Term::Kind::Variable; out.text = t.text; break;
      case Tok::Ident: out.kind = Term::Kind::Constant; out.text = t.text; break;
      case Tok::Number: out.kind = Term::Kind::Number; out.text = t.text; break;
      case Tok::String: out.kind = Term::Kind::String; out.text = unquote(t.text); break;
      default:
        expected(typed ? "a term after the type '" + std::string(type_tok.text) + ":'"
                       : std::string("a term (a variable, constant, number or string)"));
    }
    if (!typed) lex_.set_span(out.span, t);
    lex_.advance();
    if (typed) {
      out.type = type_tok.text;
      lex_.set_span_from(out.span, type_tok);
    } else {
      out.type.clear();  // `out` may be a reused term
    }
  }

  void check_builtin(const Literal& lit) {
    const BuiltinInfo* want = find_builtin(lit.predicate);
    if (!want) fail(lit.span, "unknown builtin '@" + lit.predicate + "' (known: " + builtin_names() + ")");
    int a = lit.arity();
    if (a < want->min_arity || (want->max_arity >= 0 && a > want->max_arity)) {
      std::string takes = want->max_arity < 0 ? "at least " + std::to_string(want->min_arity)
                                              : std::to_string(want->min_arity);
      fail(lit.span, "wrong arity: builtin '@" + lit.predicate + "' takes " + takes + " argument" +
                         (want->min_arity == 1 && want->max_arity == 1 ? "" : "s") + ", found " + std::to_string(a));
    }
  }

  // The comma-separated terms of a literal into `args`.
  void terms_into(std::vector<Term>& args) {
    if (args.capacity() == 0) {
      // A new literal: terms are collected in a reused buffer and moved into an exactly
      // sized vector: one allocation per literal, no growth, no spare capacity (files hold
      // millions).
      size_t base = scratch_.size();
      do term_into(scratch_.emplace_back());
      while (accept(Tok::Comma));
      args.assign(std::make_move_iterator(scratch_.begin() + static_cast<std::ptrdiff_t>(base)),
                  std::make_move_iterator(scratch_.end()));
      scratch_.resize(base);
      return;
    }
    // A reused literal (reuse_literal): its terms and their strings are overwritten in place.
    size_t n = 0;
    do {
      if (n == args.size()) args.emplace_back();
      term_into(args[n++]);
    } while (accept(Tok::Comma));
    args.resize(n);
  }

  // A literal with its prefixes, built in place; `lit.weight` was set by the caller.
  void literal_into(Literal& lit) {
    Token first = lex_.peek();
    while (true) {
      const Token& p = lex_.peek();
      bool* flag = p.kind == Tok::Bang    ? &lit.negated
                   : p.kind == Tok::Tilde ? &lit.soft_negated
                   : p.kind == Tok::At    ? &lit.builtin
                   : p.kind == Tok::Star  ? &lit.hidden
                                          : nullptr;
      if (!flag) break;
      if (*flag) fail(p, "repeated prefix " + describe(p));
      *flag = true;
      lex_.advance();
    }
    const Token& name = lex_.peek();
    if (name.kind == Tok::Variable)
      fail(name, "expected a predicate name (starting with a lower-case letter), found " + describe(name));
    if (name.kind != Tok::Ident) expected("a predicate name");
    lit.predicate = name.text;
    lex_.advance();
    if (accept(Tok::LParen)) {
      if (!lex_.at(Tok::RParen)) terms_into(lit.args);
      else lit.args.clear();
      if (!lex_.at(Tok::RParen)) expected("',' or ')' after an argument of '" + lit.predicate + "'");
      lex_.advance();
    } else {
      lit.args.clear();
    }
    if (lex_.at(Tok::Caret)) {
      lex_.advance();
      const Token& tt = lex_.peek();
      if (tt.kind != Tok::Variable || tt.text != "T") expected("'T' after '^' (a transposed literal is 'p(X)^T')");
      lex_.advance();
      lit.transposed = true;
    }
    lex_.set_span_from(lit.span, first);
    if (lit.builtin) check_builtin(lit);
  }

  Literal literal(std::optional<ValueSpec> weight = std::nullopt) {
    Literal lit;
    lit.weight = std::move(weight);
    literal_into(lit);
    return lit;
  }

  // A literal that may be preceded by a value: `<1.0> horse(aida)`, `0.5 a(X)`.
  void valued_literal_into(Literal& lit) {
    if (is_value_start(lex_.peek().kind)) {
      if (!lit.weight) lit.weight.emplace(std::move(spare_value_));
      value_into(*lit.weight);
    }
    if (!is_literal_start(lex_.peek().kind)) expected(lit.weight ? "a literal after the value" : "a literal");
    literal_into(lit);
  }
  Literal valued_literal() {
    Literal lit;
    valued_literal_into(lit);
    return lit;
  }

  // Makes `lit`, a literal given to a sink (which may have moved from it), ready to be read
  // into again by valued_literal_into as if new, keeping its buffers: the streaming parser
  // reads every fact of a file into one literal (a new one per fact cost an allocation for
  // its terms and five for a feature vector, and two atomic operations per span).
  void reuse_literal(Literal& lit) {
    if (lit.weight) {
      spare_value_ = std::move(*lit.weight);
      lit.weight.reset();
    }
    lit.builtin = lit.hidden = lit.negated = lit.soft_negated = lit.transposed = false;
  }

  // The next fact of an example into `lit` (a literal reuse_literal made ready): read
  // straight from the text where it has the plain shape (syntax/plain_fact.hpp), else token
  // by token; the same literal and spans either way.
  void fact_into(Literal& lit) {
    if (plain_fact_into(lit)) return;
    valued_literal_into(lit);
    check_fact(lit, " in the example");
  }
  // `lit` read as a plain fact if the text there is one; else false, nothing consumed.
  bool plain_fact_into(Literal& lit) {
    if (!lex_.forget_peeked() || !scan_plain_fact(lex_, plain_)) return false;
    take_plain_fact(plain_, lex_, lit, spare_value_);
    return true;
  }

  void check_fact(const Literal& lit, const char* where) {
    if (lit.builtin || lit.negated || lit.soft_negated)
      fail(lit.span, std::string("expected a fact") + where + ", found a " +
                         (lit.builtin ? "builtin" : "negated") + " literal");
  }

  // ---- metadata ----

  // A metadata argument as canonical text: `J`, `0.5`, `(0,2)`, `f(a,b)`.
  std::string meta_arg(int depth) {
    if (depth > kMaxNesting) fail(lex_.peek(), "metadata nested too deeply");
    const Token& t = lex_.peek();
    if (t.kind == Tok::LParen || t.kind == Tok::LBracket) {
      Tok close = t.kind == Tok::LParen ? Tok::RParen : Tok::RBracket;
      std::string out(1, t.kind == Tok::LParen ? '(' : '[');
      lex_.advance();
      if (!lex_.at(close)) {
        out += meta_arg(depth + 1);
        while (accept(Tok::Comma)) out += "," + meta_arg(depth + 1);
      }
      expect(close, close == Tok::RParen ? "',' or ')'" : "',' or ']'");
      out += close == Tok::RParen ? ')' : ']';
      return out;
    }
    if (t.kind == Tok::Period && lex_.at(Tok::Period, 1) && lex_.at(Tok::Period, 2)) {
      lex_.advance(), lex_.advance(), lex_.advance();
      return "...";  // Python's Ellipsis, as PyNeuraLogic prints slice(cols=...): the whole axis
    }
    if (t.kind != Tok::Ident && t.kind != Tok::Variable && t.kind != Tok::Number && t.kind != Tok::String)
      expected("a metadata argument (a name, number or tuple)");
    std::string out(t.text);
    lex_.advance();
    if (lex_.at(Tok::LParen)) out += meta_arg(depth + 1);
    return out;
  }

  FunctionSpec function_spec() {
    FunctionSpec f;
    const Token& t = lex_.peek();
    if (t.kind == Tok::Dollar) {  // a weight name: `[offset=$b]`
      lex_.advance();
      f.name = "$" + weight_name();
      return f;
    }
    if (t.kind == Tok::LParen || t.kind == Tok::LBracket) {  // a tuple or vector value, as text
      f.name = meta_arg(1);
      return f;
    }
    if (t.kind != Tok::Ident && t.kind != Tok::Variable && t.kind != Tok::Number && t.kind != Tok::String)
      expected("a metadata value (a name, a number, a tuple or a $weight)");
    f.name = t.text;
    lex_.advance();
    if (accept(Tok::LParen)) {
      f.has_parens = true;
      if (!lex_.at(Tok::RParen)) {
        do {
          if ((lex_.at(Tok::Ident) || lex_.at(Tok::Variable)) && lex_.at(Tok::Equals, 1)) {
            std::string key(lex_.next().text);
            lex_.advance();
            f.kwargs.emplace_back(std::move(key), meta_arg(1));
          } else {
            if (!f.kwargs.empty()) expected("'key=value' (positional arguments come first)");
            f.args.push_back(meta_arg(1));
          }
        } while (accept(Tok::Comma));
      }
      if (!lex_.at(Tok::RParen)) expected("',' or ')' closing the arguments of '" + f.name + "'");
      lex_.advance();
    }
    return f;
  }

  std::vector<MetaEntry> meta_list() {
    std::vector<MetaEntry> meta;
    expect(Tok::LBracket, "'['");
    do {
      if (!lex_.at(Tok::Ident)) expected("a metadata key (e.g. activation, aggregation)");
      Token key = lex_.next();
      if (!lex_.at(Tok::Equals)) expected("'=' after the metadata key '" + std::string(key.text) + "'");
      lex_.advance();
      MetaEntry e;
      e.key = key.text;
      e.value = function_spec();
      e.span = lex_.span_from(key);
      meta.push_back(std::move(e));
    } while (accept(Tok::Comma));
    expect(Tok::RBracket, "',' or ']' closing the metadata list");
    return meta;
  }

  // ---- rules ----

  void check_head(const Literal& head) {
    if (head.builtin || head.negated || head.soft_negated)
      fail(head.span, std::string("expected a rule head, found a ") + (head.builtin ? "builtin" : "negated") +
                          " literal");
  }

  // PyNeuraLogic's function literal `tanh(h(T))`: a body literal whose value goes through an
  // activation. Its argument is a literal with arguments, which no term can be, so the form
  // is unambiguous (`tanh(a)` stays the atom tanh/1 of the constant a).
  bool at_function_literal() {
    if (!lex_.at(Tok::Ident) || !lex_.at(Tok::LParen, 1)) return false;
    int k = 2;  // the inner literal's prefixes, its name, its '('
    while (k < 5 && (lex_.at(Tok::Tilde, k) || lex_.at(Tok::Bang, k) || lex_.at(Tok::At, k) || lex_.at(Tok::Star, k))) ++k;
    return lex_.at(Tok::Ident, k) && lex_.at(Tok::LParen, k + 1);
  }

  // A body literal, possibly a function literal: `transpose(k(J))` is `k(J)^T`,
  // `reverse(a(X))` is `~a(X)`, any other `f(p(X, Y))` the literal `p__f(X, Y)` of a rule
  // `p__f(A1, A2) :- p(A1, A2). [activation=f]` added once per template (helper_rules()).
  Literal body_literal(std::optional<ValueSpec> weight) {
    if (!at_function_literal()) return literal(std::move(weight));
    const Token first = lex_.peek();
    const std::string function(first.text);
    lex_.advance();
    lex_.advance();
    Literal inner = body_literal(std::nullopt);
    expect(Tok::RParen, ("')' after the literal inside '" + function + "(...)'").c_str());
    const Span span = lex_.span_from(first);
    if (inner.builtin || inner.negated || inner.hidden)
      fail(span, "'" + function + "(...)' needs a literal with a value, found a " +
                     (inner.builtin ? "builtin" : inner.negated ? "negated" : "hidden") + " literal");
    inner.span = span;
    inner.weight = std::move(weight);
    if ((function == "transpose" || function == "transp") && !inner.transposed) {
      inner.transposed = true;
      return inner;
    }
    if (function == "reverse" && !inner.soft_negated && !inner.transposed) {
      inner.soft_negated = true;
      return inner;
    }
    Literal call;
    call.predicate = helper_rule(function, inner, span);
    call.args = std::move(inner.args);
    call.weight = std::move(inner.weight);
    call.span = span;
    return call;
  }

  // The name of the rule computing `function` of `inner`'s predicate (added on first use).
  std::string helper_rule(const std::string& function, const Literal& inner, const Span& span) {
    std::string name = inner.predicate + (inner.soft_negated ? "__reverse" : "") +
                       (inner.transposed ? "__transpose" : "") + "__" + function;
    for (const Rule& r : helper_rules_)
      if (r.head.predicate == name && r.head.arity() == inner.arity()) return name;
    Rule r;
    r.head.predicate = name;
    Literal body = inner;
    body.weight.reset();
    for (int k = 0; k < inner.arity(); ++k) {
      r.head.args.push_back(Term::variable("A" + std::to_string(k + 1)));
      body.args[k] = r.head.args.back();
    }
    r.head.span = body.span = span;
    r.body.push_back(std::move(body));
    r.meta.push_back(MetaEntry{"activation", FunctionSpec{function, {}, {}, false}, span});
    r.span = span;
    helper_rules_.push_back(std::move(r));
    return name;
  }

 public:
  // The rules function literals asked for, in order of first use; taken once.
  std::vector<Rule> take_helper_rules() { return std::exchange(helper_rules_, {}); }

 private:
  std::vector<Rule> helper_rules_;

 public:
  // After `head :-`: body literals, at most one offset, the '.', optional metadata.
  Rule rule_body(Literal head, const Token& first, bool period_optional) {
    check_head(head);
    Rule r;
    r.head = std::move(head);
    do {
      Token el = lex_.peek();
      if (is_value_start(el.kind)) {
        ValueSpec w = value();
        if (is_literal_start(lex_.peek().kind)) {
          r.body.push_back(body_literal(std::move(w)));
        } else {
          if (r.offset) fail(w.span, "a rule has at most one offset, found a second one");
          r.offset = std::move(w);
        }
      } else if (is_literal_start(el.kind)) {
        r.body.push_back(body_literal(std::nullopt));
      } else {
        expected("a body literal or an offset");
      }
    } while (accept(Tok::Comma));
    if (!(period_optional && lex_.at(Tok::End))) expect_period("',' or '.' after the rule body");
    if (at_meta()) r.meta = meta_list();
    r.span = lex_.span_from(first);
    return r;
  }

  Rule single_rule() {
    Token first = lex_.peek();
    if (first.kind == Tok::End) expected("a rule");
    Literal head = valued_literal();
    Rule r;
    if (accept(Tok::Implies)) {
      r = rule_body(std::move(head), first, true);
    } else {
      check_fact(head, "");
      r.head = std::move(head);
      if (!lex_.at(Tok::End)) expect_period("':-' or '.' after the head");
      if (at_meta()) r.meta = meta_list();
      r.span = lex_.span_from(first);
    }
    if (!lex_.at(Tok::End)) expected("end of input after the rule");
    if (!helper_rules_.empty())
      fail(r.span, "a function literal (f(p(X))) needs a rule of its own: parse it as part of a template");
    return r;
  }

  Lexer lex_;
  std::vector<Term> scratch_;  // argument buffer shared by every literal()
  ValueSpec spare_value_;      // a reused literal's value buffers between valued facts (reuse_literal)
  PlainFact plain_;            // the last plain fact scanned (fact_into), its buffers kept
};

// ---- templates with imports ----

namespace {

struct TemplateContext {
  TemplateAst& out;
  std::vector<std::string> import_stack;  // canonical paths of the files being parsed
  std::vector<std::string> import_names;  // the same files as the user named them
};

std::string canonical_key(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

// The rules of a file's function literals, after its own rules (rule indices, and with them
// parameter names, stay as written). One an imported file already added is not added twice;
// a predicate of that name the template defines itself is an error.
void add_helper_rules(TemplateAst& out, Parser& p) {
  const size_t written = out.rules.size();
  for (Rule& helper : p.take_helper_rules()) {
    bool present = false;
    for (size_t i = 0; i < written; ++i) {
      const Rule& r = out.rules[i];
      if (r.head.predicate != helper.head.predicate || r.head.arity() != helper.head.arity()) continue;
      const bool same = r.body.size() == 1 && r.body[0].predicate == helper.body[0].predicate &&
                        r.body[0].args == helper.body[0].args && r.meta.size() == 1 &&
                        r.meta[0].value == helper.meta[0].value;
      if (!same)
        p.fail(helper.span, "this function literal is computed by the rule '" + helper.head.predicate + "/" +
                                std::to_string(helper.head.arity()) +
                                "', a predicate the template defines itself; rename that predicate");
      present = true;
    }
    for (const Literal& f : out.facts)
      if (f.predicate == helper.head.predicate && f.arity() == helper.head.arity())
        p.fail(helper.span, "this function literal is computed by the rule '" + helper.head.predicate +
                                "', a predicate the template has facts of; rename that predicate");
    if (!present) out.rules.push_back(std::move(helper));
  }
}

void parse_template_file(TemplateContext& ctx, std::shared_ptr<const SourceFile> file, bool is_main) {
  validate_utf8(file);
  Parser p(file);
  Lexer& lex = p.lex();
  if (is_main && lex.at(Tok::End))
    p.fail(Span{file, 1, 1, 1}, "empty file: expected a template (rules, facts or predicate declarations)");
  while (!lex.at(Tok::End)) {
    const Token first = lex.peek();
    if (first.kind == Tok::Import) {
      lex.advance();
      std::string_view written = first.text.substr(6);  // after `import`
      written.remove_prefix(std::min(written.find_first_not_of(" \t"), written.size()));
      std::string rel = (written.front() == '"' || written.front() == '\'') ? unquote(written) : std::string(written);
      if (rel.size() > 1 && rel.back() == '.') rel.pop_back();  // `import ./a.txt.`
      std::filesystem::path base = file->name.empty() || file->name.front() == '<'
                                       ? std::filesystem::path()
                                       : std::filesystem::path(file->name).parent_path();
      std::string full = (base / rel).lexically_normal().string();
      std::string key = canonical_key(full);
      auto cyc = std::find(ctx.import_stack.begin(), ctx.import_stack.end(), key);
      if (cyc != ctx.import_stack.end()) {
        std::string chain;
        for (size_t i = static_cast<size_t>(cyc - ctx.import_stack.begin()); i < ctx.import_names.size(); ++i)
          chain += ctx.import_names[i] + " -> ";
        throw Error(ErrorKind::Parse, lex.span(first), "import cycle: '" + full + "' imports itself (" + chain + full + ")");
      }
      if (static_cast<int>(ctx.import_stack.size()) >= kMaxImportDepth)
        throw Error(ErrorKind::Parse, lex.span(first), "imports nested too deeply (more than 64 files)");
      auto imported = std::make_shared<SourceFile>();
      imported->name = full;
      if (!read_whole_file(full, imported->text))
        throw Error(ErrorKind::Parse, lex.span(first), "cannot read imported file '" + full + "'");
      std::shared_ptr<const SourceFile> sub = std::move(imported);
      ctx.out.sources.push_back(sub);
      ctx.import_stack.push_back(key);
      ctx.import_names.push_back(full);
      parse_template_file(ctx, sub, false);
      ctx.import_stack.pop_back();
      ctx.import_names.pop_back();
      continue;
    }
    if (first.kind == Tok::Ident && lex.at(Tok::Slash, 1)) {  // name/arity [meta] | value
      lex.advance();
      lex.advance();
      if (!lex.at(Tok::Number)) p.expected("an arity after '" + std::string(first.text) + "/'");
      Token ar = lex.next();
      int arity = -1;
      auto [ptr, ec] = std::from_chars(ar.text.data(), ar.text.data() + ar.text.size(), arity);
      if (ec != std::errc() || ptr != ar.text.data() + ar.text.size() || arity < 0)
        p.fail(ar, "expected an arity (a non-negative integer), found " + describe(ar));
      if (arity > kMaxArity) p.fail(ar, "predicate " + std::string(first.text) + "/" + std::string(ar.text) +
                                     " has more than 64 arguments (at most 64)");
      PredicateDecl d;
      d.name = first.text;
      d.arity = arity;
      if (is_value_start(lex.peek().kind) && !p.at_meta()) d.offset = p.value();
      if (p.at_meta()) d.meta = p.meta_list();
      // A bare declaration `p/2.` only fixes the arity; without the '.' a forgotten value
      // would silently swallow the next line's weight, so the '.' is then required.
      if (!d.offset && d.meta.empty() && !lex.at(Tok::Period))
        p.expected("metadata '[key=value, ...]', an offset value or '.' after '" + d.name + "/" +
                   std::to_string(arity) + "'");
      p.accept(Tok::Period);
      d.span = lex.span_from(first);
      ctx.out.predicates.push_back(std::move(d));
      continue;
    }
    if (!is_value_start(first.kind) && !is_literal_start(first.kind))
      p.expected("a rule, a fact, a predicate declaration 'name/arity [...]' or an import");
    Literal head = p.valued_literal();
    if (p.accept(Tok::Implies)) {
      ctx.out.rules.push_back(p.rule_body(std::move(head), first, false));
      continue;
    }
    // One fact, or several comma-separated facts.
    p.check_fact(head, " (a rule head needs ':-')");
    ctx.out.facts.push_back(std::move(head));
    while (p.accept(Tok::Comma)) {
      Literal f = p.valued_literal();
      p.check_fact(f, "");
      ctx.out.facts.push_back(std::move(f));
    }
    p.expect_period("':-', ',' or '.' after the fact");
    if (p.at_meta()) p.fail(lex.peek(), "metadata lists follow rules, not facts (use 'name/arity [...]' for a predicate)");
  }
  add_helper_rules(ctx.out, p);
}

// With a sink, each fact goes to sink->fact as it is read (ExampleAst::facts stays empty).
std::vector<ExampleAst> parse_examples_source(const std::shared_ptr<const SourceFile>& file,
                                              const ExampleFactSink* sink = nullptr) {
  validate_utf8(file);
  Parser p(file);
  Lexer& lex = p.lex();
  if (lex.at(Tok::End))
    p.fail(Span{file, 1, 1, 1}, "empty file: expected examples (facts separated by ',' and ending with '.')");
  std::vector<ExampleAst> out;
  Literal reused;  // every fact after an example's first, when streaming (Parser::reuse_literal)
  while (!lex.at(Tok::End)) {
    const Token first = lex.peek();
    if (!is_value_start(first.kind) && !is_literal_start(first.kind))
      p.expected("an example (facts separated by ',' and ending with '.')");
    ExampleAst ex;
    // Examples of one file tend to have similar sizes: reserving the previous one's count
    // avoids most of the growth (and the moves of 200-byte literals) of the facts vector.
    if (!out.empty() && !sink) ex.facts.reserve(out.back().facts.size());
    const auto add_fact = [&](Literal&& f) {
      if (sink) sink->fact(std::move(f));
      else ex.facts.push_back(std::move(f));
    };
    Literal lead = p.valued_literal();
    if (p.accept(Tok::Implies)) {
      bool bare = !lead.weight && lead.args.empty() && !lead.builtin && !lead.hidden && !lead.negated &&
                  !lead.soft_negated && !lead.transposed;
      if (bare) ex.id = std::move(lead.predicate);
      else ex.queries.push_back(std::move(lead));
      Literal f = p.valued_literal();
      p.check_fact(f, " in the example");
      add_fact(std::move(f));
    } else {
      p.check_fact(lead, " in the example");
      add_fact(std::move(lead));
    }
    while (p.accept(Tok::Comma)) {
      if (sink) {
        p.reuse_literal(reused);
        p.fact_into(reused);
        sink->fact(std::move(reused));
        continue;
      }
      Literal& f = ex.facts.emplace_back();
      p.valued_literal_into(f);
      p.check_fact(f, " in the example");
    }
    p.expect_period("',' or '.' after a fact of the example");
    if (sink) sink->example_end();
    if (ex.facts.capacity() > 2 * ex.facts.size() + 16) ex.facts.shrink_to_fit();  // a big reserve missed
    ex.span = lex.span_from(first);
    out.push_back(std::move(ex));
  }
  return out;
}

// `0.25 id :- ...`: a query line's importance is one plain number, finite and not negative
// (a negative one would turn descent on that query into ascent).
double query_importance(Parser& p, const ValueSpec& v) {
  const bool plain = v.kind == ValueSpec::Kind::Scalar && v.name.empty() && !v.sparse && v.data.size() == 1;
  if (!plain) p.fail(v.span, "a query line's importance (before its id) is one number, e.g. '0.5 id :- 1.0 q.'");
  if (!std::isfinite(v.data[0]) || v.data[0] < 0)
    p.fail(v.span, "a query line's importance must be a finite number >= 0");
  return v.data[0];
}

std::vector<QueryLineAst> parse_queries_source(const std::shared_ptr<const SourceFile>& file) {
  validate_utf8(file);
  Parser p(file);
  Lexer& lex = p.lex();
  if (lex.at(Tok::End)) p.fail(Span{file, 1, 1, 1}, "empty file: expected queries (e.g. '1.0 predict.')");
  std::vector<QueryLineAst> out;
  while (!lex.at(Tok::End)) {
    const Token first = lex.peek();
    if (!is_value_start(first.kind) && !is_literal_start(first.kind))
      p.expected("a query (e.g. '1.0 predict.' or 'id :- 1.0 q.')");
    QueryLineAst q;
    Literal lead;  // a plain fact (`1.0 out(n17).`: a big graph's query per node) read directly
    if (!p.plain_fact_into(lead)) lead = p.valued_literal();
    if (p.accept(Tok::Implies)) {
      bool bare = lead.args.empty() && !lead.builtin && !lead.hidden && !lead.negated && !lead.soft_negated &&
                  !lead.transposed;
      if (!bare) p.fail(lead.span, "expected an example id (a bare name) before ':-'");
      if (lead.weight) q.importance = query_importance(p, *lead.weight);
      q.id = std::move(lead.predicate);
    } else {
      p.check_fact(lead, " as a query");
      q.queries.push_back(std::move(lead));
      if (!p.accept(Tok::Comma)) {
        p.expect_period("',' or '.' after the query");
        q.span = lex.span_from(first);
        out.push_back(std::move(q));
        continue;
      }
    }
    do {
      Literal& l = q.queries.emplace_back();
      p.valued_literal_into(l);
      p.check_fact(l, " as a query");
    } while (p.accept(Tok::Comma));
    p.expect_period("',' or '.' after the query");
    q.span = lex.span_from(first);
    out.push_back(std::move(q));
  }
  return out;
}

}  // namespace

}  // namespace syntax

namespace syntax {

std::vector<ExampleAst> parse_examples_file(const std::shared_ptr<const SourceFile>& file) {
  return parse_examples_source(file);
}
std::vector<QueryLineAst> parse_queries_file(const std::shared_ptr<const SourceFile>& file) {
  return parse_queries_source(file);
}
std::vector<ExampleAst> parse_examples_streaming(const std::shared_ptr<const SourceFile>& file,
                                                 const ExampleFactSink& sink) {
  return parse_examples_source(file, &sink);
}

namespace {

TemplateAst parse_template_source(std::shared_ptr<const SourceFile> file) {
  TemplateAst t;
  t.sources.push_back(file);
  TemplateContext ctx{t, {}, {}};
  const std::string& name = file->name;
  if (!name.empty() && name.front() != '<') {
    ctx.import_stack.push_back(canonical_key(name));
    ctx.import_names.push_back(name);
  }
  parse_template_file(ctx, file, true);
  return t;
}

}  // namespace
}  // namespace syntax

TemplateAst parse_template(std::string_view text, const std::string& name) {
  return syntax::parse_template_source(syntax::make_source(text, name));
}

TemplateAst load_template(const std::string& path) {
  return syntax::parse_template_source(syntax::read_source_file(path));
}

std::vector<ExampleAst> parse_examples(std::string_view text, const std::string& name) {
  return syntax::parse_examples_source(syntax::make_source(text, name));
}

std::vector<ExampleAst> load_examples(const std::string& path) {
  return syntax::parse_examples_source(syntax::read_source_file(path));
}

std::vector<QueryLineAst> parse_queries(std::string_view text, const std::string& name) {
  return syntax::parse_queries_source(syntax::make_source(text, name));
}

std::vector<QueryLineAst> load_queries(const std::string& path) {
  const std::shared_ptr<const SourceFile> source = syntax::read_source_file(path);
  std::vector<QueryLineAst> lines = syntax::parse_queries_source(source);
  syntax::let_go_of_text(source);  // a graph's query per node: MBs the parsed lines no longer read
  return lines;
}

Literal parse_literal(std::string_view text, const std::string& name) {
  auto file = syntax::make_source(text, name);
  syntax::validate_utf8(file);
  syntax::Parser p(file);
  if (p.lex().at(syntax::Tok::End)) p.fail(Span{file, 1, 1, 1}, "empty input: expected a literal");
  Literal lit = p.valued_literal();
  p.accept(syntax::Tok::Period);
  if (!p.lex().at(syntax::Tok::End)) p.expected("end of input after the literal");
  return lit;
}

Rule parse_rule(std::string_view text, const std::string& name) {
  auto file = syntax::make_source(text, name);
  syntax::validate_utf8(file);
  syntax::Parser p(file);
  return p.single_rule();
}

}  // namespace lrnn
