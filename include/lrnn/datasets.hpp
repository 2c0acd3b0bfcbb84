// Readers of graph dataset formats other than the NeuraLogic text (docs/datasets.md).
// They produce the syntax stage's ExampleAst / QueryLineAst, so a converted dataset
// trains, prints and checks exactly like one read from examples/queries files.
//
//   lrnn::Dataset mutag = lrnn::load_tu("../shared/datasets/tu/MUTAG");
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lrnn/ast.hpp"
#include "lrnn/model.hpp"

namespace lrnn {

// One TU dataset (https://chrsmrrs.github.io/datasets/docs/format/) as lrnn examples.
// Example k (id `g<k>`, k the 1-based TU graph id) holds, with node ids 0-based within
// the graph: `node(i)`, `edge(i, j)` for every line of DS_A.txt (as listed: the file
// already holds both directions), `[one-hot] x(i)` from DS_node_labels.txt,
// `[values] attr(i)` from DS_node_attributes.txt, `[one-hot] edge_x(i, j)` from
// DS_edge_labels.txt and `[values] edge_attr(i, j)` from DS_edge_attributes.txt.
// The query is `predict` with the graph label: 0/1 for two classes, a one-hot vector
// for more (classes are the sorted distinct labels).
struct TuData {
  std::string name;                    // DS
  std::vector<ExampleAst> examples;    // one per graph, without queries
  std::vector<QueryLineAst> queries;   // one per graph, same id
  std::vector<int> graph_class;        // class index per graph (into class_labels)
  std::vector<long> class_labels;      // sorted distinct graph labels as written
  size_t nodes = 0, edges = 0;         // totals (edges = lines of DS_A.txt)
  int node_label_width = 0;            // 0: no node labels
  int node_attribute_width = 0;
  int edge_label_width = 0;
  int edge_attribute_width = 0;
  size_t graphs_total = 0;  // graphs in the files (examples holds graphs_total of them
  size_t first_graph = 0;   // unless read as a part: then from first_graph, 0-based)
  size_t owned_first = 0, owned_last = 0;  // a part's block (without its margins)
};

// Part `index` of `count` of a TU dataset: a contiguous block of graphs, the blocks holding
// about equal numbers of nodes; the block an MPI rank trains (docs/distributed.md). With
// `margins`, also 1/16 of a block of the neighbouring blocks' graphs on each side.
struct TuPart {
  size_t index = 0, count = 1;
  bool margins = false;
};

// Reads `dir`/DS_*.txt, DS = the folder name unless `name` is given. Malformed or
// missing files throw lrnn::Error naming `file:line`; nothing partial is returned.
// With a `part`, only that part's graphs are built: the graph indicator and labels are read
// whole, the node and edge files' other lines are skipped (label files are still scanned
// for their one-hot range, the A file for its checks and to find the part's edges).
TuData read_tu(const std::string& dir, const std::string& name = "", TuPart part = {});

// The examples with their queries attached, ready to train: the same samples as
// Dataset::from_ast(read_tu(dir, name)'s examples and queries), each graph stored compactly
// as it is read (NCI1's 4110 graphs as literals would be ~230 MB at once).
Dataset load_tu(const std::string& dir, const std::string& name = "");
// The same, with every field of read_tu's result but the examples and queries in `info`,
// and each graph's example handed to `each` (graph order) before it is stored: a reader
// that wants the graphs in another form too (Python's arrays) makes it from the literals
// without holding them all.
Dataset load_tu(const std::string& dir, const std::string& name, TuData& info,
                const std::function<void(const TuData& info, const ExampleAst& example)>& each);

// In an MPI job of N > 1 ranks: this rank's part of the dataset only (Dataset::load_share);
// outside a job the same as load_tu.
Dataset load_tu_share(const std::string& dir, const std::string& name = "");

}  // namespace lrnn

namespace lrnn {

// stratified_folds (the cross-validation splits): include/lrnn/training.hpp.

}  // namespace lrnn
