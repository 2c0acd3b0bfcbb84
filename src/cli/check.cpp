// `lrnn check TEMPLATE [--examples E] [--queries Q] [--json]`: everything `train` and
// `eval` would check before training — parse, compile the template (functions, metadata,
// weights), pair examples with queries, check the query predicates, ground, neuralize and
// plan every sample (shapes, builtins, negation, limits) — then report the first error
// (exit 2) or a one-line summary (exit 0).
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"
#include "lrnn/syntax.hpp"

namespace {

struct CheckOptions {
  std::string template_path;
  std::string examples_path;
  std::string queries_path;
  bool json = false;
  size_t max_ground_rules = lrnn::kDefaultMaxGroundRules, max_atoms = lrnn::kDefaultMaxAtoms;
};

std::string check_all(const CheckOptions& o) {
  lrnn::TemplateAst t = lrnn::load_template(o.template_path);
  std::string summary = o.template_path + ": " + std::to_string(t.rules.size()) + " rules, " +
                        std::to_string(t.facts.size()) + " facts, " + std::to_string(t.predicates.size()) +
                        " predicate declarations";
  if (t.sources.size() > 1) summary += " (" + std::to_string(t.sources.size() - 1) + " imported files)";
  if (!o.examples_path.empty()) {
    auto examples = lrnn::load_examples(o.examples_path);
    size_t facts = 0, labelled = 0;
    for (const auto& e : examples) {
      facts += e.facts.size();
      labelled += e.queries.empty() ? 0 : 1;
    }
    summary += "; " + std::to_string(examples.size()) + " examples (" + std::to_string(facts) + " facts";
    if (labelled) summary += ", " + std::to_string(labelled) + " labelled";
    summary += ")";
  }
  if (!o.queries_path.empty()) {
    auto lines = lrnn::load_queries(o.queries_path);
    size_t queries = 0;
    for (const auto& q : lines) queries += q.queries.size();
    summary += "; " + std::to_string(queries) + " queries";
  }
  // What train/eval do next: compile, pair, ground, neuralize, plan and run forward once.
  lrnn::Settings settings;
  settings.max_ground_rules = o.max_ground_rules;
  settings.max_atoms = o.max_atoms;
  lrnn::Model model(lrnn::Template::from_ast(t), settings);
  if (!o.examples_path.empty()) {
    lrnn::Dataset data = lrnn::Dataset::load(o.examples_path, o.queries_path);
    model.evaluate(data);
  }
  return summary;
}

void run_check(const CheckOptions& o) {
  try {
    const std::string summary = check_all(o);
    if (o.json) std::cout << nlohmann::json{{"ok", true}, {"summary", summary}}.dump() << "\n";
    else std::cout << "ok: " << summary << "\n";
  } catch (const lrnn::Error& e) {
    if (o.json) {
      const lrnn::Span& sp = e.span();
      nlohmann::json err = {{"kind", lrnn::to_string(e.kind())}, {"message", e.message()}, {"diagnostic", e.what()}};
      if (sp.file) err["file"] = sp.file->name;
      if (sp.line) err["line"] = sp.line, err["col"] = sp.col;
      std::cout << nlohmann::json{{"ok", false}, {"error", err}}.dump() << "\n";
    } else {
      std::cerr << e.what() << "\n";
    }
    std::cout.flush();
    // A file that cannot be read or a limit reached (the memory budget, --max-ground-rules,
    // --max-atoms) is a runtime failure (1, docs/cli.md); every finding in the input is 2.
    const bool failure = e.kind() == lrnn::ErrorKind::Io || e.kind() == lrnn::ErrorKind::Limit;
    std::exit(failure ? lrnn::cli::kExitFailure : lrnn::cli::kExitBadInput);
  }
}

lrnn::cli::RegisterCommand reg(30, [](CLI::App& app) {
  auto opts = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand("check", "Check a template (and examples/queries) as train/eval would; report the first error");
  cmd->add_option("template", opts->template_path, "Template file (rules, facts, declarations)")->required();
  cmd->add_option("--examples,-e", opts->examples_path, "Examples file (facts per example, each ending with '.')");
  cmd->add_option("--queries,-q", opts->queries_path, "Queries file ('1.0 predict.' per line)");
  cmd->add_flag("--json", opts->json, "Print {\"ok\": true, ...} or {\"ok\": false, \"error\": {kind, message, file, line, col}}");
  lrnn::cli::add_grounding_limits(cmd, opts->max_ground_rules, opts->max_atoms);
  lrnn::cli::add_max_memory(cmd);
  cmd->footer(
      "Exit codes: 0 everything checks, 2 the first error in the input (file:line:col: error: ... on\n"
      "stderr), 1 a file that cannot be read or a limit reached (--max-memory, --max-ground-rules,\n"
      "--max-atoms).\n\n"
      "Examples:\n"
      "  lrnn check examples/templates/mutagenesis.lrnn\n"
      "  lrnn check examples/templates/mutagenesis.lrnn \\\n"
      "      --examples ../shared/datasets/neuralogic/molecules/mutagenesis/examples.txt \\\n"
      "      --queries ../shared/datasets/neuralogic/molecules/mutagenesis/queries.txt\n"
      "  ok: examples/templates/mutagenesis.lrnn: 18 rules, 0 facts, 1 predicate declarations; 188 examples (20622 facts); 188 queries");
  cmd->callback([opts] { run_check(*opts); });
});

}  // namespace
