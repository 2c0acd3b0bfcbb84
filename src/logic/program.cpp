#include "logic/program.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "lrnn/diagnostics.hpp"

namespace lrnn::logic {

namespace {

std::string literal_text(const Literal& l) {
  std::string s;
  if (l.negated) s += "!";
  if (l.soft_negated) s += "~";
  if (l.builtin) s += "@";
  if (l.hidden) s += "*";
  s += l.predicate;
  if (!l.args.empty()) {
    s += "(";
    for (size_t i = 0; i < l.args.size(); ++i) {
      if (i) s += ", ";
      if (!l.args[i].type.empty()) s += l.args[i].type + ":";
      s += l.args[i].kind == Term::Kind::String ? "'" + l.args[i].text + "'" : l.args[i].text;
    }
    s += ")";
  }
  return s;
}

bool meta_true(const std::vector<MetaEntry>& meta, const std::string& key) {
  for (const auto& m : meta)
    if (m.key == key) return m.value.name == "true" || m.value.name == "True" || m.value.name == "1";
  return false;
}

}  // namespace

double eval_value(BuiltinOp op, double a, double b) {
  switch (op) {
    case BuiltinOp::AddEval: return a + b;
    case BuiltinOp::SubEval: return a - b;
    case BuiltinOp::MulEval: return a * b;
    case BuiltinOp::DivEval: return a / b;
    case BuiltinOp::ModEval: return b == 0 ? std::nan("") : a - b * std::floor(a / b);
    case BuiltinOp::MaxEval: return std::max(a, b);
    case BuiltinOp::MinEval: return std::min(a, b);
    default: throw Error(ErrorKind::Runtime, "internal: eval_value of a builtin that has no value");
  }
}

Program::Program(const TemplateAst& ast,
                 const std::vector<std::pair<std::string, int>>& extra_predicates,
                 std::shared_ptr<Symbols> symbols)
    : symbols_(symbols ? std::move(symbols) : std::make_shared<Symbols>()) {
  ast_rule_count_ = ast.rules.size();
  rules_.reserve(ast.rules.size() + ast.facts.size());
  for (uint32_t r = 0; r < ast.rules.size(); ++r) compile_rule(&ast.rules[r], nullptr, r);
  for (uint32_t f = 0; f < ast.facts.size(); ++f) compile_rule(nullptr, &ast.facts[f], f);
  for (const auto& [name, arity] : extra_predicates) {
    if (arity > kMaxArity) throw Error(ErrorKind::Semantic, "predicate " + name + " has more than 64 arguments");
    intern_predicate(name, arity);
  }
  for (const auto& decl : ast.predicates) {
    if (decl.arity > kMaxArity)
      throw Error(ErrorKind::Semantic, decl.span,
                  "predicate " + decl.name + "/" + std::to_string(decl.arity) + " has more than 64 arguments");
    intern_predicate(decl.name, decl.arity);
  }
  std::sort(template_constants_.begin(), template_constants_.end());
  template_constants_.erase(std::unique(template_constants_.begin(), template_constants_.end()),
                            template_constants_.end());
  stratify();
}

uint32_t Program::intern_predicate(const std::string& name, int arity) {
  auto& ids = pred_ids_[name];
  for (auto [a, id] : ids)
    if (a == arity) return id;
  uint32_t id = uint32_t(pred_names_.size());
  ids.emplace_back(arity, id);
  pred_names_.push_back(name);
  pred_arities_.push_back(arity);
  return id;
}

uint32_t Program::predicate_id(std::string_view name, int arity) const {
  auto it = pred_ids_.find(name);
  if (it == pred_ids_.end()) return kNone;
  for (auto [a, id] : it->second)
    if (a == arity) return id;
  return kNone;
}

// One rule's variables, numbered in written order while it is compiled, and its typed terms
// (`woman:Y`), which become hidden literals woman(Y).
struct Program::RuleTerms {
  struct TypedTerm {
    std::string type;
    ArgRef arg;
    Span span;
  };
  CompiledRule& cr;
  std::unordered_map<std::string, uint32_t> var_ids;
  uint32_t anonymous = 0;
  std::vector<TypedTerm> typed;
};

namespace {

// Which variables can be bound: by positive literals, then by builtins that bind
// (arithmetic results, either side of @next, the first argument of @in).
std::vector<char> bindable_variables(const CompiledRule& cr) {
  std::vector<char> bound(cr.var_names.size(), 0);
  auto is_bound = [&](const ArgRef& a) { return !a.is_var || bound[a.value]; };
  for (const BodyLiteral& bl : cr.body) {
    if (bl.kind != BodyLiteral::Kind::Positive) continue;
    for (uint32_t k = 0; k < bl.arity; ++k)
      if (cr.lit_args(bl)[k].is_var) bound[cr.lit_args(bl)[k].value] = 1;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const BodyLiteral& bl : cr.body) {
      if (bl.kind != BodyLiteral::Kind::Builtin) continue;
      const ArgRef* a = cr.lit_args(bl);
      auto bind = [&](const ArgRef& x) {
        if (x.is_var && !bound[x.value]) bound[x.value] = 1, changed = true;
      };
      if (is_arithmetic(bl.op)) {
        if (is_bound(a[0]) && is_bound(a[1])) bind(a[2]);
      } else if (bl.op == BuiltinOp::Next) {
        if (is_bound(a[0])) bind(a[1]);
        if (is_bound(a[1])) bind(a[0]);
      } else if (bl.op == BuiltinOp::In) {
        bool rest = true;
        for (uint32_t k = 1; k < bl.arity; ++k) rest = rest && is_bound(a[k]);
        if (rest) bind(a[0]);
      }
    }
  }
  return bound;
}

// A rule whose ground instances can repeat once projected on its visible variables (head and
// input literals) needs its groundings deduplicated.
bool has_invisible_variables(const CompiledRule& cr) {
  std::vector<char> visible(cr.var_names.size(), 0);
  for (uint32_t k = 0; k < cr.head_arity; ++k)
    if (cr.head_args()[k].is_var) visible[cr.head_args()[k].value] = 1;
  for (const BodyLiteral& bl : cr.body) {
    if (bl.input_slot == kNone) continue;
    for (uint32_t k = 0; k < bl.arity; ++k)
      if (cr.lit_args(bl)[k].is_var) visible[cr.lit_args(bl)[k].value] = 1;
  }
  return std::find(visible.begin(), visible.end(), 0) != visible.end();
}

}  // namespace

ArgRef Program::term_ref(RuleTerms& terms, const Term& t, bool record_constant) {
  CompiledRule& cr = terms.cr;
  if (t.is_variable()) {
    if (t.text == "_") {
      cr.var_names.push_back("_#" + std::to_string(++terms.anonymous));
      return ArgRef{uint32_t(cr.var_names.size() - 1), true};
    }
    auto [it, inserted] = terms.var_ids.try_emplace(t.text, uint32_t(cr.var_names.size()));
    if (inserted) cr.var_names.push_back(t.text);
    return ArgRef{it->second, true};
  }
  uint32_t id = symbols_->intern_term(t);
  if (record_constant) template_constants_.push_back(id);
  return ArgRef{id, false};
}

void Program::compile_head(RuleTerms& terms, const Literal& head) {
  CompiledRule& cr = terms.cr;
  if (head.builtin || head.negated || head.soft_negated) {
    throw Error(ErrorKind::Semantic, head.span,
                "a rule head or fact must be a plain atom, not '" + literal_text(head) + "'");
  }
  if (head.args.size() > kMaxArity) throw Error(ErrorKind::Semantic, head.span, "more than 64 arguments");
  cr.head_pred = intern_predicate(head.predicate, head.arity());
  cr.head_arity = head.arity();
  cr.head_args_begin = 0;
  for (const Term& t : head.args) {
    ArgRef a = term_ref(terms, t, true);
    cr.args.push_back(a);
    if (!t.type.empty()) terms.typed.push_back({t.type, a, t.span});
  }
}

BodyLiteral Program::compile_body_literal(RuleTerms& terms, const Literal& l, uint32_t i, uint32_t& input_count) {
  CompiledRule& cr = terms.cr;
  BodyLiteral bl;
  bl.source = i;
  bl.span = l.span;
  if (l.builtin) {
    const BuiltinInfo* info = find_builtin(l.predicate);
    if (!info) throw Error(ErrorKind::Semantic, l.span, "unknown builtin '@" + l.predicate + "'");
    if (l.arity() < info->min_arity || (info->max_arity >= 0 && l.arity() > info->max_arity)) {
      std::string expected = info->max_arity < 0
                                 ? "at least " + std::to_string(info->min_arity)
                                 : std::to_string(info->min_arity);
      throw Error(ErrorKind::Semantic, l.span,
                  "'@" + l.predicate + "' takes " + expected + " argument(s), found " +
                      std::to_string(l.arity()));
    }
    if (l.negated || l.soft_negated) {
      throw Error(ErrorKind::Semantic, l.span, "a builtin cannot be negated: '" + literal_text(l) + "'");
    }
    bl.kind = BodyLiteral::Kind::Builtin;
    bl.op = info->op;
    if (is_neuron_input(l)) {  // a value builtin: its atoms are "@op_eval(a, b)"
      bl.pred = intern_predicate("@" + l.predicate, l.arity());
      bl.input_slot = input_count++;
      cr.input_literals.push_back(i);
    }
  } else {
    if (l.args.size() > kMaxArity) throw Error(ErrorKind::Semantic, l.span, "more than 64 arguments");
    bl.kind = l.negated ? BodyLiteral::Kind::Negated : BodyLiteral::Kind::Positive;
    bl.pred = intern_predicate(l.predicate, l.arity());
    if (is_neuron_input(l)) {
      bl.input_slot = input_count++;
      cr.input_literals.push_back(i);
    }
  }
  bl.args_begin = uint32_t(cr.args.size());
  bl.arity = l.arity();
  for (const Term& t : l.args) {
    ArgRef a = term_ref(terms, t, !l.builtin);
    cr.args.push_back(a);
    if (!t.type.empty()) terms.typed.push_back({t.type, a, t.span});
  }
  return bl;
}

// Typed terms become literals of their type, after the written body.
void Program::add_typed_literals(RuleTerms& terms) {
  CompiledRule& cr = terms.cr;
  for (const RuleTerms::TypedTerm& tt : terms.typed) {
    BodyLiteral bl;
    bl.kind = BodyLiteral::Kind::Positive;
    bl.pred = intern_predicate(tt.type, 1);
    bl.args_begin = uint32_t(cr.args.size());
    bl.arity = 1;
    bl.span = tt.span;
    cr.args.push_back(tt.arg);
    cr.body.push_back(bl);
  }
}

// Head, `!` and @op_eval variables bound by nothing range over the example's active domain
// (PyNeuraLogic's `h(X) :- @add_eval(X, 2).` is h(c) for every constant c); any other
// builtin's variables must be bound.
void Program::add_domain_literals(CompiledRule& cr, std::vector<char>& bound, const std::vector<Literal>& body) {
  auto is_bound = [&](const ArgRef& a) { return !a.is_var || bound[a.value]; };
  auto add_domain = [&](const ArgRef& a) {
    if (!is_bound(a)) {
      bound[a.value] = 1;
      BodyLiteral bl;
      bl.kind = BodyLiteral::Kind::Domain;
      bl.args_begin = uint32_t(cr.args.size());
      bl.arity = 1;
      bl.span = cr.span;
      cr.args.push_back(a);
      cr.body.push_back(bl);
      uses_domain_ = true;
    }
  };
  for (size_t i = 0, n = cr.body.size(); i < n; ++i) {
    if (cr.body[i].kind != BodyLiteral::Kind::Builtin || !is_eval(cr.body[i].op)) continue;
    for (uint32_t k = 0; k < cr.body[i].arity; ++k) add_domain(cr.lit_args(cr.body[i])[k]);
  }
  for (uint32_t i = 0; i < cr.body.size(); ++i) {
    const BodyLiteral& bl = cr.body[i];
    if (bl.kind != BodyLiteral::Kind::Builtin) continue;
    for (uint32_t k = 0; k < bl.arity; ++k) {
      const ArgRef& a = cr.lit_args(bl)[k];
      if (!is_bound(a)) {
        throw Error(ErrorKind::Semantic, bl.span,
                    "variable " + cr.var_names[a.value] + " in '" + literal_text(body[bl.source]) +
                        "' is not bound by a positive literal or an arithmetic builtin");
      }
    }
  }
  for (uint32_t k = 0; k < cr.head_arity; ++k) add_domain(cr.head_args()[k]);
  const size_t n_written = cr.body.size();
  for (size_t i = 0; i < n_written; ++i) {
    if (cr.body[i].kind != BodyLiteral::Kind::Negated) continue;
    for (uint32_t k = 0; k < cr.body[i].arity; ++k) add_domain(cr.lit_args(cr.body[i])[k]);
  }
}

void Program::compile_rule(const Rule* rule, const Literal* fact, uint32_t source) {
  const Literal& head = rule ? rule->head : *fact;
  CompiledRule cr;
  cr.source = source;
  cr.is_fact = fact != nullptr;
  cr.span = rule ? rule->span : fact->span;
  RuleTerms terms{cr, {}, 0, {}};
  compile_head(terms, head);
  const std::vector<Literal> no_body;
  const std::vector<Literal>& body = rule ? rule->body : no_body;
  uint32_t input_count = 0;
  for (uint32_t i = 0; i < body.size(); ++i) cr.body.push_back(compile_body_literal(terms, body[i], i, input_count));
  add_typed_literals(terms);
  std::vector<char> bound = bindable_variables(cr);
  add_domain_literals(cr, bound, body);
  cr.needs_dedup = has_invisible_variables(cr);
  cr.duplicate_grounding = rule && meta_true(rule->meta, "duplicate_grounding");
  rules_.push_back(std::move(cr));
}

void Program::stratify() {
  const uint32_t n = uint32_t(pred_names_.size());
  struct Edge {
    uint32_t to;
    bool negative;
    uint32_t rule, lit;
  };
  std::vector<std::vector<Edge>> out(n);  // body predicate -> head predicate
  logic_deps_.assign(n, {});
  input_deps_.assign(n, {});
  for (uint32_t r = 0; r < rules_.size(); ++r) {
    const CompiledRule& cr = rules_[r];
    for (uint32_t i = 0; i < cr.body.size(); ++i) {
      const BodyLiteral& bl = cr.body[i];
      if (bl.kind != BodyLiteral::Kind::Positive && bl.kind != BodyLiteral::Kind::Negated) continue;
      out[bl.pred].push_back({cr.head_pred, bl.kind == BodyLiteral::Kind::Negated, r, i});
      logic_deps_[cr.head_pred].push_back(bl.pred);
      if (bl.input_slot != kNone && !cr.is_fact) input_deps_[cr.head_pred].push_back(bl.pred);
    }
  }
  for (auto* deps : {&logic_deps_, &input_deps_})
    for (auto& d : *deps) {
      std::sort(d.begin(), d.end());
      d.erase(std::unique(d.begin(), d.end()), d.end());
    }

  // Tarjan's strongly connected components (iterative: templates from generators can
  // have long predicate chains).
  std::vector<uint32_t> index(n, kNone), low(n, 0), comp(n, kNone);
  std::vector<char> on_stack(n, 0);
  std::vector<uint32_t> stack;
  std::vector<std::vector<uint32_t>> sccs;
  uint32_t counter = 0;
  struct Frame {
    uint32_t v;
    size_t edge;
  };
  for (uint32_t start = 0; start < n; ++start) {
    if (index[start] != kNone) continue;
    std::vector<Frame> call{{start, 0}};
    index[start] = low[start] = counter++;
    stack.push_back(start);
    on_stack[start] = 1;
    while (!call.empty()) {
      Frame& f = call.back();
      if (f.edge < out[f.v].size()) {
        uint32_t w = out[f.v][f.edge++].to;
        if (index[w] == kNone) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = 1;
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[f.v] = std::min(low[f.v], index[w]);
        }
        continue;
      }
      uint32_t v = f.v;
      call.pop_back();
      if (!call.empty()) low[call.back().v] = std::min(low[call.back().v], low[v]);
      if (low[v] == index[v]) {
        std::vector<uint32_t> scc;
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          comp[w] = uint32_t(sccs.size());
          scc.push_back(w);
        } while (w != v);
        sccs.push_back(std::move(scc));
      }
    }
  }
  // Negation inside a component is a cycle through negation.
  for (uint32_t v = 0; v < n; ++v) {
    for (const Edge& e : out[v]) {
      if (!e.negative || comp[v] != comp[e.to]) continue;
      std::vector<std::string> names;
      for (uint32_t p : sccs[comp[v]])
        names.push_back(pred_names_[p] + "/" + std::to_string(pred_arities_[p]));
      std::sort(names.begin(), names.end());
      std::string cycle;
      for (const auto& s : names) cycle += (cycle.empty() ? "" : ", ") + s;
      const CompiledRule& cr = rules_[e.rule];
      throw Error(ErrorKind::Semantic, cr.body[e.lit].span.file ? cr.body[e.lit].span : cr.span,
                  "the program is not stratifiable: negation of " + pred_names_[v] + "/" +
                      std::to_string(pred_arities_[v]) + " lies on a cycle through " + cycle);
    }
  }
  // Tarjan emits components heads-first; strata run dependencies first.
  std::vector<std::vector<uint32_t>> rules_of_comp(sccs.size());
  for (uint32_t r = 0; r < rules_.size(); ++r) rules_of_comp[comp[rules_[r].head_pred]].push_back(r);
  for (size_t c = sccs.size(); c-- > 0;) {
    if (rules_of_comp[c].empty()) continue;
    Stratum s;
    s.preds = sccs[c];
    std::sort(s.preds.begin(), s.preds.end());
    s.rules = rules_of_comp[c];
    for (uint32_t r : s.rules) {
      rules_[r].stratum = uint32_t(strata_.size());
      for (const BodyLiteral& bl : rules_[r].body)
        if (bl.kind == BodyLiteral::Kind::Positive && comp[bl.pred] == c) s.recursive = true;
    }
    strata_.push_back(std::move(s));
  }
}

std::string Program::constant_text(uint32_t id) const {
  std::string s = symbols_->name(id);
  if (symbols_->is_number(id)) return s;
  bool plain = !s.empty() && s[0] >= 'a' && s[0] <= 'z';
  for (char c : s) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (plain) return s;
  std::string q = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') q += '\\';
    q += c;
  }
  return q + "'";
}

std::string Program::atom_text(const GroundSample& sample, uint32_t atom) const {
  std::string s = pred_names_[sample.atom_pred[atom]];
  uint32_t b = sample.atom_args_begin[atom], e = sample.atom_args_begin[atom + 1];
  if (b == e) return s;
  s += "(";
  for (uint32_t k = b; k < e; ++k) {
    if (k > b) s += ", ";
    s += constant_text(sample.atom_args[k]);
  }
  return s + ")";
}

}  // namespace lrnn::logic
