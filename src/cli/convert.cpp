// `lrnn convert tu DIR -o EXAMPLES QUERIES`: a TU graph dataset to the NeuraLogic text
// format (one example and one query line per graph, paired by id), readable back by
// `lrnn train --examples EXAMPLES --queries QUERIES`. Files are saved atomically
// (lrnn/atomic_file.hpp), so a failure never leaves a partial file.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "lrnn/atomic_file.hpp"
#include "lrnn/datasets.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"

namespace {

struct ConvertOptions {
  std::string format;
  std::string dir;
  std::vector<std::string> outputs;
};

// One line per item, saved through the project's atomic writer (a unique temporary file,
// special files refused, nothing partial left behind).
template <class Items, class Print>
void write_lines_atomically(const std::string& path, const Items& items, Print print) {
  std::string text;
  for (const auto& item : items) text += print(item) + '\n';
  lrnn::write_file_atomically(path, text);
}

void run_convert(const ConvertOptions& o) {
  if (o.format != "tu")
    throw lrnn::Error(lrnn::ErrorKind::Semantic, "unknown dataset format '" + o.format + "' (known: tu)");
  lrnn::TuData d = lrnn::read_tu(o.dir);
  write_lines_atomically(o.outputs[0], d.examples, [](const auto& e) { return lrnn::print_example(e); });
  write_lines_atomically(o.outputs[1], d.queries, [](const auto& q) { return lrnn::print_query_line(q); });
  std::cout << d.name << ": " << d.examples.size() << " graphs, " << d.nodes << " nodes, " << d.edges
            << " directed edges, " << d.class_labels.size() << " classes -> " << o.outputs[0] << ", "
            << o.outputs[1] << "\n";
}

lrnn::cli::RegisterCommand reg(35, [](CLI::App& app) {
  auto opts = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand("convert", "Convert a graph dataset (TU format) to examples/queries files");
  cmd->add_option("format", opts->format, "Input format: tu")->required();
  cmd->add_option("dir", opts->dir, "Dataset folder holding DS_A.txt, DS_graph_indicator.txt, ...")->required();
  cmd->add_option("-o,--output", opts->outputs, "Examples file and queries file to write")
      ->expected(2)
      ->required();
  lrnn::cli::add_max_memory(cmd);
  cmd->footer(
      "Facts per graph: node(i), edge(i, j), [one-hot] x(i), [values] attr(i), [one-hot] edge_x(i, j),\n"
      "[values] edge_attr(i, j); target: predict (see docs/datasets.md).\n\n"
      "Example:\n"
      "  lrnn convert tu ../shared/datasets/tu/MUTAG -o examples.txt queries.txt");
  cmd->callback([opts] { run_convert(*opts); });
});

}  // namespace
