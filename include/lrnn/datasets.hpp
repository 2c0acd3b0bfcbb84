// Readers of graph dataset formats other than the NeuraLogic text (docs/datasets.md).
// They produce the syntax stage's ExampleAst / QueryLineAst, so a converted dataset
// trains, prints and checks exactly like one read from examples/queries files.
//
//   lrnn::Dataset mutag = lrnn::load_tu("../shared/datasets/tu/MUTAG");
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
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

// ---- One graph from arrays (docs/datasets.md "Graphs from arrays") -------------------------
// A node-level graph (PyG's node classification, a knowledge base) as ONE example with one
// query per node, built straight from a feature matrix, an edge list and labels (no text).
// The facts are a TU graph's, so a template written for `--dataset tu:DIR` reads it alike:
// `node(i)` and `[x_i1, ..., x_iF] x(i)` per node, `edge(i, j)` per column of edge_index;
// the queries are `predict(i)`, node order, with y's target: integer class ids as TU graph
// labels become targets (0/1 for two classes, a one-hot vector for more), float y as given
// (a scalar per node, or a vector per row of an N x T y).

// A borrowed C-order (row-major) array, as numpy holds one: element type, shape and data.
// Nothing is copied; the caller keeps the data alive while it is read.
struct ArrayView {
  enum class Type : uint8_t { Float32, Float64, Int32, Int64, Bool };
  Type type = Type::Float64;
  const void* data = nullptr;
  std::vector<size_t> shape;
  size_t size() const;              // the product of the shape
  bool is_integer() const { return type == Type::Int32 || type == Type::Int64 || type == Type::Bool; }
  double number(size_t i) const;    // flat element i as a double
  int64_t integer(size_t i) const;  // flat element i of an integer or bool array
};
const char* type_name(ArrayView::Type type);  // numpy's: float32, float64, int32, int64, bool

struct GraphArrays {
  ArrayView x;                                   // node features: N x F (or N: one each)
  ArrayView edge_index;                          // 2 x E node ids: sources, then targets
  std::optional<ArrayView> y;                    // per node: class ids (integer, N) or
                                                 // float targets (N, or N x T)
  std::optional<ArrayView> train_mask, val_mask, test_mask;  // per node: bool (or 0/1)
};

// The predicates and ids a graph's facts and queries are written with.
struct GraphNames {
  std::string example = "graph";  // the example's id
  std::string node = "node", feature = "x", edge = "edge", query = "predict";
  int classes = 0;  // integer y: how many classes (0: max(y) + 1)
};

struct ArrayGraph {
  // One sample: the graph's example, its queries in node order; with masks, a query split
  // (Dataset::with_query_splits, docs/big_graphs.md "Query splits") of them.
  Dataset dataset;
  size_t nodes = 0, edges = 0, feature_width = 0;
  int classes = 0;          // integer y: the number of classes; else 0
  size_t target_width = 0;  // entries of a query's target (0: no y)
  // Each node's (= query's) part when any mask was given, else empty: the mask that holds
  // it; a node in no mask is None when train_mask was given, else Train (as
  // lrnn.Model.build_dataset reads masks: every query outside val and test trains).
  std::vector<QuerySplit> split_of_node;
  size_t count(QuerySplit split) const;
};

// Validates every array and builds the sample directly in the dataset's compact store.
// Wrong shapes or types, an edge_index entry that is no node id (named by its [row, column]
// and value), a non-finite feature or target (named by node), a negative or too-large class
// id, a mask that is not 0/1 or a node in two masks: lrnn::Error, its message starting with
// `source` (a file name, or the Python function that was called).
ArrayGraph graph_from_arrays(const GraphArrays& arrays, const GraphNames& names = {},
                             const std::string& source = "graph_from_arrays");
// In an MPI job of N > 1 ranks: this rank's share of the graph (docs/distributed.md "One
// sample over many ranks"). The arrays are checked as above and held (copied); the dataset
// counts the graph's queries (and their split), and a model that prepares it over the ranks
// builds only this rank's part of the facts (its partition and the facts within the
// template's radius) and the queries it owns, never the whole graph's. Anything else that
// would read the facts (a subset or split of samples, the network of a sample, fact rows,
// cross-validation, link prediction) is refused; a query split splits the counted queries.
// Outside a job, or with one rank, the same as graph_from_arrays.
ArrayGraph graph_from_arrays_share(const GraphArrays& arrays, const GraphNames& names = {},
                                   const std::string& source = "graph_from_arrays");

// ---- .npz files (numpy.savez / savez_compressed) ------------------------------------------
// One array of an .npz file, its data owned (8-byte aligned).
struct NpyArray {
  std::string name;  // without .npy
  ArrayView::Type type = ArrayView::Type::Float64;
  std::vector<size_t> shape;
  std::vector<uint64_t> storage;  // the elements, little-endian as on disk
  ArrayView view() const { return ArrayView{type, storage.data(), shape}; }
};

// Every array of the file: a zip of .npy files (stored or deflated), each C order with one of
// ArrayView's types. A Fortran-order array, another dtype (big-endian included), a truncated
// or malformed header or entry is an lrnn::Error naming the file and the array.
std::vector<NpyArray> read_npz(const std::string& path);

// `--dataset npz:FILE`: the graph of an .npz holding `x`, `edge_index` and optionally `y`,
// `train_mask`, `val_mask`, `test_mask` (PyG's Data fields), as graph_from_arrays builds it;
// other arrays are refused (a misspelt mask would otherwise be ignored).
ArrayGraph load_npz_graph(const std::string& path, const GraphNames& names = {});
// The same as a rank's share (graph_from_arrays_share): the file's arrays are read whole, and
// held, but only this rank's part of the graph's facts is built.
ArrayGraph load_npz_graph_share(const std::string& path, const GraphNames& names = {});

// stratified_folds (the cross-validation splits): include/lrnn/training.hpp.

}  // namespace lrnn
