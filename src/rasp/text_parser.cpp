// Parser of the `.rasp` text syntax (recursive descent, bounded nesting).
//
// Precedence follows the original grammar (tightest first): postfix calls and indexing;
// unary not / - / +; ^; * /; %; + -; comparisons; and / or; `x if c else y`; `in`.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "text_syntax.hpp"

namespace lrnn::rasp::text {

namespace {

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
        throw Error(ErrorKind::Parse, p.peek().span,
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
      throw Error(ErrorKind::Parse, e->span,
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

}  // namespace

std::vector<StmtP> parse(std::vector<Token> tokens, SourcePtr src) {
  return Parser(std::move(tokens), std::move(src)).statements();
}

}  // namespace lrnn::rasp::text
