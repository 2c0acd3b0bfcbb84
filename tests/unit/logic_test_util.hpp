// Builds template/example ASTs in code for the logic tests (independent of the parser).
// lit("edge", {"X", "b", "3"}): upper-case or '_' first letter = variable, a leading digit
// or '-' = number, '"text"' = string, anything else a constant; `woman:Y` = typed term.
// Predicate prefixes: "@" builtin, "*" hidden, "!" negated, "~" soft-negated.
#pragma once

#include <string>
#include <vector>

#include "lrnn/ast.hpp"

namespace lrnn::testutil {

inline Term term(const std::string& text) {
  std::string s = text, type;
  if (auto colon = s.find(':'); colon != std::string::npos && s[0] != '"') {
    type = s.substr(0, colon);
    s = s.substr(colon + 1);
  }
  Term t;
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
    t = Term{Term::Kind::String, s.substr(1, s.size() - 2), {}, {}};
  } else if (std::isupper(static_cast<unsigned char>(s[0])) || s[0] == '_') {
    t = Term::variable(s);
  } else if (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-') {
    t = Term::number(s);
  } else {
    t = Term::constant(s);
  }
  t.type = type;
  return t;
}

inline Literal lit(std::string pred, const std::vector<std::string>& args = {}) {
  Literal l;
  for (;;) {
    if (pred[0] == '@') l.builtin = true;
    else if (pred[0] == '*') l.hidden = true;
    else if (pred[0] == '!') l.negated = true;
    else if (pred[0] == '~') l.soft_negated = true;
    else break;
    pred = pred.substr(1);
  }
  l.predicate = pred;
  for (const auto& a : args) l.args.push_back(term(a));
  return l;
}

inline Rule rule(Literal head, std::vector<Literal> body, std::vector<MetaEntry> meta = {}) {
  Rule r;
  r.head = std::move(head);
  r.body = std::move(body);
  r.meta = std::move(meta);
  return r;
}

inline ExampleAst example(std::vector<Literal> facts) {
  ExampleAst e;
  e.facts = std::move(facts);
  return e;
}

}  // namespace lrnn::testutil
