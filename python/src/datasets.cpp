// lrnn.datasets: TU graph datasets read by the C++ loader (include/lrnn/datasets.hpp) as a
// SampleSet the engine prepares directly, plus every graph as arrays (x, edge_index,
// edge_attr, y) for the PyG conversion (lrnn.datasets.to_pyg); one graph from arrays
// (lrnn.datasets.from_arrays: graph_from_arrays) and from an .npz file.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "lrnn/datasets.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "sample_set.hpp"
#include "train/cross_validation.hpp"

namespace lrnn::python {

namespace {

template <class T>
nb::ndarray<nb::numpy, T> owned_array(std::vector<T> values, std::vector<size_t> shape) {
  auto* heap = new std::vector<T>(std::move(values));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(heap->data(), shape.size(), shape.data(), owner);
}

size_t node_index(const Literal& fact, size_t arg) { return std::stoul(fact.args[arg].text); }

// One TU graph's facts back as arrays (tu.cpp writes node/x/attr per node, then each edge
// followed by its edge_x/edge_attr, in the order of the A file): nodes, edge_index [2, E],
// node labels one-hot [n, L], node attributes [n, A], edge labels one-hot [E, L'], edge
// attributes [E, A'] (empty blocks for what the dataset does not have). Made without the
// GIL while the graphs are read; numpy arrays are made from them afterwards.
struct TuGraphArrays {
  size_t nodes = 0, edges = 0;
  std::vector<int64_t> edge_index;
  std::vector<double> node_labels, node_attrs, edge_labels, edge_attrs;
};

TuGraphArrays graph_arrays(const TuData& d, const ExampleAst& ex) {
  TuGraphArrays g;
  for (const Literal& f : ex.facts) {
    if (f.predicate == "node") g.nodes = std::max(g.nodes, node_index(f, 0) + 1);
    if (f.predicate == "edge") ++g.edges;
  }
  const size_t nl = d.node_label_width, na = d.node_attribute_width, el = d.edge_label_width, ea = d.edge_attribute_width;
  g.node_labels.resize(g.nodes * nl);
  g.node_attrs.resize(g.nodes * na);
  g.edge_labels.resize(g.edges * el);
  g.edge_attrs.resize(g.edges * ea);
  g.edge_index.resize(2 * g.edges);
  size_t e = 0;  // edges seen so far; edge_x / edge_attr belong to edge e - 1
  auto put = [](const Literal& f, std::vector<double>& into, size_t row, size_t width) {
    const std::vector<double>& v = f.weight->data;
    std::copy(v.begin(), v.begin() + static_cast<long>(std::min(width, v.size())), into.begin() + row * width);
  };
  for (const Literal& f : ex.facts) {
    if (f.predicate == "x") put(f, g.node_labels, node_index(f, 0), nl);
    else if (f.predicate == "attr") put(f, g.node_attrs, node_index(f, 0), na);
    else if (f.predicate == "edge_x") put(f, g.edge_labels, e - 1, el);
    else if (f.predicate == "edge_attr") put(f, g.edge_attrs, e - 1, ea);
    else if (f.predicate == "edge") {
      g.edge_index[e] = static_cast<int64_t>(node_index(f, 0));
      g.edge_index[g.edges + e] = static_cast<int64_t>(node_index(f, 1));
      ++e;
    }
  }
  return g;
}

// (nodes, edge_index, node labels, node attributes, edge labels, edge attributes), None for
// a block the dataset does not have.
nb::tuple graph_tuple(const TuData& d, TuGraphArrays g) {
  auto block = [](std::vector<double> values, size_t rows, size_t width) -> nb::object {
    if (!width) return nb::none();
    return nb::cast(owned_array(std::move(values), {rows, width}));
  };
  return nb::make_tuple(g.nodes, owned_array(std::move(g.edge_index), {2, g.edges}),
                        block(std::move(g.node_labels), g.nodes, d.node_label_width),
                        block(std::move(g.node_attrs), g.nodes, d.node_attribute_width),
                        block(std::move(g.edge_labels), g.edges, d.edge_label_width),
                        block(std::move(g.edge_attrs), g.edges, d.edge_attribute_width));
}

// A numpy array of any dtype, read in place (lrnn.datasets.from_arrays hands over C-order
// arrays of the dtypes ArrayView reads; anything else is refused here by name).
using AnyArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

ArrayView array_view(const AnyArray& a, const char* name) {
  ArrayView v;
  v.data = a.data();
  for (size_t d = 0; d < a.ndim(); ++d) v.shape.push_back(a.shape(d));
  const nb::dlpack::dtype t = a.dtype();
  const auto code = static_cast<nb::dlpack::dtype_code>(t.code);
  if (code == nb::dlpack::dtype_code::Float && t.bits == 64) v.type = ArrayView::Type::Float64;
  else if (code == nb::dlpack::dtype_code::Float && t.bits == 32) v.type = ArrayView::Type::Float32;
  else if (code == nb::dlpack::dtype_code::Int && t.bits == 64) v.type = ArrayView::Type::Int64;
  else if (code == nb::dlpack::dtype_code::Int && t.bits == 32) v.type = ArrayView::Type::Int32;
  else if (code == nb::dlpack::dtype_code::Bool && t.bits == 8) v.type = ArrayView::Type::Bool;
  else
    throw Error(ErrorKind::Parse, std::string("graph_from_arrays: ") + name +
                                      " has an unsupported dtype (float32, float64, int32, int64 or bool)");
  return v;
}

std::optional<ArrayView> optional_view(const std::optional<AnyArray>& a, const char* name) {
  if (!a) return std::nullopt;
  return array_view(*a, name);
}

// graph_from_arrays' result for Python: the samples and what lrnn.datasets.NodeGraph shows.
nb::dict graph_dict(ArrayGraph g) {
  nb::dict out;
  out["nodes"] = g.nodes;
  out["edges"] = g.edges;
  out["feature_width"] = g.feature_width;
  out["classes"] = g.classes;
  out["target_width"] = g.target_width;
  std::vector<uint8_t> split(g.split_of_node.size());
  for (size_t i = 0; i < split.size(); ++i) split[i] = static_cast<uint8_t>(g.split_of_node[i]);
  out["split_of_node"] = split.empty() ? nb::none() : nb::cast(owned_array(std::move(split), {g.split_of_node.size()}));
  out["samples"] = SampleSet{std::move(g.dataset)};
  return out;
}

GraphNames graph_names(const std::string& example, const std::string& node, const std::string& feature,
                       const std::string& edge, const std::string& query, int classes) {
  GraphNames n;
  n.example = example;
  n.node = node;
  n.feature = feature;
  n.edge = edge;
  n.query = query;
  n.classes = classes;
  return n;
}

}  // namespace

void bind_datasets(nb::module_& m) {
  nb::class_<SampleSet>(m, "SampleSet")
      .def("__len__", [](const SampleSet& s) { return s.samples_without_facts().size(); })
      .def_static("from_text",
                  [](const std::string& examples, const std::string& queries) {
                    nb::gil_scoped_release release;
                    std::vector<QueryLineAst> q;
                    if (!queries.empty()) q = parse_queries(queries, "<queries>");
                    return sample_set(train::pair_samples(parse_examples(examples, "<examples>"), q));
                  })
      .def_static("from_files",
                  [](const std::string& examples, const std::string& queries) {
                    nb::gil_scoped_release release;
                    std::vector<QueryLineAst> q;
                    if (!queries.empty()) q = load_queries(queries);
                    return sample_set(train::pair_samples(load_examples(examples), q));
                  })
      .def("subset",
           [](const SampleSet& s, const std::vector<int64_t>& indices) {
             std::vector<size_t> picked;
             picked.reserve(indices.size());
             for (int64_t i : indices) {
               if (i < 0 || static_cast<size_t>(i) >= s.samples_without_facts().size())
                 throw nb::index_error(("sample index " + std::to_string(i) + " out of range for a dataset of " +
                                        std::to_string(s.samples_without_facts().size()))
                                           .c_str());
               picked.push_back(static_cast<size_t>(i));
             }
             return SampleSet{s.data.subset(picked)};
           })
      .def("classes", [](const SampleSet& s) { return train::sample_classes(s.samples_without_facts()); })
      .def("example_ids", [](const SampleSet& s) {
        std::vector<std::string> ids;
        for (const auto& sample : s.samples_without_facts()) ids.push_back(sample.example.id);
        return ids;
      });

  m.def(
      "graph_from_arrays",
      [](AnyArray x, AnyArray edge_index, std::optional<AnyArray> y, std::optional<AnyArray> train_mask,
         std::optional<AnyArray> val_mask, std::optional<AnyArray> test_mask, const std::string& example,
         const std::string& node, const std::string& feature, const std::string& edge, const std::string& query,
         int classes, const std::string& source, bool share) {
        GraphArrays a;
        a.x = array_view(x, "x");
        a.edge_index = array_view(edge_index, "edge_index");
        a.y = optional_view(y, "y");
        a.train_mask = optional_view(train_mask, "train_mask");
        a.val_mask = optional_view(val_mask, "val_mask");
        a.test_mask = optional_view(test_mask, "test_mask");
        const GraphNames names = graph_names(example, node, feature, edge, query, classes);
        ArrayGraph g;
        {
          nb::gil_scoped_release release;
          g = share ? graph_from_arrays_share(a, names, source) : graph_from_arrays(a, names, source);
        }
        return graph_dict(std::move(g));
      },
      nb::arg("x"), nb::arg("edge_index"), nb::arg("y").none(), nb::arg("train_mask").none(),
      nb::arg("val_mask").none(), nb::arg("test_mask").none(), nb::arg("example"), nb::arg("node"),
      nb::arg("feature"), nb::arg("edge"), nb::arg("query"), nb::arg("classes"), nb::arg("source"),
      nb::arg("share") = false);

  m.def(
      "load_npz_graph",
      [](const std::string& path, const std::string& example, const std::string& node, const std::string& feature,
         const std::string& edge, const std::string& query, int classes, bool share) {
        const GraphNames names = graph_names(example, node, feature, edge, query, classes);
        ArrayGraph g;
        {
          nb::gil_scoped_release release;
          g = share ? load_npz_graph_share(path, names) : load_npz_graph(path, names);
        }
        return graph_dict(std::move(g));
      },
      nb::arg("path"), nb::arg("example"), nb::arg("node"), nb::arg("feature"), nb::arg("edge"), nb::arg("query"),
      nb::arg("classes"), nb::arg("share") = false);

  m.def("read_tu", [](const std::string& dir, const std::string& name) {
    // Each graph's arrays are made as it is read, and its sample stored compactly (load_tu):
    // the graphs are never all held as literals.
    TuData d;
    std::vector<TuGraphArrays> arrays;
    Dataset samples;
    {
      nb::gil_scoped_release release;
      samples = load_tu(dir, name, d,
                        [&](const TuData& info, const ExampleAst& ex) { arrays.push_back(graph_arrays(info, ex)); });
    }
    nb::list graphs;
    for (TuGraphArrays& g : arrays) graphs.append(graph_tuple(d, std::move(g)));
    nb::dict out;
    out["name"] = d.name;
    out["graphs"] = graphs;
    out["graph_class"] = d.graph_class;
    out["class_labels"] = d.class_labels;
    out["nodes"] = d.nodes;
    out["edges"] = d.edges;
    out["node_label_width"] = d.node_label_width;
    out["node_attribute_width"] = d.node_attribute_width;
    out["edge_label_width"] = d.edge_label_width;
    out["edge_attribute_width"] = d.edge_attribute_width;
    out["samples"] = SampleSet{std::move(samples)};
    return out;
  }, nb::arg("dir"), nb::arg("name") = "");
}

}  // namespace lrnn::python
