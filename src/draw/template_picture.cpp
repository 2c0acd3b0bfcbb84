// The template picture: predicates as nodes, rules as labelled edges. The functions shown
// are the compiled ones (TemplateModel), so defaults appear as well as written metadata.
#include <map>
#include <set>
#include <sstream>

#include "draw/dot_text.hpp"
#include "exec/functions.hpp"
#include "logic/program.hpp"
#include "lrnn/draw.hpp"
#include "neural/template_model.hpp"

namespace lrnn {

namespace {

std::string predicate_key(const std::string& name, int arity) { return name + "/" + std::to_string(arity); }

// The weight as its shape: `3x3`, `1x1 fixed`, `$w 3x1`, `$w` (a reference).
std::string weight_text(const ValueSpec& w) {
  std::string out = w.name.empty() ? "" : "$" + w.name;
  if (w.kind == ValueSpec::Kind::Reference) return out;
  if (!out.empty()) out += " ";
  out += std::to_string(w.rows) + "x" + std::to_string(w.cols);
  if (w.fixed) out += " fixed";
  return out;
}

struct PredicateNode {
  bool derived = false, builtin = false;
  size_t template_facts = 0;
  std::string functions;  // derived: the atom neurons' activation (and combination if not sum)
};

std::string rule_functions(const neural::RuleSpec& spec) {
  std::string out = exec::to_string(spec.activation) + ", " + exec::to_string(spec.aggregation);
  if (spec.combination != exec::CombinationKind::Sum) out += ", " + exec::to_string(spec.combination);
  return out;
}

// The label of the edge of body literal `lit` of rule r.
std::string edge_label(size_t r, const Rule& rule, const Literal& lit, const std::string& functions) {
  std::string first = "r" + std::to_string(r);
  if (lit.negated) first += " not";
  if (lit.soft_negated) first += " ~";
  if (lit.transposed) first += " ^T";
  if (lit.weight) first += " " + weight_text(*lit.weight);
  if (lit.hidden || lit.builtin || lit.negated) return first + "\nlogic only";
  std::string second = functions;
  if (rule.head.weight) second += "\nhead " + weight_text(*rule.head.weight);
  if (rule.offset) second += "\noffset " + weight_text(*rule.offset);
  return first + "\n" + second;
}

}  // namespace

std::string template_dot(const Template& tmpl) {
  const TemplateAst& ast = tmpl.ast();
  const logic::Program program(ast);
  std::vector<std::vector<std::string>> vars(program.num_rules());
  for (uint32_t r = 0; r < program.num_rules(); ++r) vars[r] = program.rule_variables(r);
  const neural::TemplateModel model = neural::TemplateModel::compile(ast, vars);

  std::map<std::string, PredicateNode> nodes;  // sorted: the same template gives the same text
  for (const Rule& rule : ast.rules) {
    nodes[predicate_key(rule.head.predicate, rule.head.arity())].derived = true;
    for (const Literal& lit : rule.body) {
      PredicateNode& n = nodes[(lit.builtin ? "@" : "") + predicate_key(lit.predicate, lit.arity())];
      n.builtin = lit.builtin;
    }
  }
  for (const Literal& fact : ast.facts) ++nodes[predicate_key(fact.predicate, fact.arity())].template_facts;
  for (const neural::PredicateSpec& p : model.predicates) {
    auto it = nodes.find(predicate_key(p.name, p.arity));
    if (it == nodes.end() || !it->second.derived) continue;
    it->second.functions = exec::to_string(p.activation);
    if (p.combination != exec::AggregationKind::Sum)
      it->second.functions += ", " + exec::to_string(exec::Aggregation{p.combination, {}});
    if (p.offset != neural::kNoParam)
      it->second.functions += "\noffset " + exec::to_string(model.params.info(p.offset).shape);
  }

  std::ostringstream dot;
  dot << "digraph template {\n  rankdir=BT;\n  node [fontname=\"Helvetica\", fontsize=11];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  for (const auto& [key, n] : nodes) {
    std::string label = key, attrs;
    if (n.builtin) {
      attrs = "shape=plaintext";
    } else if (n.derived) {
      label += "\n" + n.functions;
      attrs = "shape=ellipse, style=filled, fillcolor=\"#dbe9f6\"";
    } else if (n.template_facts == 0) {
      label += "\nexample facts";
      attrs = "shape=box, style=filled, fillcolor=\"#eeeeee\"";
    }
    if (n.template_facts > 0) {
      label += "\n" + std::to_string(n.template_facts) + " template fact" + (n.template_facts > 1 ? "s" : "");
      if (!n.derived) attrs = "shape=box, style=\"filled,rounded\", fillcolor=\"#fff2c2\"";
    }
    dot << "  " << draw::quoted(key) << " [label=" << draw::quoted(label) << ", " << attrs << "];\n";
  }
  for (size_t r = 0; r < ast.rules.size(); ++r) {
    const Rule& rule = ast.rules[r];
    const std::string head = predicate_key(rule.head.predicate, rule.head.arity());
    const std::string functions = rule_functions(model.rules[r]);
    for (const Literal& lit : rule.body) {
      const std::string from = (lit.builtin ? "@" : "") + predicate_key(lit.predicate, lit.arity());
      dot << "  " << draw::quoted(from) << " -> " << draw::quoted(head)
          << " [label=" << draw::quoted(edge_label(r, rule, lit, functions)) << "];\n";
    }
  }
  dot << "}\n";
  return dot.str();
}

}  // namespace lrnn
