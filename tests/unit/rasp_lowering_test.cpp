// Lowering RASP programs to templates: the emitted rules, their round trip through the
// template parser, and their evaluation on every input up to a length over a small
// vocabulary, which must equal the interpreter's output.
//
// The evaluation uses a small reference evaluator of the template semantics
// (docs/language.md "From a template and an example to a network") restricted to what the
// lowering emits: positive, `!` and `~` literals, comparison and @add builtins, fixed
// literal weights and offsets, sum/product combinations, sum/avg/max/count aggregations and
// identity/signum/inverse activations. Categorical outputs of exact lowerings are also
// checked through the logic engine's query answering (lrnn::logic::answer_query).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <functional>
#include <memory>
#include <set>
#include <unordered_map>

#include "exec/plan.hpp"
#include "logic/grounder.hpp"
#include "logic/program.hpp"
#include "lrnn/logic.hpp"
#include "neural/network.hpp"
#include "neural/template_model.hpp"
#include "lrnn/rasp.hpp"
#include "lrnn/syntax.hpp"

namespace {

using namespace lrnn;
using namespace lrnn::rasp;

// ---- the reference evaluator ------------------------------------------------------------------

std::string canonical(const Term& t) {
  if (t.kind == Term::Kind::Number) {
    double d = std::stod(t.text);
    char buf[64];
    std::snprintf(buf, sizeof buf, "n:%.17g", d);
    return buf;
  }
  return "s:" + t.text;
}

bool is_num(const std::string& c) { return c.rfind("n:", 0) == 0; }
double num(const std::string& c) { return std::stod(c.substr(2)); }

int compare_constants(const std::string& a, const std::string& b) {
  if (is_num(a) && is_num(b)) {
    double x = num(a), y = num(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (is_num(a) != is_num(b)) return is_num(a) ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

std::string number_constant(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "n:%.17g", d);
  return buf;
}

// Constants are interned: equal constants get equal ids (numbers by value).
struct Constants {
  std::unordered_map<std::string, int> ids;
  std::vector<std::string> text;
  std::vector<char> numeric;
  std::vector<double> number;
  int id(const std::string& canonical_text) {
    auto [it, inserted] = ids.emplace(canonical_text, static_cast<int>(text.size()));
    if (inserted) {
      text.push_back(canonical_text);
      numeric.push_back(is_num(canonical_text));
      number.push_back(numeric.back() ? num(canonical_text) : 0.0);
    }
    return it->second;
  }
  int compare(int a, int b) const {
    if (a == b) return 0;
    if (numeric[a] && numeric[b]) return number[a] < number[b] ? -1 : number[a] > number[b] ? 1 : 0;
    if (numeric[a] != numeric[b]) return numeric[a] ? -1 : 1;
    return text[a] < text[b] ? -1 : 1;
  }
};

// Atoms of arity <= 2 keyed by their argument ids.
inline uint64_t pack(int a, int b) { return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b); }

struct RefEval {
  struct Relation {
    int arity = 0;
    std::unordered_map<uint64_t, double> atoms;
    std::unordered_map<int, std::vector<std::pair<int, double>>> by_first;  // arity 2: first -> (second, value)
    std::unordered_map<int, std::vector<std::pair<int, double>>> by_second;  // arity 2: second -> (first, value)
    std::vector<std::pair<uint64_t, double>> all;
    void index() {
      by_first.clear();
      by_second.clear();
      all.assign(atoms.begin(), atoms.end());
      if (arity == 2)
        for (const auto& [k, v] : atoms) {
          by_first[static_cast<int>(k >> 32)].emplace_back(static_cast<int>(k & 0xffffffffu), v);
          by_second[static_cast<int>(k & 0xffffffffu)].emplace_back(static_cast<int>(k >> 32), v);
        }
    }
  };
  Constants consts;
  std::unordered_map<std::string, Relation> db;  // "pred/arity" -> atoms

  static std::string key(const Literal& l) { return l.predicate + "/" + std::to_string(l.arity()); }

  static std::string meta_of(const Rule& r, const std::string& k, const std::string& def) {
    for (const auto& m : r.meta)
      if (m.key == k) return m.value.name;
    return def;
  }

  // A rule with its variables numbered and its constants interned.
  struct Arg { int var = -1; int constant = -1; };
  enum class B { None, True, False, Add, Eq, Neq, Lt, Leq, Gt, Geq };
  struct Lit { std::string key, pred; std::vector<Arg> args; double weight = 1; bool soft = false; B op = B::None; };
  struct Compiled {
    std::string head_key;
    std::vector<Arg> head;
    std::vector<Lit> positives, builtins, negations;
    int vars = 0;
    bool product = false, signum = false, inverse = false;
    std::string agg;
    double offset = 0;
  };
  std::vector<Compiled> rules;

  explicit RefEval(const TemplateAst& t) {
    for (const auto& r : t.rules) {
      Compiled c;
      std::map<std::string, int> vars;
      auto arg = [&](const Term& term) {
        Arg a;
        if (term.is_variable()) {
          auto [it, inserted] = vars.emplace(term.text, static_cast<int>(vars.size()));
          a.var = it->second;
        } else {
          a.constant = consts.id(canonical(term));
        }
        return a;
      };
      auto lit = [&](const Literal& l) {
        Lit out{key(l), l.predicate, {}, l.weight ? l.weight->data[0] : 1.0, l.soft_negated};
        for (const auto& t : l.args) out.args.push_back(arg(t));
        if (l.builtin) {
          static const std::map<std::string, B> ops{{"true", B::True}, {"false", B::False}, {"add", B::Add},
                                                    {"eq", B::Eq},     {"neq", B::Neq},     {"lt", B::Lt},
                                                    {"leq", B::Leq},   {"gt", B::Gt},       {"geq", B::Geq}};
          auto it = ops.find(l.predicate);
          EXPECT_TRUE(it != ops.end()) << "builtin @" << l.predicate;
          if (it != ops.end()) out.op = it->second;
        }
        return out;
      };
      EXPECT_LE(r.head.arity(), 2);
      c.head_key = key(r.head);
      for (const auto& t : r.head.args) c.head.push_back(arg(t));
      for (const auto& l : r.body) {
        if (l.builtin) c.builtins.push_back(lit(l));
        else if (l.negated) c.negations.push_back(lit(l));
        else c.positives.push_back(lit(l));
      }
      c.vars = static_cast<int>(vars.size());
      c.product = meta_of(r, "combination", "sum") == "product";
      std::string act = meta_of(r, "activation", "identity");
      c.signum = act == "signum";
      c.inverse = act == "inverse";
      c.agg = meta_of(r, "aggregation", "avg");
      c.offset = r.offset ? r.offset->data[0] : 0.0;
      rules.push_back(std::move(c));
    }
  }

  void run(const ExampleAst& ex) {
    db.clear();
    for (const auto& f : ex.facts) {
      Relation& rel = db[key(f)];
      rel.arity = f.arity();
      int a = f.arity() > 0 ? consts.id(canonical(f.args[0])) : 0;
      int b = f.arity() > 1 ? consts.id(canonical(f.args[1])) : 0;
      rel.atoms[pack(a, b)] = f.weight ? f.weight->data[0] : 1.0;
    }
    for (auto& [k, rel] : db) rel.index();
    std::set<std::string> done;
    size_t i = 0;
    while (i < rules.size()) {
      const std::string head = rules[i].head_key;
      ASSERT_FALSE(done.count(head)) << "rules of " << head << " are not contiguous";
      Relation rel;
      rel.arity = static_cast<int>(rules[i].head.size());
      size_t j = i;
      for (; j < rules.size() && rules[j].head_key == head; ++j) evaluate_rule(rules[j], rel.atoms);
      rel.index();
      db[head] = std::move(rel);
      done.insert(head);
      i = j;
    }
  }

  // Adds the aggregated value per ground head of one template rule to `out` (the atom
  // combines its rules by sum). No rule the lowering emits can ground the same body twice
  // (every variable is in the head or an input literal), so there is nothing to dedupe.
  void evaluate_rule(const Compiled& r, std::unordered_map<uint64_t, double>& out) {
    struct Agg { double sum = 0, max = -1e300; size_t count = 0; };
    std::unordered_map<uint64_t, Agg> per_head;
    std::vector<int> slot(static_cast<size_t>(r.vars), -1);
    std::vector<double> inputs(r.positives.size());
    auto value_of = [&](const Arg& a) { return a.var < 0 ? a.constant : slot[a.var]; };
    auto atom_key = [&](const std::vector<Arg>& args) {
      return pack(args.size() > 0 ? value_of(args[0]) : 0, args.size() > 1 ? value_of(args[1]) : 0);
    };
    std::function<void(size_t)> join = [&](size_t k) {
      if (k < r.positives.size()) {
        const Lit& l = r.positives[k];
        auto it = db.find(l.key);
        if (it == db.end()) return;
        const Relation& rel = it->second;
        auto visit = [&](int a0, int a1, double v) {
          int bound_here[2] = {-1, -1};
          int vals[2] = {a0, a1};
          bool ok = true;
          for (size_t a = 0; a < l.args.size() && ok; ++a) {
            const Arg& arg = l.args[a];
            if (arg.var >= 0 && slot[arg.var] < 0) {
              slot[arg.var] = vals[a];
              bound_here[a] = arg.var;
            } else {
              ok = value_of(arg) == vals[a];
            }
          }
          if (ok) {
            double x = l.soft ? 1 - v : v;
            inputs[k] = x * l.weight;
            join(k + 1);
          }
          for (int b : bound_here)
            if (b >= 0) slot[b] = -1;
        };
        if (l.args.size() == 2 && value_of(l.args[0]) >= 0) {
          auto f = rel.by_first.find(value_of(l.args[0]));
          if (f == rel.by_first.end()) return;
          for (const auto& [second, v] : f->second) visit(value_of(l.args[0]), second, v);
        } else if (l.args.size() == 2 && value_of(l.args[1]) >= 0) {
          auto f = rel.by_second.find(value_of(l.args[1]));
          if (f == rel.by_second.end()) return;
          for (const auto& [first, v] : f->second) visit(first, value_of(l.args[1]), v);
        } else {
          for (const auto& [key, v] : rel.all) visit(static_cast<int>(key >> 32), static_cast<int>(key & 0xffffffffu), v);
        }
        return;
      }
      int added = -1;
      auto unbind = [&] { if (added >= 0) slot[added] = -1; };
      for (const Lit& b : r.builtins) {
        if (b.op == B::False) return unbind();
        if (b.op == B::True) continue;
        int x = value_of(b.args[0]), y = value_of(b.args[1]);
        if (b.op == B::Add) {
          int sum = consts.id(number_constant(consts.number[x] + consts.number[y]));
          const Arg& z = b.args[2];
          if (z.var >= 0 && slot[z.var] < 0) {
            slot[z.var] = sum;
            added = z.var;
          } else if (value_of(z) != sum) {
            return unbind();
          }
          continue;
        }
        int c = consts.compare(x, y);
        bool holds = b.op == B::Eq ? c == 0 : b.op == B::Neq ? c != 0 : b.op == B::Lt ? c < 0
                   : b.op == B::Leq ? c <= 0 : b.op == B::Gt ? c > 0 : c >= 0;
        if (!holds) return unbind();
      }
      for (const Lit& n : r.negations) {
        auto it = db.find(n.key);
        if (it != db.end() && it->second.atoms.count(atom_key(n.args))) return unbind();
      }
      double v = r.product ? 1.0 : 0.0;
      for (double x : inputs) v = r.product ? v * x : v + x;
      v += r.offset;
      if (r.signum) v = v > 0 ? 1 : 0;
      else if (r.inverse) v = 1 / v;
      Agg& a = per_head[atom_key(r.head)];
      a.sum += v;
      a.max = std::max(a.max, v);
      a.count++;
      unbind();
    };
    join(0);
    for (const auto& [head, a] : per_head) {
      double v = r.agg == "sum" ? a.sum : r.agg == "max" ? a.max : r.agg == "count" ? static_cast<double>(a.count)
                                                                                     : a.sum / static_cast<double>(a.count);
      out[head] += v;
    }
  }

  // Values of the atoms of `pred/arity` as (argument texts, value).
  std::vector<std::pair<std::vector<std::string>, double>> atoms_of(const std::string& k) const {
    std::vector<std::pair<std::vector<std::string>, double>> out;
    auto it = db.find(k);
    if (it == db.end()) return out;
    for (const auto& [key, v] : it->second.atoms) {
      std::vector<std::string> args{consts.text[key >> 32]};
      if (it->second.arity == 2) args.push_back(consts.text[key & 0xffffffffu]);
      out.emplace_back(args, v);
    }
    return out;
  }
};

// The output per position read from the evaluated template: a number (out/1) or the
// candidate whose atom is 1 (out/2); an empty string when no single candidate holds.
std::vector<std::string> read_output(const RefEval& ev, const LoweredTemplate& t, size_t n) {
  std::vector<std::string> out(n);
  if (t.output_numeric) {
    for (const auto& [tuple, v] : ev.atoms_of("out/1")) out[static_cast<size_t>(num(tuple[0]))] = number_constant(v);
    return out;
  }
  std::vector<int> hits(n, 0);
  for (const auto& [tuple, v] : ev.atoms_of("out/2")) {
    size_t i = static_cast<size_t>(num(tuple[0]));
    if (v > 0.5) {
      out[i] = tuple[1];
      hits[i]++;
    } else {
      EXPECT_LT(std::fabs(v), 1e-6) << "out(" << i << ", " << tuple[1] << ") = " << v;
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (hits[i] != 1) out[i] = "";
  return out;
}

bool matches(const std::string& got, const Value& want) {
  if (got.empty()) return false;
  std::string w = canonical(value_term(want));
  if (is_num(got) && is_num(w)) return std::fabs(num(got) - num(w)) <= 1e-6 * std::max(1.0, std::fabs(num(w)));
  return got == w;
}

// The lrnn engine itself: ground the example (logic), build its network (neural), run the
// forward pass (exec) and read the out atoms' values. Returns per position the number
// (out/1) or the one candidate valued 1 (out/2), as canonical constants.
struct Engine {
  TemplateAst ast;
  logic::Program program;
  neural::TemplateModel model;
  bool numeric;
  static std::vector<std::vector<std::string>> variables(const logic::Program& p, size_t rules) {
    std::vector<std::vector<std::string>> out;
    for (size_t r = 0; r < rules; ++r) out.push_back(p.rule_variables(static_cast<uint32_t>(r)));
    return out;
  }
  explicit Engine(const LoweredTemplate& t)
      : ast(t.ast), program(ast), model(neural::TemplateModel::compile(ast, variables(program, ast.rules.size()))),
        numeric(t.output_numeric) {}

  std::vector<std::string> run(const std::vector<Value>& input) {
    ExampleAst ex = example_facts(input);
    Literal goal = numeric ? parse_literal("out(I)") : parse_literal("out(I, V)");
    logic::GroundSample g = logic::ground(program, ex, {goal});
    neural::SampleNetwork net = neural::neuralize(model, ex, g);
    exec::Plan plan = exec::build_plan(model, {&net});
    exec::Workspace ws;
    exec::forward(plan, model.params, ws);
    std::vector<std::string> out(input.size());
    std::vector<int> hits(input.size(), 0);
    for (uint32_t local : net.query_atoms[0]) {
      // "out(0, 'a')" -> position and value
      std::string text = program.atom_text(g, net.atom_ground_id[local]);
      size_t open = text.find('('), comma = text.find(','), close = text.rfind(')');
      std::string first = text.substr(open + 1, (comma == std::string::npos ? close : comma) - open - 1);
      size_t i = static_cast<size_t>(std::stod(first));
      double v = ws.values[plan.atom_offsets[0][local]];
      if (numeric) {
        out[i] = number_constant(v);
        continue;
      }
      std::string value = text.substr(comma + 2, close - comma - 2);
      if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') value = value.substr(1, value.size() - 2);
      // the engine prints numbers bare and quotes constants that are not identifiers
      char* end = nullptr;
      double number = std::strtod(value.c_str(), &end);
      bool is_number = !value.empty() && end == value.c_str() + value.size() && text.find("'" + value + "'") == std::string::npos;
      if (v > 0.5) {
        out[i] = is_number ? number_constant(number) : "s:" + value;
        hits[i]++;
      } else {
        EXPECT_LT(std::fabs(v), 1e-6) << text << " = " << v;
      }
    }
    if (!numeric)
      for (size_t i = 0; i < out.size(); ++i)
        if (hits[i] != 1) out[i] = "";
    return out;
  }
};

std::vector<std::vector<Value>> all_inputs(const std::vector<Value>& vocab, int max_len) {
  std::vector<std::vector<Value>> out, layer{{}};
  for (int len = 1; len <= max_len; ++len) {
    std::vector<std::vector<Value>> next;
    for (const auto& s : layer)
      for (const auto& v : vocab) {
        auto t = s;
        t.push_back(v);
        next.push_back(t);
      }
    layer = next;
    out.insert(out.end(), layer.begin(), layer.end());
  }
  return out;
}

std::string show(const std::vector<Value>& in) {
  std::string s;
  for (const auto& v : in) s += to_string(v) + " ";
  return s;
}

// Lowers `program` and checks it against the interpreter on every input up to max_len.
// Returns the number of inputs compared (the interpreter rejects some inputs of some
// programs, e.g. aggregates of several strings; those have no output to reproduce).
enum class Evaluator { Reference, Engine };

size_t check_lowering(const SOp& program, Convention conv, const std::vector<Value>& vocab, int max_len,
                      const std::string& what, Evaluator evaluator = Evaluator::Reference) {
  LoweredTemplate t = to_template(program, vocab, max_len, conv);
  // the text is a template the parser reads back to the same rules
  TemplateAst parsed = parse_template(t.text, what + ".lrnn");
  EXPECT_EQ(parsed, t.ast) << what;
  size_t compared = 0;
  auto started = std::chrono::steady_clock::now();
  struct Report {
    std::string what;
    std::chrono::steady_clock::time_point start;
    size_t rules;
    ~Report() {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
      if (std::getenv("RASP_LOWERING_TIMES")) std::fprintf(stderr, "%s: %zu rules, %lld ms\n", what.c_str(), rules, (long long)ms);
    }
  } report{what, started, t.ast.rules.size()};
  RefEval ev(t.ast);
  std::unique_ptr<Engine> engine;
  if (evaluator == Evaluator::Engine) engine = std::make_unique<Engine>(t);
  for (const auto& input : all_inputs(vocab, max_len)) {
    std::vector<Value> want;
    try {
      want = run(program, input, conv);
    } catch (const Error&) {
      continue;
    }
    ++compared;
    std::vector<std::string> got;
    if (engine) {
      got = engine->run(input);
    } else {
      ev.run(example_facts(input));
      got = read_output(ev, t, input.size());
    }
    for (size_t i = 0; i < input.size(); ++i)
      EXPECT_TRUE(matches(got[i], want[i]))
          << what << " on [" << show(input) << "] position " << i << ": lowered " << got[i] << ", interpreter "
          << repr(want[i]);
    if (::testing::Test::HasFailure()) return compared;
  }
  return compared;
}

std::vector<Value> strs(std::initializer_list<const char*> xs) {
  std::vector<Value> out;
  for (auto x : xs) out.emplace_back(std::string(x));
  return out;
}
std::vector<Value> nums(std::initializer_list<int64_t> xs) {
  std::vector<Value> out;
  for (auto x : xs) out.emplace_back(x);
  return out;
}

// ---- the programs (the blog's, as in rasp_blog_test.cpp) ----------------------------------------

Selector before() { return key(indices()) < query(indices()); }
SOp flip() {
  SOp len = (key(1) == query(1)).value(1);
  return (key(len - indices() - 1) == query(indices())).value(tokens());
}
SOp histogram() { return (key(tokens()) == query(tokens())).value(1); }
SOp window_sum() {
  return ((key(indices()) >= query(indices() - 2)) & (key(indices()) <= query(indices()))).value(tokens());
}
SOp cumsum(const SOp& seq = tokens()) { return (before() | (key(indices()) == query(indices()))).value(seq); }
SOp shift(int i, Value def, const SOp& seq = tokens()) {
  return (key(indices()) == query(indices() - i)).value(seq, def);
}
SOp minimum(const SOp& seq = tokens()) {
  SOp less = ((before() & (key(seq) == query(seq))) | (key(seq) < query(seq))).value(1);
  return (key(less) == query(0)).value(seq);
}
SOp ralign(Value def, const SOp& sop = tokens()) {
  SOp c = (key(sop) == query("_")).value(1);
  return (key(indices() + c) == query(indices())).value(sop, def);
}
SOp split(const char* v, int i, const SOp& sop = tokens()) {
  SOp mid = (key(sop) == query(v)).value(indices());
  if (i == 0) return ralign(Value(std::string("0")), where(indices() < mid, sop, "_"));
  return where(indices() > mid, sop, "0");
}
SOp slide(const SOp& match, const SOp& seq = tokens()) {
  SOp x = cumsum(match);
  SOp y = ((key(x) == query(x + 1)) & (key(match) == query(true))).value(seq);
  return where(match, seq, y);
}
SOp atoi(const SOp& seq) {
  return seq.map([](const Value& x) -> Value { return int64_t{std::get<std::string>(x)[0] - '0'}; }, "atoi");
}
SOp add() {
  SOp x = atoi(split("+", 0)) + atoi(split("+", 1));
  SOp carry = shift(-1, Value(std::string("0")), where(x > 9, "1", where(x == 9, "<", "0")));
  return (x + atoi(slide(carry != "<", carry))) % 10;
}

Program paper(const std::string& file) { return load_rasp_file(std::string(LRNN_SOURCE_DIR) + "/tests/rasp/" + file); }

// ---- tests ------------------------------------------------------------------------------------------

TEST(RaspLowering, EmitsTheRulesOfRaspMd) {
  SOp shifted = shift(1, Value(std::string("_"))).name("shifted");
  LoweredTemplate t = to_template(shifted, strs({"a", "b"}), 3);
  EXPECT_TRUE(t.exact);
  EXPECT_EQ(t.output_predicate, "out/2");
  // select as sel(I, J) :- q(I, A), k(J, B), @eq(B, A).
  EXPECT_NE(t.text.find(":- map"), std::string::npos) << t.text;
  EXPECT_NE(t.text.find("@eq(B, A)"), std::string::npos) << t.text;
  // the gather and the default as a fallback rule
  EXPECT_NE(t.text.find("shifted(I, V) :- sel"), std::string::npos) << t.text;
  EXPECT_NE(t.text.find("shifted(I, '_') :- shifted_none(I)."), std::string::npos) << t.text;
  EXPECT_NE(t.text.find("shifted_none(I) :- index(I, PI), !shifted_any(I)."), std::string::npos) << t.text;

  // numerical aggregates: aggregation=sum (RASPy) or avg (the paper), count for widths
  SOp h = histogram();
  EXPECT_NE(to_template(h, strs({"a", "b"}), 3).text.find("[combination=product, aggregation=sum]"), std::string::npos);
  EXPECT_NE(to_template(h, strs({"a", "b"}), 3, Convention::Mean).text.find("[combination=product, aggregation=avg]"),
            std::string::npos);
  LoweredTemplate w = to_template(selector_width(key(tokens()) == query(tokens())), strs({"a", "b"}), 3);
  EXPECT_TRUE(w.output_numeric);
  EXPECT_NE(w.text.find("[aggregation=count]"), std::string::npos) << w.text;

  // the example facts of an input
  ExampleAst ex = example_facts(strs({"h", "i"}));
  ASSERT_EQ(ex.facts.size(), 4u);
  EXPECT_EQ(print_example(ex), "token(0, 'h'), index(0, 0), token(1, 'i'), index(1, 1).");
}

TEST(RaspLowering, CategoricalOutputsThroughTheLogicEngine) {
  // Exact lowerings: grounding alone derives the output atoms, so query answering on
  // out(I, V) reads the program's output.
  struct Case { SOp program; std::vector<Value> vocab; std::string name; };
  std::vector<Case> cases{{shift(1, Value(std::string("_"))), strs({"a", "b", "c"}), "shift"},
                          {(key(indices()) == query(0)).value(tokens()), strs({"a", "b"}), "first"},
                          {where((tokens() == "h") | (tokens() == "l"), tokens(), "q"), strs({"h", "l", "x"}), "where"},
                          {paper("reverse.rasp").output, strs({"a", "b", "c"}), "reverse"}};
  for (const auto& c : cases) {
    LoweredTemplate t = to_template(c.program, c.vocab, 4, Convention::Mean);
    ASSERT_TRUE(t.exact) << c.name;
    Literal goal = parse_literal("out(I, V)");
    for (const auto& input : all_inputs(c.vocab, 4)) {
      auto want = run(c.program, input, Convention::Mean);
      logic::QueryResult r = logic::answer_query(t.ast, {example_facts(input)}, goal);
      ASSERT_EQ(r.rows.size(), input.size()) << c.name << " on " << show(input);
      for (const auto& row : r.rows) {
        size_t i = static_cast<size_t>(row[0].number);
        std::string text = row[1].text;
        if (text.size() >= 2 && text.front() == '\'' && text.back() == '\'') text = text.substr(1, text.size() - 2);
        Term got = row[1].is_number ? Term::number(row[1].text) : Term{Term::Kind::String, text, {}, {}};
        EXPECT_TRUE(matches(canonical(got), want[i])) << c.name << " on " << show(input) << " at " << i;
      }
    }
  }
}

TEST(RaspLowering, BlogProgramsReproduceTheInterpreter) {
  EXPECT_GT(check_lowering(flip(), Convention::Sum, strs({"a", "b", "c"}), 5, "flip"), 300u);
  EXPECT_GT(check_lowering(histogram(), Convention::Sum, strs({"a", "b", "c"}), 5, "histogram"), 300u);
  EXPECT_GT(check_lowering(length(), Convention::Sum, strs({"a"}), 6, "length"), 5u);
  EXPECT_GT(check_lowering(window_sum(), Convention::Sum, nums({0, 1, 3}), 5, "window_sum"), 300u);
  EXPECT_GT(check_lowering(cumsum(), Convention::Sum, nums({-2, 1, 3}), 5, "cumsum"), 300u);
  EXPECT_GT(check_lowering(shift(2, Value(std::string("_"))), Convention::Sum, strs({"a", "b", "c"}), 5, "shift"), 300u);
  EXPECT_GT(check_lowering(minimum(), Convention::Sum, nums({1, 2, 5}), 5, "minimum"), 300u);
  EXPECT_GT(check_lowering(minimum(where(tokens() == "l", indices(), 99)), Convention::Sum, strs({"h", "l", "o"}), 5,
                           "first"),
            300u);
  EXPECT_GT(check_lowering(ralign(Value(std::string("-"))), Convention::Sum, strs({"x", "_"}), 6, "ralign"), 100u);
  EXPECT_GT(check_lowering(split("+", 1), Convention::Sum, strs({"1", "+"}), 6, "split1"), 100u);
  EXPECT_GT(check_lowering(split("+", 0), Convention::Sum, strs({"1", "+"}), 6, "split0"), 100u);
  EXPECT_GT(check_lowering(slide(tokens() != "<"), Convention::Sum, strs({"x", "<"}), 6, "slide"), 100u);
  EXPECT_GT(check_lowering(add(), Convention::Sum, strs({"1", "9", "+"}), 5, "add"), 100u);
}

TEST(RaspLowering, PaperProgramsReproduceTheInterpreter) {
  // mean aggregation; inputs that are not of the program's form (say two BOS tokens in
  // sort) still have outputs, which must be reproduced too
  EXPECT_GT(check_lowering(paper("reverse.rasp").output, Convention::Mean, strs({"a", "b", "c"}), 5, "reverse"), 300u);
  EXPECT_GT(check_lowering(paper("histogram.rasp").output, Convention::Mean, strs({"a", "b", "c"}), 5, "hist"), 300u);
  EXPECT_GT(check_lowering(paper("histogram_bos.rasp").output, Convention::Mean, strs({"§", "a", "b"}), 5, "hist_bos"),
            300u);
  EXPECT_GT(check_lowering(paper("double_histogram.rasp").output, Convention::Mean, strs({"§", "a", "b"}), 5, "hist2"),
            300u);
  EXPECT_GT(check_lowering(paper("sort.rasp").output, Convention::Mean, strs({"§", "a", "b"}), 5, "sort"), 50u);
  EXPECT_GT(check_lowering(paper("most_frequent.rasp").output, Convention::Mean, strs({"§", "a", "b"}), 5, "most_freq"),
            50u);
  EXPECT_GT(check_lowering(paper("dyck1.rasp").output, Convention::Mean, strs({"(", ")"}), 6, "dyck1"), 100u);
  EXPECT_GT(check_lowering(paper("dyck2.rasp").output, Convention::Mean, strs({"(", ")", "{", "}"}), 5, "dyck2"), 1000u);
}

// The same programs through the real engine: logic grounding (src/logic), neuralization
// (src/neural), the execution plan and its forward pass (src/exec).
TEST(RaspLowering, EngineForwardPassReproducesTheInterpreter) {
  const auto E = Evaluator::Engine;
  // Every program runs on every input up to length 6, except the five slowest, which run
  // up to length 5 unless RASP_LOWERING_FULL is set (then all at 6: about two minutes).
  const int slow = std::getenv("RASP_LOWERING_FULL") ? 6 : 5;
  EXPECT_GT(check_lowering(flip(), Convention::Sum, strs({"a", "b", "c"}), 6, "flip", E), 1000u);
  EXPECT_GT(check_lowering(histogram(), Convention::Sum, strs({"a", "b", "c"}), 6, "histogram", E), 1000u);
  EXPECT_GT(check_lowering(length(), Convention::Sum, strs({"a"}), 6, "length", E), 5u);
  EXPECT_GT(check_lowering(window_sum(), Convention::Sum, nums({0, 1, 3}), 6, "window_sum", E), 1000u);
  EXPECT_GT(check_lowering(cumsum(), Convention::Sum, nums({-2, 1, 3}), 6, "cumsum", E), 1000u);
  EXPECT_GT(check_lowering(shift(2, Value(std::string("_"))), Convention::Sum, strs({"a", "b", "c"}), 6, "shift", E), 1000u);
  EXPECT_GT(check_lowering(minimum(), Convention::Sum, nums({1, 2, 5}), 6, "minimum", E), 1000u);
  EXPECT_GT(check_lowering(minimum(where(tokens() == "l", indices(), 99)), Convention::Sum, strs({"h", "l", "o"}), 6,
                           "first", E),
            1000u);
  EXPECT_GT(check_lowering(ralign(Value(std::string("-"))), Convention::Sum, strs({"x", "_"}), 6, "ralign", E), 100u);
  EXPECT_GT(check_lowering(split("+", 1), Convention::Sum, strs({"1", "+"}), 6, "split1", E), 100u);
  EXPECT_GT(check_lowering(split("+", 0), Convention::Sum, strs({"1", "+"}), 6, "split0", E), 100u);
  EXPECT_GT(check_lowering(slide(tokens() != "<"), Convention::Sum, strs({"x", "<"}), 6, "slide", E), 100u);
  EXPECT_GT(check_lowering(add(), Convention::Sum, strs({"1", "9", "+"}), slow, "add", E), 200u);
  EXPECT_GT(check_lowering(paper("reverse.rasp").output, Convention::Mean, strs({"a", "b", "c"}), 6, "reverse", E), 1000u);
  EXPECT_GT(check_lowering(paper("histogram.rasp").output, Convention::Mean, strs({"a", "b", "c"}), 6, "hist", E), 1000u);
  EXPECT_GT(check_lowering(paper("histogram_bos.rasp").output, Convention::Mean, strs({"§", "a", "b"}), 6, "hist_bos", E),
            1000u);
  EXPECT_GT(check_lowering(paper("double_histogram.rasp").output, Convention::Mean, strs({"§", "a", "b"}), slow, "hist2", E),
            300u);
  EXPECT_GT(check_lowering(paper("sort.rasp").output, Convention::Mean, strs({"§", "a", "b"}), slow, "sort", E), 100u);
  EXPECT_GT(check_lowering(paper("most_frequent.rasp").output, Convention::Mean, strs({"§", "a", "b"}), slow, "most_freq", E),
            100u);
  EXPECT_GT(check_lowering(paper("dyck1.rasp").output, Convention::Mean, strs({"(", ")"}), 6, "dyck1", E), 100u);
  EXPECT_GT(check_lowering(paper("dyck2.rasp").output, Convention::Mean, strs({"(", ")", "{", "}"}), slow, "dyck2", E), 1300u);
}

TEST(RaspLowering, ValueSetsTooLargeAreAClearError) {
  SOp big = zipmap({tokens(), indices()}, [](const std::vector<Value>& xs) -> Value {
    return std::get<int64_t>(xs[0]) * 1000 + std::get<int64_t>(xs[1]);
  });
  std::vector<Value> vocab;
  for (int i = 0; i < 100; ++i) vocab.emplace_back(int64_t{i});
  try {
    to_template(big, vocab, 50, Convention::Sum, 1000);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("possible values"), std::string::npos) << e.what();
  }
}

}  // namespace
