// A template compiled for grounding: interned predicates and constants, rules in a flat
// internal form, strata for `!` negation, and the static checks (unbound comparison
// variables, unstratifiable negation). Built once per template; const afterwards, so any
// number of threads may ground examples against one Program concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "logic/grounding.hpp"
#include "logic/symbols.hpp"
#include "lrnn/ast.hpp"
#include "syntax/builtins.hpp"

namespace lrnn::logic {

// The builtins' table and kinds live in syntax/builtins.hpp (the parser checks arities).
using ::lrnn::BuiltinOp;
using ::lrnn::BuiltinInfo;
using ::lrnn::find_builtin;
using ::lrnn::is_arithmetic;
using ::lrnn::is_eval;

// The value of @op_eval(a, b) (IEEE: a / 0 is inf, as in PyNeuraLogic; mod is floored).
double eval_value(BuiltinOp op, double a, double b);


// An argument: a variable (index into the rule's variables) or a constant (symbol id).
struct ArgRef {
  uint32_t value = 0;
  bool is_var = false;
};

// A body literal in the internal form.
struct BodyLiteral {
  enum class Kind : uint8_t {
    Positive,  // p(...), *p(...), ~p(...), and the typed-term literals woman(Y)
    Negated,   // !p(...): negation as failure against a lower stratum
    Builtin,   // @op(...); an @op_eval(...) is also an input (its pred is "@op_eval/2")
    Domain,    // internal: the variable ranges over the example's active domain
  };
  Kind kind = Kind::Positive;
  BuiltinOp op = BuiltinOp::True;
  uint32_t pred = kNone;       // Positive / Negated
  uint32_t args_begin = 0;     // into CompiledRule::args
  uint32_t arity = 0;
  uint32_t source = kNone;     // index into the AST rule's body (kNone: typed term / domain)
  uint32_t input_slot = kNone; // position among the rule's input literals, kNone if none
  Span span;
};

struct CompiledRule {
  uint32_t source = 0;       // index into TemplateAst::rules, or ::facts for a fact rule
  bool is_fact = false;      // a template fact (with domain/typed literals as its body)
  uint32_t head_pred = 0;
  uint32_t head_args_begin = 0;
  uint32_t head_arity = 0;
  std::vector<BodyLiteral> body;
  std::vector<ArgRef> args;  // head args first, then each literal's
  std::vector<std::string> var_names;
  std::vector<uint32_t> input_literals;  // AST body indices of the neuron inputs, in order
  bool duplicate_grounding = false;
  // True when some variable occurs neither in the head nor in an input literal, so
  // distinct substitutions may give identical (head, inputs) rows.
  bool needs_dedup = false;
  uint32_t stratum = 0;
  Span span;

  const ArgRef* head_args() const { return args.data() + head_args_begin; }
  const ArgRef* lit_args(const BodyLiteral& l) const { return args.data() + l.args_begin; }
};

struct Stratum {
  std::vector<uint32_t> preds;  // the predicates defined together (one SCC)
  std::vector<uint32_t> rules;  // compiled rule indices with a head in preds
  bool recursive = false;
};

class Program {
 public:
  // Compiles a template. `extra_predicates` are (name, arity) pairs that get ids even if
  // the template never mentions them (query answering uses it for fact-only predicates).
  // Errors: unknown builtin or wrong builtin arity, unbound variables in a builtin,
  // unstratifiable negation.
  explicit Program(const TemplateAst& ast,
                   const std::vector<std::pair<std::string, int>>& extra_predicates = {},
                   std::shared_ptr<Symbols> symbols = nullptr);

  // --- what the neural stage reads ---
  size_t num_rules() const { return ast_rule_count_; }
  // Variable names of template rule r, in the order of GroundRuleSet::bindings (first
  // occurrence: head, then body left to right; each `_` is its own variable "_#k").
  const std::vector<std::string>& rule_variables(uint32_t r) const { return rules_[r].var_names; }
  // Indices into TemplateAst::rules[r].body of the literals that become neuron inputs:
  // positive or `~`-negated, not hidden, not builtin (but @op_eval), not `!`.
  const std::vector<uint32_t>& input_literals(uint32_t r) const { return rules_[r].input_literals; }
  size_t num_predicates() const { return pred_names_.size(); }
  const std::string& predicate_name(uint32_t id) const { return pred_names_[id]; }
  int predicate_arity(uint32_t id) const { return pred_arities_[id]; }
  // kNone if the template has no such predicate.
  uint32_t predicate_id(std::string_view name, int arity) const;
  Symbols& symbols() const { return *symbols_; }
  std::shared_ptr<Symbols> shared_symbols() const { return symbols_; }
  std::string symbol_name(uint32_t id) const { return symbols_->name(id); }
  // The constant as it would be written back: numbers and lower-case identifiers as they
  // are, anything else single-quoted.
  std::string constant_text(uint32_t id) const;
  // `p(a, 1)` for an atom of a GroundSample.
  std::string atom_text(const GroundSample& sample, uint32_t atom) const;

  // --- what the grounder reads ---
  const std::vector<CompiledRule>& compiled_rules() const { return rules_; }  // rules then facts
  const std::vector<Stratum>& strata() const { return strata_; }
  const std::vector<uint32_t>& template_constants() const { return template_constants_; }
  bool uses_domain() const { return uses_domain_; }
  // Predicates each predicate's definition reads: through any body literal (logic) and
  // through input literals only (neural).
  const std::vector<std::vector<uint32_t>>& logic_deps() const { return logic_deps_; }
  const std::vector<std::vector<uint32_t>>& input_deps() const { return input_deps_; }

 private:
  uint32_t intern_predicate(const std::string& name, int arity);
  // compile_rule's steps (program.cpp); RuleTerms numbers one rule's variables.
  struct RuleTerms;
  void compile_rule(const Rule* rule, const Literal* fact, uint32_t source);
  ArgRef term_ref(RuleTerms& terms, const Term& t, bool record_constant);
  void compile_head(RuleTerms& terms, const Literal& head);
  BodyLiteral compile_body_literal(RuleTerms& terms, const Literal& l, uint32_t index, uint32_t& input_count);
  void add_typed_literals(RuleTerms& terms);
  void add_domain_literals(CompiledRule& cr, std::vector<char>& bound, const std::vector<Literal>& body);
  void stratify();

  std::shared_ptr<Symbols> symbols_;
  std::vector<std::string> pred_names_;
  std::vector<int> pred_arities_;
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // name -> (arity, id) pairs; looked up by string_view without allocating.
  std::unordered_map<std::string, std::vector<std::pair<int, uint32_t>>, NameHash, std::equal_to<>> pred_ids_;
  std::vector<CompiledRule> rules_;
  size_t ast_rule_count_ = 0;
  std::vector<Stratum> strata_;
  std::vector<uint32_t> template_constants_;
  bool uses_domain_ = false;
  std::vector<std::vector<uint32_t>> logic_deps_, input_deps_;
};

}  // namespace lrnn::logic
