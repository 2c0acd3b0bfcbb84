// The neural view of a template: every learnable or fixed weight as a named parameter in
// one flat array, and per rule / predicate / template fact the functions and parameter ids
// that neuralization and execution need. Compiled once per template; shared read-only by
// every sample, plan and thread.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "neural/functions.hpp"
#include "lrnn/ast.hpp"
#include "lrnn/memory.hpp"

namespace lrnn::neural {

inline constexpr uint32_t kNoParam = 0xFFFFFFFFu;

struct ParamInfo {
  std::string name;  // "$name" for named weights, else e.g. "rule2.body0", "rule2.head"
  Shape shape;
  size_t offset = 0;       // into Parameters::values
  bool learnable = true;   // false for <...> weights and learnable=false rules
  bool initialized = false;  // false: written as dimensions only, filled by initialize()
  Span span;
};

// All parameters of a model in one flat array (the optimizer steps it in one call).
class Parameters {
 public:
  uint32_t add(ParamInfo info, const std::vector<double>& data);
  uint32_t find(const std::string& name) const;  // kNoParam if absent
  const ParamInfo& info(uint32_t p) const { return infos_[p]; }
  ParamInfo& mutable_info(uint32_t p) { return infos_[p]; }  // the name stays (it is the key)
  size_t count() const { return infos_.size(); }
  size_t size() const { return values.size(); }
  double* data(uint32_t p) { return values.data() + infos_[p].offset; }
  const double* data(uint32_t p) const { return values.data() + infos_[p].offset; }
  // Mask with 1 for every entry of a learnable parameter (the optimizer zeroes the rest).
  std::vector<uint8_t> learnable_mask() const;

  std::vector<double> values;

 private:
  MemoryReservation memory_;  // values' bytes, held against the budget (lrnn/memory.hpp)
  std::vector<ParamInfo> infos_;
  std::unordered_map<std::string, uint32_t> by_name_;
};

// One input literal of a rule (a body literal that becomes a neuron input).
struct InputSpec {
  uint32_t body_index = 0;
  uint32_t weight = kNoParam;
  bool soft_negated = false;
  bool transposed = false;
};

struct RuleSpec {
  uint32_t head_predicate = 0;  // index into TemplateModel::predicates
  std::vector<InputSpec> inputs;
  uint32_t head_weight = kNoParam;
  uint32_t offset = kNoParam;
  Activation activation;
  CombinationKind combination = CombinationKind::Sum;
  Aggregation aggregation;
  // softmax(J...) aggregation: positions (in the rule's variable order) of the variables
  // that are NOT normalised over; groundings agreeing on them share one softmax.
  std::vector<uint32_t> softmax_group_vars;
  bool softmax = false;
};

// Metadata of the atom neurons of one predicate (name/arity).
struct PredicateSpec {
  std::string name;
  int arity = 0;
  Activation activation;
  AggregationKind combination = AggregationKind::Sum;  // over the atom's inputs
  bool scalars_only = false;  // written `product` (a matrix product): element-wise only for scalars
  uint32_t offset = kNoParam;
  uint32_t norm = kNoParam;  // index into TemplateModel::batch_norms (`[normalization=batch]`)
  std::string key() const { return name + "/" + std::to_string(arity); }  // "name/arity"
};

// Whether an atom of `p` with one input (and no fact value) is that input's value: no
// offset, normalisation or activation, and a combination that is the identity on one value,
// except `product` of a non-scalar value (scalars_only), which the plan refuses.
inline bool passes_one_input(const PredicateSpec& p, Shape in) {
  return p.offset == kNoParam && p.norm == kNoParam && p.activation.kind == ActivationKind::Identity &&
         single_value_identity(p.combination) && !(p.scalars_only && !in.scalar());
}

// `P/n [normalization=batch]`: the atoms' combined inputs x are normalised per entry over
// every atom of P in a training batch (all its samples), x^ = (x - mean) / sqrt(var + eps)
// with the biased variance, then scaled and shifted, a = act(scale * x^ + offset): torch's
// BatchNorm1d in training mode, the predicate's offset being its shift. Evaluation (and any
// forward outside a training step) uses the running mean and unbiased variance instead,
// updated after every training batch as running = (1 - momentum) running + momentum batch.
inline constexpr double kBatchNormEps = 1e-5;
inline constexpr double kBatchNormMomentum = 0.1;
struct BatchNormSpec {
  uint32_t predicate = 0;
  uint32_t scale = kNoParam;  // learnable, initialised to 1
  uint32_t mean = kNoParam;   // running statistics: fixed parameters (saved with the model,
  uint32_t var = kNoParam;    // never stepped by the optimizer), initialised to 0 and 1
};

// A template fact: learnable embedding (param) or a fixed value.
struct TemplateFactSpec {
  uint32_t param = kNoParam;  // the fact's value
};

class TemplateModel {
 public:
  // rule_variables[r]: the variables of rule r in the order of GroundRuleSet::bindings
  // (Program::rule_variables). Throws lrnn::Error naming the span on bad metadata,
  // conflicting named weights or an unknown `$name` reference.
  static TemplateModel compile(const TemplateAst& ast,
                               const std::vector<std::vector<std::string>>& rule_variables);

  // Body literals that are neuron inputs (not builtin, hidden or hard-negated), in order:
  // the same list as Program::input_literals.
  static std::vector<uint32_t> input_literals(const Rule& rule);

  const TemplateAst& ast() const { return ast_; }
  std::vector<RuleSpec> rules;
  std::vector<PredicateSpec> predicates;
  std::vector<TemplateFactSpec> facts;
  std::vector<BatchNormSpec> batch_norms;
  Parameters params;

  uint32_t predicate_index(const std::string& name, int arity) const;  // kNoParam if unknown

 private:
  TemplateAst ast_;
  std::unordered_map<std::string, uint32_t> predicate_by_key_;
  uint32_t intern_predicate(const std::string& name, int arity);
};

Shape shape_of(const ValueSpec& v);

}  // namespace lrnn::neural
