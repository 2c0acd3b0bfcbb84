// `--dataset FORMAT:PATH` of train/eval: datasets in formats other than examples/queries
// files. One place, so every subcommand accepts the same specs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lrnn/ast.hpp"
#include "lrnn/datasets.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"
#include "lrnn/syntax.hpp"

namespace lrnn::cli {

struct LoadedData {
  std::vector<ExampleAst> examples;
  std::vector<QueryLineAst> queries;
};

inline bool is_spec(const std::string& spec, const char* format) { return spec.rfind(format, 0) == 0; }

inline Error unknown_format(const std::string& spec) {
  return Error(ErrorKind::Semantic, "--dataset '" + spec +
                                        "': expected FORMAT:PATH with FORMAT tu or npz (e.g. tu:data/MUTAG, "
                                        "npz:graph.npz)");
}

// `tu:DIR` reads a TU graph dataset (docs/datasets.md) as literals.
inline LoadedData load_dataset_spec(const std::string& spec) {
  if (is_spec(spec, "tu:")) {
    TuData d = read_tu(spec.substr(3));
    return {std::move(d.examples), std::move(d.queries)};
  }
  throw unknown_format(spec);
}

// --dataset when given, else the --examples / --queries files (one of them is required).
inline LoadedData load_data(const std::string& dataset, const std::string& examples, const std::string& queries) {
  if (!dataset.empty()) {
    if (!examples.empty()) throw Error(ErrorKind::Semantic, "give either --dataset or --examples, not both");
    return load_dataset_spec(dataset);
  }
  if (examples.empty()) throw Error(ErrorKind::Semantic, "no data: give --examples FILE or --dataset tu:DIR");
  LoadedData d;
  d.examples = load_examples(examples);
  if (!queries.empty()) d.queries = load_queries(queries);
  return d;
}

// `npz:FILE`: one graph from arrays (load_npz_graph, docs/datasets.md), with a query per node.
inline ArrayGraph load_npz_spec(const std::string& spec) { return load_npz_graph(spec.substr(4)); }

// The same data as a Dataset, whole (a TU dataset stored compactly as it is read: load_tu;
// an npz graph built from its arrays: load_npz_graph).
inline Dataset load_dataset(const std::string& dataset, const std::string& examples, const std::string& queries) {
  if (!dataset.empty() && examples.empty()) {
    if (is_spec(dataset, "tu:")) return load_tu(dataset.substr(3));
    if (is_spec(dataset, "npz:")) return load_npz_spec(dataset).dataset;
  }
  LoadedData data = load_data(dataset, examples, queries);
  return Dataset::from_ast(std::move(data.examples), data.queries);
}

// The same data as a Dataset; in an MPI job each rank parses only its share of it
// (Dataset::load_share, load_tu_share: docs/distributed.md). An npz graph is one sample:
// every rank reads its arrays and builds only its part of the facts (load_npz_graph_share).
inline Dataset load_data_share(const std::string& dataset, const std::string& examples, const std::string& queries) {
  if (!dataset.empty()) {
    if (!examples.empty()) throw Error(ErrorKind::Semantic, "give either --dataset or --examples, not both");
    if (is_spec(dataset, "tu:")) return load_tu_share(dataset.substr(3));
    if (is_spec(dataset, "npz:")) return load_npz_graph_share(dataset.substr(4)).dataset;
    throw unknown_format(dataset);
  }
  if (examples.empty()) throw Error(ErrorKind::Semantic, "no data: give --examples FILE or --dataset tu:DIR");
  return Dataset::load_share(examples, queries);
}

}  // namespace lrnn::cli
