// `lrnn ground TEMPLATE --examples E [--queries Q] [--stats] [--json]`: grounds every
// example and prints its ground rules, or (--stats) the counts per example and rule.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.hpp"
#include "lrnn/logic.hpp"
#include "lrnn/syntax.hpp"

namespace {

struct GroundOptions {
  std::string template_path;
  std::string examples_path;
  std::string queries_path;
  bool stats = false;
  bool json = false;
  size_t max_ground_rules = lrnn::kDefaultMaxGroundRules, max_atoms = lrnn::kDefaultMaxAtoms;
};

std::string fmt_ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  return buf;
}

void run_ground(const GroundOptions& o) {
  using namespace lrnn::logic;
  lrnn::TemplateAst tmpl = lrnn::load_template(o.template_path);
  std::vector<lrnn::ExampleAst> examples = lrnn::load_examples(o.examples_path);
  std::vector<lrnn::QueryLineAst> lines;
  if (!o.queries_path.empty()) lines = lrnn::load_queries(o.queries_path);
  std::vector<QueryPairing> pairings = pair_queries(examples, lines);
  // One grounding per example, supporting all of its queries at once.
  std::vector<std::vector<lrnn::Literal>> queries_of(examples.size());
  std::vector<char> used(examples.size(), 0);
  for (const auto& p : pairings) {
    used[p.example] = 1;
    queries_of[p.example].insert(queries_of[p.example].end(), p.queries.begin(), p.queries.end());
  }
  const Grounder grounder(tmpl);
  const bool list_rules = !o.json && !o.stats;

  const size_t n_rules = tmpl.rules.size();
  std::vector<size_t> total_per_rule(n_rules, 0);
  size_t total_facts = 0, total_derived = 0, total_ground = 0, n_grounded = 0;
  double total_seconds = 0;
  nlohmann::json json_examples = nlohmann::json::array();
  for (size_t e = 0; e < examples.size(); ++e) {
    if (!used[e]) continue;
    ExampleGrounding s;
    try {
      s = grounder.ground(examples[e], queries_of[e], list_rules, o.max_ground_rules, o.max_atoms);
    } catch (const lrnn::Error& err) {
      // Say which example exploded; the span still points at the rule.
      throw lrnn::Error(err.kind(), err.span(), "example " + std::to_string(e + 1) + ": " + err.message());
    }
    ++n_grounded;
    const std::vector<size_t>& per_rule = s.ground_rules_per_rule;
    for (size_t r = 0; r < n_rules; ++r) total_per_rule[r] += per_rule[r];
    total_facts += s.facts;
    total_derived += s.derived;
    total_ground += s.ground_rules;
    total_seconds += s.seconds;
    std::string label = std::to_string(e + 1) + (examples[e].id.empty() ? "" : " (" + examples[e].id + ")");
    if (o.json) {
      json_examples.push_back({{"example", e + 1},
                               {"id", examples[e].id},
                               {"facts", s.facts},
                               {"derived", s.derived},
                               {"atoms", s.atoms},
                               {"ground_rules", s.ground_rules},
                               {"ground_rules_per_rule", per_rule},
                               {"seconds", s.seconds}});
    } else if (o.stats) {
      std::string rules_text;
      for (size_t r = 0; r < n_rules; ++r)
        rules_text += (r ? " " : "") + std::string("r") + std::to_string(r) + "=" + std::to_string(per_rule[r]);
      std::cout << "example " << label << ": facts " << s.facts << ", derived " << s.derived
                << ", ground rules " << s.ground_rules << " [" << rules_text << "], "
                << fmt_ms(s.seconds) << "\n";
    } else {
      std::cout << "% example " << label << "\n";
      for (const std::string& line : s.ground_rule_lines) std::cout << line << "\n";
    }
  }
  auto rule_label = [&](size_t r) {
    std::string where = tmpl.rules[r].span.line ? "line " + std::to_string(tmpl.rules[r].span.line) + ": " : "";
    return where + lrnn::print_rule(tmpl.rules[r]);
  };
  double rate = total_seconds > 0 ? double(total_ground) / total_seconds : 0;
  if (o.json) {
    nlohmann::json rules = nlohmann::json::array();
    for (size_t r = 0; r < n_rules; ++r)
      rules.push_back({{"rule", r}, {"text", rule_label(r)}, {"ground_rules", total_per_rule[r]}});
    nlohmann::json out = {{"examples", json_examples},
                          {"totals",
                           {{"examples", n_grounded},
                            {"facts", total_facts},
                            {"derived", total_derived},
                            {"ground_rules", total_ground},
                            {"seconds", total_seconds},
                            {"ground_rules_per_second", rate}}},
                          {"rules", rules}};
    std::cout << out.dump(2) << "\n";
    return;
  }
  if (!o.stats) return;
  char rate_text[64];
  std::snprintf(rate_text, sizeof rate_text, "%.3g", rate);
  std::cout << "total: " << n_grounded << " examples, facts " << total_facts << ", derived " << total_derived
            << ", ground rules " << total_ground << ", " << fmt_ms(total_seconds) << " (" << rate_text
            << " ground rules/s)\n";
  for (size_t r = 0; r < n_rules; ++r)
    std::cout << "rule r" << r << " (" << rule_label(r) << "): " << total_per_rule[r] << " ground rules\n";
  // The plan rewrites (docs/semantics.md "Plan rewrites") of the samples planned one by one,
  // for inspection and for training; a template that grounds but does not neuralize (a
  // logic program) is not planned.
  try {
    for (const PlanRewrite& w : plan_rewrites(tmpl, examples, lines, o.max_ground_rules, o.max_atoms))
      std::cout << "rewrite " << w.name << ": " << w.rule_groups << (w.rule_groups == 1 ? " rule group, " : " rule groups, ")
                << w.training_rule_groups << " in training (" << w.description << ")\n";
  } catch (const lrnn::Error& err) {
    std::cout << "rewrites: not planned (" << err.message() << ")\n";
  }
}

lrnn::cli::RegisterCommand reg(45, [](CLI::App& app) {
  auto opts = std::make_shared<GroundOptions>();
  CLI::App* cmd = app.add_subcommand("ground", "Ground a template on every example: ground rules or counts");
  cmd->add_option("template", opts->template_path, "Template file")->required();
  cmd->add_option("--examples,-e", opts->examples_path, "Examples file (one example per line)")->required();
  cmd->add_option("--queries,-q", opts->queries_path,
                  "Queries file; grounding keeps only what supports the queries");
  cmd->add_flag("--stats", opts->stats,
                "Print counts per example and per rule, and the plan rewrites (inspection and training plans), "
                "instead of the ground rules");
  cmd->add_flag("--json", opts->json, "Print the counts as JSON");
  lrnn::cli::add_grounding_limits(cmd, opts->max_ground_rules, opts->max_atoms);
  lrnn::cli::add_max_memory(cmd);
  cmd->footer(
      "Examples and queries pair as in docs/language.md (\"Examples and queries\"): N examples\n"
      "with N query lines line by line, one example with every query, `id :- ...` lines by id,\n"
      "and a labelled example `<1> q :- facts.` with its own query. Without queries everything\n"
      "is grounded. Rules are numbered r0, r1, ... in file order, as in `lrnn draw`.\n\n"
      "Examples:\n"
      "  lrnn ground examples/templates/mutagenesis.lrnn --stats \\\n"
      "      --examples ../shared/datasets/neuralogic/molecules/mutagenesis/examples.txt \\\n"
      "      --queries ../shared/datasets/neuralogic/molecules/mutagenesis/queries.txt\n"
      "  example 1: facts 148, derived 141, ground rules 292 [r0=20 r1=2 r2=11 ...], 0.488 ms\n"
      "  ...\n"
      "  total: 188 examples, facts 20622, derived 20110, ground rules 40894, ...\n"
      "  rule r0 (line 6: {8, 1} atom_embed(A) :- c(A).): 2394 ground rules\n"
      "  ...\n"
      "  lrnn ground examples/logic/graph.lrnn --examples examples/logic/edges.txt   # the ground rules\n"
      "  % example 1\n"
      "  path(a, b) :- edge(a, b).\n"
      "  ...\n"
      "  lrnn ground examples/logic/graph.lrnn --examples examples/logic/edges.txt --json   # counts as JSON");
  cmd->callback([opts] { run_ground(*opts); });
});

}  // namespace
