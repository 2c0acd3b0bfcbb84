// The tokenizer of the text format. Tokens are produced on demand with a small
// lookahead window; line and column are tracked incrementally (never by rescanning),
// so a 10 MB single-line file lexes in linear time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lrnn/diagnostics.hpp"

namespace lrnn::syntax {

enum class Tok : uint8_t {
  End,
  Ident,     // [a-z][A-Za-z0-9_-]*: constant or predicate name
  Variable,  // [A-Z_][A-Za-z0-9_-]*
  Number,    // [+-]?digits(.digits)?([eE][+-]?digits)?
  String,    // '...' or "..." (text includes the quotes)
  Import,    // `import path`: text is the whole statement, `import` and the path as written
  LParen, RParen, LBracket, RBracket, LBrace, RBrace,
  Lt, Gt, Comma, Period, Implies /* :- or <= */, Colon, Dollar, Equals,
  At, Star, Bang, Tilde, Caret, Pipe, Slash,
};

struct Token {
  Tok kind = Tok::End;
  uint32_t line = 1, col = 1;
  size_t offset = 0;
  std::string_view text;
};

// "'foo'", "number '3'", "end of file": how an error message names a token.
std::string describe(const Token& t);

class Lexer {
 public:
  explicit Lexer(std::shared_ptr<const SourceFile> file);

  // The k-th token ahead (k < kLookahead) without consuming it.
  const Token& peek(int k = 0) {
    if (k < count_) return buf_[(head_ + k) & (kLookahead - 1)];
    return fill(k);
  }
  // Consumes the next token (advance() when the caller does not need it).
  void advance() {
    if (count_ == 0) fill(0);
    const Token& t = buf_[head_];
    head_ = (head_ + 1) & (kLookahead - 1);
    --count_;
    last_end_ = t.offset + t.text.size();
    last_line_ = t.line;
    last_col_end_ = t.col + t.text.size();
  }
  Token next() {
    if (count_ == 0) fill(0);
    Token t = buf_[head_];
    advance();
    return t;
  }
  bool at(Tok kind, int k = 0) { return peek(k).kind == kind; }

  Span span(const Token& t) const {
    return Span{file_, t.line, t.col, static_cast<uint32_t>(t.text.empty() ? 1 : t.text.size())};
  }
  // A span from token `from` up to the end of the last consumed token.
  Span span_from(const Token& from) const;
  // span(t) and span_from(from) written into `s`, its file copied only when it differs: a
  // literal reused fact after fact keeps its spans' file, and copying the shared_ptr costs
  // two atomic operations per span (a graph's edge fact has three spans).
  void set_span(Span& s, const Token& t) const {
    if (s.file != file_) s.file = file_;
    s.line = t.line;
    s.col = t.col;
    s.length = static_cast<uint32_t>(t.text.empty() ? 1 : t.text.size());
  }
  void set_span_from(Span& s, const Token& from) const;
  // set_span_from as if `last` had been the last token consumed.
  void set_span_to(Span& s, const Token& from, const Token& last) const;
  const std::shared_ptr<const SourceFile>& file() const { return file_; }
  // The position just past the last consumed token (for "expected '.'" after a line).
  Span span_after_last() const {
    return Span{file_, last_line_, static_cast<uint32_t>(last_col_end_), 1};
  }
  uint32_t last_line() const { return last_line_; }
  [[noreturn]] void fail(const Token& at, const std::string& message) const;

  // Raw access for a reader that scans a common shape of text itself (syntax/plain_fact.hpp),
  // valid while no token is buffered (forget_peeked): where the next token's blanks start.
  struct Position {
    size_t offset = 0;
    uint32_t line = 1;
    size_t line_start = 0;
  };
  // Makes the lexer idle by forgetting one token it holds but the parser has not consumed
  // (it is scanned again on demand); false if it holds more than one.
  bool forget_peeked() {
    if (count_ > 1) return false;
    if (count_ == 1) {
      const Token& t = buf_[head_];
      pos_ = t.offset;
      line_ = t.line;
      line_start_ = t.offset + 1 - t.col;
      count_ = 0;
    }
    return true;
  }
  Position position() const { return {pos_, line_, line_start_}; }
  std::string_view text() const { return text_; }
  // Continues at `at` (idle), as if `last` had been the last token consumed: spans and
  // "expected ..." positions come out as if the tokens had been read one by one.
  void resume(const Position& at, const Token& last) {
    pos_ = at.offset;
    line_ = at.line;
    line_start_ = at.line_start;
    last_end_ = last.offset + last.text.size();
    last_line_ = last.line;
    last_col_end_ = last.col + last.text.size();
  }

  static constexpr int kLookahead = 8;  // a power of two (ring buffer index mask); function literals look 7 ahead

 private:
  const Token& fill(int k);
  void scan(Token& t);
  // scan's cases: each reads one token starting at `start` (= pos_) into t.
  void scan_word(Token& t, size_t start);
  void scan_import_path(Token& t, size_t start);
  void scan_number(Token& t, size_t start);
  void scan_string(Token& t, size_t start);
  void scan_punctuation(Token& t, size_t start);
  void skip_blanks();
  void newline_at(size_t pos) {
    ++line_;
    line_start_ = pos + 1;
  }
  void set_span_end(Span& s, const Token& from, size_t last_end) const;
  [[noreturn]] void fail_here(size_t offset, uint32_t length, const std::string& message) const;

  std::shared_ptr<const SourceFile> file_;
  std::string_view text_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  size_t line_start_ = 0;
  Token buf_[kLookahead];
  int head_ = 0, count_ = 0;
  size_t last_end_ = 0;  // byte offset just past the last consumed token
  uint32_t last_line_ = 1;
  size_t last_col_end_ = 1;
};

// Checks that `text` is valid UTF-8; throws a Parse error at the first bad byte.
void validate_utf8(const std::shared_ptr<const SourceFile>& file);

}  // namespace lrnn::syntax
