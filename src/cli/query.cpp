// `lrnn query TEMPLATE [--facts FILE] GOAL [--json]`: answers a goal with the template's
// rules and the facts (a Datalog engine; no learning).
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.hpp"
#include "lrnn/logic.hpp"
#include "lrnn/syntax.hpp"

namespace {

struct QueryOptions {
  std::string template_path;
  std::string facts_path;
  std::string goal;
  bool json = false;
  size_t max_ground_rules = lrnn::kDefaultMaxGroundRules, max_atoms = lrnn::kDefaultMaxAtoms;
};

void run_query(const QueryOptions& o) {
  lrnn::TemplateAst tmpl = lrnn::load_template(o.template_path);
  std::vector<lrnn::ExampleAst> facts;
  if (!o.facts_path.empty()) facts = lrnn::load_examples(o.facts_path);
  lrnn::Literal goal = lrnn::parse_literal(o.goal);
  lrnn::logic::QueryResult result = lrnn::logic::answer_query(tmpl, facts, goal, o.max_ground_rules, o.max_atoms);
  if (!o.json) {
    for (const std::string& line : lrnn::logic::format_answers(result)) std::cout << line << "\n";
    return;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& row : result.rows) {
    nlohmann::json obj = nlohmann::json::object();
    for (size_t k = 0; k < row.size(); ++k) {
      if (row[k].is_number) {
        obj[result.variables[k]] = row[k].number;
      } else {
        obj[result.variables[k]] = row[k].text;
      }
    }
    out.push_back(obj);
  }
  std::cout << out.dump() << "\n";
}

lrnn::cli::RegisterCommand reg(40, [](CLI::App& app) {
  auto opts = std::make_shared<QueryOptions>();
  CLI::App* cmd = app.add_subcommand("query", "Answer a goal against a template and facts (no learning)");
  cmd->add_option("template", opts->template_path, "Template file (its rules and facts are used)")->required();
  cmd->add_option("goal", opts->goal, "Goal literal, e.g. 'reachable(X, charing_cross)'")->required();
  cmd->add_option("--facts,-f", opts->facts_path, "Examples file: the facts of all its examples are used");
  cmd->add_flag("--json", opts->json, "Print a JSON list of substitution objects (a ground goal: [{}] true, [] false)");
  lrnn::cli::add_grounding_limits(cmd, opts->max_ground_rules, opts->max_atoms);
  lrnn::cli::add_max_memory(cmd);
  cmd->footer(
      "Prints every answer substitution of the goal, one per line, sorted (numbers\n"
      "numerically before other constants), as `X=value, Y=value`; a ground goal prints\n"
      "`true` or `false`.\n\n"
      "Examples:\n"
      "  lrnn query examples/logic/family.lrnn --facts examples/logic/family.txt 'grandparent(X, eve)'\n"
      "  X=abe\n"
      "  X=mona\n"
      "  lrnn query examples/logic/graph.lrnn --facts examples/logic/edges.txt 'path(a, d)'\n"
      "  true\n"
      "  lrnn query examples/logic/graph.lrnn --facts examples/logic/edges.txt 'path(a, Y)' --json\n"
      "  [{\"Y\":\"b\"},{\"Y\":\"c\"},{\"Y\":\"d\"}]\n\n"
      "Exit codes: 0 answered, 2 malformed input, 1 other errors (e.g. unstratifiable negation, a limit\n"
      "reached: --max-ground-rules, --max-atoms, --max-memory).");
  cmd->callback([opts] { run_query(*opts); });
});

}  // namespace
