// The `.rasp` text syntax: the original RASP language (Weiss et al. 2021 and its
// interpreter) read into the same program DAG the C++/Python combinators build.
//
// Precedence follows the original grammar (tightest first): postfix calls and indexing;
// unary not / - / +; ^; * /; %; + -; comparisons; and / or; `x if c else y`; `in`.
// Values that are known while reading (numbers, strings, lists, functions) are computed
// immediately; anything that touches tokens/indices/length becomes an s-op or selector.
#include <pthread.h>

#include <exception>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "lrnn/rasp.hpp"

namespace lrnn::rasp {

namespace {

using SourcePtr = std::shared_ptr<const SourceFile>;

// ---- lexer -------------------------------------------------------------------------------

enum class Tok { Ident, Int, Float, String, Punct, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  Span span;
  size_t begin = 0, end = 0;  // byte offsets in the source
};

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

// ---- syntax tree ---------------------------------------------------------------------------

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

// ---- parser ---------------------------------------------------------------------------------

class Parser {
 public:
  Parser(std::vector<Token> toks, SourcePtr src) : t_(std::move(toks)), src_(std::move(src)) {}

  std::vector<StmtP> statements() {
    std::vector<StmtP> out;
    while (peek().kind != Tok::End) out.push_back(statement());
    return out;
  }

 private:
  std::vector<Token> t_;
  SourcePtr src_;
  size_t p_ = 0;

  // Bounds that keep parsing, evaluating and releasing a program within the stack whatever
  // the input: nesting (parentheses, unary operators, conditionals, nested defs) is parsed
  // recursively, and an expression tree is evaluated recursively (inside up to 200 nested
  // calls). Real programs stay far below both.
  static constexpr int kMaxNesting = 400;  // a parenthesis level counts twice (unary, ternary)
  static constexpr int kMaxHeight = 1000;
  int nesting_ = 0;
  struct Nested {
    Parser& p;
    explicit Nested(Parser& parser) : p(parser) {
      if (++p.nesting_ > kMaxNesting) {
        p.nesting_ = 0;
        throw Error(ErrorKind::Limit, p.peek().span,
                    "nested too deeply (parentheses, operators, conditionals or defs more than " +
                        std::to_string(kMaxNesting / 2) + " levels deep)");
      }
    }
    ~Nested() { if (p.nesting_ > 0) --p.nesting_; }
  };
  // An expression node with its height computed; too tall a tree is an error at its operator.
  static ExprP sealed(std::shared_ptr<Expr> e) {
    for (const auto& k : e->kids) e->height = std::max(e->height, k->height + 1);
    if (e->height > kMaxHeight)
      throw Error(ErrorKind::Limit, e->span,
                  "expression more than " + std::to_string(kMaxHeight) +
                      " operations deep (split it into several assignments)");
    return e;
  }

  const Token& peek(size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  bool is(const char* text, size_t k = 0) const {
    const Token& t = peek(k);
    return (t.kind == Tok::Punct || t.kind == Tok::Ident) && t.text == text;
  }
  const Token& take() { return t_[std::min(p_++, t_.size() - 1)]; }
  static std::string shown(const Token& t) {
    if (t.kind == Tok::End) return "the end of the file";
    if (t.kind == Tok::String) return "\"" + t.text + "\"";
    return "'" + t.text + "'";
  }
  [[noreturn]] void fail_here(const std::string& expected) const {
    throw Error(ErrorKind::Parse, peek().span, "expected " + expected + ", found " + shown(peek()));
  }
  const Token& expect(const char* text, const std::string& context) {
    if (!is(text)) fail_here(std::string("'") + text + "'" + context);
    return take();
  }
  std::string ident(const std::string& what) {
    if (peek().kind != Tok::Ident || keyword(peek().text)) fail_here(what);
    return take().text;
  }
  static bool keyword(const std::string& s) {
    static const std::set<std::string> k{"def", "return", "load", "if", "else", "and", "or", "not",
                                         "in", "for", "lambda", "numerical", "categorical"};
    return k.count(s) > 0;
  }

  StmtP statement() {
    Nested nested(*this);
    auto st = std::make_shared<Stmt>();
    st->span = peek().span;
    if (is("def")) {
      take();
      st->k = Stmt::Def;
      st->name = ident("a function name after 'def'");
      expect("(", " after the function name");
      if (!is(")")) {
        st->targets.push_back(ident("a parameter name"));
        while (is(",")) { take(); st->targets.push_back(ident("a parameter name")); }
      }
      expect(")", " to close the parameter list");
      expect("{", " to open the function body");
      while (!is("return")) {
        if (peek().kind == Tok::End || is("}")) fail_here("'return' (a function ends with a return statement)");
        st->body.push_back(statement());
      }
      take();
      st->exprs = expr_list();
      expect(";", " after the return statement");
      expect("}", " to close the function body");
      return st;
    }
    if (is("load")) {
      take();
      st->k = Stmt::Load;
      if (peek().kind != Tok::String) fail_here("a file name in quotes after 'load'");
      st->name = take().text;
      expect(";", " after load \"file\"");
      return st;
    }
    Encoding enc = Encoding::Unspecified;
    size_t save = p_;
    if (is("numerical") || is("categorical")) {
      enc = take().text == "numerical" ? Encoding::Numerical : Encoding::Categorical;
    }
    if (assignment_ahead()) {
      st->k = Stmt::Assign;
      st->enc = enc;
      st->targets.push_back(ident("a variable name"));
      while (is(",")) { take(); st->targets.push_back(ident("a variable name")); }
      expect("=", "");
      st->exprs = expr_list();
      expect(";", " after the assignment");
      return st;
    }
    p_ = save;  // `numerical aggregate(...)` as an expression statement
    st->k = Stmt::ExprStmt;
    st->exprs.push_back(expr());
    expect(";", " after the expression");
    return st;
  }

  bool assignment_ahead() const {
    size_t k = 0;
    while (true) {
      if (peek(k).kind != Tok::Ident || keyword(peek(k).text)) return false;
      ++k;
      if (is("=", k)) return true;
      if (!is(",", k)) return false;
      ++k;
    }
  }

  std::vector<ExprP> expr_list() {
    std::vector<ExprP> out{expr()};
    while (is(",")) { take(); out.push_back(expr()); }
    return out;
  }

  static ExprP node(Expr::K k, Span span, std::vector<ExprP> kids = {}) {
    auto e = std::make_shared<Expr>();
    e->k = k;
    e->span = span;
    e->kids = std::move(kids);
    return sealed(e);
  }
  static ExprP binop(Op op, const Span& span, ExprP a, ExprP b) {
    auto e = std::make_shared<Expr>();
    e->k = Expr::Binary;
    e->op = op;
    e->span = span;
    e->kids = {std::move(a), std::move(b)};
    return sealed(e);
  }

 public:
  ExprP expr() {
    ExprP left = ternary();
    while (is("in")) {
      Span s = take().span;
      left = node(Expr::In, s, {left, ternary()});
    }
    return left;
  }

 private:
  ExprP ternary() {
    Nested nested(*this);
    ExprP value = andor();
    if (is("if")) {
      Span s = take().span;
      ExprP cond = andor();
      expect("else", " in 'x if condition else y'");
      ExprP other = ternary();
      return node(Expr::Ternary, s, {value, cond, other});
    }
    return value;
  }
  ExprP andor() {
    ExprP left = comparison();
    while (is("and") || is("or")) {
      const Token& t = take();
      left = binop(t.text == "and" ? Op::And : Op::Or, t.span, left, comparison());
    }
    return left;
  }
  ExprP comparison() {
    ExprP left = additive();
    while (true) {
      Op op;
      if (is("==")) op = Op::Eq;
      else if (is("!=")) op = Op::Ne;
      else if (is("<=")) op = Op::Le;
      else if (is(">=")) op = Op::Ge;
      else if (is("<")) op = Op::Lt;
      else if (is(">")) op = Op::Gt;
      else return left;
      Span s = take().span;
      left = binop(op, s, left, additive());
    }
  }
  ExprP additive() {
    ExprP left = modulo();
    while (is("+") || is("-")) {
      const Token& t = take();
      left = binop(t.text == "+" ? Op::Add : Op::Sub, t.span, left, modulo());
    }
    return left;
  }
  ExprP modulo() {
    ExprP left = multiplicative();
    while (is("%")) {
      Span s = take().span;
      left = binop(Op::Mod, s, left, multiplicative());
    }
    return left;
  }
  ExprP multiplicative() {
    ExprP left = power();
    while (is("*") || is("/")) {
      const Token& t = take();
      left = binop(t.text == "*" ? Op::Mul : Op::Div, t.span, left, power());
    }
    return left;
  }
  ExprP power() {
    ExprP left = unary();
    while (is("^")) {
      Span s = take().span;
      left = binop(Op::Pow, s, left, unary());
    }
    return left;
  }
  ExprP unary() {
    Nested nested(*this);
    if (is("not") || is("-")) {
      const Token& t = take();
      auto e = std::make_shared<Expr>();
      e->k = Expr::Unary;
      e->op = t.text == "not" ? Op::Not : Op::Neg;
      e->span = t.span;
      e->kids = {unary()};
      return sealed(e);
    }
    if (is("+")) { take(); return unary(); }
    if (is("numerical") || is("categorical")) {
      const Token& t = take();
      auto e = std::make_shared<Expr>();
      e->k = Expr::Annotate;
      e->enc = t.text == "numerical" ? Encoding::Numerical : Encoding::Categorical;
      e->span = t.span;
      e->kids = {unary()};
      return sealed(e);
    }
    return postfix();
  }
  ExprP postfix() {
    ExprP e = primary();
    while (true) {
      if (is("(")) {
        Span s = take().span;
        std::vector<ExprP> kids{e};
        if (!is(")")) {
          for (auto& a : expr_list()) kids.push_back(a);
        }
        expect(")", " to close the call");
        e = node(Expr::Call, e->span, std::move(kids));
        (void)s;
      } else if (is("[")) {
        Span s = take().span;
        ExprP index = expr();
        expect("]", " to close the index");
        e = node(Expr::Index, s, {e, index});
      } else {
        return e;
      }
    }
  }
  ExprP primary() {
    const Token& t = peek();
    if (t.kind == Tok::Int || t.kind == Tok::Float) {
      take();
      auto e = std::make_shared<Expr>();
      e->k = Expr::Atom;
      e->span = t.span;
      try {
        if (t.kind == Tok::Int) e->atom = static_cast<int64_t>(std::stoll(t.text));
        else e->atom = std::stod(t.text);
      } catch (const std::exception&) {
        throw Error(ErrorKind::Parse, t.span, "number out of range: " + t.text);
      }
      return e;
    }
    if (t.kind == Tok::String) {
      take();
      auto e = std::make_shared<Expr>();
      e->k = Expr::Atom;
      e->span = t.span;
      e->atom = t.text;
      return e;
    }
    if (is("(")) {
      take();
      ExprP e = expr();
      expect(")", " to close the parenthesis");
      return e;
    }
    if (is("[")) {
      Span s = take().span;
      if (is("]")) { take(); return node(Expr::List, s); }
      ExprP first = expr();
      if (is("for")) {
        take();
        auto e = std::make_shared<Expr>();
        e->k = Expr::ListComp;
        e->span = s;
        e->params.push_back(ident("a loop variable after 'for'"));
        while (is(",")) { take(); e->params.push_back(ident("a loop variable")); }
        expect("in", " in the list comprehension");
        ExprP iterable = expr();
        expect("]", " to close the list comprehension");
        e->kids = {first, iterable};
        return sealed(e);
      }
      std::vector<ExprP> items{first};
      while (is(",")) {
        take();
        if (is("]")) break;
        items.push_back(expr());
      }
      expect("]", " to close the list");
      return node(Expr::List, s, std::move(items));
    }
    if (is("lambda")) {
      size_t start_tok = p_;
      Span s = take().span;
      auto e = std::make_shared<Expr>();
      e->k = Expr::Lambda;
      e->span = s;
      if (!is(":")) {
        e->params.push_back(ident("a lambda parameter"));
        while (is(",")) { take(); e->params.push_back(ident("a lambda parameter")); }
      }
      expect(":", " after the lambda parameters");
      e->kids = {expr()};
      // The label shows the lambda as written (whitespace collapsed).
      std::string text;
      const std::string& source = src_->text;
      for (size_t k = t_[start_tok].begin; k < t_[p_ - 1].end && k < source.size(); ++k) {
        char ch = source[k];
        bool space = ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
        if (space) {
          if (!text.empty() && text.back() != ' ') text += ' ';
        } else {
          text += ch;
        }
      }
      e->text = text;
      return sealed(e);
    }
    if (is("select") && is("(", 1)) {
      Span s = take().span;
      take();
      ExprP keys = expr();
      expect(",", " after the keys of select(keys, queries, predicate)");
      ExprP queries = expr();
      expect(",", " after the queries of select(keys, queries, predicate)");
      auto e = std::make_shared<Expr>();
      e->k = Expr::Select;
      e->span = s;
      const Token& p = peek();
      if (is("==")) e->pred = Predicate::Eq;
      else if (is("!=")) e->pred = Predicate::Ne;
      else if (is("<")) e->pred = Predicate::Lt;
      else if (is("<=")) e->pred = Predicate::Le;
      else if (is(">")) e->pred = Predicate::Gt;
      else if (is(">=")) e->pred = Predicate::Ge;
      else if (p.kind == Tok::Ident && (p.text == "True" || p.text == "true")) e->pred = Predicate::True;
      else if (p.kind == Tok::Ident && (p.text == "False" || p.text == "false")) e->pred = Predicate::False;
      else fail_here("a comparison (==, !=, <, <=, >, >=, True or False) as the predicate of select");
      take();
      expect(")", " to close select(...)");
      e->kids = {keys, queries};
      return sealed(e);
    }
    if (t.kind == Tok::Ident && !keyword(t.text)) {
      take();
      auto e = std::make_shared<Expr>();
      e->k = Expr::Name;
      e->name = t.text;
      e->span = t.span;
      return e;
    }
    fail_here("an expression");
  }
};

// ---- evaluation ---------------------------------------------------------------------------

struct RVal;
using RList = std::shared_ptr<const std::vector<RVal>>;
struct Env;
using EnvP = std::shared_ptr<Env>;
struct ClosureArena;

// A function does not own the environment it closes over (a def is stored in that very
// environment, so ownership would be a reference cycle): the evaluator's ClosureArena owns
// every environment a function closes over, and s-ops that apply a function (map, zipmap)
// hold the arena.
struct FuncDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<StmtP> body;
  std::vector<ExprP> returns;
  const Env* closure = nullptr;
  std::weak_ptr<ClosureArena> owner;
};

struct LambdaDef {
  std::vector<std::string> params;
  ExprP body;
  const Env* closure = nullptr;
  std::weak_ptr<ClosureArena> owner;
  std::string text;
};

// What an s-op or selector variable becomes once its program is finished: the functions that
// outlive the program run on values and must not keep s-ops alive (an s-op applying a
// function would own itself through the function's environment).
struct SOpOutsideValues {
  std::string kind;
};

struct RVal {
  std::variant<Value, SOp, Selector, RList, std::shared_ptr<const FuncDef>, std::shared_ptr<const LambdaDef>,
               SOpOutsideValues>
      v;
};

struct Env : std::enable_shared_from_this<Env> {
  std::unordered_map<std::string, RVal> vars;
  EnvP parent;
  const ClosureArena* creator = nullptr;  // the evaluator run that made it
  const RVal* find(const std::string& name) const {
    for (const Env* e = this; e; e = e->parent.get()) {
      auto it = e->vars.find(name);
      if (it != e->vars.end()) return &it->second;
    }
    return nullptr;
  }
};

bool holds_sop(const RVal& r) {
  if (std::holds_alternative<SOp>(r.v) || std::holds_alternative<Selector>(r.v)) return true;
  if (auto* l = std::get_if<RList>(&r.v))
    for (const auto& item : **l)
      if (holds_sop(item)) return true;
  return false;
}

RVal without_sops(const RVal& r) {
  if (std::holds_alternative<SOp>(r.v)) return {SOpOutsideValues{"s-op"}};
  if (std::holds_alternative<Selector>(r.v)) return {SOpOutsideValues{"selector"}};
  if (auto* l = std::get_if<RList>(&r.v)) {
    auto list = std::make_shared<std::vector<RVal>>();
    for (const auto& item : **l) list->push_back(without_sops(item));
    return {RList(list)};
  }
  return r;
}

struct ClosureArena {
  std::vector<EnvP> owned;
  std::unordered_set<const Env*> known;

  EnvP make_env(EnvP parent = nullptr) {
    auto env = std::make_shared<Env>();
    env->parent = std::move(parent);
    env->creator = this;
    return env;
  }
  const Env* own(Env& env) {
    if (known.insert(&env).second) owned.push_back(env.shared_from_this());
    return &env;
  }
  // Ends the program's use of s-ops: every environment of this run that a surviving function
  // can reach keeps its values and functions; its s-ops and selectors become SOpOutsideValues.
  // (Environments of another run - a function called while an s-op is evaluated closes over
  // the program's - are that run's to release.)
  void release_sops() {
    std::unordered_set<const Env*> done;
    for (const auto& root : owned)
      for (Env* e = root.get(); e && e->creator == this && done.insert(e).second; e = e->parent.get())
        for (auto& [name, val] : e->vars)
          if (holds_sop(val)) val = without_sops(val);
  }
};

std::string kind_of(const RVal& r) {
  switch (r.v.index()) {
    case 0: return "value";
    case 1: return "s-op";
    case 2: return "selector";
    case 3: return "list";
    case 6: return std::get<SOpOutsideValues>(r.v).kind;
    default: return "function";
  }
}

bool is_function(const RVal& r) {
  return std::holds_alternative<std::shared_ptr<const FuncDef>>(r.v) ||
         std::holds_alternative<std::shared_ptr<const LambdaDef>>(r.v);
}

// The arena that keeps a function's environment alive (null for a value).
std::shared_ptr<ClosureArena> owner_of(const RVal& r) {
  if (auto* f = std::get_if<std::shared_ptr<const FuncDef>>(&r.v)) return (*f)->owner.lock();
  if (auto* l = std::get_if<std::shared_ptr<const LambdaDef>>(&r.v)) return (*l)->owner.lock();
  return nullptr;
}

class Evaluator {
 public:
  Program program;
  std::shared_ptr<ClosureArena> arena = std::make_shared<ClosureArena>();
  EnvP global = arena->make_env();
  std::vector<std::string> loading;  // files being loaded (cycle guard)
  int depth = 0;
  static constexpr int kMaxEvalDepth = 2000;
  int eval_depth = 0;

  Evaluator() = default;
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;
  ~Evaluator() { arena->release_sops(); }

  // The names every program starts with.
  void define_builtins() {
    program.convention = Convention::Mean;
    SOp toks = tokens();
    global->vars["tokens"] = {toks};
    global->vars["tokens_str"] = {toks};
    global->vars["tokens_asis"] = {toks};
    global->vars["tokens_int"] = {map(toks, [](const Value& v) -> Value {
      if (auto* s = std::get_if<std::string>(&v)) {
        try {
          size_t used = 0;
          int64_t x = std::stoll(*s, &used);
          if (used == s->size()) return x;
        } catch (const std::exception&) {
        }
        throw Error(ErrorKind::Runtime, "tokens_int: " + repr(v) + " is not an integer");
      }
      return static_cast<int64_t>(to_double(v));
    }, "int").name("tokens_int")};
    global->vars["tokens_float"] = {map(toks, [](const Value& v) -> Value {
      if (auto* s = std::get_if<std::string>(&v)) {
        try {
          return std::stod(*s);
        } catch (const std::exception&) {
          throw Error(ErrorKind::Runtime, "tokens_float: " + repr(v) + " is not a number");
        }
      }
      return to_double(v);
    }, "float").name("tokens_float")};
    global->vars["tokens_bool"] = {map(toks, [](const Value& v) -> Value { return truthy(v); }, "bool").name("tokens_bool")};
    global->vars["indices"] = {indices()};
    global->vars["length"] = {length()};
    global->vars["True"] = {Value(true)};
    global->vars["False"] = {Value(false)};
  }

  void run_file(const std::string& path, const Span& from) {
    std::string key = std::filesystem::weakly_canonical(path).string();
    for (const auto& l : loading)
      if (l == key) throw Error(ErrorKind::Semantic, from, "load cycle: " + path + " is already being loaded");
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      if (from.file) throw Error(ErrorKind::Io, from, "cannot read " + path);
      throw Error(ErrorKind::Io, "cannot read " + path);
    }
    std::stringstream ss;
    ss << in.rdbuf();
    loading.push_back(key);
    run_text(ss.str(), path);
    loading.pop_back();
  }

  void run_text(const std::string& text, const std::string& name) {
    auto src = std::make_shared<const SourceFile>(SourceFile{name, text});
    Parser parser(lex(src), src);
    auto stmts = parser.statements();
    for (const auto& st : stmts) exec(*st, global, true);
  }

  void exec(const Stmt& st, const EnvP& env, bool top) {
    switch (st.k) {
      case Stmt::Def: {
        auto f = std::make_shared<FuncDef>();
        f->name = st.name;
        f->params = st.targets;
        f->body = st.body;
        f->returns = st.exprs;
        f->closure = arena->own(*env);
        f->owner = arena;
        env->vars[st.name] = {std::shared_ptr<const FuncDef>(f)};
        return;
      }
      case Stmt::Load: {
        std::filesystem::path base = st.span.file ? std::filesystem::path(st.span.file->name).parent_path()
                                                  : std::filesystem::path();
        std::filesystem::path p = std::filesystem::path(st.name).is_absolute() ? std::filesystem::path(st.name)
                                                                               : base / st.name;
        run_file(p.string(), st.span);
        return;
      }
      case Stmt::ExprStmt: eval(*st.exprs[0], env); return;
      case Stmt::Assign: {
        std::vector<RVal> values;
        for (const auto& e : st.exprs) values.push_back(eval(*e, env));
        if (st.targets.size() > 1 && values.size() == 1) {
          auto* list = std::get_if<RList>(&values[0].v);
          if (!list || (*list)->size() != st.targets.size())
            throw Error(ErrorKind::Semantic, st.span,
                        "cannot unpack " + kind_of(values[0]) + " into " + std::to_string(st.targets.size()) +
                            " variables");
          values = **list;
        }
        if (values.size() != st.targets.size())
          throw Error(ErrorKind::Semantic, st.span,
                      std::to_string(st.targets.size()) + " variables but " + std::to_string(values.size()) +
                          " values");
        for (size_t i = 0; i < values.size(); ++i) {
          RVal v = values[i];
          if (auto* s = std::get_if<SOp>(&v.v)) {
            SOp named = s->name(st.targets[i]);
            if (st.enc != Encoding::Unspecified) {
              auto c = std::const_pointer_cast<Node>(named.node());  // a fresh copy
              c->encoding = st.enc;
            }
            if (named.node()->span.file == nullptr) std::const_pointer_cast<Node>(named.node())->span = st.span;
            v.v = named;
            if (top) program.named.emplace_back(st.targets[i], named);
          } else if (st.enc != Encoding::Unspecified) {
            throw Error(ErrorKind::Semantic, st.span,
                        "numerical/categorical annotate s-ops, but this is a " + kind_of(v));
          }
          env->vars[st.targets[i]] = v;
        }
        return;
      }
    }
  }

  static Operand operand(const RVal& r, const Span& span, const std::string& what) {
    if (auto* v = std::get_if<Value>(&r.v)) return *v;
    if (auto* s = std::get_if<SOp>(&r.v)) return *s;
    if (auto* s = std::get_if<Selector>(&r.v)) return *s;
    throw Error(ErrorKind::Semantic, span, what + " cannot be a " + kind_of(r));
  }
  static RVal from_operand(const Operand& o) {
    if (auto* v = std::get_if<Value>(&o)) return {*v};
    if (auto* s = std::get_if<SOp>(&o)) return {*s};
    return {std::get<Selector>(o)};
  }
  static Value value_of(const RVal& r, const Span& span, const std::string& what) {
    if (auto* v = std::get_if<Value>(&r.v)) return *v;
    throw Error(ErrorKind::Semantic, span, what + " must be a plain value, not a " + kind_of(r));
  }
  static Selector selector_of(const RVal& r, const Span& span, const std::string& what) {
    if (auto* s = std::get_if<Selector>(&r.v)) return *s;
    throw Error(ErrorKind::Semantic, span, what + " must be a selector (select(keys, queries, predicate)), not a " +
                                               kind_of(r));
  }
  static SOp sop_of(const RVal& r, const Span& span, const std::string& what) {
    if (auto* s = std::get_if<SOp>(&r.v)) return *s;
    if (auto* v = std::get_if<Value>(&r.v)) return SOp::constant(*v);
    throw Error(ErrorKind::Semantic, span, what + " must be an s-op, not a " + kind_of(r));
  }
  static SOp with_span(SOp s, const Span& span) {
    if (!s.node()->span.file) std::const_pointer_cast<Node>(s.node())->span = span;
    return s;
  }

  // Calls a lambda or a def on plain values (element-wise maps).
  Value call_on_values(const RVal& f, const std::vector<Value>& args, const Span& span) {
    std::vector<RVal> rargs;
    for (const auto& a : args) rargs.push_back({a});
    RVal r = call(f, rargs, span);
    return value_of(r, span, "the result of a function used in map/zipmap");
  }

  RVal call(const RVal& f, const std::vector<RVal>& args, const Span& span) {
    if (++depth > 200) {
      depth = 0;
      throw Error(ErrorKind::Limit, span, "function calls nested more than 200 deep (unbounded recursion?)");
    }
    struct Guard { int& d; ~Guard() { if (d > 0) --d; } } guard{depth};
    if (auto* lam = std::get_if<std::shared_ptr<const LambdaDef>>(&f.v)) {
      const LambdaDef& l = **lam;
      if (args.size() != l.params.size())
        throw Error(ErrorKind::Semantic, span, "the lambda takes " + std::to_string(l.params.size()) +
                                                   " argument(s), got " + std::to_string(args.size()));
      auto env = arena->make_env(std::const_pointer_cast<Env>(l.closure->shared_from_this()));
      for (size_t i = 0; i < args.size(); ++i) env->vars[l.params[i]] = args[i];
      return eval(*l.body, env);
    }
    if (auto* fn = std::get_if<std::shared_ptr<const FuncDef>>(&f.v)) {
      const FuncDef& d = **fn;
      if (args.size() != d.params.size())
        throw Error(ErrorKind::Semantic, span, d.name + " takes " + std::to_string(d.params.size()) +
                                                   " argument(s), got " + std::to_string(args.size()));
      auto env = arena->make_env(std::const_pointer_cast<Env>(d.closure->shared_from_this()));
      for (size_t i = 0; i < args.size(); ++i) env->vars[d.params[i]] = args[i];
      for (const auto& st : d.body) exec(*st, env, false);
      if (d.returns.size() == 1) return eval(*d.returns[0], env);
      auto list = std::make_shared<std::vector<RVal>>();
      for (const auto& r : d.returns) list->push_back(eval(*r, env));
      return {RList(list)};
    }
    throw Error(ErrorKind::Semantic, span, "a " + kind_of(f) + " is not callable");
  }

  std::vector<RVal> iterate(const RVal& r, const Span& span) {
    if (auto* l = std::get_if<RList>(&r.v)) return **l;
    if (auto* v = std::get_if<Value>(&r.v)) {
      if (auto* s = std::get_if<std::string>(v)) {
        std::vector<RVal> out;
        for (auto& c : chars(*s)) out.push_back({c});
        return out;
      }
    }
    throw Error(ErrorKind::Semantic, span, "cannot iterate over a " + kind_of(r) +
                                               " (lists, strings and range(...) are iterable)");
  }

  // Membership in a list/string of plain values.
  static bool contains(const std::vector<Value>& items, const std::string* str, const Value& x) {
    if (str) {
      auto* s = std::get_if<std::string>(&x);
      if (!s) throw Error(ErrorKind::Runtime, "'in <string>' needs a string on the left, got " + repr(x));
      return str->find(*s) != std::string::npos;
    }
    for (const auto& it : items)
      if (values_equal(it, x)) return true;
    return false;
  }

  RVal builtin(const std::string& name, const std::vector<RVal>& args, const Span& span, bool& found) {
    found = true;
    auto arity = [&](size_t lo, size_t hi) {
      if (args.size() < lo || args.size() > hi)
        throw Error(ErrorKind::Semantic, span,
                    name + " takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                        " argument(s), got " + std::to_string(args.size()));
    };
    if (name == "aggregate") {
      arity(2, 3);
      Selector sel = selector_of(args[0], span, "the first argument of aggregate");
      SOp vals = sop_of(args[1], span, "the values of aggregate");
      Value def = args.size() == 3 ? value_of(args[2], span, "the default of aggregate") : Value(int64_t{0});
      return {with_span(aggregate(sel, vals, def), span)};
    }
    if (name == "selector_width") {
      arity(1, 1);
      return {with_span(selector_width(selector_of(args[0], span, "the argument of selector_width")), span)};
    }
    if (name == "indicator" || name == "round") {
      arity(1, 1);
      if (auto* v = std::get_if<Value>(&args[0].v)) {
        if (name == "indicator") return {Value(int64_t{truthy(*v) ? 1 : 0})};
        return {Value(static_cast<int64_t>(std::nearbyint(to_double(*v))))};
      }
      SOp a = sop_of(args[0], span, "the argument of " + name);
      return {with_span(name == "indicator" ? indicator(a) : rasp::round(a), span)};
    }
    if (name == "map" || name == "zipmap") {
      if (args.size() < 2) throw Error(ErrorKind::Semantic, span, name + " takes a function and at least one s-op");
      if (name == "map") arity(2, 2);
      RVal f = args[0];
      if (!is_function(f)) throw Error(ErrorKind::Semantic, span, "the first argument of " + name + " must be a function (lambda or def)");
      std::string label = "map";
      if (auto* lam = std::get_if<std::shared_ptr<const LambdaDef>>(&f.v)) label = (*lam)->text;
      else label = std::get<std::shared_ptr<const FuncDef>>(f.v)->name;
      bool all_values = true;
      for (size_t i = 1; i < args.size(); ++i) all_values &= std::holds_alternative<Value>(args[i].v);
      if (all_values) {
        std::vector<Value> vals;
        for (size_t i = 1; i < args.size(); ++i) vals.push_back(std::get<Value>(args[i].v));
        return {call_on_values(f, vals, span)};
      }
      std::vector<SOp> sops;
      for (size_t i = 1; i < args.size(); ++i) sops.push_back(sop_of(args[i], span, "an argument of " + name));
      if (name == "map") {
        return {with_span(map(sops[0], [f, span, keep = owner_of(f)](const Value& x) {
          Evaluator ev;  // element-wise calls need no program state
          return ev.call_on_values(f, {x}, span);
        }, label), span)};
      }
      return {with_span(zipmap(sops, [f, span, keep = owner_of(f)](const std::vector<Value>& xs) {
        Evaluator ev;
        return ev.call_on_values(f, xs, span);
      }, label), span)};
    }
    if (name == "len") {
      arity(1, 1);
      if (auto* l = std::get_if<RList>(&args[0].v)) return {Value(static_cast<int64_t>((*l)->size()))};
      if (auto* v = std::get_if<Value>(&args[0].v))
        if (auto* s = std::get_if<std::string>(v)) return {Value(static_cast<int64_t>(chars(*s).size()))};
      throw Error(ErrorKind::Semantic, span, "len needs a list or a string, not a " + kind_of(args[0]) +
                                                 " (the length of the input is the s-op `length`)");
    }
    if (name == "range") {
      arity(1, 3);
      std::vector<int64_t> a;
      for (const auto& x : args) {
        Value v = value_of(x, span, "an argument of range");
        if (!std::holds_alternative<int64_t>(v)) throw Error(ErrorKind::Semantic, span, "range needs integers");
        a.push_back(std::get<int64_t>(v));
      }
      int64_t lo = a.size() > 1 ? a[0] : 0, hi = a.size() > 1 ? a[1] : a[0], step = a.size() > 2 ? a[2] : 1;
      if (step == 0) throw Error(ErrorKind::Semantic, span, "range step must not be 0");
      auto list = std::make_shared<std::vector<RVal>>();
      for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) {
        if (list->size() > 1000000) throw Error(ErrorKind::Limit, span, "range longer than 1000000");
        list->push_back({Value(i)});
      }
      return {RList(list)};
    }
    if (name == "draw") return {Value()};  // the original's REPL picture: `lrnn rasp draw` does this
    found = false;
    return {};
  }

  RVal eval(const Expr& e, const EnvP& env) {
    // Calls (up to 200 deep) times expression heights (up to the parser's bound) could still
    // exceed the stack, so the evaluation's own depth is bounded too (a frame is ~0.5 KB).
    if (++eval_depth > kMaxEvalDepth) {
      eval_depth = 0;
      throw Error(ErrorKind::Limit, e.span,
                  "evaluation nested more than " + std::to_string(kMaxEvalDepth) +
                      " levels deep (deep recursion through long expressions?)");
    }
    struct Guard { int& d; ~Guard() { if (d > 0) --d; } } guard{eval_depth};
    switch (e.k) {
      case Expr::Atom: return {e.atom};
      case Expr::Name: {
        if (const RVal* r = env->find(e.name)) {
          if (auto* gone = std::get_if<SOpOutsideValues>(&r->v))
            throw Error(ErrorKind::Semantic, e.span,
                        "'" + e.name + "' is " + (gone->kind == "s-op" ? "an " : "a ") + gone->kind +
                            "; a function applied element by element (map, zipmap) runs on plain values");
          return *r;
        }
        throw Error(ErrorKind::Semantic, e.span, "undefined variable '" + e.name + "'");
      }
      case Expr::List: {
        auto list = std::make_shared<std::vector<RVal>>();
        for (const auto& k : e.kids) list->push_back(eval(*k, env));
        return {RList(list)};
      }
      case Expr::ListComp: {
        auto list = std::make_shared<std::vector<RVal>>();
        for (const RVal& item : iterate(eval(*e.kids[1], env), e.kids[1]->span)) {
          auto inner = arena->make_env(env);
          if (e.params.size() == 1) {
            inner->vars[e.params[0]] = item;
          } else {
            auto parts = iterate(item, e.span);
            if (parts.size() != e.params.size())
              throw Error(ErrorKind::Semantic, e.span, "cannot unpack an item into " + std::to_string(e.params.size()) + " variables");
            for (size_t i = 0; i < parts.size(); ++i) inner->vars[e.params[i]] = parts[i];
          }
          list->push_back(eval(*e.kids[0], inner));
        }
        return {RList(list)};
      }
      case Expr::Unary:
        return from_operand(apply_unary(e.op, operand(eval(*e.kids[0], env), e.span, "the operand of '" + std::string(op_symbol(e.op)) + "'"), e.span));
      case Expr::Binary: {
        RVal a = eval(*e.kids[0], env), b = eval(*e.kids[1], env);
        std::string what = std::string("an operand of '") + op_symbol(e.op) + "'";
        return from_operand(apply_binary(e.op, operand(a, e.span, what), operand(b, e.span, what), e.span));
      }
      case Expr::Ternary: {
        RVal cond = eval(*e.kids[1], env);
        if (auto* v = std::get_if<Value>(&cond.v)) return eval(*e.kids[truthy(*v) ? 0 : 2], env);
        SOp c = sop_of(cond, e.span, "the condition of 'x if condition else y'");
        SOp t = sop_of(eval(*e.kids[0], env), e.span, "the first branch of 'x if c else y'");
        SOp f = sop_of(eval(*e.kids[2], env), e.span, "the second branch of 'x if c else y'");
        return {with_span(where(c, t, f), e.span)};
      }
      case Expr::In: {
        RVal x = eval(*e.kids[0], env);
        RVal container = eval(*e.kids[1], env);
        std::vector<Value> items;
        const std::string* str = nullptr;
        std::string str_store;
        if (auto* l = std::get_if<RList>(&container.v)) {
          for (const auto& it : **l) items.push_back(value_of(it, e.span, "an element of the list after 'in'"));
        } else if (auto* v = std::get_if<Value>(&container.v); v && std::holds_alternative<std::string>(*v)) {
          str_store = std::get<std::string>(*v);
          str = &str_store;
        } else {
          throw Error(ErrorKind::Semantic, e.span, "'in' needs a list or a string on the right, not a " + kind_of(container));
        }
        if (auto* v = std::get_if<Value>(&x.v)) {
          try {
            return {Value(contains(items, str, *v))};
          } catch (const Error& err) {
            throw Error(ErrorKind::Semantic, e.span, err.message());
          }
        }
        SOp s = sop_of(x, e.span, "the left side of 'in'");
        std::string label = "in [";
        for (size_t i = 0; i < items.size(); ++i) label += (i ? ", " : "") + repr(items[i]);
        label = str ? "in " + repr(Value(str_store)) : label + "]";
        return {with_span(map(s, [items, str_store, has_str = str != nullptr](const Value& v) -> Value {
          return contains(items, has_str ? &str_store : nullptr, v);
        }, label), e.span)};
      }
      case Expr::Call: {
        std::vector<RVal> args;
        for (size_t i = 1; i < e.kids.size(); ++i) args.push_back(eval(*e.kids[i], env));
        const Expr& callee = *e.kids[0];
        if (callee.k == Expr::Name) {
          if (const RVal* r = env->find(callee.name)) return call(*r, args, e.span);
          bool found = false;
          RVal out = builtin(callee.name, args, e.span, found);
          if (found) return out;
          throw Error(ErrorKind::Semantic, callee.span, "undefined function '" + callee.name + "'");
        }
        return call(eval(callee, env), args, e.span);
      }
      case Expr::Index: {
        RVal base = eval(*e.kids[0], env);
        Value idx = value_of(eval(*e.kids[1], env), e.span, "an index");
        if (!std::holds_alternative<int64_t>(idx)) throw Error(ErrorKind::Semantic, e.span, "an index must be an integer");
        std::vector<RVal> items;
        if (auto* l = std::get_if<RList>(&base.v)) items = **l;
        else if (auto* v = std::get_if<Value>(&base.v); v && std::holds_alternative<std::string>(*v)) items = iterate(base, e.span);
        else throw Error(ErrorKind::Semantic, e.span, "cannot index a " + kind_of(base) + " (only lists and strings)");
        int64_t i = std::get<int64_t>(idx);
        if (i < 0) i += static_cast<int64_t>(items.size());
        if (i < 0 || i >= static_cast<int64_t>(items.size()))
          throw Error(ErrorKind::Semantic, e.span, "index " + std::to_string(std::get<int64_t>(idx)) + " out of range (size " +
                                                       std::to_string(items.size()) + ")");
        return items[static_cast<size_t>(i)];
      }
      case Expr::Select: {
        RVal k = eval(*e.kids[0], env), q = eval(*e.kids[1], env);
        return {select_dynamic(operand(k, e.span, "the keys of select"), operand(q, e.span, "the queries of select"), e.pred, e.span)};
      }
      case Expr::Lambda: {
        auto l = std::make_shared<LambdaDef>();
        l->params = e.params;
        l->body = e.kids[0];
        l->closure = arena->own(*snapshot(env));
        l->owner = arena;
        l->text = e.text;
        return {std::shared_ptr<const LambdaDef>(l)};
      }
      case Expr::Annotate: {
        SOp s = sop_of(eval(*e.kids[0], env), e.span, "the operand of numerical/categorical");
        return {e.enc == Encoding::Numerical ? numerical(s) : categorical(s)};
      }
    }
    throw Error(ErrorKind::Semantic, e.span, "unknown expression");
  }

  // A lambda sees a copy of the values, lists and functions in scope where it is written; its
  // body runs on values, so the s-ops in scope are copied as SOpOutsideValues (naming them is
  // an error that says why, and the s-op that applies the lambda does not own itself).
  EnvP snapshot(const EnvP& env) {
    auto out = arena->make_env();
    std::vector<const Env*> chain;
    for (const Env* e = env.get(); e; e = e->parent.get()) chain.push_back(e);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      for (const auto& [name, val] : (*it)->vars)
        out->vars[name] = holds_sop(val) ? without_sops(val) : val;
    return out;
  }

  Program finish() {
    for (auto it = program.named.rbegin(); it != program.named.rend(); ++it) {
      program.output = it->second;
      return program;
    }
    throw Error(ErrorKind::Semantic, "the program assigns no s-op (write `name = expression;`)");
  }
};

}  // namespace

// The parser and evaluator of `.rasp` text recurse (bounded by kMaxEvalDepth and the
// parser's nesting limits). Those bounds are safe only for a known stack, and the caller's
// may be small (a Python thread has 1 MB; sanitizers make frames larger), so the work runs
// on a thread of its own with a stack sized for the bounds; exceptions are carried back.
template <class F>
Program on_rasp_stack(F&& work) {
  constexpr size_t kStackBytes = size_t(256) << 20;  // reserved address space, not memory
  struct Job {
    F* work;
    Program result;
    std::exception_ptr error;
  } job{&work, {}, nullptr};
  auto body = [](void* arg) -> void* {
    Job& j = *static_cast<Job*>(arg);
    try {
      j.result = (*j.work)();
    } catch (...) {
      j.error = std::current_exception();
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kStackBytes);
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, body, &job);
  pthread_attr_destroy(&attr);
  if (rc != 0) return work();  // no thread to be had: run here, within the same bounds
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
  return std::move(job.result);
}

Program load_rasp_file(const std::string& path) {
  return on_rasp_stack([&] {
    Evaluator ev;
    ev.define_builtins();
    ev.run_file(path, Span{});
    return ev.finish();
  });
}

Program parse_rasp(const std::string& text, const std::string& name) {
  return on_rasp_stack([&] {
    Evaluator ev;
    ev.define_builtins();
    ev.run_text(text, name);
    return ev.finish();
  });
}

}  // namespace lrnn::rasp
