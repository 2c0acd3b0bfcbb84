// The `.rasp` text syntax, in three steps: lex (text_lexer.cpp) -> parse into the syntax
// tree below (text_parser.cpp) -> evaluate into a Program (text_evaluator.cpp).
// Internal to src/rasp; rasp_syntax.cpp is the entry point (load_rasp_file, parse_rasp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lrnn/rasp.hpp"

namespace lrnn::rasp::text {

using SourcePtr = std::shared_ptr<const SourceFile>;

enum class Tok { Ident, Int, Float, String, Punct, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  Span span;
  size_t begin = 0, end = 0;  // byte offsets in the source
};

std::vector<Token> lex(const SourcePtr& src);

struct Expr;
using ExprP = std::shared_ptr<const Expr>;

struct Expr {
  enum K { Atom, Name, List, ListComp, Unary, Binary, Ternary, In, Call, Index, Select, Lambda, Annotate } k;
  Value atom;
  std::string name;
  Op op = Op::Add;
  Predicate pred = Predicate::Eq;
  Encoding enc = Encoding::Unspecified;
  std::vector<ExprP> kids;            // operands / call arguments (callee first) / list items
  std::vector<std::string> params;    // lambda parameters / comprehension iterators
  std::string text;                   // lambda source text (its label)
  Span span;
  int height = 1;                     // 1 + the tallest operand's (bounded: see Parser::sealed)
};

struct Stmt;
using StmtP = std::shared_ptr<const Stmt>;

struct Stmt {
  enum K { Assign, ExprStmt, Def, Load } k;
  std::vector<std::string> targets;  // Assign targets / Def parameters
  std::vector<ExprP> exprs;          // Assign values / ExprStmt / Def return values
  std::vector<StmtP> body;           // Def
  std::string name;                  // Def name / Load path
  Encoding enc = Encoding::Unspecified;
  Span span;
};

// The statements of one source, in order (errors carry the source's file:line:col).
std::vector<StmtP> parse(std::vector<Token> tokens, SourcePtr src);

// The program a file or a text defines (its named s-ops; the last assigned one is the
// output). Recursive: call on a stack sized for the bounds (rasp_syntax.cpp does).
Program evaluate_file(const std::string& path);
Program evaluate_text(const std::string& text, const std::string& name);

}  // namespace lrnn::rasp::text
