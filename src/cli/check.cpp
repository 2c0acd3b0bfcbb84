// `lrnn check TEMPLATE [--examples E] [--queries Q]`: parse everything, report the first
// error (exit 2 through main's handler) or print a one-line summary.
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "lrnn/syntax.hpp"

namespace {

struct CheckOptions {
  std::string template_path;
  std::string examples_path;
  std::string queries_path;
};

void run_check(const CheckOptions& o) {
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
  std::cout << "ok: " << summary << "\n";
}

lrnn::cli::RegisterCommand reg(30, [](CLI::App& app) {
  auto opts = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand("check", "Parse a template (and examples/queries) and report the first error");
  cmd->add_option("template", opts->template_path, "Template file (rules, facts, declarations)")->required();
  cmd->add_option("--examples,-e", opts->examples_path, "Examples file (facts per example, each ending with '.')");
  cmd->add_option("--queries,-q", opts->queries_path, "Queries file ('1.0 predict.' per line)");
  cmd->footer(
      "Exit codes: 0 everything parses, 2 malformed input (file:line:col: error: ... on stderr),\n"
      "1 unreadable file.\n\n"
      "Examples:\n"
      "  lrnn check examples/templates/mutagenesis.lrnn\n"
      "  lrnn check examples/templates/mutagenesis.lrnn \\\n"
      "      --examples ../shared/datasets/neuralogic/molecules/mutagenesis/examples.txt \\\n"
      "      --queries ../shared/datasets/neuralogic/molecules/mutagenesis/queries.txt\n"
      "  ok: examples/templates/mutagenesis.lrnn: 18 rules, 0 facts, 1 predicate declarations; 188 examples (20622 facts); 188 queries");
  cmd->callback([opts] { run_check(*opts); });
});

}  // namespace
