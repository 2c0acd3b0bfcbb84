// Evaluator of the `.rasp` text syntax: runs the statements, computing what is known while
// reading (numbers, strings, lists, functions) and building s-ops and selectors for anything
// that touches tokens/indices/length.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "lrnn/memory.hpp"
#include "stack_headroom.hpp"
#include "text_syntax.hpp"

namespace lrnn::rasp::text {

namespace {

// The largest RASP source file read (tracr's and RASPy's programs are a few KB).
constexpr size_t kMaxProgramBytes = size_t{16} << 20;

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
  // Stack kept free below the deepest call: room for one more level of evaluation, the
  // builtins it calls and the unwinding of the error.
  static constexpr size_t kStackReserve = 64 * 1024;

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
    // The non-throwing form: a path the OS refuses (too long, a bad component) is reported
    // below as an unreadable file naming the load, not as a std::filesystem exception.
    std::error_code canonical_error;
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, canonical_error);
    const std::string key = canonical_error ? path : canonical.string();
    for (const auto& l : loading)
      if (l == key) throw Error(ErrorKind::Semantic, from, "load cycle: " + path + " is already being loaded");
    // A directory opens as an empty stream on Linux: it would load as an empty program.
    std::error_code directory_error;
    const bool directory = std::filesystem::is_directory(path, directory_error);
    std::ifstream in(path, std::ios::binary);
    if (!in || directory) {
      const std::string message = "cannot read " + path + (directory ? ": it is a directory, not a RASP file" : "");
      if (from.file) throw Error(ErrorKind::Io, from, message);
      throw Error(ErrorKind::Io, message);
    }
    // Read with a bound: a device such as /dev/zero never ends.
    check_memory(kMaxProgramBytes + 1, "reading the RASP file " + path, from);
    std::string text(kMaxProgramBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxProgramBytes) {
      const std::string message = path + " is larger than " + std::to_string(kMaxProgramBytes >> 20) +
                                  " MiB, the most a RASP program may be";
      if (from.file) throw Error(ErrorKind::Limit, from, message);
      throw Error(ErrorKind::Limit, message);
    }
    loading.push_back(key);
    run_text(text, path);
    loading.pop_back();
  }

  void run_text(const std::string& text, const std::string& name) {
    auto src = std::make_shared<const SourceFile>(SourceFile{name, text});
    auto stmts = parse(lex(src), src);
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
    // The thread's stack may end before 200 calls (a small `ulimit -s`, a Python thread's
    // stack): refused while enough is left to report it (stack_headroom.hpp).
    if (stack_headroom() < kStackReserve) {
      const int reached = depth;
      depth = 0;
      throw Error(ErrorKind::Limit, span,
                  "function calls nested " + std::to_string(reached) +
                      " deep exhaust this thread's stack (unbounded recursion, or a stack too small: ulimit -s)");
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

  // A call of a builtin function: its name, evaluated arguments and place.
  struct BuiltinCall {
    const std::string& name;
    const std::vector<RVal>& args;
    const Span& span;
    void arity(size_t lo, size_t hi) const {
      if (args.size() < lo || args.size() > hi)
        throw Error(ErrorKind::Semantic, span,
                    name + " takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                        " argument(s), got " + std::to_string(args.size()));
    }
  };
  using Builtin = RVal (Evaluator::*)(const BuiltinCall&);

  // The builtin functions by name (a variable or def of the same name shadows them).
  static const Builtin* builtin_named(const std::string& name) {
    static const std::unordered_map<std::string, Builtin> table{
        {"aggregate", &Evaluator::call_aggregate},
        {"selector_width", &Evaluator::call_selector_width},
        {"indicator", &Evaluator::call_indicator_or_round},
        {"round", &Evaluator::call_indicator_or_round},
        {"map", &Evaluator::call_map},
        {"zipmap", &Evaluator::call_map},
        {"len", &Evaluator::call_len},
        {"range", &Evaluator::call_range},
        {"draw", &Evaluator::call_draw},
    };
    auto it = table.find(name);
    return it == table.end() ? nullptr : &it->second;
  }

  RVal call_aggregate(const BuiltinCall& c) {
    c.arity(2, 3);
    Selector sel = selector_of(c.args[0], c.span, "the first argument of aggregate");
    SOp vals = sop_of(c.args[1], c.span, "the values of aggregate");
    Value def = c.args.size() == 3 ? value_of(c.args[2], c.span, "the default of aggregate") : Value(int64_t{0});
    return {with_span(aggregate(sel, vals, def), c.span)};
  }

  RVal call_selector_width(const BuiltinCall& c) {
    c.arity(1, 1);
    return {with_span(selector_width(selector_of(c.args[0], c.span, "the argument of selector_width")), c.span)};
  }

  RVal call_indicator_or_round(const BuiltinCall& c) {
    c.arity(1, 1);
    const bool is_indicator = c.name == "indicator";
    if (auto* v = std::get_if<Value>(&c.args[0].v)) {
      if (is_indicator) return {Value(int64_t{truthy(*v) ? 1 : 0})};
      return {Value(static_cast<int64_t>(std::nearbyint(to_double(*v))))};
    }
    SOp a = sop_of(c.args[0], c.span, "the argument of " + c.name);
    return {with_span(is_indicator ? indicator(a) : rasp::round(a), c.span)};
  }

  // map(f, s) and zipmap(f, s1, s2, ...): f on plain values now, or an s-op applying f to
  // each position. The s-op keeps f's environment alive (see ClosureArena).
  RVal call_map(const BuiltinCall& c) {
    const auto& args = c.args;
    const Span& span = c.span;
    if (args.size() < 2) throw Error(ErrorKind::Semantic, span, c.name + " takes a function and at least one s-op");
    if (c.name == "map") c.arity(2, 2);
    RVal f = args[0];
    if (!is_function(f))
      throw Error(ErrorKind::Semantic, span, "the first argument of " + c.name + " must be a function (lambda or def)");
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
    for (size_t i = 1; i < args.size(); ++i) sops.push_back(sop_of(args[i], span, "an argument of " + c.name));
    if (c.name == "map") {
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

  RVal call_len(const BuiltinCall& c) {
    c.arity(1, 1);
    if (auto* l = std::get_if<RList>(&c.args[0].v)) return {Value(static_cast<int64_t>((*l)->size()))};
    if (auto* v = std::get_if<Value>(&c.args[0].v))
      if (auto* s = std::get_if<std::string>(v)) return {Value(static_cast<int64_t>(chars(*s).size()))};
    throw Error(ErrorKind::Semantic, c.span, "len needs a list or a string, not a " + kind_of(c.args[0]) +
                                                 " (the length of the input is the s-op `length`)");
  }

  RVal call_range(const BuiltinCall& c) {
    c.arity(1, 3);
    std::vector<int64_t> a;
    for (const auto& x : c.args) {
      Value v = value_of(x, c.span, "an argument of range");
      if (!std::holds_alternative<int64_t>(v)) throw Error(ErrorKind::Semantic, c.span, "range needs integers");
      a.push_back(std::get<int64_t>(v));
    }
    int64_t lo = a.size() > 1 ? a[0] : 0, hi = a.size() > 1 ? a[1] : a[0], step = a.size() > 2 ? a[2] : 1;
    if (step == 0) throw Error(ErrorKind::Semantic, c.span, "range step must not be 0");
    auto list = std::make_shared<std::vector<RVal>>();
    for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) {
      if (list->size() > 1000000) throw Error(ErrorKind::Limit, c.span, "range longer than 1000000");
      list->push_back({Value(i)});
    }
    return {RList(list)};
  }

  // The original's REPL picture; `lrnn rasp draw` does this.
  RVal call_draw(const BuiltinCall&) { return {Value()}; }

  RVal eval(const Expr& e, const EnvP& env) {
    // Calls (up to 200 deep) times expression heights (up to the parser's bound) could still
    // exceed the stack, so the evaluation's own depth is bounded too (a frame is ~0.5 KB).
    if (++eval_depth > kMaxEvalDepth) {
      eval_depth = 0;
      throw Error(ErrorKind::Limit, e.span,
                  "evaluation nested more than " + std::to_string(kMaxEvalDepth) +
                      " levels deep (deep recursion through long expressions?)");
    }
    if (stack_headroom() < kStackReserve) {  // a small stack ends before kMaxEvalDepth
      const int reached = eval_depth;
      eval_depth = 0;
      throw Error(ErrorKind::Limit, e.span,
                  "evaluation nested " + std::to_string(reached) +
                      " levels deep exhausts this thread's stack (deep recursion, or a stack too small: ulimit -s)");
    }
    struct Guard { int& d; ~Guard() { if (d > 0) --d; } } guard{eval_depth};
    switch (e.k) {
      case Expr::Atom: return {e.atom};
      case Expr::Name: return eval_name(e, env);
      case Expr::List: {
        auto list = std::make_shared<std::vector<RVal>>();
        for (const auto& k : e.kids) list->push_back(eval(*k, env));
        return {RList(list)};
      }
      case Expr::ListComp: return eval_list_comprehension(e, env);
      case Expr::Unary:
        return from_operand(apply_unary(e.op, operand(eval(*e.kids[0], env), e.span, "the operand of '" + std::string(op_symbol(e.op)) + "'"), e.span));
      case Expr::Binary: {
        RVal a = eval(*e.kids[0], env), b = eval(*e.kids[1], env);
        std::string what = std::string("an operand of '") + op_symbol(e.op) + "'";
        return from_operand(apply_binary(e.op, operand(a, e.span, what), operand(b, e.span, what), e.span));
      }
      case Expr::Ternary: return eval_conditional(e, env);
      case Expr::In: return eval_in(e, env);
      case Expr::Call: return eval_call(e, env);
      case Expr::Index: return eval_index(e, env);
      case Expr::Select: {
        RVal k = eval(*e.kids[0], env), q = eval(*e.kids[1], env);
        return {select_dynamic(operand(k, e.span, "the keys of select"), operand(q, e.span, "the queries of select"), e.pred, e.span)};
      }
      case Expr::Lambda: return eval_lambda(e, env);
      case Expr::Annotate: {
        SOp s = sop_of(eval(*e.kids[0], env), e.span, "the operand of numerical/categorical");
        return {e.enc == Encoding::Numerical ? numerical(s) : categorical(s)};
      }
    }
    throw Error(ErrorKind::Semantic, e.span, "unknown expression");
  }

  // A variable: its value (s-ops named inside functions run on values are an error).
  RVal eval_name(const Expr& e, const EnvP& env) {
    if (const RVal* r = env->find(e.name)) {
      if (auto* gone = std::get_if<SOpOutsideValues>(&r->v))
        throw Error(ErrorKind::Semantic, e.span,
                    "'" + e.name + "' is " + (gone->kind == "s-op" ? "an " : "a ") + gone->kind +
                        "; a function applied element by element (map, zipmap) runs on plain values");
      return *r;
    }
    throw Error(ErrorKind::Semantic, e.span, "undefined variable '" + e.name + "'");
  }

  // [expr for x in items] (and for a, b in pairs).
  RVal eval_list_comprehension(const Expr& e, const EnvP& env) {
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

  // x if c else y: chosen now for a plain condition, a where(...) s-op otherwise.
  RVal eval_conditional(const Expr& e, const EnvP& env) {
    RVal cond = eval(*e.kids[1], env);
    if (auto* v = std::get_if<Value>(&cond.v)) return eval(*e.kids[truthy(*v) ? 0 : 2], env);
    SOp c = sop_of(cond, e.span, "the condition of 'x if condition else y'");
    SOp t = sop_of(eval(*e.kids[0], env), e.span, "the first branch of 'x if c else y'");
    SOp f = sop_of(eval(*e.kids[2], env), e.span, "the second branch of 'x if c else y'");
    return {with_span(where(c, t, f), e.span)};
  }

  // x in list/string: a value now, or an s-op testing membership per position.
  RVal eval_in(const Expr& e, const EnvP& env) {
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

  // A call of a def, a lambda or a builtin function.
  RVal eval_call(const Expr& e, const EnvP& env) {
    std::vector<RVal> args;
    for (size_t i = 1; i < e.kids.size(); ++i) args.push_back(eval(*e.kids[i], env));
    const Expr& callee = *e.kids[0];
    if (callee.k == Expr::Name) {
      if (const RVal* r = env->find(callee.name)) return call(*r, args, e.span);
      if (const Builtin* b = builtin_named(callee.name)) return (this->**b)(BuiltinCall{callee.name, args, e.span});
      throw Error(ErrorKind::Semantic, callee.span, "undefined function '" + callee.name + "'");
    }
    return call(eval(callee, env), args, e.span);
  }

  // list[i] and string[i] (negative i counts from the end).
  RVal eval_index(const Expr& e, const EnvP& env) {
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

  RVal eval_lambda(const Expr& e, const EnvP& env) {
    auto l = std::make_shared<LambdaDef>();
    l->params = e.params;
    l->body = e.kids[0];
    l->closure = arena->own(*snapshot(env));
    l->owner = arena;
    l->text = e.text;
    return {std::shared_ptr<const LambdaDef>(l)};
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

Program evaluate_file(const std::string& path) {
  Evaluator ev;
  ev.define_builtins();
  ev.run_file(path, Span{});
  return ev.finish();
}

Program evaluate_text(const std::string& text, const std::string& name) {
  Evaluator ev;
  ev.define_builtins();
  ev.run_text(text, name);
  return ev.finish();
}

}  // namespace lrnn::rasp::text
