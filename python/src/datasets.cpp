// lrnn.datasets: TU graph datasets read by the C++ loader (include/lrnn/datasets.hpp) as a
// SampleSet the engine prepares directly, plus every graph as arrays (x, edge_index,
// edge_attr, y) for the PyG conversion (lrnn.datasets.to_pyg).
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
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
struct GraphArrays {
  size_t nodes = 0, edges = 0;
  std::vector<int64_t> edge_index;
  std::vector<double> node_labels, node_attrs, edge_labels, edge_attrs;
};

GraphArrays graph_arrays(const TuData& d, const ExampleAst& ex) {
  GraphArrays g;
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
nb::tuple graph_tuple(const TuData& d, GraphArrays g) {
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

  m.def("read_tu", [](const std::string& dir, const std::string& name) {
    // Each graph's arrays are made as it is read, and its sample stored compactly (load_tu):
    // the graphs are never all held as literals.
    TuData d;
    std::vector<GraphArrays> arrays;
    Dataset samples;
    {
      nb::gil_scoped_release release;
      samples = load_tu(dir, name, d,
                        [&](const TuData& info, const ExampleAst& ex) { arrays.push_back(graph_arrays(info, ex)); });
    }
    nb::list graphs;
    for (GraphArrays& g : arrays) graphs.append(graph_tuple(d, std::move(g)));
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
