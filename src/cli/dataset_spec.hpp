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

// `tu:DIR` reads a TU graph dataset (docs/datasets.md).
inline LoadedData load_dataset_spec(const std::string& spec) {
  if (spec.rfind("tu:", 0) == 0) {
    TuData d = read_tu(spec.substr(3));
    return {std::move(d.examples), std::move(d.queries)};
  }
  throw Error(ErrorKind::Semantic, "--dataset '" + spec + "': expected FORMAT:PATH with FORMAT tu (e.g. tu:data/MUTAG)");
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

// The same data as a Dataset, whole (a TU dataset stored compactly as it is read: load_tu).
inline Dataset load_dataset(const std::string& dataset, const std::string& examples, const std::string& queries) {
  if (!dataset.empty() && examples.empty() && dataset.rfind("tu:", 0) == 0) return load_tu(dataset.substr(3));
  LoadedData data = load_data(dataset, examples, queries);
  return Dataset::from_ast(std::move(data.examples), data.queries);
}

// The same data as a Dataset; in an MPI job each rank parses only its share of it
// (Dataset::load_share, load_tu_share: docs/distributed.md).
inline Dataset load_data_share(const std::string& dataset, const std::string& examples, const std::string& queries) {
  if (!dataset.empty()) {
    if (!examples.empty()) throw Error(ErrorKind::Semantic, "give either --dataset or --examples, not both");
    if (dataset.rfind("tu:", 0) == 0) return load_tu_share(dataset.substr(3));
    load_dataset_spec(dataset);  // throws: an unknown format
  }
  if (examples.empty()) throw Error(ErrorKind::Semantic, "no data: give --examples FILE or --dataset tu:DIR");
  return Dataset::load_share(examples, queries);
}

}  // namespace lrnn::cli
