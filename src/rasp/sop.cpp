// Building RASP programs: node factories, the RASPy-style combinators and the dynamic
// operations shared by the Python binding and the `.rasp` loader.
#include <atomic>
#include <cmath>

#include "lrnn/rasp.hpp"

namespace lrnn::rasp {

namespace {

std::shared_ptr<Node> make(Kind kind, std::vector<NodePtr> children = {}) {
  auto n = std::make_shared<Node>();
  n->id = next_node_id();
  n->kind = kind;
  n->children = std::move(children);
  return n;
}

void require(const NodePtr& n, const char* what) {
  if (!n) throw Error(ErrorKind::Semantic, std::string("empty ") + what + " handle");
}

std::shared_ptr<Node> copy_of(const NodePtr& n) {
  auto c = std::make_shared<Node>(*n);
  c->id = next_node_id();
  return c;
}

bool is_comparison(Op op) {
  return op == Op::Eq || op == Op::Ne || op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge;
}

}  // namespace

uint64_t next_node_id() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Tokens: return "tokens";
    case Kind::Indices: return "indices";
    case Kind::Length: return "length";
    case Kind::Constant: return "constant";
    case Kind::Map: return "map";
    case Kind::ZipMap: return "zipmap";
    case Kind::Unary: return "unary";
    case Kind::Binary: return "binary";
    case Kind::Where: return "where";
    case Kind::Select: return "select";
    case Kind::SelectAnd: return "select_and";
    case Kind::SelectOr: return "select_or";
    case Kind::SelectNot: return "select_not";
    case Kind::Aggregate: return "aggregate";
    case Kind::SelectorWidth: return "selector_width";
  }
  return "?";
}

const char* op_symbol(Op op) {
  switch (op) {
    case Op::Add: return "+";
    case Op::Sub: return "-";
    case Op::Mul: return "*";
    case Op::Div: return "/";
    case Op::Mod: return "%";
    case Op::Pow: return "^";
    case Op::Eq: return "==";
    case Op::Ne: return "!=";
    case Op::Lt: return "<";
    case Op::Le: return "<=";
    case Op::Gt: return ">";
    case Op::Ge: return ">=";
    case Op::And: return "and";
    case Op::Or: return "or";
    case Op::Not: return "not";
    case Op::Neg: return "-";
  }
  return "?";
}

const char* predicate_symbol(Predicate p) {
  switch (p) {
    case Predicate::Eq: return "==";
    case Predicate::Ne: return "!=";
    case Predicate::Lt: return "<";
    case Predicate::Le: return "<=";
    case Predicate::Gt: return ">";
    case Predicate::Ge: return ">=";
    case Predicate::True: return "true";
    case Predicate::False: return "false";
  }
  return "?";
}

bool is_selector_kind(Kind k) {
  return k == Kind::Select || k == Kind::SelectAnd || k == Kind::SelectOr || k == Kind::SelectNot;
}

Node::~Node() {
  std::vector<NodePtr> pending = std::move(children);
  while (!pending.empty()) {
    NodePtr n = std::move(pending.back());
    pending.pop_back();
    // The last owner takes the children over, so the node dies without recursing into them.
    // (No other thread can gain a reference to a node it does not already share.)
    if (n.use_count() == 1) {
      auto& kids = const_cast<Node&>(*n).children;
      for (auto& k : kids) pending.push_back(std::move(k));
      kids.clear();
    }
  }
}

std::string Node::display_name() const {
  if (!name.empty()) return name;
  switch (kind) {
    case Kind::Tokens: case Kind::Indices: case Kind::Length: return kind_name(kind);
    case Kind::Constant: return repr(constant);
    case Kind::Map: case Kind::ZipMap:
      return (label.empty() ? std::string(kind_name(kind)) : label) + "#" + std::to_string(id);
    case Kind::Unary: case Kind::Binary:
      return std::string("(") + op_symbol(op) + ")#" + std::to_string(id);
    default: return std::string(kind_name(kind)) + "#" + std::to_string(id);
  }
}

std::string Node::description() const {
  if (!name.empty()) return name;
  auto arg = [&](size_t i) {
    const Node& c = *children[i];
    return c.name.empty() && (c.kind == Kind::Select || c.kind == Kind::SelectAnd || c.kind == Kind::SelectOr ||
                              c.kind == Kind::SelectNot || c.kind == Kind::Binary || c.kind == Kind::Unary)
               ? c.description()
               : c.name.empty() && (c.kind == Kind::Map || c.kind == Kind::ZipMap) ? (c.label.empty() ? kind_name(c.kind) : c.label)
               : c.name.empty() && (c.kind == Kind::Aggregate || c.kind == Kind::SelectorWidth) ? std::string(kind_name(c.kind))
               : c.display_name();
  };
  switch (kind) {
    case Kind::Tokens: case Kind::Indices: case Kind::Length: return kind_name(kind);
    case Kind::Constant: return repr(constant);
    case Kind::Map: return (label.empty() ? std::string("map") : label) + "(" + arg(0) + ")";
    case Kind::ZipMap: {
      std::string s = (label.empty() ? std::string("zipmap") : label) + "(";
      for (size_t i = 0; i < children.size(); ++i) s += (i ? ", " : "") + arg(i);
      return s + ")";
    }
    case Kind::Unary: return std::string(op_symbol(op)) + (op == Op::Not ? " " : "") + arg(0);
    case Kind::Binary: return "(" + arg(0) + " " + op_symbol(op) + " " + arg(1) + ")";
    case Kind::Where: return "where(" + arg(0) + ", " + arg(1) + ", " + arg(2) + ")";
    case Kind::Select: return "select(" + arg(0) + ", " + arg(1) + ", " + predicate_symbol(predicate) + ")";
    case Kind::SelectAnd: return "(" + arg(0) + " and " + arg(1) + ")";
    case Kind::SelectOr: return "(" + arg(0) + " or " + arg(1) + ")";
    case Kind::SelectNot: return "not " + arg(0);
    case Kind::Aggregate: return "aggregate(" + arg(0) + ", " + arg(1) + ")";
    case Kind::SelectorWidth: return "selector_width(" + arg(0) + ")";
  }
  return display_name();
}

// ---- SOp / Selector handles -------------------------------------------------------------

SOp::SOp(NodePtr node) : node_(std::move(node)) {
  if (node_ && node_->is_selector())
    throw Error(ErrorKind::Semantic, "a selector is not an s-op: aggregate it (.value(...)) or "
                                     "take its selector_width first");
}
SOp::SOp(bool v) : SOp(constant(Value(v))) {}
SOp::SOp(int v) : SOp(constant(Value(int64_t{v}))) {}
SOp::SOp(int64_t v) : SOp(constant(Value(v))) {}
SOp::SOp(double v) : SOp(constant(Value(v))) {}
SOp::SOp(const char* v) : SOp(constant(Value(std::string(v)))) {}
SOp::SOp(std::string v) : SOp(constant(Value(std::move(v)))) {}

SOp SOp::constant(Value v) {
  auto n = make(Kind::Constant);
  n->constant = std::move(v);
  return SOp(NodePtr(n));
}

SOp SOp::name(std::string name) const {
  require(node_, "s-op");
  auto c = copy_of(node_);
  c->name = std::move(name);
  return SOp(NodePtr(c));
}

const std::string& SOp::name() const {
  require(node_, "s-op");
  return node_->name;
}

SOp SOp::map(MapFn f, std::string label) const { return rasp::map(*this, std::move(f), std::move(label)); }
SOp SOp::numerical() const { return rasp::numerical(*this); }
SOp SOp::categorical() const { return rasp::categorical(*this); }

std::vector<Value> SOp::operator()(const std::vector<Value>& input) const { return run(*this, input); }
std::vector<Value> SOp::operator()(std::string_view input) const { return run(*this, chars(input)); }

Selector::Selector(NodePtr node) : node_(std::move(node)) {
  if (node_ && !node_->is_selector())
    throw Error(ErrorKind::Semantic, "an s-op is not a selector: build one with select(keys, queries, predicate)");
}

Selector Selector::name(std::string name) const {
  require(node_, "selector");
  auto c = copy_of(node_);
  c->name = std::move(name);
  return Selector(NodePtr(c));
}

const std::string& Selector::name() const {
  require(node_, "selector");
  return node_->name;
}

SOp Selector::value(const SOp& values, Value default_value) const {
  return aggregate(*this, values, std::move(default_value));
}
SOp Selector::width() const { return selector_width(*this); }

Key key(const SOp& keys) { return Key{keys}; }
Query query(const SOp& queries) { return Query{queries}; }
Selector operator==(const Key& k, const Query& q) { return select(k.sop, q.sop, Predicate::Eq); }
Selector operator!=(const Key& k, const Query& q) { return select(k.sop, q.sop, Predicate::Ne); }
Selector operator<(const Key& k, const Query& q) { return select(k.sop, q.sop, Predicate::Lt); }
Selector operator<=(const Key& k, const Query& q) { return select(k.sop, q.sop, Predicate::Le); }
Selector operator>(const Key& k, const Query& q) { return select(k.sop, q.sop, Predicate::Gt); }
Selector operator>=(const Key& k, const Query& q) { return select(k.sop, q.sop, Predicate::Ge); }

SOp tokens() {
  static const NodePtr node = make(Kind::Tokens);
  return SOp(node);
}
SOp indices() {
  static const NodePtr node = make(Kind::Indices);
  return SOp(node);
}
SOp length() {
  static const NodePtr node = make(Kind::Length);
  return SOp(node);
}

SOp unary(Op op, const SOp& a) {
  require(a.node(), "s-op");
  if (op != Op::Not && op != Op::Neg)
    throw Error(ErrorKind::Semantic, std::string("'") + op_symbol(op) + "' is not a unary operator");
  auto n = make(Kind::Unary, {a.node()});
  n->op = op;
  return SOp(NodePtr(n));
}

SOp binary(Op op, const SOp& a, const SOp& b) {
  require(a.node(), "s-op");
  require(b.node(), "s-op");
  if (op == Op::Not || op == Op::Neg)
    throw Error(ErrorKind::Semantic, std::string("'") + op_symbol(op) + "' is not a binary operator");
  auto n = make(Kind::Binary, {a.node(), b.node()});
  n->op = op;
  return SOp(NodePtr(n));
}

SOp operator+(const SOp& a, const SOp& b) { return binary(Op::Add, a, b); }
SOp operator-(const SOp& a, const SOp& b) { return binary(Op::Sub, a, b); }
SOp operator*(const SOp& a, const SOp& b) { return binary(Op::Mul, a, b); }
SOp operator/(const SOp& a, const SOp& b) { return binary(Op::Div, a, b); }
SOp operator%(const SOp& a, const SOp& b) { return binary(Op::Mod, a, b); }
SOp operator==(const SOp& a, const SOp& b) { return binary(Op::Eq, a, b); }
SOp operator!=(const SOp& a, const SOp& b) { return binary(Op::Ne, a, b); }
SOp operator<(const SOp& a, const SOp& b) { return binary(Op::Lt, a, b); }
SOp operator<=(const SOp& a, const SOp& b) { return binary(Op::Le, a, b); }
SOp operator>(const SOp& a, const SOp& b) { return binary(Op::Gt, a, b); }
SOp operator>=(const SOp& a, const SOp& b) { return binary(Op::Ge, a, b); }
SOp operator&(const SOp& a, const SOp& b) { return binary(Op::And, a, b); }
SOp operator|(const SOp& a, const SOp& b) { return binary(Op::Or, a, b); }
SOp operator~(const SOp& a) { return unary(Op::Not, a); }
SOp operator-(const SOp& a) { return unary(Op::Neg, a); }
SOp pow(const SOp& a, const SOp& b) { return binary(Op::Pow, a, b); }

Selector operator&(const Selector& a, const Selector& b) { return select_and(a, b); }
Selector operator|(const Selector& a, const Selector& b) { return select_or(a, b); }
Selector operator~(const Selector& a) { return select_not(a); }

SOp where(const SOp& cond, const SOp& if_true, const SOp& if_false) {
  require(cond.node(), "s-op");
  require(if_true.node(), "s-op");
  require(if_false.node(), "s-op");
  return SOp(NodePtr(make(Kind::Where, {cond.node(), if_true.node(), if_false.node()})));
}

namespace {

std::shared_ptr<Node> map_node(const SOp& a, MapFn f, std::string label) {
  require(a.node(), "s-op");
  if (!f) throw Error(ErrorKind::Semantic, "map needs a function");
  auto n = make(Kind::Map, {a.node()});
  n->map_fn = std::move(f);
  n->label = std::move(label);
  return n;
}

}  // namespace

SOp map(const SOp& a, MapFn f, std::string label) { return SOp(NodePtr(map_node(a, std::move(f), std::move(label)))); }

SOp zipmap(const std::vector<SOp>& args, ZipFn f, std::string label) {
  if (args.empty()) throw Error(ErrorKind::Semantic, "zipmap needs at least one s-op");
  if (!f) throw Error(ErrorKind::Semantic, "zipmap needs a function");
  std::vector<NodePtr> children;
  for (const auto& a : args) {
    require(a.node(), "s-op");
    children.push_back(a.node());
  }
  auto n = make(Kind::ZipMap, std::move(children));
  n->zip_fn = std::move(f);
  n->label = std::move(label);
  return SOp(NodePtr(n));
}

Selector select(const SOp& keys, const SOp& queries, Predicate predicate) {
  require(keys.node(), "s-op");
  require(queries.node(), "s-op");
  auto n = make(Kind::Select, {keys.node(), queries.node()});
  n->predicate = predicate;
  return Selector(NodePtr(n));
}

Selector select_and(const Selector& a, const Selector& b) {
  require(a.node(), "selector");
  require(b.node(), "selector");
  return Selector(NodePtr(make(Kind::SelectAnd, {a.node(), b.node()})));
}
Selector select_or(const Selector& a, const Selector& b) {
  require(a.node(), "selector");
  require(b.node(), "selector");
  return Selector(NodePtr(make(Kind::SelectOr, {a.node(), b.node()})));
}
Selector select_not(const Selector& a) {
  require(a.node(), "selector");
  return Selector(NodePtr(make(Kind::SelectNot, {a.node()})));
}

SOp aggregate(const Selector& sel, const SOp& values, Value default_value, Convention convention) {
  require(sel.node(), "selector");
  require(values.node(), "s-op");
  auto n = make(Kind::Aggregate, {sel.node(), values.node()});
  n->constant = std::move(default_value);
  n->convention = convention;
  return SOp(NodePtr(n));
}

SOp selector_width(const Selector& sel) {
  require(sel.node(), "selector");
  return SOp(NodePtr(make(Kind::SelectorWidth, {sel.node()})));
}

SOp numerical(const SOp& a) {
  require(a.node(), "s-op");
  auto c = copy_of(a.node());
  c->encoding = Encoding::Numerical;
  return SOp(NodePtr(c));
}

SOp categorical(const SOp& a) {
  require(a.node(), "s-op");
  auto c = copy_of(a.node());
  c->encoding = Encoding::Categorical;
  return SOp(NodePtr(c));
}

namespace {

// A map by a named built-in function: two of them with the same label compute the same
// function, so the analyser counts them as one MLP (docs/rasp.md "Analyser: layers and heads").
SOp builtin_map(const SOp& a, MapFn f, const char* label) {
  auto n = map_node(a, std::move(f), label);
  n->builtin = true;
  return SOp(NodePtr(n));
}

}  // namespace

SOp indicator(const SOp& a) {
  return builtin_map(a, [](const Value& v) -> Value { return int64_t{truthy(v) ? 1 : 0}; }, "indicator");
}

SOp round(const SOp& a) {
  return builtin_map(a, [](const Value& v) -> Value {
    return static_cast<int64_t>(std::nearbyint(to_double(v)));
  }, "round");
}

// ---- dynamic operations -------------------------------------------------------------------

std::string operand_kind(const Operand& x) {
  switch (x.index()) {
    case 0: return "value";
    case 1: return "s-op";
    default: return "selector";
  }
}

SOp to_sop(const Operand& x, const std::string& what, const Span& span) {
  if (auto* v = std::get_if<Value>(&x)) return SOp::constant(*v);
  if (auto* s = std::get_if<SOp>(&x)) return *s;
  throw Error(ErrorKind::Semantic, span,
              what + " must be an s-op or a value, not a selector (aggregate it with "
                     "aggregate(sel, values) or count it with selector_width(sel))");
}

Operand apply_unary(Op op, const Operand& a, const Span& span) {
  if (auto* v = std::get_if<Value>(&a)) {
    try {
      return apply_value_unary(op, *v);
    } catch (const Error& e) {
      throw Error(ErrorKind::Semantic, span, e.message());
    }
  }
  if (auto* s = std::get_if<SOp>(&a)) return unary(op, *s);
  const auto& sel = std::get<Selector>(a);
  if (op == Op::Not) return select_not(sel);
  throw Error(ErrorKind::Semantic, span,
              std::string("cannot apply '") + op_symbol(op) + "' to a selector (only not/and/or combine selectors)");
}

Operand apply_binary(Op op, const Operand& a, const Operand& b, const Span& span) {
  const bool a_sel = std::holds_alternative<Selector>(a), b_sel = std::holds_alternative<Selector>(b);
  if (a_sel || b_sel) {
    if (a_sel && b_sel && (op == Op::And || op == Op::Or)) {
      return op == Op::And ? select_and(std::get<Selector>(a), std::get<Selector>(b))
                           : select_or(std::get<Selector>(a), std::get<Selector>(b));
    }
    std::string other = operand_kind(a_sel ? b : a);
    if (is_comparison(op)) {
      throw Error(ErrorKind::Semantic, span,
                  "cannot compare a selector with " + std::string(other == "selector" ? "a selector" : "an " + other) +
                      " using '" + op_symbol(op) +
                      "': a selector is an n-by-n attention pattern, not a sequence; turn it into an "
                      "s-op first with aggregate(sel, values) or selector_width(sel)");
    }
    if (op == Op::And || op == Op::Or)
      throw Error(ErrorKind::Semantic, span,
                  std::string("cannot combine a selector with ") + (other == "value" ? "a value" : "an s-op") +
                      " using '" + op_symbol(op) + "': and/or/not combine two selectors");
    throw Error(ErrorKind::Semantic, span,
                std::string("cannot apply '") + op_symbol(op) + "' to a selector and " +
                    (other == "selector" ? "a selector" : other == "value" ? "a value" : "an s-op"));
  }
  if (std::holds_alternative<Value>(a) && std::holds_alternative<Value>(b)) {
    try {
      return apply_value_op(op, std::get<Value>(a), std::get<Value>(b));
    } catch (const Error& e) {
      throw Error(ErrorKind::Semantic, span, e.message());
    }
  }
  auto n = binary(op, to_sop(a, "operand", span), to_sop(b, "operand", span));
  if (span.file) {
    auto c = std::const_pointer_cast<Node>(n.node());  // freshly built, not shared yet
    c->span = span;
  }
  return n;
}

Selector select_dynamic(const Operand& keys, const Operand& queries, Predicate p, const Span& span) {
  if (std::holds_alternative<Selector>(keys) || std::holds_alternative<Selector>(queries))
    throw Error(ErrorKind::Semantic, span,
                "select needs s-ops (or values) as keys and queries, not a selector");
  auto s = select(to_sop(keys, "keys", span), to_sop(queries, "queries", span), p);
  if (span.file) std::const_pointer_cast<Node>(s.node())->span = span;
  return s;
}

// ---- programs --------------------------------------------------------------------------

SOp Program::get(const std::string& name) const {
  for (auto it = named.rbegin(); it != named.rend(); ++it)
    if (it->first == name) return it->second;
  std::string names;
  for (const auto& [n, s] : named) names += (names.empty() ? "" : ", ") + n;
  throw Error(ErrorKind::Semantic, "no s-op named '" + name + "' in the program" +
                                       (names.empty() ? std::string() : " (it defines: " + names + ")"));
}

Program Program::with_output(const std::string& name) const {
  Program p = *this;
  p.output = get(name);
  return p;
}

}  // namespace lrnn::rasp
