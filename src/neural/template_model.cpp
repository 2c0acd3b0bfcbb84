#include "neural/template_model.hpp"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "logic/program.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/suggest.hpp"

namespace lrnn::neural {

Shape shape_of(const ValueSpec& v) {
  switch (v.kind) {
    case ValueSpec::Kind::Scalar: return {1, 1};
    case ValueSpec::Kind::Vector: return {v.rows, 1};
    case ValueSpec::Kind::Matrix: return {v.rows, v.cols};
    case ValueSpec::Kind::Dims:
      return v.dims_is_vector ? Shape{v.rows, 1} : Shape{v.rows, v.cols};
    case ValueSpec::Kind::Reference: return {0, 0};
  }
  return {1, 1};
}

uint32_t Parameters::add(ParamInfo info, const std::vector<double>& data) {
  info.offset = values.size();
  const size_t n = static_cast<size_t>(info.shape.size());
  // The parser bounds the shapes it reads; a template built as data (Python) is bounded here.
  if (n > static_cast<size_t>(kMaxValueEntries))
    throw Error(ErrorKind::Limit, info.span,
                "the weight " + info.name + " (" + to_string(info.shape) + ") has " + std::to_string(n) +
                    " entries, over the limit of " + std::to_string(kMaxValueEntries) + " entries per value");
  info.initialized = !data.empty();
  // Asked before the values grow, so a template of weights too big for the budget names the
  // first weight past it (file:line:col of its rule) instead of ending in std::bad_alloc.
  // The array grows as std::vector would (to twice its capacity), here explicitly, so what
  // is held is its real capacity, and the old array, alive while it is copied, is asked too.
  const size_t need = values.size() + n;
  if (need > values.capacity()) {
    const size_t capacity = std::max(need, 2 * values.capacity());
    const uint64_t more = 8 * uint64_t(capacity - values.capacity());
    auto what = [&] { return "the weight " + info.name + " (" + to_string(info.shape) + ")"; };
    if (!memory_.try_grow(more)) MemoryReservation::refuse(more, what(), info.span);
    check_memory(8 * uint64_t(values.capacity()), "copying the weights before " + what() + " into a larger array",
                 info.span);
    values.reserve(capacity);
  }
  if (data.empty()) {
    values.resize(values.size() + n, 0.0);
  } else {
    if (data.size() != n)
      throw Error(ErrorKind::Shape, info.span,
                  "weight '" + info.name + "' has " + std::to_string(data.size()) +
                      " values but shape " + std::to_string(info.shape.rows) + "x" +
                      std::to_string(info.shape.cols));
    values.insert(values.end(), data.begin(), data.end());
  }
  uint32_t id = static_cast<uint32_t>(infos_.size());
  by_name_.emplace(info.name, id);
  infos_.push_back(std::move(info));
  return id;
}

uint32_t Parameters::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? kNoParam : it->second;
}

std::vector<uint8_t> Parameters::learnable_mask() const {
  std::vector<uint8_t> mask(values.size(), 0);
  for (const auto& p : infos_)
    if (p.learnable) std::fill_n(mask.begin() + p.offset, p.shape.size(), uint8_t{1});
  return mask;
}

std::vector<uint32_t> TemplateModel::input_literals(const Rule& rule) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < rule.body.size(); ++i) {
    if (is_neuron_input(rule.body[i])) out.push_back(i);
  }
  return out;
}

uint32_t TemplateModel::predicate_index(const std::string& name, int arity) const {
  auto it = predicate_by_key_.find(name + "/" + std::to_string(arity));
  return it == predicate_by_key_.end() ? kNoParam : it->second;
}

uint32_t TemplateModel::intern_predicate(const std::string& name, int arity) {
  std::string key = name + "/" + std::to_string(arity);
  auto it = predicate_by_key_.find(key);
  if (it != predicate_by_key_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(predicates.size());
  PredicateSpec p;
  p.name = name;
  p.arity = arity;
  predicates.push_back(p);
  predicate_by_key_.emplace(key, id);
  return id;
}

namespace {

std::vector<double> data_of(const ValueSpec& v) {
  if (v.kind == ValueSpec::Kind::Dims || v.kind == ValueSpec::Kind::Reference) return {};
  return v.data;
}

// Booleans as written in lrnn (true/false, 1/0) and as PyNeuraLogic prints Python's (True/False).
bool meta_is_false(const FunctionSpec& f) { return f.name == "false" || f.name == "False" || f.name == "0"; }
bool meta_is_boolean(const FunctionSpec& f) {
  return !f.has_parens && (meta_is_false(f) || f.name == "true" || f.name == "True" || f.name == "1");
}

// The metadata keys each construct reads; anything else was silently ignored before
// ([colour=blue], a misspelled `activaton`), so it is an error naming the closest key.
constexpr std::string_view kRuleKeys[] = {"activation", "transformation", "combination", "aggregation", "learnable",
                                          "duplicate_grounding"};
constexpr std::string_view kPredicateKeys[] = {"activation", "transformation", "combination", "normalization"};
constexpr std::string_view kBooleanKeys[] = {"learnable", "duplicate_grounding"};

template <size_t N>
void check_meta(const std::vector<MetaEntry>& meta, const std::string_view (&keys)[N], const std::string& where) {
  for (size_t i = 0; i < meta.size(); ++i) {
    const MetaEntry& m = meta[i];
    if (std::find(std::begin(keys), std::end(keys), m.key) == std::end(keys)) {
      const std::string closest = closest_name(m.key, keys);
      std::string valid;
      for (std::string_view k : keys) valid += (valid.empty() ? "" : ", ") + std::string(k);
      throw Error(ErrorKind::Semantic, m.span,
                  "unknown metadata key '" + m.key + "' for " + where +
                      (closest.empty() ? "" : "; did you mean '" + closest + "'?") + " (valid: " + valid + ")");
    }
    for (size_t j = 0; j < i; ++j)
      if (meta[j].key == m.key) throw Error(ErrorKind::Semantic, m.span, "metadata key '" + m.key + "' is given twice");
    const bool boolean = std::find(std::begin(kBooleanKeys), std::end(kBooleanKeys), m.key) != std::end(kBooleanKeys);
    if (boolean && !meta_is_boolean(m.value))
      throw Error(ErrorKind::Semantic, m.span,
                  "metadata '" + m.key + "' takes true or false, found '" + m.value.name + "'");
  }
}

// Creates (or, for `$name`, shares) the parameter a weight spec denotes.
class WeightBuilder {
 public:
  explicit WeightBuilder(Parameters& params) : params_(params) {}

  // First pass: every `$name=value` definition, so references may precede definitions.
  void define_named(const ValueSpec& v, bool learnable) {
    if (v.name.empty() || v.kind == ValueSpec::Kind::Reference) return;
    std::string name = "$" + v.name;
    uint32_t existing = params_.find(name);
    Shape shape = shape_of(v);
    if (existing != kNoParam) {
      const ParamInfo& info = params_.info(existing);
      if (!(info.shape == shape))
        throw Error(ErrorKind::Shape, v.span,
                    "named weight '" + name + "' is defined with shape " + to_text(info.shape) +
                        " and again with shape " + to_text(shape));
      return;
    }
    ParamInfo info;
    info.name = name;
    info.shape = shape;
    info.learnable = learnable && !v.fixed;
    info.span = v.span;
    params_.add(std::move(info), data_of(v));
  }

  uint32_t get(const ValueSpec& v, const std::string& anonymous_name, bool learnable) {
    if (!v.name.empty()) {
      uint32_t p = params_.find("$" + v.name);
      if (p == kNoParam)
        throw Error(ErrorKind::Semantic, v.span, "unknown named weight '$" + v.name + "'");
      return p;
    }
    if (v.kind == ValueSpec::Kind::Reference)
      throw Error(ErrorKind::Semantic, v.span, "weight reference without a name");
    ParamInfo info;
    info.name = anonymous_name;
    info.shape = shape_of(v);
    info.learnable = learnable && !v.fixed;
    info.span = v.span;
    return params_.add(std::move(info), data_of(v));
  }

  static std::string to_text(Shape s) {
    return std::to_string(s.rows) + "x" + std::to_string(s.cols);
  }

 private:
  Parameters& params_;
};

// The scale and running statistics of a batch-normalised predicate, shaped like its offset
// (which is the normalisation's shift: without it the shape would be unknown until a plan).
void add_batch_norm(TemplateModel& model, uint32_t p, Span where) {
  PredicateSpec& spec = model.predicates[p];
  const std::string name = spec.key();
  if (spec.offset == kNoParam)
    throw Error(ErrorKind::Semantic, where,
                "normalization=batch of " + name + " needs the predicate's offset declared (e.g. `" + name +
                    " {64}`): it is the normalisation's shift and gives its shape");
  bool derived = false;
  for (const Rule& rule : model.ast().rules)
    derived = derived || (rule.head.predicate == spec.name && rule.head.arity() == spec.arity);
  if (!derived)
    throw Error(ErrorKind::Semantic, where,
                "normalization=batch of " + name + ": no rule derives " + name + " (only derived atoms are normalised)");
  const Shape shape = model.params.info(spec.offset).shape;
  const size_t n = static_cast<size_t>(shape.size());
  BatchNormSpec norm;
  norm.predicate = p;
  auto add = [&](const char* what, double value, bool learnable) {
    ParamInfo info;
    info.name = name + "." + what;
    info.shape = shape;
    info.learnable = learnable;
    info.span = where;
    return model.params.add(std::move(info), std::vector<double>(n, value));
  };
  norm.scale = add("norm_scale", 1.0, true);
  norm.mean = add("norm_mean", 0.0, false);
  norm.var = add("norm_var", 1.0, false);
  spec.norm = static_cast<uint32_t>(model.batch_norms.size());
  model.batch_norms.push_back(norm);
}

void apply_meta_to_rule(RuleSpec& spec, const Rule& rule, bool& learnable) {
  for (const MetaEntry& m : rule.meta) {
    if (m.key == "activation" || m.key == "transformation") {
      spec.activation = parse_activation(m.value, m.span);
    } else if (m.key == "combination") {
      spec.combination = parse_combination(m.value, m.span);
    } else if (m.key == "aggregation") {
      spec.aggregation = parse_aggregation(m.value, m.span);
    } else if (m.key == "learnable") {
      learnable = !meta_is_false(m.value);
    }
    // Other keys (e.g. duplicate_grounding) belong to the logic stage.
  }
}

}  // namespace

TemplateModel TemplateModel::compile(const TemplateAst& ast,
                                     const std::vector<std::vector<std::string>>& rule_variables) {
  TemplateModel model;
  model.ast_ = ast;
  WeightBuilder weights(model.params);

  // Pass 1: named weight definitions anywhere in the template.
  std::vector<bool> rule_learnable(ast.rules.size(), true);
  for (size_t r = 0; r < ast.rules.size(); ++r) {
    const Rule& rule = ast.rules[r];
    check_meta(rule.meta, kRuleKeys, "a rule");
    for (const MetaEntry& m : rule.meta)
      if (m.key == "learnable") rule_learnable[r] = !meta_is_false(m.value);
    if (rule.head.weight) weights.define_named(*rule.head.weight, rule_learnable[r]);
    for (const Literal& l : rule.body)
      if (l.weight) weights.define_named(*l.weight, rule_learnable[r]);
    if (rule.offset) weights.define_named(*rule.offset, rule_learnable[r]);
  }
  for (const Literal& f : ast.facts)
    if (f.weight) weights.define_named(*f.weight, true);
  for (const PredicateDecl& d : ast.predicates)
    if (d.offset) weights.define_named(*d.offset, true);

  // Predicates of rule heads first (their atom neurons need metadata), then declarations.
  std::vector<std::pair<uint32_t, Span>> norm_at;  // [normalization=batch] (predicate, where)
  for (const Rule& rule : ast.rules) model.intern_predicate(rule.head.predicate, rule.head.arity());
  for (const PredicateDecl& d : ast.predicates) {
    uint32_t p = model.intern_predicate(d.name, d.arity);
    check_meta(d.meta, kPredicateKeys, "predicate " + d.name + "/" + std::to_string(d.arity));
    PredicateSpec& spec = model.predicates[p];
    for (const MetaEntry& m : d.meta) {
      if (m.key == "activation" || m.key == "transformation") {
        spec.activation = parse_activation(m.value, m.span);
      } else if (m.key == "normalization") {
        if (m.value.name != "batch" || m.value.has_parens)
          throw Error(ErrorKind::Semantic, m.span,
                      "unknown normalization '" + m.value.name + "' of " + d.name + "/" + std::to_string(d.arity) +
                          " (valid: batch)");
        norm_at.emplace_back(p, m.span);  // made below, once every declaration gave its offset
      } else if (m.key == "combination") {
        CombinationKind c = parse_combination(m.value, m.span);
        switch (c) {
          case CombinationKind::Sum: spec.combination = AggregationKind::Sum; break;
          case CombinationKind::Avg: spec.combination = AggregationKind::Avg; break;
          case CombinationKind::Max: spec.combination = AggregationKind::Max; break;
          case CombinationKind::Min: spec.combination = AggregationKind::Min; break;
          case CombinationKind::Count: spec.combination = AggregationKind::Count; break;
          case CombinationKind::ElProduct: spec.combination = AggregationKind::Product; break;
          case CombinationKind::Product:  // a matrix product: element-wise only for scalars (checked by the plan)
            spec.combination = AggregationKind::Product;
            spec.scalars_only = true;
            break;
          default:
            throw Error(ErrorKind::Semantic, m.span,
                        "combination '" + to_string(c) + "' of atom neurons of " + d.name +
                            "/" + std::to_string(d.arity) +
                            " is not supported: an atom combines a varying number of rule "
                            "inputs, so only sum, avg, max, min, count, elproduct and (of scalars) product apply");
        }
      }
    }
    if (d.offset)
      spec.offset = weights.get(*d.offset, d.name + "/" + std::to_string(d.arity) + ".offset", true);
  }
  for (const auto& [p, where] : norm_at)
    if (model.predicates[p].norm == kNoParam) add_batch_norm(model, p, where);

  // Rules.
  model.rules.resize(ast.rules.size());
  for (size_t r = 0; r < ast.rules.size(); ++r) {
    const Rule& rule = ast.rules[r];
    RuleSpec& spec = model.rules[r];
    bool learnable = rule_learnable[r];
    apply_meta_to_rule(spec, rule, learnable);
    spec.head_predicate = model.predicate_index(rule.head.predicate, rule.head.arity());
    std::string prefix = "rule" + std::to_string(r);
    for (uint32_t b : input_literals(rule)) {
      const Literal& l = rule.body[b];
      InputSpec in;
      in.body_index = b;
      in.soft_negated = l.soft_negated;
      in.transposed = l.transposed;
      if (l.weight) in.weight = weights.get(*l.weight, prefix + ".body" + std::to_string(b), learnable);
      spec.inputs.push_back(in);
    }
    if (rule.head.weight) spec.head_weight = weights.get(*rule.head.weight, prefix + ".head", learnable);
    if (rule.offset) spec.offset = weights.get(*rule.offset, prefix + ".offset", learnable);
    if (spec.aggregation.kind == AggregationKind::Softmax) {
      spec.softmax = true;
      const std::vector<std::string>& vars =
          r < rule_variables.size() ? rule_variables[r] : std::vector<std::string>{};
      for (const std::string& v : spec.aggregation.over) {
        if (std::find(vars.begin(), vars.end(), v) == vars.end())
          throw Error(ErrorKind::Semantic, rule.span,
                      "softmax aggregation over '" + v + "', which is not a variable of the rule");
      }
      for (uint32_t i = 0; i < vars.size(); ++i)
        if (std::find(spec.aggregation.over.begin(), spec.aggregation.over.end(), vars[i]) ==
            spec.aggregation.over.end())
          spec.softmax_group_vars.push_back(i);
    }
  }

  // Template facts: a weighted fact is a learnable embedding, an unweighted one is 1.0.
  model.facts.resize(ast.facts.size());
  for (size_t f = 0; f < ast.facts.size(); ++f) {
    const Literal& fact = ast.facts[f];
    ValueSpec v = fact.weight ? *fact.weight : ValueSpec::scalar(1.0, true);
    model.facts[f].param = weights.get(v, "fact" + std::to_string(f) + "." + fact.predicate, true);
  }
  return model;
}

}  // namespace lrnn::neural
