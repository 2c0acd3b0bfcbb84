// `lrnn eval MODEL --examples E [--queries Q] [--json]`: a saved model's outputs and metrics
// on a dataset (no training).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "cli/dataset_spec.hpp"
#include "cli/warnings.hpp"
#include "lrnn/syntax.hpp"
#include "lrnn/distributed.hpp"
#include "lrnn/model.hpp"
#include "lrnn/report.hpp"

namespace {

using namespace lrnn;

struct EvalOptions {
  std::string model_path, examples_path, queries_path, dataset;
  std::string dtype;  // empty: the dtype the model was trained in
  bool json = false;
  size_t max_ground_rules = kDefaultMaxGroundRules, max_atoms = kDefaultMaxAtoms;
};

void run_eval(const EvalOptions& o) {
  Model model = Model::load(o.model_path);
  if (!o.dtype.empty()) model.settings().dtype = parse_dtype(o.dtype);
  model.settings().max_ground_rules = o.max_ground_rules;
  model.settings().max_atoms = o.max_atoms;
  const Dataset dataset = cli::load_data_share(o.dataset, o.examples_path, o.queries_path);
  const Evaluation ev = model.evaluate(dataset);
  cli::warn_underivable_queries(model, dataset, "data");  // every rank: it counts over the job
  if (!is_root_process()) return;  // under mpirun: each rank evaluated its block, rank 0 reports
  if (o.json) {
    nlohmann::json j = lrnn::metrics_json(ev.metrics);
    j["samples"] = dataset.size();
    j["dtype"] = to_string(model.settings().dtype);
    j["outputs"] = lrnn::outputs_json(ev);
    std::cout << j.dump() << "\n";
    return;
  }
  for (const Output& out : ev.outputs) {
    std::string value;
    for (size_t e = 0; e < out.value.size(); ++e) value += (e ? " " : "") + std::to_string(out.value[e]);
    std::string target;
    for (size_t e = 0; e < out.target.size(); ++e) target += (e ? " " : "") + std::to_string(out.target[e]);
    std::printf("%zu\t%s\toutput %s%s%s\n", out.example, out.query.c_str(), value.c_str(),
                out.target.empty() ? "" : "\ttarget ", target.c_str());
  }
  if (ev.metrics.count)
    std::printf("loss %.6f  accuracy %.4f  (%zu targets)\n", ev.metrics.loss, ev.metrics.accuracy, ev.metrics.count);
}

lrnn::cli::RegisterCommand reg(41, [](CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate a saved model on examples (and queries)");
  cmd->add_option("model", o->model_path, "Model file written by lrnn train --save")->required();
  CLI::Option_group* data = cmd->add_option_group("data", "Evaluation data: one of");
  data->add_option("--examples,-e", o->examples_path, "Examples file");
  data->add_option("--dataset", o->dataset, "A dataset instead of --examples: tu:DIR (TU graph format) or npz:FILE (one graph as arrays: x, edge_index, y, masks)");
  data->require_option(1);
  cmd->add_option("--queries,-q", o->queries_path, "Queries file (omit for labelled examples)");
  cmd->add_option("--dtype", o->dtype, "float32 | float64 (default: the dtype the model was trained in)")
      ->check(cli::dtype_name());
  cmd->add_flag("--json", o->json, "Print one JSON object with metrics and outputs");
  cli::add_grounding_limits(cmd, o->max_ground_rules, o->max_atoms);
  cli::add_max_memory(cmd);
  cmd->callback([o] { run_eval(*o); });
});

}  // namespace
