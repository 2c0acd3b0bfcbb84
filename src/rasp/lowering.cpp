// Lowering a RASP program to an lrnn template (docs/rasp.md "Lowering to a template").
//
// Representation. A categorical s-op `x` becomes `x(I, V)`: one atom per position and
// candidate value, whose neuron value is 1 for the value the position holds and 0
// otherwise. A numerical s-op becomes `x(I)` whose neuron value is the number. A selector
// becomes `s(I, J)` (query I, key J) with neuron value 1 where it selects.
//
// Exactness. While every input of a construct is known to grounding (token and index
// facts, lookups of them, selects of them, gathers), only the true atoms are derived and
// every neuron value is 1, so the logic engine alone answers categorical outputs. Numbers
// computed by attention (counts, sums, averages) live in neuron values; when a categorical
// operation needs one (a comparison, a select, a lookup) it is discretised into candidate
// atoms by step functions, and from there on atoms carry 0/1 values that products and
// sums propagate. With hard selection this reproduces the interpreter on every input of
// the given vocabulary and maximum length.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "lrnn/rasp.hpp"
#include "lrnn/syntax.hpp"

namespace lrnn::rasp {

namespace {

[[noreturn]] void fail(const std::string& message) { throw Error(ErrorKind::Semantic, message); }

std::string number_text(double d) {
  char buf[64];
  for (int prec = 15; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

// Candidate value sets: numbers first (ascending, merged within the comparison tolerance),
// then strings (bytewise), then None.
struct ValueLess {
  bool operator()(const Value& a, const Value& b) const {
    int ra = is_number(a) ? 0 : is_string(a) ? 1 : 2;
    int rb = is_number(b) ? 0 : is_string(b) ? 1 : 2;
    if (ra != rb) return ra < rb;
    if (ra == 2) return false;
    return compare_values(a, b) < 0;
  }
};
using ValueSet = std::set<Value, ValueLess>;

std::vector<Value> to_vector(const ValueSet& s) { return {s.begin(), s.end()}; }

bool all_numbers(const std::vector<Value>& vs) {
  for (const auto& v : vs)
    if (!is_number(v)) return false;
  return true;
}

Term var(const std::string& name) { return Term::variable(name); }

Literal atom(const std::string& pred, std::vector<Term> args) {
  Literal l;
  l.predicate = pred;
  l.args = std::move(args);
  return l;
}

Literal weighted(double w, Literal l) {
  l.weight = ValueSpec::scalar(w, true);
  return l;
}

Literal soft_not(Literal l) {
  l.soft_negated = true;
  return l;
}

Literal hard_not(Literal l) {
  l.negated = true;
  return l;
}

Literal builtin(const std::string& name, std::vector<Term> args) {
  Literal l = atom(name, std::move(args));
  l.builtin = true;
  return l;
}

MetaEntry meta(const std::string& key, const std::string& value) {
  MetaEntry m;
  m.key = key;
  m.value.name = value;
  return m;
}

const char* builtin_name(Predicate p) {
  switch (p) {
    case Predicate::Eq: return "eq";
    case Predicate::Ne: return "neq";
    case Predicate::Lt: return "lt";
    case Predicate::Le: return "leq";
    case Predicate::Gt: return "gt";
    case Predicate::Ge: return "geq";
    case Predicate::True: return "true";
    case Predicate::False: return "false";
  }
  return "true";
}

struct Rep {
  std::string pred;
  bool numeric = false;
  bool exact = false;  // categorical/selector: only true atoms exist, all valued 1
};

constexpr double kMaxEnumeratedInputs = 200000;

class Lowerer {
 public:
  Lowerer(std::vector<Value> vocab, int max_len, Convention convention, size_t max_values)
      : vocab_(std::move(vocab)), max_len_(max_len), convention_(convention), max_values_(max_values) {
    if (max_len_ < 1) fail("lowering needs --max-len of at least 1");
    if (vocab_.empty()) fail("lowering needs a non-empty vocabulary");
    used_.insert({"token", "index", "out", "pos"});
  }

  LoweredTemplate lower(const SOp& output) {
    auto order = topological_order(output.node());
    bool enumerated = enumerate_values(output, order);
    for (const Node* n : order) lower_node(n);
    // None is the constant `none`, and the string "none" is the constant 'none', which the
    // engine reads as the same symbol: an s-op that can hold both cannot be lowered.
    const std::string none_text = print_term(value_term(Value{}));
    for (const Node* n : order) {
      auto it = values_.find(n);
      if (it == values_.end()) continue;
      bool has_none = false, has_string = false;
      for (const auto& v : it->second) {
        has_none |= is_none(v);
        has_string |= is_string(v) && std::get<std::string>(v) == none_text;
      }
      if (has_none && has_string)
        fail("cannot lower " + n->description() + ": it can hold both None and the string \"" + none_text +
             "\", which are one constant in a template");
    }
    const Node* root = output.node().get();
    const Rep& r = rep_.at(root);
    LoweredTemplate out;
    if (r.numeric) {
      emit(atom("out", {var("I")}), {atom(r.pred, {var("I")})});
      out.output_predicate = "out/1";
      out.output_numeric = true;
    } else {
      emit(atom("out", {var("I"), var("V")}), {atom(r.pred, {var("I"), var("V")})});
      out.output_predicate = "out/2";
    }
    out.exact = !r.numeric && r.exact;
    out.values_enumerated = enumerated;
    out.ast = std::move(ast_);
    out.text = print_template(out.ast);
    for (const Node* n : order)
      if (!n->is_selector() && values_.count(n)) out.value_sets.emplace_back(n->display_name(), to_vector(values_.at(n)));
    if (values_.count(root)) out.output_values = to_vector(values_.at(root));
    return out;
  }

 private:
  std::vector<Value> vocab_;
  int max_len_;
  Convention convention_;
  size_t max_values_;
  TemplateAst ast_;
  std::unordered_map<const Node*, Rep> rep_;
  std::unordered_map<const Node*, ValueSet> values_;
  std::unordered_map<const Node*, std::string> numeric_view_, categorical_view_, reciprocal_view_;
  std::set<std::string> used_;

  // ---- emission helpers ----------------------------------------------------------------

  std::string fresh(const std::string& base) {
    std::string clean;
    for (char c : base) {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') clean += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      else if (!clean.empty() && clean.back() != '_') clean += '_';
    }
    while (!clean.empty() && clean.back() == '_') clean.pop_back();
    if (clean.empty() || !std::islower(static_cast<unsigned char>(clean[0]))) clean = "s_" + clean;
    std::string name = clean;
    for (int k = 2; used_.count(name); ++k) name = clean + "_" + std::to_string(k);
    used_.insert(name);
    return name;
  }

  std::string pred_name(const Node* n, const char* fallback) {
    if (!n->name.empty()) return fresh(n->name);
    return fresh(std::string(fallback) + std::to_string(n->id));
  }

  void emit(Literal head, std::vector<Literal> body, std::vector<MetaEntry> m = {},
            std::optional<double> offset = std::nullopt) {
    Rule r;
    r.head = std::move(head);
    r.body = std::move(body);
    r.meta = std::move(m);
    if (offset) r.offset = ValueSpec::scalar(*offset, true);
    ast_.rules.push_back(std::move(r));
  }

  static Literal pos(const std::string& v) { return atom("index", {var(v), var("P" + v)}); }

  // ---- value sets ----------------------------------------------------------------------

  // When the inputs over the vocabulary up to the maximum length are few enough, the value
  // sets are exactly the values the interpreter meets on them (inputs it rejects are
  // skipped: the lowering need not agree where the program has no output). This keeps
  // values that can never occur together (say (i+1) * k/n for k > i+1) out of the
  // candidates. Otherwise they are inferred node by node from the children's sets.
  bool enumerate_values(const SOp& output, const std::vector<const Node*>& order) {
    double count = 0, power = 1;
    for (int len = 1; len <= max_len_; ++len) {
      power *= static_cast<double>(vocab_.size());
      count += power;
    }
    if (count > kMaxEnumeratedInputs) return false;
    std::unordered_map<const Node*, ValueSet> seen;
    std::vector<size_t> idx;
    for (int len = 1; len <= max_len_; ++len) {
      idx.assign(static_cast<size_t>(len), 0);
      while (true) {
        std::vector<Value> input;
        for (size_t i : idx) input.push_back(vocab_[i]);
        try {
          Evaluation ev = evaluate(output, input, convention_);
          for (const auto& [node, vals] : ev.values)
            for (const auto& v : vals) insert(seen[node], v);
        } catch (const Error&) {
          // not an input of this program
        }
        size_t k = 0;
        while (k < idx.size() && ++idx[k] == vocab_.size()) idx[k++] = 0;
        if (k == idx.size()) break;
      }
    }
    for (const Node* n : order) {
      if (n->is_selector()) continue;
      ValueSet& s = seen[n];
      // the sets of the inputs and of constants are what the vocabulary allows
      if (n->kind == Kind::Tokens || n->kind == Kind::Indices || n->kind == Kind::Length ||
          n->kind == Kind::Constant)
        continue;
      if (n->kind == Kind::Aggregate) insert(s, n->constant);
      check_size(s, n);
      values_[n] = std::move(s);
    }
    return true;
  }

  void check_size(const ValueSet& s, const Node* n) {
    if (s.size() > max_values_)
      fail("cannot lower " + n->display_name() + ": more than " + std::to_string(max_values_) +
           " possible values over this vocabulary and maximum length (use a smaller --max-len or vocabulary)");
  }

  void insert(ValueSet& s, const Value& v) {
    if (auto it = s.find(v); it != s.end()) return;  // equal within tolerance
    s.insert(v);
  }

  const ValueSet& values(const Node* n) {
    if (auto it = values_.find(n); it != values_.end()) return it->second;
    ValueSet s;
    auto kid = [&](size_t i) -> const ValueSet& { return values(n->children[i].get()); };
    auto attempt = [&](auto&& f) {
      try {
        insert(s, f());
      } catch (const std::exception&) {
        // A combination the program never meets (the interpreter would fail on it).
      }
    };
    switch (n->kind) {
      case Kind::Tokens: for (const auto& v : vocab_) insert(s, v); break;
      case Kind::Indices: for (int i = 0; i < max_len_; ++i) insert(s, Value(int64_t{i})); break;
      case Kind::Length: for (int i = 1; i <= max_len_; ++i) insert(s, Value(int64_t{i})); break;
      case Kind::Constant: insert(s, n->constant); break;
      case Kind::Map: for (const auto& v : kid(0)) attempt([&] { return apply_elementwise(*n, {v}); }); break;
      case Kind::Unary: for (const auto& v : kid(0)) attempt([&] { return apply_elementwise(*n, {v}); }); break;
      case Kind::Binary:
        guard_product(n, {kid(0).size(), kid(1).size()});
        for (const auto& a : kid(0))
          for (const auto& b : kid(1)) attempt([&] { return apply_elementwise(*n, {a, b}); });
        break;
      case Kind::ZipMap: {
        std::vector<std::vector<Value>> sets;
        std::vector<size_t> sizes;
        for (size_t i = 0; i < n->children.size(); ++i) {
          sets.push_back(to_vector(kid(i)));
          sizes.push_back(sets.back().size());
        }
        guard_product(n, sizes);
        for_each_combination(sets, [&](const std::vector<Value>& args) { attempt([&] { return apply_elementwise(*n, args); }); });
        break;
      }
      case Kind::Where: {
        bool t = false, f = false;
        for (const auto& c : kid(0)) {
          if (is_none(c)) insert(s, Value{});  // an undefined condition gives None
          else (truthy(c) ? t : f) = true;
        }
        if (t) for (const auto& v : kid(1)) insert(s, v);
        if (f) for (const auto& v : kid(2)) insert(s, v);
        break;
      }
      case Kind::Aggregate: {
        const ValueSet& vals = kid(1);
        insert(s, n->constant);
        for (const auto& v : vals) insert(s, v);  // one selected value passes through
        std::vector<Value> nums;
        for (const auto& v : vals)
          if (is_number(v)) nums.push_back(v);
        Convention conv = n->convention == Convention::Default ? convention_ : n->convention;
        if (!nums.empty()) {
          // sums (or averages) of 2..max_len selected numbers
          std::set<double> level{0.0};
          for (int k = 1; k <= max_len_; ++k) {
            std::set<double> next;
            for (double base : level)
              for (const auto& v : nums) next.insert(base + to_double(v));
            level = merge_close(next);
            if (level.size() > max_values_) fail_size(n);
            if (k >= 2)
              for (double x : level) {
                double r = conv == Convention::Mean ? x / k : x;
                bool integral = all_integral(nums) && conv != Convention::Mean;
                insert(s, integral ? Value(static_cast<int64_t>(std::llround(r))) : Value(r));
              }
          }
        }
        break;
      }
      case Kind::SelectorWidth: for (int i = 0; i <= max_len_; ++i) insert(s, Value(int64_t{i})); break;
      default: break;
    }
    check_size(s, n);
    return values_[n] = std::move(s);
  }

  [[noreturn]] void fail_size(const Node* n) {
    fail("cannot lower " + n->display_name() + ": more than " + std::to_string(max_values_) +
         " possible values over this vocabulary and maximum length");
  }

  static bool all_integral(const std::vector<Value>& nums) {
    for (const auto& v : nums)
      if (std::holds_alternative<double>(v)) return false;
    return true;
  }

  static std::set<double> merge_close(const std::set<double>& in) {
    std::set<double> out;
    for (double x : in)
      if (out.empty() || !values_equal(Value(*out.rbegin()), Value(x))) out.insert(x);
    return out;
  }

  void guard_product(const Node* n, const std::vector<size_t>& sizes) {
    double total = 1;
    for (size_t s : sizes) total *= static_cast<double>(s);
    if (total > 200000)
      fail("cannot lower " + n->display_name() + ": its inputs have " + number_text(total) +
           " value combinations (more than 200000)");
  }

  template <typename F>
  static void for_each_combination(const std::vector<std::vector<Value>>& sets, F&& f) {
    std::vector<size_t> idx(sets.size(), 0);
    for (const auto& s : sets)
      if (s.empty()) return;
    std::vector<Value> args(sets.size());
    while (true) {
      for (size_t i = 0; i < sets.size(); ++i) args[i] = sets[i][idx[i]];
      f(args);
      size_t k = 0;
      while (k < sets.size() && ++idx[k] == sets[k].size()) idx[k++] = 0;
      if (k == sets.size()) return;
    }
  }

  // ---- views ------------------------------------------------------------------------------

  // The number an s-op holds, as a neuron value per position.
  std::string numeric(const Node* n) {
    const Rep& r = rep_.at(n);
    if (r.numeric) return r.pred;
    if (auto it = numeric_view_.find(n); it != numeric_view_.end()) return it->second;
    std::string name = fresh(r.pred + "_num");
    for (const auto& v : values(n)) {
      if (!is_number(v))
        fail("cannot use " + n->display_name() + " as a number: it can hold " + repr(v));
      emit(atom(name, {var("I")}), {weighted(to_double(v), atom(r.pred, {var("I"), value_term(v)}))});
    }
    return numeric_view_[n] = name;
  }

  // 1/x per position (x: the s-op's number).
  std::string reciprocal(const Node* n) {
    if (auto it = reciprocal_view_.find(n); it != reciprocal_view_.end()) return it->second;
    const Rep& r = rep_.at(n);
    std::string name = fresh(r.pred + "_inv");
    if (r.numeric) {
      emit(atom(name, {var("I")}), {atom(r.pred, {var("I")})}, {meta("activation", "inverse")});
    } else {
      for (const auto& v : values(n)) {
        if (!is_number(v)) fail("cannot divide by " + n->display_name() + ": it can hold " + repr(v));
        double d = to_double(v);
        if (d == 0) continue;  // the interpreter fails on a division by zero
        emit(atom(name, {var("I")}), {weighted(1.0 / d, atom(r.pred, {var("I"), value_term(v)}))});
      }
    }
    return reciprocal_view_[n] = name;
  }

  // The value an s-op holds, as candidate atoms pred(I, v).
  std::string categorical(const Node* n) {
    const Rep& r = rep_.at(n);
    if (!r.numeric) return r.pred;
    if (auto it = categorical_view_.find(n); it != categorical_view_.end()) return it->second;
    std::vector<Value> cands = to_vector(values(n));
    for (const auto& c : cands)
      if (!is_number(c)) fail("internal: numerical s-op " + n->display_name() + " with value " + repr(c));
    std::string name = fresh(r.pred + "_val");
    if (cands.size() == 1) {
      emit(atom(name, {var("I"), value_term(cands[0])}), {pos("I")});
    } else {
      // step k is 1 when x lies above the midpoint between candidates k and k+1
      std::string step = fresh(r.pred + "_above");
      for (size_t k = 0; k + 1 < cands.size(); ++k) {
        double mid = (to_double(cands[k]) + to_double(cands[k + 1])) / 2;
        emit(atom(step, {var("I"), Term::number(std::to_string(k))}), {atom(r.pred, {var("I")})},
             {meta("activation", "signum")}, -mid);
      }
      auto above = [&](size_t k) { return atom(step, {var("I"), Term::number(std::to_string(k))}); };
      for (size_t k = 0; k < cands.size(); ++k) {
        std::vector<Literal> body;
        if (k > 0) body.push_back(above(k - 1));
        if (k + 1 < cands.size()) body.push_back(soft_not(above(k)));
        std::vector<MetaEntry> m;
        if (body.size() > 1) m.push_back(meta("combination", "product"));
        emit(atom(name, {var("I"), value_term(cands[k])}), std::move(body), std::move(m));
      }
    }
    return categorical_view_[n] = name;
  }

  // ---- nodes -------------------------------------------------------------------------------

  bool numeric_capable(const Node* n) {
    const Rep& r = rep_.at(n);
    return r.numeric || all_numbers(to_vector(values(n)));
  }

  void lower_node(const Node* n) {
    Rep r;
    switch (n->kind) {
      case Kind::Tokens: r = {"token", false, true}; values(n); break;
      case Kind::Indices: r = {"index", false, true}; values(n); break;
      case Kind::Length: {
        // length = the last index + 1, found by grounding (no counting needed)
        r = {n->name.empty() ? fresh("length") : pred_name(n, "length"), false, true};
        std::string later = fresh(r.pred + "_has_later"), last = fresh(r.pred + "_last");
        emit(atom(later, {var("M")}), {atom("index", {var("J"), var("M")}), atom("index", {var("K"), var("M2")}),
                                       builtin("lt", {var("M"), var("M2")})});
        emit(atom(last, {var("M")}), {atom("index", {var("J"), var("M")}), hard_not(atom(later, {var("M")}))});
        emit(atom(r.pred, {var("I"), var("N")}), {pos("I"), atom(last, {var("M")}), builtin("add", {var("M"), Term::number("1"), var("N")})},
             {meta("combination", "product")});
        break;
      }
      case Kind::Constant:
        r = {pred_name(n, "const"), false, true};
        emit(atom(r.pred, {var("I"), value_term(n->constant)}), {pos("I")});
        break;
      case Kind::Map: case Kind::ZipMap: case Kind::Unary: case Kind::Binary: case Kind::Where:
        r = lower_elementwise(n);
        break;
      case Kind::Select: {
        r = {pred_name(n, "sel"), false, false};
        const Node* k = n->children[0].get();
        const Node* q = n->children[1].get();
        if (n->predicate == Predicate::True || n->predicate == Predicate::False) {
          std::vector<Literal> body{pos("I"), pos("J")};
          if (n->predicate == Predicate::False) body.push_back(builtin("false", {}));
          emit(atom(r.pred, {var("I"), var("J")}), body, {meta("combination", "product")});
          r.exact = true;
          break;
        }
        std::string qp = categorical(q), kp = categorical(k);
        emit(atom(r.pred, {var("I"), var("J")}),
             {atom(qp, {var("I"), var("A")}), atom(kp, {var("J"), var("B")}),
              builtin(builtin_name(n->predicate), {var("B"), var("A")})},
             {meta("combination", "product"), meta("aggregation", "sum")});
        r.exact = rep_.at(k).exact && !rep_.at(k).numeric && rep_.at(q).exact && !rep_.at(q).numeric;
        break;
      }
      case Kind::SelectAnd: {
        const Rep& a = rep_.at(n->children[0].get());
        const Rep& b = rep_.at(n->children[1].get());
        r = {pred_name(n, "sel"), false, a.exact && b.exact};
        emit(atom(r.pred, {var("I"), var("J")}), {atom(a.pred, {var("I"), var("J")}), atom(b.pred, {var("I"), var("J")})},
             {meta("combination", "product")});
        break;
      }
      case Kind::SelectOr: {
        // a or b = a + b - a*b on 0/1 values
        const Rep& a = rep_.at(n->children[0].get());
        const Rep& b = rep_.at(n->children[1].get());
        r = {pred_name(n, "sel"), false, a.exact && b.exact};
        std::string both = fresh(r.pred + "_both");
        emit(atom(both, {var("I"), var("J")}), {atom(a.pred, {var("I"), var("J")}), atom(b.pred, {var("I"), var("J")})},
             {meta("combination", "product")});
        emit(atom(r.pred, {var("I"), var("J")}), {atom(a.pred, {var("I"), var("J")})});
        emit(atom(r.pred, {var("I"), var("J")}), {atom(b.pred, {var("I"), var("J")})});
        emit(atom(r.pred, {var("I"), var("J")}), {weighted(-1, atom(both, {var("I"), var("J")}))});
        break;
      }
      case Kind::SelectNot: {
        const Rep& a = rep_.at(n->children[0].get());
        r = {pred_name(n, "sel"), false, a.exact};
        emit(atom(r.pred, {var("I"), var("J")}), {pos("I"), pos("J"), hard_not(atom(a.pred, {var("I"), var("J")}))},
             {meta("combination", "product")});
        if (!a.exact) emit(atom(r.pred, {var("I"), var("J")}), {soft_not(atom(a.pred, {var("I"), var("J")}))});
        break;
      }
      case Kind::Aggregate: r = lower_aggregate(n); break;
      case Kind::SelectorWidth: {
        const Rep& s = rep_.at(n->children[0].get());
        r = {pred_name(n, "width"), true, false};
        values(n);
        if (s.exact) {
          emit(atom(r.pred, {var("I")}), {atom(s.pred, {var("I"), var("J")})}, {meta("aggregation", "count")});
        } else {
          emit(atom(r.pred, {var("I")}), {atom(s.pred, {var("I"), var("J")})}, {meta("aggregation", "sum")});
        }
        emit(atom(r.pred, {var("I")}), {weighted(0, pos("I"))});  // zero when nothing is selected
        break;
      }
    }
    rep_[n] = r;
  }

  Rep lower_elementwise(const Node* n) {
    const bool arithmetic = (n->kind == Kind::Binary && (n->op == Op::Add || n->op == Op::Sub ||
                                                         n->op == Op::Mul || n->op == Op::Div)) ||
                            (n->kind == Kind::Unary && n->op == Op::Neg);
    bool any_numeric = false;
    for (const auto& c : n->children) any_numeric |= rep_.at(c.get()).numeric;
    const bool want_categorical = n->encoding == Encoding::Categorical;
    const bool want_numeric = n->encoding == Encoding::Numerical;

    if (arithmetic && !want_categorical && (any_numeric || want_numeric)) {
      bool capable = true;
      for (const auto& c : n->children) capable &= numeric_capable(c.get());
      if (capable) return lower_arithmetic(n);
    }
    if (n->kind == Kind::Where && !want_categorical) {
      const Node* t = n->children[1].get();
      const Node* f = n->children[2].get();
      if ((rep_.at(t).numeric || rep_.at(f).numeric) && numeric_capable(t) && numeric_capable(f))
        return lower_numeric_where(n);
    }
    return lower_lookup(n);
  }

  Rep lower_arithmetic(const Node* n) {
    Rep r{pred_name(n, "num"), true, false};
    Literal head = atom(r.pred, {var("I")});
    auto x = [&](size_t i) { return atom(numeric(n->children[i].get()), {var("I")}); };
    if (n->kind == Kind::Unary) {
      emit(head, {weighted(-1, x(0))});
      return r;
    }
    switch (n->op) {
      case Op::Add: emit(head, {x(0), x(1)}); break;
      case Op::Sub: emit(head, {x(0), weighted(-1, x(1))}); break;
      case Op::Mul: emit(head, {x(0), x(1)}, {meta("combination", "product")}); break;
      case Op::Div:
        emit(head, {x(0), atom(reciprocal(n->children[1].get()), {var("I")})}, {meta("combination", "product")});
        break;
      default: fail("internal: not arithmetic");
    }
    return r;
  }

  Rep lower_numeric_where(const Node* n) {
    Rep r{pred_name(n, "num"), true, false};
    const Node* c = n->children[0].get();
    std::string cp = categorical(c);
    std::string tp = numeric(n->children[1].get()), fp = numeric(n->children[2].get());
    for (const auto& v : values(c))
      emit(atom(r.pred, {var("I")}), {atom(cp, {var("I"), value_term(v)}), atom(truthy(v) ? tp : fp, {var("I")})},
           {meta("combination", "product")});
    return r;
  }

  // A finite lookup: one rule per combination of input values.
  Rep lower_lookup(const Node* n) {
    Rep r{pred_name(n, "map"), false, true};
    std::vector<std::string> inputs;
    for (const auto& c : n->children) {
      inputs.push_back(categorical(c.get()));
      const Rep& cr = rep_.at(c.get());
      r.exact &= !cr.numeric && cr.exact;
    }
    values(n);
    auto emit_row = [&](const Value& out, std::vector<Literal> body) {
      std::vector<MetaEntry> m;
      if (body.size() > 1) m.push_back(meta("combination", "product"));
      emit(atom(r.pred, {var("I"), value_term(out)}), std::move(body), std::move(m));
    };
    auto in = [&](size_t i, const Value& v) { return atom(inputs[i], {var("I"), value_term(v)}); };
    if (n->kind == Kind::Where) {
      for (const auto& c : values(n->children[0].get())) {
        if (is_none(c)) {
          emit_row(Value{}, {in(0, c)});
          continue;
        }
        size_t branch = truthy(c) ? 1 : 2;
        for (const auto& v : values(n->children[branch].get())) emit_row(v, {in(0, c), in(branch, v)});
      }
      return r;
    }
    std::vector<std::vector<Value>> sets;
    std::vector<size_t> sizes;
    for (const auto& c : n->children) {
      sets.push_back(to_vector(values(c.get())));
      sizes.push_back(sets.back().size());
    }
    guard_product(n, sizes);
    for_each_combination(sets, [&](const std::vector<Value>& args) {
      Value out;
      try {
        out = apply_elementwise(*n, args);
      } catch (const std::exception&) {
        return;  // the interpreter fails on this combination
      }
      std::vector<Literal> body;
      for (size_t i = 0; i < args.size(); ++i) body.push_back(in(i, args[i]));
      emit_row(out, std::move(body));
    });
    return r;
  }

  Rep lower_aggregate(const Node* n) {
    const Node* sel = n->children[0].get();
    const Node* val = n->children[1].get();
    const Rep& s = rep_.at(sel);
    const Rep& v = rep_.at(val);
    Convention conv = n->convention == Convention::Default ? convention_ : n->convention;
    std::vector<Value> outs = to_vector(values(n));
    bool numeric_out = n->encoding == Encoding::Numerical ||
                       (n->encoding != Encoding::Categorical && all_numbers(outs));
    if (n->encoding == Encoding::Numerical && !all_numbers(outs))
      fail("aggregate " + n->display_name() + " is annotated numerical but can hold non-numbers");

    const std::string pred = pred_name(n, "agg");
    // nosel(I): 1 where the query selects nothing
    std::string nosel = fresh(pred + "_none");
    std::string any = fresh(pred + "_any");
    emit(atom(any, {var("I")}), {atom(s.pred, {var("I"), var("J")})}, {meta("aggregation", "max")});
    emit(atom(nosel, {var("I")}), {pos("I"), hard_not(atom(any, {var("I")}))});
    if (!s.exact) emit(atom(nosel, {var("I")}), {soft_not(atom(any, {var("I")}))});

    if (!numeric_out) {
      // a gather: the selected value passes through (at most one is selected)
      Rep r{pred, false, s.exact && !v.numeric && v.exact};
      std::string vp = categorical(val);
      emit(atom(r.pred, {var("I"), var("V")}), {atom(s.pred, {var("I"), var("J")}), atom(vp, {var("J"), var("V")})},
           {meta("combination", "product"), meta("aggregation", "sum")});
      emit(atom(r.pred, {var("I"), value_term(n->constant)}), {atom(nosel, {var("I")})});
      return r;
    }
    if (!is_number(n->constant)) fail("aggregate " + n->display_name() + ": a numerical aggregate needs a numeric default");
    Rep r{pred, true, false};
    std::string vp = numeric(val);
    double d = to_double(n->constant);
    std::vector<Literal> gather{atom(s.pred, {var("I"), var("J")}), atom(vp, {var("J")})};
    if (conv == Convention::Mean && !s.exact) {
      // mean = sum / count, with the count kept away from 0 where nothing is selected
      std::string sum = fresh(r.pred + "_sum"), cnt = fresh(r.pred + "_count"), inv = fresh(r.pred + "_inv");
      emit(atom(sum, {var("I")}), gather, {meta("combination", "product"), meta("aggregation", "sum")});
      emit(atom(cnt, {var("I")}), {atom(s.pred, {var("I"), var("J")})}, {meta("aggregation", "sum")});
      emit(atom(cnt, {var("I")}), {atom(nosel, {var("I")})});
      emit(atom(inv, {var("I")}), {atom(cnt, {var("I")})}, {meta("activation", "inverse")});
      emit(atom(r.pred, {var("I")}), {atom(sum, {var("I")}), atom(inv, {var("I")})}, {meta("combination", "product")});
    } else {
      emit(atom(r.pred, {var("I")}), gather,
           {meta("combination", "product"), meta("aggregation", conv == Convention::Mean ? "avg" : "sum")});
    }
    emit(atom(r.pred, {var("I")}), {weighted(d, atom(nosel, {var("I")}))});
    return r;
  }
};

}  // namespace

Term value_term(const Value& v) {
  if (auto* s = std::get_if<std::string>(&v)) {
    Term t;
    t.kind = Term::Kind::String;
    t.text = *s;
    return t;
  }
  if (auto* b = std::get_if<bool>(&v)) return Term::number(*b ? "1" : "0");
  if (auto* i = std::get_if<int64_t>(&v)) return Term::number(std::to_string(*i));
  if (auto* d = std::get_if<double>(&v)) {
    if (std::isfinite(*d) && *d == std::nearbyint(*d) && std::fabs(*d) < 1e15)
      return Term::number(std::to_string(static_cast<int64_t>(*d)));
    return Term::number(number_text(*d));
  }
  return Term::constant("none");
}

LoweredTemplate to_template(const SOp& output, const std::vector<Value>& vocab, int max_len,
                            Convention convention, size_t max_values) {
  if (!output.node()) fail("cannot lower an empty s-op");
  if (convention == Convention::Default) convention = Convention::Sum;
  Lowerer lowerer(vocab, max_len, convention, max_values);
  return lowerer.lower(output);
}

ExampleAst example_facts(const std::vector<Value>& input) {
  ExampleAst ex;
  for (size_t i = 0; i < input.size(); ++i) {
    Term idx = Term::number(std::to_string(i));
    ex.facts.push_back(atom("token", {idx, value_term(input[i])}));
    ex.facts.push_back(atom("index", {idx, idx}));
  }
  return ex;
}

}  // namespace lrnn::rasp
