// The TU graph format (DS_A.txt, DS_graph_indicator.txt, ...) to lrnn examples.
// Every file is read whole and parsed with from_chars; every check names file:line.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "lrnn/datasets.hpp"
#include "lrnn/diagnostics.hpp"

namespace lrnn {
namespace {

namespace fs = std::filesystem;

// One TU text file split into rows of numbers; keeps the source for file:line errors.
struct Table {
  std::shared_ptr<SourceFile> source;
  std::vector<uint32_t> line_of_row;  // 1-based line per row (blank lines skipped)
  std::vector<double> values;         // row-major
  size_t columns = 0;
  size_t rows() const { return line_of_row.size(); }
  double at(size_t r, size_t c) const { return values[r * columns + c]; }
  [[noreturn]] void fail(size_t row, const std::string& message) const {
    Span span{source, line_of_row[row], 1, 1};
    throw Error(ErrorKind::Parse, span, message);
  }
};

std::shared_ptr<SourceFile> read_source(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, path.string() + ": cannot read the file (missing?)");
  std::ostringstream text;
  text << in.rdbuf();
  return std::make_shared<SourceFile>(SourceFile{path.string(), text.str()});
}

// Parses "v1, v2, ..." into `out`; returns false on a non-number.
bool parse_row(std::string_view line, std::vector<double>& out) {
  size_t pos = 0;
  while (true) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    double v = 0;
    const char* begin = line.data() + pos;
    auto [end, ec] = std::from_chars(begin, line.data() + line.size(), v);
    if (ec != std::errc() || end == begin) return false;
    out.push_back(v);
    pos = static_cast<size_t>(end - line.data());
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    if (pos == line.size()) return true;
    if (line[pos] != ',') return false;
    ++pos;
  }
}

Table read_table(const fs::path& path, size_t expected_columns) {
  Table t;
  t.source = read_source(path);
  std::string_view text = t.source->text;
  uint32_t line_no = 0;
  std::vector<double> row;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    t.line_of_row.push_back(line_no);
    row.clear();
    if (!parse_row(line, row)) t.fail(t.rows() - 1, "expected comma-separated numbers");
    if (t.columns == 0) t.columns = expected_columns ? expected_columns : row.size();
    if (row.size() != t.columns)
      t.fail(t.rows() - 1, "expected " + std::to_string(t.columns) + " column(s), found " +
                               std::to_string(row.size()));
    t.values.insert(t.values.end(), row.begin(), row.end());
  }
  if (t.rows() == 0) throw Error(ErrorKind::Parse, path.string() + ": the file has no rows");
  return t;
}

long integer_at(const Table& t, size_t r, size_t c) {
  double v = t.at(r, c);
  if (v != static_cast<double>(static_cast<long>(v))) t.fail(r, "expected an integer");
  return static_cast<long>(v);
}

void expect_rows(const Table& t, size_t rows, const std::string& what) {
  if (t.rows() != rows) {
    std::string msg = "expected " + std::to_string(rows) + " rows (one per " + what + "), found " +
                      std::to_string(t.rows());
    t.fail(std::min(t.rows(), rows) - (t.rows() < rows ? 1 : 0), msg);
  }
}

// Graph id per node (1-based, sorted, contiguous) -> first node of each graph.
std::vector<size_t> graph_offsets(const Table& indicator) {
  std::vector<size_t> offsets;
  long previous = 0;
  for (size_t r = 0; r < indicator.rows(); ++r) {
    long g = integer_at(indicator, r, 0);
    if (g == previous) continue;
    if (g != previous + 1)
      indicator.fail(r, "graph ids must be sorted and contiguous from 1: expected " +
                            std::to_string(previous) + " or " + std::to_string(previous + 1) +
                            ", found " + std::to_string(g));
    offsets.push_back(r);
    previous = g;
  }
  offsets.push_back(indicator.rows());
  return offsets;
}

Term node_term(size_t local) { return Term::number(std::to_string(local)); }

Literal atom(const char* predicate, std::vector<Term> args) {
  Literal l;
  l.predicate = predicate;
  l.args = std::move(args);
  return l;
}

ValueSpec vector_value(std::vector<double> data) {
  ValueSpec v;
  v.kind = ValueSpec::Kind::Vector;
  v.rows = static_cast<int>(data.size());
  v.cols = 1;
  v.data = std::move(data);
  return v;
}

// Integer labels of column 0 as one-hot vectors: index = label - min, width = max - min + 1
// (PyTorch Geometric's encoding, so to_pyg/from_pyg agree).
struct OneHot {
  long min = 0;
  int width = 0;
};
OneHot one_hot_range(const Table& t) {
  long lo = integer_at(t, 0, 0), hi = lo;
  for (size_t r = 0; r < t.rows(); ++r) {
    long v = integer_at(t, r, 0);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (hi - lo >= 100000) t.fail(0, "label range too wide for a one-hot encoding");
  return {lo, static_cast<int>(hi - lo + 1)};
}
ValueSpec one_hot(const Table& t, size_t r, const OneHot& range) {
  std::vector<double> v(range.width, 0.0);
  v[integer_at(t, r, 0) - range.min] = 1.0;
  return vector_value(std::move(v));
}
ValueSpec row_values(const Table& t, size_t r) {
  return vector_value(std::vector<double>(t.values.begin() + r * t.columns,
                                          t.values.begin() + (r + 1) * t.columns));
}

struct OptionalTables {
  std::optional<Table> node_labels, node_attributes, edge_labels, edge_attributes;
};

std::optional<Table> read_optional(const fs::path& path, size_t columns, size_t rows,
                                   const std::string& what) {
  if (!fs::exists(path)) return std::nullopt;
  Table t = read_table(path, columns);
  expect_rows(t, rows, what);
  return t;
}

void add_node_facts(TuData& d, const OptionalTables& o, const OneHot& labels, size_t first, size_t last,
                    ExampleAst& ex) {
  for (size_t n = first; n < last; ++n) {
    ex.facts.push_back(atom("node", {node_term(n - first)}));
    if (o.node_labels) {
      ex.facts.push_back(atom("x", {node_term(n - first)}));
      ex.facts.back().weight = one_hot(*o.node_labels, n, labels);
    }
    if (o.node_attributes) {
      ex.facts.push_back(atom("attr", {node_term(n - first)}));
      ex.facts.back().weight = row_values(*o.node_attributes, n);
    }
  }
  (void)d;
}

// Edges (rows of A) grouped per graph; checks ids are in range and within one graph.
std::vector<std::vector<size_t>> edges_per_graph(const Table& a, const std::vector<size_t>& offsets,
                                                 const std::vector<uint32_t>& graph_of_node) {
  std::vector<std::vector<size_t>> out(offsets.size() - 1);
  size_t nodes = offsets.back();
  for (size_t r = 0; r < a.rows(); ++r) {
    long i = integer_at(a, r, 0), j = integer_at(a, r, 1);
    for (long v : {i, j})
      if (v < 1 || static_cast<size_t>(v) > nodes)
        a.fail(r, "node id " + std::to_string(v) + " out of range 1.." + std::to_string(nodes));
    uint32_t gi = graph_of_node[i - 1], gj = graph_of_node[j - 1];
    if (gi != gj)
      a.fail(r, "edge joins graphs " + std::to_string(gi + 1) + " and " + std::to_string(gj + 1));
    out[gi].push_back(r);
  }
  return out;
}

void add_edge_facts(const Table& a, const OptionalTables& o, const OneHot& labels,
                    const std::vector<size_t>& rows, size_t first, ExampleAst& ex) {
  for (size_t r : rows) {
    Term i = node_term(static_cast<size_t>(a.at(r, 0)) - 1 - first);
    Term j = node_term(static_cast<size_t>(a.at(r, 1)) - 1 - first);
    ex.facts.push_back(atom("edge", {i, j}));
    if (o.edge_labels) {
      ex.facts.push_back(atom("edge_x", {i, j}));
      ex.facts.back().weight = one_hot(*o.edge_labels, r, labels);
    }
    if (o.edge_attributes) {
      ex.facts.push_back(atom("edge_attr", {i, j}));
      ex.facts.back().weight = row_values(*o.edge_attributes, r);
    }
  }
}

void set_classes(TuData& d, const Table& labels) {
  std::vector<long> raw(labels.rows());
  for (size_t r = 0; r < labels.rows(); ++r) raw[r] = integer_at(labels, r, 0);
  d.class_labels = raw;
  std::sort(d.class_labels.begin(), d.class_labels.end());
  d.class_labels.erase(std::unique(d.class_labels.begin(), d.class_labels.end()), d.class_labels.end());
  d.graph_class.resize(raw.size());
  for (size_t g = 0; g < raw.size(); ++g)
    d.graph_class[g] = static_cast<int>(
        std::lower_bound(d.class_labels.begin(), d.class_labels.end(), raw[g]) - d.class_labels.begin());
}

QueryLineAst query_for(const TuData& d, size_t g, const std::string& id) {
  Literal q = atom("predict", {});
  if (d.class_labels.size() <= 2) {
    q.weight = ValueSpec::scalar(d.graph_class[g]);
  } else {
    std::vector<double> v(d.class_labels.size(), 0.0);
    v[d.graph_class[g]] = 1.0;
    q.weight = vector_value(std::move(v));
  }
  QueryLineAst line;
  line.id = id;
  line.queries.push_back(std::move(q));
  return line;
}

}  // namespace

TuData read_tu(const std::string& dir, const std::string& name) {
  fs::path root(dir);
  TuData d;
  d.name = name.empty() ? fs::path(dir).lexically_normal().filename().string() : name;
  if (d.name.empty()) d.name = fs::path(dir).lexically_normal().parent_path().filename().string();
  auto file = [&](const char* suffix) { return root / (d.name + suffix); };

  Table indicator = read_table(file("_graph_indicator.txt"), 1);
  std::vector<size_t> offsets = graph_offsets(indicator);
  size_t graphs = offsets.size() - 1, nodes = indicator.rows();
  Table labels = read_table(file("_graph_labels.txt"), 1);
  expect_rows(labels, graphs, "graph");
  Table a = read_table(file("_A.txt"), 2);
  std::vector<uint32_t> graph_of_node(nodes);
  for (size_t g = 0; g < graphs; ++g)
    std::fill(graph_of_node.begin() + offsets[g], graph_of_node.begin() + offsets[g + 1], g);
  std::vector<std::vector<size_t>> edge_rows = edges_per_graph(a, offsets, graph_of_node);

  OptionalTables o;
  o.node_labels = read_optional(file("_node_labels.txt"), 1, nodes, "node");
  o.node_attributes = read_optional(file("_node_attributes.txt"), 0, nodes, "node");
  o.edge_labels = read_optional(file("_edge_labels.txt"), 1, a.rows(), "line of the A file");
  o.edge_attributes = read_optional(file("_edge_attributes.txt"), 0, a.rows(), "line of the A file");
  OneHot node_range = o.node_labels ? one_hot_range(*o.node_labels) : OneHot{};
  OneHot edge_range = o.edge_labels ? one_hot_range(*o.edge_labels) : OneHot{};


  set_classes(d, labels);
  d.nodes = nodes;
  d.edges = a.rows();
  d.node_label_width = node_range.width;
  d.edge_label_width = edge_range.width;
  d.node_attribute_width = o.node_attributes ? static_cast<int>(o.node_attributes->columns) : 0;
  d.edge_attribute_width = o.edge_attributes ? static_cast<int>(o.edge_attributes->columns) : 0;
  d.examples.resize(graphs);
  d.queries.reserve(graphs);
  for (size_t g = 0; g < graphs; ++g) {
    ExampleAst& ex = d.examples[g];
    ex.id = "g" + std::to_string(g + 1);
    // Facts are reserved exactly: grown by doubling they held up to twice the literals'
    // size (about 80 MB of NCI1's 280 MB of example literals).
    const size_t per_node = 1 + (o.node_labels ? 1 : 0) + (o.node_attributes ? 1 : 0);
    const size_t per_edge = 1 + (o.edge_labels ? 1 : 0) + (o.edge_attributes ? 1 : 0);
    ex.facts.reserve(per_node * (offsets[g + 1] - offsets[g]) + per_edge * edge_rows[g].size());
    add_node_facts(d, o, node_range, offsets[g], offsets[g + 1], ex);
    add_edge_facts(a, o, edge_range, edge_rows[g], offsets[g], ex);
    d.queries.push_back(query_for(d, g, ex.id));
  }
  return d;
}

}  // namespace lrnn
