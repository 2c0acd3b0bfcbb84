// `lrnn draw TEMPLATE [--examples E --queries Q --sample K] --what template|ground|network|attention
// [-o out.svg|out.dot|out.png]`: pictures of a template, of a sample's grounding, of its
// neural network and of its attention weights (include/lrnn/draw.hpp). DOT (attention: SVG)
// goes to standard output without -o.
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "cli/dataset_spec.hpp"
#include "lrnn/atomic_file.hpp"
#include "lrnn/draw.hpp"

namespace {

using namespace lrnn;

struct DrawCliOptions {
  std::string template_path, examples_path, queries_path, dataset, what = "template", output, dot_program;
  size_t sample = 0;
  uint64_t seed = 1;
  size_t max_ground_rules = kDefaultMaxGroundRules, max_atoms = kDefaultMaxAtoms;
  DrawOptions picture;
};

bool is_model_file(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0;
}

// The picture's text: DOT, or SVG for --what attention (a heat map needs no layout).
std::string draw_text(const DrawCliOptions& o) {
  Model model = is_model_file(o.template_path)
                    ? Model::load(o.template_path)
                    : Model(Template::from_file(o.template_path), Settings{.seed = o.seed});
  model.settings().max_ground_rules = o.max_ground_rules;
  model.settings().max_atoms = o.max_atoms;
  if (o.what == "template") return template_dot(model.get_template());
  if (o.examples_path.empty() && o.dataset.empty())
    throw Error(ErrorKind::Semantic, "--what " + o.what + " draws one sample: give --examples FILE (or --dataset)");
  const Dataset data = cli::load_dataset(o.dataset, o.examples_path, o.queries_path);
  if (o.sample >= data.size())
    throw Error(ErrorKind::Semantic, "--sample " + std::to_string(o.sample) + ": the data has " +
                                         std::to_string(data.size()) + " samples (0.." +
                                         std::to_string(data.size() ? data.size() - 1 : 0) + ")");
  if (o.what == "attention") return attention_svg(model, data, o.sample, o.picture);
  return o.what == "ground" ? ground_dot(model, data, o.sample, o.picture)
                            : network_dot(model, data, o.sample, o.picture);
}

void run_draw(const DrawCliOptions& o) {
  if (!o.output.empty()) {
    // Before grounding anything: a bad file name or format fails at once.
    const std::string format = picture_format(o.output);
    if (o.what == "attention" && format != "svg")
      throw Error(ErrorKind::Semantic, "--what attention writes SVG: name the output file .svg, not " + o.output);
    if (o.what != "attention" && format != "dot" && find_graphviz(o.dot_program).empty())
      render_dot("", format, o.dot_program);  // throws the error saying to install graphviz
    check_can_write_atomically(o.output);
  }
  const std::string text = draw_text(o);
  if (o.output.empty()) {
    std::cout << text;
    return;
  }
  if (o.what == "attention") write_file_atomically(o.output, text);
  else save_picture(text, o.output, o.dot_program);
  std::cerr << "wrote " << o.output << "\n";
}

lrnn::cli::RegisterCommand reg(50, [](CLI::App& app) {
  auto o = std::make_shared<DrawCliOptions>();
  CLI::App* cmd = app.add_subcommand("draw", "Draw a template, a sample's grounding, its neural network or its attention (DOT, SVG, PNG)");
  cmd->add_option("template", o->template_path, "Template file, or a model saved by lrnn train --save (.json)")
      ->required();
  cmd->add_option("--what", o->what, "template: predicates and rules; ground: the sample's atoms and ground rules; "
                                     "network: its fact, rule, aggregation and atom neurons; attention: heat maps of its "
                                     "softmax-normalised rules, SVG (default template)")
      ->check(CLI::IsMember({"template", "ground", "network", "attention"}));
  cmd->add_option("--examples,-e", o->examples_path, "Examples file (for --what ground|network)");
  cmd->add_option("--queries,-q", o->queries_path, "Queries file (omit for labelled examples)");
  cmd->add_option("--dataset", o->dataset, "A dataset instead of --examples: tu:DIR (TU graph format) or npz:FILE (one graph as arrays: x, edge_index, y, masks)");
  cmd->add_option("--sample,-k", o->sample, "Which sample to draw (0-based, default 0)")->check(cli::finite_number(0, 1e9, false, true));
  cmd->add_flag("--values", o->picture.values, "Show each neuron's value");
  cmd->add_flag("--gradients", o->picture.gradients, "Show each neuron's gradient of the sample's loss");
  cmd->add_option("--value-detail", o->picture.value_detail, "Digits of values: 0 (3), 1 (6) or 2 (12)")
      ->check(CLI::IsMember({0, 1, 2}));
  cmd->add_option("--max-nodes", o->picture.max_nodes, "Nodes drawn before the rest is summarised as '... N more'; "
                                                       "network: whole layers are cut, the facts first (default 200)")
      ->check(cli::finite_number(1, 1e6, false, true));
  cmd->add_option("--max-per-group", o->picture.max_per_group, "network: neurons drawn per layer and predicate or rule, "
                                                               "the rest counted in one '... N more' node (default 4)")
      ->check(cli::finite_number(1, 1e6, false, true));
  cmd->add_option("--seed", o->seed, "Seed of the initial weights of a template (not of a saved model)")
      ->check(cli::finite_number(0, 1e18, false, true));
  cmd->add_option("--output,-o", o->output, "Output file: .dot (always), .svg or .png (need Graphviz's dot); "
                                            "without it, DOT text on standard output");
  cmd->add_option("--graphviz", o->dot_program, "Graphviz's dot program (default: dot on PATH)");
  cli::add_grounding_limits(cmd, o->max_ground_rules, o->max_atoms);
  cli::add_max_memory(cmd);
  cmd->callback([o] { run_draw(*o); });
});

}  // namespace
