#include "syntax/plain_fact.hpp"

#include <charconv>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lrnn::syntax {

namespace {

// Character classes by table (the scanner's loops test one per byte): the lexer's classes
// (syntax/lexer.cpp), where a word starts with a letter or '_' and goes on with letters,
// digits, '_' and '-'.
enum CharClass : uint8_t { kDigit = 1, kLower = 2, kWordStart = 4, kWordChar = 8, kBlank = 16 };
struct CharClasses {
  uint8_t of[256] = {};
  constexpr CharClasses() {
    for (int c = 0; c < 256; ++c) {
      const bool digit = c >= '0' && c <= '9', lower = c >= 'a' && c <= 'z';
      const bool start = lower || (c >= 'A' && c <= 'Z') || c == '_';
      of[c] = static_cast<uint8_t>((digit ? kDigit : 0) | (lower ? kLower : 0) | (start ? kWordStart : 0) |
                                   (start || digit || c == '-' ? kWordChar : 0) |
                                   (c == ' ' || c == '\t' || c == '\r' ? kBlank : 0));
    }
  }
};
constexpr CharClasses kClasses;
bool is(char c, CharClass k) { return kClasses.of[static_cast<unsigned char>(c)] & k; }
bool is_digit(char c) { return is(c, kDigit); }

// A position in the text with its line, producing tokens as Lexer::scan would.
class Cursor {
 public:
  Cursor(std::string_view text, const Lexer::Position& at)
      : text_(text), pos_(at.offset), line_(at.line), line_start_(at.line_start) {}

  // Skips spaces, tabs, carriage returns and line breaks. False at what the lexer's blank
  // skipping handles beyond those (comments, form feeds): the general parser reads it.
  bool skip_blanks() {
    for (; pos_ < text_.size(); ++pos_) {
      const char c = text_[pos_];
      if (is(c, kBlank)) continue;
      if (c != '\n') return c != '%' && c != '/' && c != '\f' && c != '\v';
      ++line_;
      line_start_ = pos_ + 1;
    }
    return true;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  char peek_at(size_t k) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }

  bool punctuation(char c, Tok kind, Token& t) {
    if (peek() != c) return false;
    t = token(kind, pos_++);
    return true;
  }

  // A lower-case identifier (a predicate or a constant); not `import`, which the lexer may
  // read as an import statement.
  bool identifier(Token& t) {
    if (!is(peek(), kLower)) return false;
    const size_t start = pos_;
    while (pos_ < text_.size() && is(text_[pos_], kWordChar)) ++pos_;
    t = token(Tok::Ident, start);
    return t.text != "import";
  }

  // A number as Lexer::scan_number reads it, converted as Parser::number does; false for a
  // malformed or out-of-range one (the general parser names it).
  bool number(Token& t, double& v) {
    const size_t start = pos_;
    const size_t n = text_.size();
    if (peek() == '-' || peek() == '+') {
      if (!is_digit(peek_at(1))) return false;
      ++pos_;
    } else if (!is_digit(peek())) {
      return false;
    }
    while (pos_ < n && is_digit(text_[pos_])) ++pos_;
    if (peek() == '.' && is_digit(peek_at(1))) {
      ++pos_;
      while (pos_ < n && is_digit(text_[pos_])) ++pos_;
      if (peek() == '.' && is_digit(peek_at(1))) return false;  // `0.5.5`
    }
    if (peek() == 'e' || peek() == 'E') {
      size_t p = pos_ + 1;
      if (p < n && (text_[p] == '+' || text_[p] == '-')) ++p;
      if (p < n && is_digit(text_[p])) {
        while (p < n && is_digit(text_[p])) ++p;
        pos_ = p;
      }
    }
    if (is(peek(), kWordStart)) return false;  // `2a`
    t = token(Tok::Number, start);
    const char* begin = t.text.data() + (t.text.front() == '+' ? 1 : 0);  // from_chars rejects '+'
    const char* end = t.text.data() + t.text.size();
    const auto [p, ec] = std::from_chars(begin, end, v);
    return ec == std::errc() && p == end;
  }

  Lexer::Position position() const { return {pos_, line_, line_start_}; }

 private:
  Token token(Tok kind, size_t start) const {
    Token t;
    t.kind = kind;
    t.line = line_;
    t.offset = start;
    t.col = static_cast<uint32_t>(start - line_start_ + 1);
    t.text = text_.substr(start, pos_ - start);
    return t;
  }

  std::string_view text_;
  size_t pos_;
  uint32_t line_;
  size_t line_start_;
};

// `n, ...]` after the '[': the entries into `out`, the ']' into `close`.
bool number_list(Cursor& c, std::vector<double>& out, Token& close) {
  Token t;
  double v = 0;
  while (true) {
    if (!c.skip_blanks() || !c.number(t, v)) return false;
    out.push_back(v);
    if (!c.skip_blanks()) return false;
    if (c.punctuation(']', Tok::RBracket, close)) return true;
    if (!c.punctuation(',', Tok::Comma, t)) return false;
  }
}

// The value before the literal, if any: a number, `[...]`, `<number>` or `<[...]>`.
bool value(Cursor& c, PlainFact& out) {
  out.value = PlainFact::Value::None;
  out.numbers.clear();
  out.fixed = c.punctuation('<', Tok::Lt, out.value_first);
  if (out.fixed && !c.skip_blanks()) return false;
  Token open;
  if (c.punctuation('[', Tok::LBracket, open)) {
    if (!out.fixed) out.value_first = open;
    if (!number_list(c, out.numbers, out.value_last)) return false;
    out.value = PlainFact::Value::Vector;
  } else {
    const bool numeric = is_digit(c.peek()) || ((c.peek() == '-' || c.peek() == '+') && is_digit(c.peek_at(1)));
    if (!numeric) return !out.fixed;  // no value: the literal starts here
    double v = 0;
    Token t;
    if (!c.number(t, v)) return false;
    out.numbers.push_back(v);
    if (!out.fixed) out.value_first = t;
    out.value_last = t;
    out.value = PlainFact::Value::Scalar;
  }
  if (!out.fixed) return c.skip_blanks();
  return c.skip_blanks() && c.punctuation('>', Tok::Gt, out.value_last) && c.skip_blanks();
}

bool arguments(Cursor& c, PlainFact& out) {
  Token t;
  size_t n = 0;
  while (true) {
    if (!c.skip_blanks()) return false;
    if (n == out.args.size()) out.args.emplace_back();
    if (!c.identifier(out.args[n++])) return false;
    if (!c.skip_blanks()) return false;
    if (c.punctuation(')', Tok::RParen, out.last)) break;
    if (!c.punctuation(',', Tok::Comma, t)) return false;  // a typed term `type:c` among others
  }
  out.args.resize(n);
  return true;
}

}  // namespace

bool scan_plain_fact(const Lexer& lex, PlainFact& out) {
  Cursor c(lex.text(), lex.position());
  if (!c.skip_blanks() || !value(c, out) || !c.identifier(out.name)) return false;
  out.last = out.name;
  Lexer::Position after_name = c.position();
  if (!c.skip_blanks()) return false;
  Token open;
  if (c.punctuation('(', Tok::LParen, open)) {
    if (!arguments(c, out)) return false;
    out.end = c.position();
  } else {
    out.args.clear();
    out.end = after_name;
  }
  // The fact ends here only if ',' or '.' follows: `^T`, `:-` and the rest belong to the
  // general parser.
  Cursor next(lex.text(), out.end);
  return next.skip_blanks() && (next.peek() == ',' || next.peek() == '.');
}

void take_plain_fact(const PlainFact& f, Lexer& lex, Literal& lit, ValueSpec& spare) {
  if (f.value != PlainFact::Value::None) {
    if (!lit.weight) lit.weight.emplace(std::move(spare));
    ValueSpec& v = *lit.weight;
    reset_value(v);
    v.fixed = f.fixed;
    v.data.assign(f.numbers.begin(), f.numbers.end());
    v.kind = f.value == PlainFact::Value::Scalar ? ValueSpec::Kind::Scalar : ValueSpec::Kind::Vector;
    v.rows = static_cast<int>(f.numbers.size());
    v.cols = 1;
    lex.set_span_to(v.span, f.value_first, f.value_last);
  }
  lit.predicate.assign(f.name.text);
  lit.args.resize(f.args.size());
  for (size_t i = 0; i < f.args.size(); ++i) {
    Term& t = lit.args[i];
    t.kind = Term::Kind::Constant;
    t.text.assign(f.args[i].text);
    t.type.clear();
    lex.set_span(t.span, f.args[i]);
  }
  lex.resume(f.end, f.last);
  lex.set_span_from(lit.span, f.name);
}

void reset_value(ValueSpec& v) {
  std::vector<double> data = std::move(v.data);
  std::string name = std::move(v.name);
  Span span = std::move(v.span);
  v = ValueSpec{};
  data.clear();
  name.clear();
  v.data = std::move(data);
  v.name = std::move(name);
  v.span = std::move(span);
}

}  // namespace lrnn::syntax
