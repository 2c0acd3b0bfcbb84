// Lexer of the `.rasp` text syntax: identifiers, numbers, strings and punctuation, each with
// its span (file:line:col) for error messages.
#include <string>
#include <vector>

#include "text_syntax.hpp"

namespace lrnn::rasp::text {

std::vector<Token> lex(const SourcePtr& src) {
  std::vector<Token> out;
  const std::string& s = src->text;
  uint32_t line = 1, col = 1;
  size_t i = 0;
  auto span_at = [&](uint32_t l, uint32_t c, size_t len) {
    return Span{src, l, c, static_cast<uint32_t>(std::max<size_t>(1, len))};
  };
  auto push = [&](Tok kind, std::string text, Span span, size_t begin, size_t len) {
    out.push_back({kind, std::move(text), span, begin, begin + len});
  };
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n && i < s.size(); ++k, ++i) {
      if (s[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
  };
  while (i < s.size()) {
    char c = s[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') { advance(1); continue; }
    if (c == '#' || (c == '/' && i + 1 < s.size() && s[i + 1] == '/')) {
      while (i < s.size() && s[i] != '\n') advance(1);
      continue;
    }
    uint32_t l = line, cc = col;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      push(Tok::Ident, s.substr(i, j - i), span_at(l, cc, j - i), i, j - i);
      advance(j - i);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      Tok kind = Tok::Int;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        kind = Tok::Float;
      }
      push(kind, s.substr(i, j - i), span_at(l, cc, j - i), i, j - i);
      advance(j - i);
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      std::string text;
      while (j < s.size() && s[j] != c && s[j] != '\n') {
        if (s[j] == '\\' && j + 1 < s.size() && (s[j + 1] == c || s[j + 1] == '\\')) ++j;
        text += s[j++];
      }
      if (j >= s.size() || s[j] != c)
        throw Error(ErrorKind::Parse, span_at(l, cc, 1), "unterminated string (strings end on the same line)");
      push(Tok::String, text, span_at(l, cc, j + 1 - i), i, j + 1 - i);
      advance(j + 1 - i);
      continue;
    }
    static const char* two[] = {"==", "!=", "<=", ">="};
    bool matched = false;
    for (const char* t : two) {
      if (s.compare(i, 2, t) == 0) {
        push(Tok::Punct, t, span_at(l, cc, 2), i, 2);
        advance(2);
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (std::string("()[]{},;:=<>+-*/%^").find(c) != std::string::npos) {
      push(Tok::Punct, std::string(1, c), span_at(l, cc, 1), i, 1);
      advance(1);
      continue;
    }
    throw Error(ErrorKind::Parse, span_at(l, cc, 1), std::string("unexpected character '") + c + "'");
  }
  push(Tok::End, "", span_at(line, col, 1), s.size(), 0);
  return out;
}

}  // namespace lrnn::rasp::text
