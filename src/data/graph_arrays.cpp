// One graph from arrays (features, edge list, labels, masks) as one sample with a query per
// node, built fact by fact in the dataset's compact store (docs/datasets.md "Graphs from
// arrays"). Every array is checked before anything is built; each error names the array,
// the entry and its value.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "data/array_share.hpp"
#include "data/vector_value.hpp"
#include "lrnn/datasets.hpp"
#include "lrnn/diagnostics.hpp"
#include "api/dataset_impl.hpp"
#include "train/dataset.hpp"
#include "train/distributed.hpp"
#include "train/partition.hpp"
#include "train/sample_store.hpp"

namespace lrnn {

size_t ArrayView::size() const {
  size_t n = 1;
  for (size_t d : shape) n *= d;
  return n;
}

double ArrayView::number(size_t i) const {
  switch (type) {
    case Type::Float32: return static_cast<const float*>(data)[i];
    case Type::Float64: return static_cast<const double*>(data)[i];
    case Type::Int32: return static_cast<const int32_t*>(data)[i];
    case Type::Int64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case Type::Bool: return static_cast<const uint8_t*>(data)[i] != 0 ? 1.0 : 0.0;
  }
  return 0;
}

int64_t ArrayView::integer(size_t i) const {
  switch (type) {
    case Type::Int32: return static_cast<const int32_t*>(data)[i];
    case Type::Int64: return static_cast<const int64_t*>(data)[i];
    case Type::Bool: return static_cast<const uint8_t*>(data)[i] != 0 ? 1 : 0;
    case Type::Float32:
    case Type::Float64: break;
  }
  throw Error(ErrorKind::Runtime, "ArrayView::integer of a float array");
}

const char* type_name(ArrayView::Type type) {
  switch (type) {
    case ArrayView::Type::Float32: return "float32";
    case ArrayView::Type::Float64: return "float64";
    case ArrayView::Type::Int32: return "int32";
    case ArrayView::Type::Int64: return "int64";
    case ArrayView::Type::Bool: return "bool";
  }
  return "?";
}

size_t ArrayGraph::count(QuerySplit split) const {
  size_t n = 0;
  for (QuerySplit s : split_of_node) n += s == split;
  return n;
}

namespace {

// Every check's error: "<source>: <array>...", a bad input (exit 2 from the CLI).
struct Checker {
  const std::string& source;
  [[noreturn]] void fail(const std::string& message) const {
    throw Error(ErrorKind::Parse, source + ": " + message);
  }
};

std::string shape_text(const ArrayView& a) {
  std::string s = "(";
  for (size_t d = 0; d < a.shape.size(); ++d) s += (d ? ", " : "") + std::to_string(a.shape[d]);
  return s + (a.shape.size() == 1 ? ",)" : ")");
}

std::string non_finite_text(double v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

// A node-indexed array is N long in its first dimension; 1-D, or 2-D when `matrix`.
void expect_node_rows(const Checker& c, const ArrayView& a, const char* name, size_t nodes, bool matrix) {
  const bool ranked = a.shape.size() == 1 || (matrix && a.shape.size() == 2);
  if (!ranked || a.shape[0] != nodes)
    c.fail(std::string(name) + " has shape " + shape_text(a) + ": expected (" + std::to_string(nodes) +
           (matrix ? ",) or (" + std::to_string(nodes) + ", k)" : ",)") + ", one row per node (x has " +
           std::to_string(nodes) + " rows)");
}

// x: N x F (or N) finite numbers. Integer features convert exactly up to 2^53.
size_t check_features(const Checker& c, const ArrayView& x) {
  if ((x.shape.size() != 1 && x.shape.size() != 2) || x.shape[0] == 0)
    c.fail("x has shape " + shape_text(x) + ": expected (nodes, features) with at least one node");
  const size_t width = x.shape.size() == 2 ? x.shape[1] : 1;
  if (width == 0) c.fail("x has shape " + shape_text(x) + ": every node needs at least one feature");
  if (width > static_cast<size_t>(kMaxValueEntries))
    c.fail("x has " + std::to_string(width) + " features per node (at most 2^26 in one value)");
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x.number(i);
    if (!std::isfinite(v))
      c.fail("x[" + std::to_string(i / width) + ", " + std::to_string(i % width) + "] (node " +
             std::to_string(i / width) + ") is " + non_finite_text(v) + ": node features must be finite");
    if (x.type == ArrayView::Type::Int64 && std::fabs(v) > 9007199254740992.0)
      c.fail("x[" + std::to_string(i / width) + ", " + std::to_string(i % width) + "] = " +
             std::to_string(x.integer(i)) + " is not exactly a float64");
  }
  return width;
}

// edge_index: 2 x E integer node ids below `nodes`.
size_t check_edges(const Checker& c, const ArrayView& e, size_t nodes) {
  if (e.shape.size() != 2 || e.shape[0] != 2)
    c.fail("edge_index has shape " + shape_text(e) + ": expected (2, edges), sources then targets (PyG's layout)");
  if (e.type != ArrayView::Type::Int32 && e.type != ArrayView::Type::Int64)
    c.fail(std::string("edge_index has dtype ") + type_name(e.type) + ": expected int64 (or int32) node ids");
  const size_t edges = e.shape[1];
  for (size_t i = 0; i < e.size(); ++i) {
    const int64_t id = e.integer(i);
    if (id < 0 || static_cast<uint64_t>(id) >= nodes)
      c.fail("edge_index[" + std::to_string(i / edges) + ", " + std::to_string(i % edges) + "] = " +
             std::to_string(id) + " is not a node id: x has " + std::to_string(nodes) + " rows (nodes 0.." +
             std::to_string(nodes - 1) + ")");
  }
  return edges;
}

// How y's rows become targets: class ids (integer y) or float values.
struct Targets {
  int classes = 0;   // > 0: integer class ids
  size_t width = 0;  // entries per target
};

Targets check_targets(const Checker& c, const ArrayView& y, size_t nodes, int classes_given) {
  Targets t;
  if (y.is_integer()) {
    if (!(y.shape.size() == 1 || (y.shape.size() == 2 && y.shape[1] == 1)) || y.shape[0] != nodes)
      c.fail("y has shape " + shape_text(y) + ": integer labels are one class id per node, expected (" +
             std::to_string(nodes) + ",)");
    if (classes_given < 0) c.fail("the number of classes is " + std::to_string(classes_given));
    int64_t top = -1;
    for (size_t i = 0; i < nodes; ++i) {
      const int64_t id = y.integer(i);
      if (id < 0) c.fail("y[" + std::to_string(i) + "] = " + std::to_string(id) + " is a negative class id (node " +
                         std::to_string(i) + ")");
      if (classes_given > 0 && id >= classes_given)
        c.fail("y[" + std::to_string(i) + "] = " + std::to_string(id) + " is not a class id below the " +
               std::to_string(classes_given) + " classes given");
      if (id >= 100000) c.fail("y[" + std::to_string(i) + "] = " + std::to_string(id) + ": class ids must be below 100000 (one-hot targets)");
      top = std::max(top, id);
    }
    t.classes = classes_given > 0 ? classes_given : static_cast<int>(top + 1);
    t.width = t.classes <= 2 ? 1 : static_cast<size_t>(t.classes);
    return t;
  }
  expect_node_rows(c, y, "y", nodes, true);
  t.width = y.shape.size() == 2 ? y.shape[1] : 1;
  if (t.width == 0) c.fail("y has shape " + shape_text(y) + ": a target needs at least one entry");
  for (size_t i = 0; i < y.size(); ++i)
    if (!std::isfinite(y.number(i)))
      c.fail("y[" + std::to_string(i / t.width) + (y.shape.size() == 2 ? ", " + std::to_string(i % t.width) : "") +
             "] (node " + std::to_string(i / t.width) + ") is " + non_finite_text(y.number(i)) + ": targets must be finite");
  return t;
}

// The part of every node from the masks (empty when none is given).
std::vector<QuerySplit> node_splits(const Checker& c, const GraphArrays& a, size_t nodes) {
  const std::pair<const std::optional<ArrayView>*, QuerySplit> masks[] = {
      {&a.train_mask, QuerySplit::Train}, {&a.val_mask, QuerySplit::Validation}, {&a.test_mask, QuerySplit::Test}};
  if (!a.train_mask && !a.val_mask && !a.test_mask) return {};
  std::vector<bool> masked(nodes, false);
  std::vector<QuerySplit> split(nodes, a.train_mask ? QuerySplit::None : QuerySplit::Train);
  for (const auto& [mask, part] : masks) {
    if (!mask->has_value()) continue;
    const ArrayView& m = **mask;
    const std::string name = std::string(to_string(part)) + "_mask";
    expect_node_rows(c, m, name.c_str(), nodes, false);
    if (!m.is_integer()) c.fail(name + " has dtype " + type_name(m.type) + ": expected bool (or 0/1 integers)");
    for (size_t i = 0; i < nodes; ++i) {
      const int64_t v = m.integer(i);
      if (v != 0 && v != 1) c.fail(name + "[" + std::to_string(i) + "] = " + std::to_string(v) + ": a mask holds 0/1");
      if (!v) continue;
      if (masked[i])
        c.fail("node " + std::to_string(i) + " is in both " + to_string(split[i]) + "_mask and " + name +
               " (a query belongs to one split)");
      masked[i] = true;
      split[i] = part;
    }
  }
  return split;
}

// Node i's target: as TU graph labels become targets (tu.cpp query_for) for class ids.
ValueSpec target_of_node(const ArrayView& y, const Targets& t, size_t i) {
  if (t.classes > 0) {
    const int64_t id = y.integer(i);
    if (t.classes <= 2) return ValueSpec::scalar(static_cast<double>(id));
    std::vector<double> one_hot(static_cast<size_t>(t.classes), 0.0);
    one_hot[static_cast<size_t>(id)] = 1.0;
    return data::vector_value(std::move(one_hot));
  }
  if (t.width == 1) return ValueSpec::scalar(y.number(i));  // (N,) or (N, 1)
  std::vector<double> row(t.width);
  for (size_t k = 0; k < t.width; ++k) row[k] = y.number(i * t.width + k);
  return data::vector_value(std::move(row));
}

Literal literal(const std::string& predicate, std::vector<Term> args) {
  Literal l;
  l.predicate = predicate;
  l.args = std::move(args);
  return l;
}

// A checked graph of arrays as one sample: its facts in a TU graph's order (tu.cpp), node(i)
// and x(i) per node, then the edges, and a query per node. The whole graph's store, or
// (partition_sample) one rank's part of its facts; a share holds the arrays it reads
// (`owned`, which the views point into).
class ArrayGraphSource final : public train::PartSource {
 public:
  ArrayGraphSource(const GraphArrays& a, const GraphNames& names, const std::string& source,
                   std::vector<NpyArray> owned = {})
      : owned_(std::move(owned)), a_(a), names_(names) {
    const Checker c{source};
    const size_t nodes = a.x.shape.empty() ? 0 : a.x.shape[0];
    g_.feature_width = check_features(c, a.x);
    g_.nodes = nodes;
    g_.edges = check_edges(c, a.edge_index, nodes);
    targets_ = a.y ? check_targets(c, *a.y, nodes, names.classes) : Targets{};
    g_.classes = targets_.classes;
    g_.target_width = targets_.width;
    g_.split_of_node = node_splits(c, a, nodes);
  }
  // What ArrayGraph says of the graph, its dataset not yet made.
  ArrayGraph info() const { return g_; }
  size_t num_facts() const { return 2 * g_.nodes + g_.edges; }

  // The sample's head: one query per node, its target from y.
  train::Sample head() const {
    train::Sample head;
    head.example.id = names_.example;
    head.queries.reserve(g_.nodes);
    for (size_t i = 0; i < g_.nodes; ++i) head.queries.push_back(query(i));
    return head;
  }
  // Node i's query.
  Literal query(size_t i) const {
    Literal q = literal(names_.query, {Term::number(std::to_string(i))});
    if (a_.y) q.weight = target_of_node(*a_.y, targets_, i);
    return q;
  }

  size_t num_queries() const override { return g_.nodes; }
  std::vector<Literal> queries(std::span<const uint32_t> which) const override {
    std::vector<Literal> out;
    out.reserve(which.size());
    for (uint32_t i : which) out.push_back(query(i));
    return out;
  }
  std::vector<std::string> query_predicates() const override {
    return g_.nodes ? std::vector<std::string>{names_.query + "/1"} : std::vector<std::string>{};
  }

  train::SampleConstants constants() const override {
    train::SampleConstants out;
    const size_t nodes = g_.nodes, edges = g_.edges;
    out.fact_begin.resize(num_facts() + 1);
    out.fact_constants.resize(2 * nodes + 2 * edges);
    for (size_t i = 0; i < nodes; ++i) {  // node(i), x(i): constant i (its first occurrence)
      out.fact_begin[2 * i] = 2 * i;
      out.fact_begin[2 * i + 1] = 2 * i + 1;
      out.fact_constants[2 * i] = out.fact_constants[2 * i + 1] = static_cast<uint32_t>(i);
    }
    for (size_t e = 0; e < edges; ++e) {
      out.fact_begin[2 * nodes + e] = 2 * nodes + 2 * e;
      out.fact_constants[2 * nodes + 2 * e] = static_cast<uint32_t>(a_.edge_index.integer(e));
      out.fact_constants[2 * nodes + 2 * e + 1] = static_cast<uint32_t>(a_.edge_index.integer(edges + e));
    }
    out.fact_begin.back() = out.fact_constants.size();
    out.query_constant.resize(nodes);
    out.keys.reserve(nodes);
    for (size_t i = 0; i < nodes; ++i) {
      out.query_constant[i] = static_cast<uint32_t>(i);
      out.keys.push_back(train::constant_key(Term::Kind::Number, std::to_string(i)));
    }
    return out;
  }

  train::SampleStore keep_facts(std::span<const uint32_t> keep, train::Sample head) const override {
    return store_of(keep.size(), [&](size_t k) { return keep[k]; }, std::move(head));
  }
  // The whole graph's store.
  train::SampleStore whole_store() const {
    return store_of(num_facts(), [](size_t k) { return static_cast<uint32_t>(k); }, head());
  }

  std::vector<std::string> fact_predicates() const override {
    std::set<std::string> keys;  // sorted and distinct, as SampleStore::fact_predicates lists them
    if (g_.nodes > 0) keys.insert({names_.node + "/1", names_.feature + "/1"});
    if (g_.edges > 0) keys.insert(names_.edge + "/2");
    return {keys.begin(), keys.end()};
  }

 private:
  // The store of `count` facts, the k-th of them fact `fact_at(k)` (ascending), with `head`.
  template <class FactAt>
  train::SampleStore store_of(size_t count, const FactAt& fact_at, train::Sample head) const {
    train::SampleStore::Builder store;
    // Node i is interned term i (they are numbered in order): an edge's ends are its node ids;
    // every node, as in the whole graph's store, so that a part's terms are the whole's.
    for (size_t i = 0; i < g_.nodes; ++i) store.intern_term(Term::number(std::to_string(i)));
    std::array<uint32_t, 1> node_id;
    ValueSpec features = data::vector_value(std::vector<double>(g_.feature_width));
    size_t k = 0;
    for (; k < count && fact_at(k) < 2 * g_.nodes; ++k) {
      const size_t i = fact_at(k) / 2;
      node_id[0] = static_cast<uint32_t>(i);
      if (fact_at(k) % 2 == 0) {
        store.add_fact(names_.node, node_id, nullptr);
        continue;
      }
      for (size_t f = 0; f < g_.feature_width; ++f) features.data[f] = a_.x.number(i * g_.feature_width + f);
      store.add_fact(names_.feature, node_id, &features);
    }
    // The edges in slices, their ends added together (the store loads them ahead).
    constexpr size_t kSlice = 4096;
    std::vector<uint32_t> ends;
    ends.reserve(2 * kSlice);
    while (k < count) {
      ends.clear();
      for (; k < count && ends.size() < 2 * kSlice; ++k) {
        const size_t e = fact_at(k) - 2 * g_.nodes;
        ends.push_back(static_cast<uint32_t>(a_.edge_index.integer(e)));
        ends.push_back(static_cast<uint32_t>(a_.edge_index.integer(g_.edges + e)));
      }
      store.add_facts(names_.edge, ends, 2);
    }
    store.close_sample(std::move(head));
    return std::move(store).finish();
  }

  std::vector<NpyArray> owned_;
  GraphArrays a_;
  GraphNames names_;
  ArrayGraph g_;  // the counts, classes and split (its dataset left empty)
  Targets targets_;
};

// The graph with its whole store (split in place by the masks: a copy of a big graph's facts
// cost seconds and twice their memory).
ArrayGraph whole_graph(const ArrayGraphSource& src) {
  ArrayGraph g = src.info();
  train::SampleStore samples = src.whole_store();
  if (!g.split_of_node.empty()) samples = std::move(samples).with_query_splits(g.split_of_node);
  g.dataset = Dataset::Impl::make(std::move(samples), 1);
  return g;
}

// A copy of `view` the share holds (its `name` for errors only).
NpyArray owned_copy(const ArrayView& view, const std::string& name) {
  NpyArray a;
  a.name = name;
  a.type = view.type;
  a.shape = view.shape;
  const size_t width = view.type == ArrayView::Type::Bool     ? 1
                       : view.type == ArrayView::Type::Int32 ||
                               view.type == ArrayView::Type::Float32 ? 4 : 8;
  a.storage.resize((view.size() * width + 7) / 8);
  if (view.size() > 0) std::memcpy(a.storage.data(), view.data, view.size() * width);
  return a;
}

}  // namespace

ArrayGraph graph_from_arrays(const GraphArrays& a, const GraphNames& names, const std::string& source) {
  return whole_graph(ArrayGraphSource(a, names, source));
}

namespace data {

ArrayGraph share_of_arrays(const GraphArrays& a, const GraphNames& names, const std::string& source,
                           std::vector<NpyArray> owned) {
  if (train::dist::world().size <= 1) return graph_from_arrays(a, names, source);
  return array_graph_share(a, names, source, std::move(owned));
}

ArrayGraph array_graph_share(const GraphArrays& a, const GraphNames& names, const std::string& source,
                             std::vector<NpyArray> owned) {
  if (owned.empty()) {  // the caller's arrays: copied, to be read when a model prepares the share
    GraphArrays held;
    const auto keep = [&](const std::optional<ArrayView>& v, const char* name) -> std::optional<ArrayView> {
      if (!v) return std::nullopt;
      owned.push_back(owned_copy(*v, name));
      return owned.back().view();
    };
    owned.reserve(6);
    owned.push_back(owned_copy(a.x, "x"));
    held.x = owned.back().view();
    owned.push_back(owned_copy(a.edge_index, "edge_index"));
    held.edge_index = owned.back().view();
    held.y = keep(a.y, "y");
    held.train_mask = keep(a.train_mask, "train_mask");
    held.val_mask = keep(a.val_mask, "val_mask");
    held.test_mask = keep(a.test_mask, "test_mask");
    return array_graph_share(held, names, source, std::move(owned));
  }
  auto src = std::make_shared<const ArrayGraphSource>(a, names, source, std::move(owned));
  ArrayGraph g = src->info();
  // The dataset holds the head alone, its queries counted (and split) but not written out:
  // each rank builds the queries it owns and its part of the facts from `src`.
  train::Sample head;
  head.example.id = names.example;
  head.split = g.split_of_node;
  g.dataset = Dataset::Impl::make_part_source(std::move(head), std::move(src));
  return g;
}

}  // namespace data

ArrayGraph graph_from_arrays_share(const GraphArrays& arrays, const GraphNames& names, const std::string& source) {
  return data::share_of_arrays(arrays, names, source, {});
}

}  // namespace lrnn
