#include "syntax/lexer.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

namespace lrnn::syntax {

namespace {

// Character classes by table: the identifier loop is the lexer's hottest path.
struct CharTable {
  bool ident_start[256] = {};
  bool ident_char[256] = {};
  bool blank_or_comment[256] = {};  // may start whitespace or a comment
  constexpr CharTable() {
    for (int c = 0; c < 256; ++c) {
      blank_or_comment[c] = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ||
                            c == '%' || c == '/';
      bool start = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
      ident_start[c] = start;
      // NeuraLogic names may contain '-' after the first character (`d59-23`).
      ident_char[c] = start || (c >= '0' && c <= '9') || c == '-';
    }
  }
};
constexpr CharTable kChars;

bool is_ident_start(char c) { return kChars.ident_start[static_cast<unsigned char>(c)]; }
bool is_ident_char(char c) { return kChars.ident_char[static_cast<unsigned char>(c)]; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Length of the UTF-8 sequence starting at text[pos] (1 for ASCII and for bad bytes).
size_t utf8_length(std::string_view text, size_t pos) {
  unsigned char c = static_cast<unsigned char>(text[pos]);
  size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  return std::min(n, text.size() - pos);
}

}  // namespace

std::string describe(const Token& t) {
  // Built with append (not `"literal" + std::string`), which trips a GCC 12 -Wrestrict
  // false positive.
  std::string out;
  auto quoted = [&](const char* prefix) {
    out.append(prefix);
    out.push_back('\'');
    out.append(t.text.substr(0, 40));
    if (t.text.size() > 40) out.append("...");
    out.push_back('\'');
    return out;
  };
  switch (t.kind) {
    case Tok::End: return "end of file";
    case Tok::Number: return quoted("number ");
    case Tok::String:
      out.append("string ");
      out.append(t.text.substr(0, 40));
      if (t.text.size() > 40) out.append("...");
      return out;
    case Tok::Variable: return quoted("variable ");
    case Tok::Import: return "import";
    default: return quoted("");
  }
}

void validate_utf8(const std::shared_ptr<const SourceFile>& file) {
  const std::string& s = file->text;
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // ASCII fast path: eight bytes at a time.
    while (i + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, s.data() + i, 8);
      if (word & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    bool ok = len != 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Reject overlong forms, surrogates and code points past U+10FFFF.
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF))
      ok = false;
    if (!ok) {
      // Only on error: find the line and column of byte i.
      uint32_t line = 1;
      size_t line_start = 0;
      for (size_t k = 0; k < i; ++k)
        if (s[k] == '\n') ++line, line_start = k + 1;
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", c);
      throw Error(ErrorKind::Parse, Span{file, line, static_cast<uint32_t>(i - line_start + 1), 1},
                  "invalid UTF-8: byte " + std::string(hex) + " at byte offset " + std::to_string(i));
    }
    i += len;
  }
}

Lexer::Lexer(std::shared_ptr<const SourceFile> file) : file_(std::move(file)), text_(file_->text) {
  if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a UTF-8 byte order mark is not a token
}

const Token& Lexer::fill(int k) {
  while (count_ <= k) {
    scan(buf_[(head_ + count_) & (kLookahead - 1)]);
    ++count_;
  }
  return buf_[(head_ + k) & (kLookahead - 1)];
}

Span Lexer::span_from(const Token& from) const {
  size_t end = std::max(last_end_, from.offset + 1);
  return Span{file_, from.line, from.col, static_cast<uint32_t>(std::min<size_t>(end - from.offset, UINT32_MAX))};
}

void Lexer::set_span_from(Span& s, const Token& from) const {
  set_span_end(s, from, last_end_);
}

void Lexer::set_span_to(Span& s, const Token& from, const Token& last) const {
  set_span_end(s, from, last.offset + last.text.size());
}

void Lexer::set_span_end(Span& s, const Token& from, size_t last_end) const {
  if (s.file != file_) s.file = file_;
  size_t end = std::max(last_end, from.offset + 1);
  s.line = from.line;
  s.col = from.col;
  s.length = static_cast<uint32_t>(std::min<size_t>(end - from.offset, UINT32_MAX));
}

void Lexer::fail(const Token& at, const std::string& message) const {
  throw Error(ErrorKind::Parse, span(at), message);
}

void Lexer::fail_here(size_t offset, uint32_t length, const std::string& message) const {
  throw Error(ErrorKind::Parse,
              Span{file_, line_, static_cast<uint32_t>(offset - line_start_ + 1), length}, message);
}

void Lexer::skip_blanks() {
  const size_t n = text_.size();
  while (pos_ < n) {
    char c = text_[pos_];
    if (c == '\n') {
      newline_at(pos_);
      ++pos_;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
    } else if (c == '%') {
      size_t nl = text_.find('\n', pos_);
      pos_ = nl == std::string_view::npos ? n : nl;
    } else if (c == '/' && pos_ + 1 < n && text_[pos_ + 1] == '*') {
      size_t open = pos_;
      uint32_t open_line = line_;
      size_t open_line_start = line_start_;
      pos_ += 2;
      while (true) {
        if (pos_ + 1 >= n) {
          throw Error(ErrorKind::Parse,
                      Span{file_, open_line, static_cast<uint32_t>(open - open_line_start + 1), 2},
                      "unterminated block comment: expected '*/', found end of file");
        }
        if (text_[pos_] == '*' && text_[pos_ + 1] == '/') {
          pos_ += 2;
          break;
        }
        if (text_[pos_] == '\n') newline_at(pos_);
        ++pos_;
      }
    } else {
      break;
    }
  }
}

void Lexer::scan(Token& t) {
  // Fast path: most tokens follow a single space or nothing.
  if (pos_ < text_.size() && kChars.blank_or_comment[static_cast<unsigned char>(text_[pos_])]) skip_blanks();
  t.line = line_;
  t.offset = pos_;
  t.col = static_cast<uint32_t>(pos_ - line_start_ + 1);
  if (pos_ >= text_.size()) {
    t.kind = Tok::End;
    t.text = {};
    return;
  }
  const size_t start = pos_, n = text_.size();
  const char c = text_[pos_];
  if (is_ident_start(c)) return scan_word(t, start);
  if (is_digit(c) || ((c == '-' || c == '+') && pos_ + 1 < n && is_digit(text_[pos_ + 1]))) return scan_number(t, start);
  if (c == '\'' || c == '"') return scan_string(t, start);
  scan_punctuation(t, start);
}

// An identifier (lower case first) or a variable (upper case or _ first); `import`
// followed by a path is one Import token.
void Lexer::scan_word(Token& t, size_t start) {
  const size_t n = text_.size();
  const char c = text_[start];
  while (pos_ < n && is_ident_char(text_[pos_])) ++pos_;
  t.text = text_.substr(start, pos_ - start);
  t.kind = (c >= 'a' && c <= 'z') ? Tok::Ident : Tok::Variable;
  if (t.text == "import") scan_import_path(t, start);
}

void Lexer::scan_import_path(Token& t, size_t start) {
  const size_t n = text_.size();
  // `import path`: the path is raw text (up to whitespace) or a quoted string. A
  // predicate called `import` stays possible: `import(X)`, `import :- ...`, `import.`
  size_t p = pos_;
  while (p < n && (text_[p] == ' ' || text_[p] == '\t')) ++p;
  if (p > pos_ && p < n) {
    char d = text_[p];
    bool quoted = d == '"' || d == '\'';
    bool pathlike = d == '/' || (d == '.' && p + 1 < n && (text_[p + 1] == '/' || text_[p + 1] == '.')) ||
                    is_ident_char(d);
    if (quoted) {
      size_t close = text_.find(d, p + 1);
      size_t nl = text_.find('\n', p + 1);
      if (close == std::string_view::npos || (nl != std::string_view::npos && nl < close))
        fail_here(p, 1, "unterminated import path: expected closing " + std::string(1, d));
      pos_ = close + 1;
      t.kind = Tok::Import;
      t.text = text_.substr(start, pos_ - start);
    } else if (pathlike) {
      size_t e = p;
      while (e < n && !std::isspace(static_cast<unsigned char>(text_[e])) && text_[e] != '%') ++e;
      pos_ = e;
      t.kind = Tok::Import;
      t.text = text_.substr(start, e - start);
    }
  }
}

// A number: sign, digits, fraction, exponent; `0.5.5` and `2a` are malformed.
void Lexer::scan_number(Token& t, size_t start) {
  const size_t n = text_.size();
  const char c = text_[start];
  if (c == '-' || c == '+') ++pos_;
  while (pos_ < n && is_digit(text_[pos_])) ++pos_;
  if (pos_ + 1 < n && text_[pos_] == '.' && is_digit(text_[pos_ + 1])) {
    ++pos_;
    while (pos_ < n && is_digit(text_[pos_])) ++pos_;
    // `0.5.5` is no number; read as `0.5` `.` `5` it silently became a rule ending in an
    // offset plus a fact `5 a.` on the same line.
    if (pos_ + 1 < n && text_[pos_] == '.' && is_digit(text_[pos_ + 1])) {
      size_t e = pos_ + 1;
      while (e < n && (is_digit(text_[e]) || text_[e] == '.')) ++e;
      fail_here(start, static_cast<uint32_t>(e - start),
                "malformed number '" + std::string(text_.substr(start, std::min<size_t>(e - start, 40))) + "'");
    }
  }
  if (pos_ < n && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    size_t p = pos_ + 1;
    if (p < n && (text_[p] == '+' || text_[p] == '-')) ++p;
    if (p < n && is_digit(text_[p])) {
      while (p < n && is_digit(text_[p])) ++p;
      pos_ = p;
    }
  }
  if (pos_ < n && is_ident_start(text_[pos_])) {
    size_t e = pos_;
    while (e < n && is_ident_char(text_[e])) ++e;
    fail_here(start, static_cast<uint32_t>(e - start),
              "malformed number '" + std::string(text_.substr(start, std::min<size_t>(e - start, 40))) + "'");
  }
  t.kind = Tok::Number;
  t.text = text_.substr(start, pos_ - start);
}

// A quoted string, backslash escapes kept as written; it must close on its line.
void Lexer::scan_string(Token& t, size_t start) {
  const size_t n = text_.size();
  const char c = text_[start];
  ++pos_;
  while (true) {
    if (pos_ >= n || text_[pos_] == '\n')
      fail_here(start, 1, std::string("unterminated string: expected closing ") + c + ", found " +
                              (pos_ >= n ? "end of file" : "end of line"));
    if (text_[pos_] == '\\' && pos_ + 1 < n && text_[pos_ + 1] != '\n') {
      pos_ += 2;
      continue;
    }
    if (text_[pos_] == c) {
      ++pos_;
      break;
    }
    ++pos_;
  }
  t.kind = Tok::String;
  t.text = text_.substr(start, pos_ - start);
}

// One- or two-character punctuation; anything else is an unexpected character.
void Lexer::scan_punctuation(Token& t, size_t start) {
  const size_t n = text_.size();
  const char c = text_[start];
  auto single = [&](Tok kind) {
    ++pos_;
    t.kind = kind;
    t.text = text_.substr(start, 1);
  };
  switch (c) {
    case '(': return single(Tok::LParen);
    case ')': return single(Tok::RParen);
    case '[': return single(Tok::LBracket);
    case ']': return single(Tok::RBracket);
    case '{': return single(Tok::LBrace);
    case '}': return single(Tok::RBrace);
    case '>': return single(Tok::Gt);
    case ',': return single(Tok::Comma);
    case '.': return single(Tok::Period);
    case '$': return single(Tok::Dollar);
    case '=': return single(Tok::Equals);
    case '@': return single(Tok::At);
    case '*': return single(Tok::Star);
    case '!': return single(Tok::Bang);
    case '~': return single(Tok::Tilde);
    case '^': return single(Tok::Caret);
    case '|': return single(Tok::Pipe);
    case '/': return single(Tok::Slash);
    case '<':
      if (pos_ + 1 < n && text_[pos_ + 1] == '=') {
        pos_ += 2;
        t.kind = Tok::Implies;
        t.text = text_.substr(start, 2);
        return;
      }
      return single(Tok::Lt);
    case ':':
      if (pos_ + 1 < n && text_[pos_ + 1] == '-') {
        pos_ += 2;
        t.kind = Tok::Implies;
        t.text = text_.substr(start, 2);
        return;
      }
      return single(Tok::Colon);
    default: break;
  }
  size_t len = utf8_length(text_, pos_);
  std::string shown(text_.substr(pos_, len));
  if (len == 1 && (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(c));
    shown = hex;
  }
  fail_here(pos_, static_cast<uint32_t>(len), "unexpected character '" + shown + "'");
}

}  // namespace lrnn::syntax
