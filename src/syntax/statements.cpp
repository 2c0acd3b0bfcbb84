#include "syntax/statements.hpp"

#include <algorithm>

#include "syntax/lexer.hpp"

namespace lrnn::syntax {

bool StatementIndex::any_named() const {
  return std::any_of(starts.begin(), starts.end(), [](const Start& s) { return s.named; });
}

StatementIndex index_statements(std::shared_ptr<const SourceFile> file) {
  validate_utf8(file);
  StatementIndex index;
  index.file = file;
  Lexer lex(std::move(file));
  bool at_start = true;
  while (!lex.at(Tok::End)) {
    const Token t = lex.peek();
    if (at_start) index.starts.push_back({t.offset, t.line, t.col, t.kind == Tok::Ident && lex.at(Tok::Implies, 1)});
    at_start = t.kind == Tok::Period;
    lex.advance();
  }
  return index;
}

std::shared_ptr<const SourceFile> statements_source(const StatementIndex& index, size_t first, size_t last) {
  auto out = std::make_shared<SourceFile>();
  out->name = index.file->name;
  if (first >= last) return out;
  const StatementIndex::Start& s = index.starts[first];
  const size_t end = last < index.size() ? index.starts[last].offset : index.file->text.size();
  out->text.reserve((s.line - 1) + (s.col - 1) + (end - s.offset));
  out->text.append(s.line - 1, '\n');
  out->text.append(s.col - 1, ' ');
  out->text.append(index.file->text, s.offset, end - s.offset);
  return out;
}

}  // namespace lrnn::syntax
