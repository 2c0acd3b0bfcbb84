// lrnn::logic::Grounder (include/lrnn/logic.hpp): the public face of ground() for
// `lrnn ground`, its counts per example and rule, and its ground rules as text.
#include <string>

#include "logic/grounder.hpp"
#include "logic/program.hpp"
#include "lrnn/logic.hpp"

namespace lrnn::logic {

struct Grounder::Impl {
  explicit Impl(const TemplateAst& tmpl) : program(tmpl) {}
  Program program;
};

Grounder::Grounder(const TemplateAst& tmpl) : impl_(std::make_unique<Impl>(tmpl)) {}
Grounder::~Grounder() = default;

ExampleGrounding Grounder::ground(const ExampleAst& example, const std::vector<Literal>& queries, bool list_rules,
                                  size_t max_ground_rules, size_t max_atoms) const {
  GroundingOptions options;
  options.max_ground_rules = max_ground_rules;
  options.max_atoms = max_atoms;
  options.store_ground_rules = true;
  const Program& program = impl_->program;
  const GroundSample s = logic::ground(program, example, queries, options);
  ExampleGrounding out;
  out.facts = s.stats.facts;
  out.derived = s.stats.derived;
  out.atoms = s.num_atoms();
  out.ground_rules = s.stats.ground_rules;
  out.seconds = s.stats.seconds;
  out.ground_rules_per_rule.assign(program.num_rules(), 0);
  for (const auto& set : s.rules) out.ground_rules_per_rule[set.rule] = set.size();
  if (!list_rules) return out;
  for (const auto& set : s.rules)
    for (size_t g = 0; g < set.size(); ++g) {
      std::string line = program.atom_text(s, set.head[g]);
      for (uint32_t i = 0; i < set.n_inputs; ++i)
        line += (i ? ", " : " :- ") + program.atom_text(s, set.inputs[g * set.n_inputs + i]);
      out.ground_rule_lines.push_back(line + ".");
    }
  return out;
}

}  // namespace lrnn::logic
