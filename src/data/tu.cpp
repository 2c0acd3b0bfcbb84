// The TU graph format (DS_A.txt, DS_graph_indicator.txt, ...) to lrnn examples.
// Every file is read whole and parsed with from_chars; every check names file:line.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "data/vector_value.hpp"
#include "lrnn/datasets.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/memory.hpp"
#include "api/dataset_impl.hpp"
#include "train/dataset.hpp"
#include "train/distributed.hpp"
#include "train/sample_store.hpp"

namespace lrnn {
namespace {

namespace fs = std::filesystem;

// One TU text file split into rows of numbers; keeps the source for file:line errors. A
// rank's share (read_tu with a TuPart) keeps only the rows of its graphs: `row_of` maps a
// kept row to its row in the file (rows are numbered from 0, blank lines skipped).
struct Table {
  std::shared_ptr<SourceFile> source;
  std::vector<uint32_t> line_of_row;  // 1-based line per kept row
  std::vector<size_t> row_of;         // file row per kept row
  std::vector<double> values;         // row-major, kept rows
  size_t columns = 0;
  size_t file_rows = 0;               // every row of the file, kept or not
  uint32_t last_line = 1;             // the line of the file's last row
  size_t rows() const { return line_of_row.size(); }
  double at(size_t r, size_t c) const { return values[r * columns + c]; }
  [[noreturn]] void fail(size_t row, const std::string& message) const { fail_line(line_of_row[row], message); }
  [[noreturn]] void fail_line(uint32_t line, const std::string& message) const {
    throw Error(ErrorKind::Parse, Span{source, line, 1, 1}, message);
  }
};

// Which rows of a table a share keeps. `parse` (null: every row) says before parsing whether
// a row is read at all (the others are only counted); `keep` (null: every parsed row)
// decides after parsing, and may check the row (throwing at `line`).
struct RowSelection {
  std::function<bool(size_t row)> parse;
  std::function<bool(size_t row, uint32_t line, const std::vector<double>& values, const Table& table)> keep;
};

std::shared_ptr<SourceFile> read_source(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, path.string() + ": cannot read the file (missing?)");
  // The text, and then its numbers as doubles (about as many bytes again), asked of the
  // memory budget (lrnn/memory.hpp) before either is allocated.
  std::error_code size_error;
  const uintmax_t size = fs::file_size(path, size_error);
  if (!size_error) check_memory(2 * uint64_t(size), "reading the file " + path.string());
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

Table read_table(const fs::path& path, size_t expected_columns, const RowSelection& select = {}) {
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
    const size_t file_row = t.file_rows++;
    t.last_line = line_no;
    if (select.parse && !select.parse(file_row)) continue;
    row.clear();
    if (!parse_row(line, row)) t.fail_line(line_no, "expected comma-separated numbers");
    // from_chars reads "nan" and "inf": data that would train to NaN, blamed on the rate.
    for (size_t c = 0; c < row.size(); ++c)
      if (!std::isfinite(row[c]))
        t.fail_line(line_no, "expected finite numbers, found " + std::string(std::isnan(row[c]) ? "nan" : "an infinity") +
                                 " in column " + std::to_string(c + 1));
    if (t.columns == 0) t.columns = expected_columns ? expected_columns : row.size();
    if (row.size() != t.columns)
      t.fail_line(line_no, "expected " + std::to_string(t.columns) + " column(s), found " + std::to_string(row.size()));
    if (select.keep && !select.keep(file_row, line_no, row, t)) continue;
    t.line_of_row.push_back(line_no);
    t.row_of.push_back(file_row);
    t.values.insert(t.values.end(), row.begin(), row.end());
  }
  if (t.file_rows == 0) throw Error(ErrorKind::Parse, path.string() + ": the file has no rows");
  return t;
}

// Whether v is an integer that converts to long exactly. The range test comes first:
// converting a double outside long's range (1e30, inf, NaN) is undefined behaviour, and
// beyond 2^53 a double no longer tells neighbouring integers apart.
bool is_exact_integer(double v) { return std::fabs(v) <= 9007199254740992.0 && v == std::trunc(v); }

long integer_at(const Table& t, size_t r, size_t c) {
  double v = t.at(r, c);
  if (!is_exact_integer(v)) t.fail(r, "expected an integer");
  return static_cast<long>(v);
}

void expect_rows(const Table& t, size_t rows, const std::string& what) {
  if (t.file_rows != rows) {
    std::string msg = "expected " + std::to_string(rows) + " rows (one per " + what + "), found " +
                      std::to_string(t.file_rows);
    if (t.rows() == t.file_rows) t.fail(std::min(t.rows(), rows) - (t.rows() < rows ? 1 : 0), msg);
    t.fail_line(t.last_line, msg);
  }
}

// Graph id per node (1-based, sorted, contiguous) -> first node of each graph.
std::vector<size_t> graph_offsets(const Table& indicator) {
  std::vector<size_t> offsets;
  long previous = 0;  // the first row must be graph 1: previous + 1
  for (size_t r = 0; r < indicator.rows(); ++r) {
    long g = integer_at(indicator, r, 0);
    if (r > 0 && g == previous) continue;  // (at r == 0, a graph 0 would be skipped: dropped)
    if (g != previous + 1)
      indicator.fail(r, "graph ids must be sorted and contiguous from 1: expected " +
                            (r == 0 ? std::string("1") : std::to_string(previous) + " or " + std::to_string(previous + 1)) +
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

// Integer labels of column 0 as one-hot vectors: index = label - min, width = max - min + 1
// (PyTorch Geometric's encoding, so to_pyg/from_pyg agree). The range is over every row
// of the file, also those a share does not keep, so every rank encodes alike.
struct OneHot {
  long min = 0;
  int width = 0;
};
struct LabelRange {
  long lo = 0, hi = 0;
  bool any = false;
  void add(const Table& t, uint32_t line, double v) {
    if (!is_exact_integer(v)) t.fail_line(line, "expected an integer");
    const long x = static_cast<long>(v);
    lo = any ? std::min(lo, x) : x;
    hi = any ? std::max(hi, x) : x;
    any = true;
  }
  OneHot one_hot(const Table& t) const {
    if (hi - lo >= 100000) t.fail_line(t.last_line, "label range too wide for a one-hot encoding");
    return {lo, static_cast<int>(hi - lo + 1)};
  }
};
ValueSpec one_hot(const Table& t, size_t r, const OneHot& range) {
  std::vector<double> v(range.width, 0.0);
  v[integer_at(t, r, 0) - range.min] = 1.0;
  return data::vector_value(std::move(v));
}
ValueSpec row_values(const Table& t, size_t r) {
  return data::vector_value(std::vector<double>(t.values.begin() + r * t.columns,
                                          t.values.begin() + (r + 1) * t.columns));
}

struct OptionalTables {
  std::optional<Table> node_labels, node_attributes, edge_labels, edge_attributes;
  OneHot node_range, edge_range;
};

std::optional<Table> read_optional(const fs::path& path, size_t columns, size_t rows, const std::string& what,
                                   const RowSelection& select) {
  if (!fs::exists(path)) return std::nullopt;
  Table t = read_table(path, columns, select);
  expect_rows(t, rows, what);
  return t;
}

// A label file's rows: every row parsed (the one-hot range is the whole file's), `wanted`
// rows kept.
std::optional<Table> read_labels(const fs::path& path, size_t rows, const std::string& what,
                                 const std::function<bool(size_t)>& wanted, OneHot& range) {
  LabelRange labels;
  RowSelection select;
  select.keep = [&](size_t row, uint32_t line, const std::vector<double>& v, const Table& t) {
    labels.add(t, line, v[0]);
    return wanted(row);
  };
  std::optional<Table> t = read_optional(path, 1, rows, what, select);
  if (t) range = labels.one_hot(*t);
  return t;
}

// Node n's facts; node tables hold the share's nodes from `first_kept` on.
void add_node_facts(const OptionalTables& o, size_t first, size_t last, size_t first_kept, ExampleAst& ex) {
  for (size_t n = first; n < last; ++n) {
    ex.facts.push_back(atom("node", {node_term(n - first)}));
    if (o.node_labels) {
      ex.facts.push_back(atom("x", {node_term(n - first)}));
      ex.facts.back().weight = one_hot(*o.node_labels, n - first_kept, o.node_range);
    }
    if (o.node_attributes) {
      ex.facts.push_back(atom("attr", {node_term(n - first)}));
      ex.facts.back().weight = row_values(*o.node_attributes, n - first_kept);
    }
  }
}

// The A file's rows of graphs [first_graph, last_graph): each row is checked (ids in range,
// within one graph), the others are not kept.
Table read_edges(const fs::path& path, const std::vector<uint32_t>& graph_of_node, size_t first_graph,
                 size_t last_graph) {
  const size_t nodes = graph_of_node.size();
  RowSelection select;
  select.keep = [&](size_t, uint32_t line, const std::vector<double>& v, const Table& t) {
    long ids[2];
    for (int k = 0; k < 2; ++k) {
      if (!is_exact_integer(v[k])) t.fail_line(line, "expected an integer");
      ids[k] = static_cast<long>(v[k]);
      if (ids[k] < 1 || static_cast<size_t>(ids[k]) > nodes)
        t.fail_line(line, "node id " + std::to_string(ids[k]) + " out of range 1.." + std::to_string(nodes));
    }
    const uint32_t gi = graph_of_node[ids[0] - 1], gj = graph_of_node[ids[1] - 1];
    if (gi != gj) t.fail_line(line, "edge joins graphs " + std::to_string(gi + 1) + " and " + std::to_string(gj + 1));
    return gi >= first_graph && gi < last_graph;
  };
  return read_table(path, 2, select);
}

// The kept edges (rows of `a`) grouped per graph of the share.
std::vector<std::vector<size_t>> edges_per_graph(const Table& a, const std::vector<uint32_t>& graph_of_node,
                                                 size_t first_graph, size_t last_graph) {
  std::vector<std::vector<size_t>> out(last_graph - first_graph);
  for (size_t r = 0; r < a.rows(); ++r)
    out[graph_of_node[static_cast<size_t>(a.at(r, 0)) - 1] - first_graph].push_back(r);
  return out;
}

// Edge k of the share is row k of `a` and of the edge tables (they keep the same file rows).
void add_edge_facts(const Table& a, const OptionalTables& o, const std::vector<size_t>& rows, size_t first,
                    ExampleAst& ex) {
  for (size_t r : rows) {
    Term i = node_term(static_cast<size_t>(a.at(r, 0)) - 1 - first);
    Term j = node_term(static_cast<size_t>(a.at(r, 1)) - 1 - first);
    ex.facts.push_back(atom("edge", {i, j}));
    if (o.edge_labels) {
      ex.facts.push_back(atom("edge_x", {i, j}));
      ex.facts.back().weight = one_hot(*o.edge_labels, r, o.edge_range);
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
    q.weight = data::vector_value(std::move(v));
  }
  QueryLineAst line;
  line.id = id;
  line.queries.push_back(std::move(q));
  return line;
}

// The optional node and edge tables, keeping nodes [n0, n1) and the A file's kept rows.
OptionalTables read_optional_tables(const std::function<fs::path(const char*)>& file, size_t nodes, size_t n0,
                                    size_t n1, const Table& a) {
  OptionalTables o;
  auto node_wanted = [&](size_t row) { return row >= n0 && row < n1; };
  // a.row_of is ascending: the edge tables' rows arrive in the same order.
  size_t next_edge = 0;
  auto edge_wanted = [&](size_t row) {
    while (next_edge < a.row_of.size() && a.row_of[next_edge] < row) ++next_edge;
    return next_edge < a.row_of.size() && a.row_of[next_edge] == row;
  };
  o.node_labels = read_labels(file("_node_labels.txt"), nodes, "node", node_wanted, o.node_range);
  RowSelection node_rows;
  node_rows.parse = node_wanted;
  o.node_attributes = read_optional(file("_node_attributes.txt"), 0, nodes, "node", node_rows);
  o.edge_labels = read_labels(file("_edge_labels.txt"), a.file_rows, "line of the A file", edge_wanted, o.edge_range);
  next_edge = 0;
  RowSelection edge_rows;
  edge_rows.parse = edge_wanted;
  o.edge_attributes = read_optional(file("_edge_attributes.txt"), 0, a.file_rows, "line of the A file", edge_rows);
  return o;
}

// read_tu's work: `d` receives every field but the examples and queries; each graph's
// example and query line are handed to `take` in order, as they are made (a reader that
// keeps them compactly never holds them all as literals).
void read_tu_each(const std::string& dir, const std::string& name, TuPart part, TuData& d,
                  const std::function<void(ExampleAst, QueryLineAst)>& take) {
  fs::path root(dir);
  // The dataset is named by its folder: made absolute so that "." and "x/." name theirs.
  std::error_code absolute_error;
  const fs::path folder = fs::absolute(dir, absolute_error).lexically_normal();
  d.name = name.empty() ? folder.filename().string() : name;
  if (d.name.empty()) d.name = folder.parent_path().filename().string();
  auto file = [&](const char* suffix) { return root / (d.name + suffix); };
  if (part.count == 0 || part.index >= part.count)
    throw Error(ErrorKind::Semantic,
                "read_tu: part " + std::to_string(part.index) + " of " + std::to_string(part.count));

  Table indicator = read_table(file("_graph_indicator.txt"), 1);
  std::vector<size_t> offsets = graph_offsets(indicator);
  size_t graphs = offsets.size() - 1, nodes = indicator.rows();
  Table labels = read_table(file("_graph_labels.txt"), 1);
  expect_rows(labels, graphs, "graph");
  d.graphs_total = graphs;
  // Parts of about equal work: by the graphs' nodes (their edges are about proportional).
  std::vector<uint64_t> graph_nodes(graphs);
  for (size_t g = 0; g < graphs; ++g) graph_nodes[g] = offsets[g + 1] - offsets[g];
  const train::dist::ShardPlan plan =
      train::dist::shard_with_margin(graph_nodes, static_cast<int>(part.index), static_cast<int>(part.count));
  const train::dist::ShardRange block = part.margins ? plan.held : plan.owned;
  d.first_graph = block.first;
  d.owned_first = plan.owned.first;
  d.owned_last = plan.owned.last;
  const size_t g0 = block.first, g1 = block.last;
  std::vector<uint32_t> graph_of_node(nodes);
  for (size_t g = 0; g < graphs; ++g)
    std::fill(graph_of_node.begin() + offsets[g], graph_of_node.begin() + offsets[g + 1], g);
  const Table a = read_edges(file("_A.txt"), graph_of_node, g0, g1);
  std::vector<std::vector<size_t>> edge_rows = edges_per_graph(a, graph_of_node, g0, g1);
  const OptionalTables o = read_optional_tables(file, nodes, offsets[g0], offsets[g1], a);

  set_classes(d, labels);
  d.nodes = nodes;
  d.edges = a.file_rows;
  d.node_label_width = o.node_range.width;
  d.edge_label_width = o.edge_range.width;
  d.node_attribute_width = o.node_attributes ? static_cast<int>(o.node_attributes->columns) : 0;
  d.edge_attribute_width = o.edge_attributes ? static_cast<int>(o.edge_attributes->columns) : 0;
  for (size_t g = g0; g < g1; ++g) {
    ExampleAst ex;
    ex.id = "g" + std::to_string(g + 1);
    // Facts are reserved exactly: grown by doubling they held up to twice the literals'
    // size (about 80 MB of NCI1's 280 MB of example literals).
    const size_t per_node = 1 + (o.node_labels ? 1 : 0) + (o.node_attributes ? 1 : 0);
    const size_t per_edge = 1 + (o.edge_labels ? 1 : 0) + (o.edge_attributes ? 1 : 0);
    ex.facts.reserve(per_node * (offsets[g + 1] - offsets[g]) + per_edge * edge_rows[g - g0].size());
    add_node_facts(o, offsets[g], offsets[g + 1], offsets[g0], ex);
    add_edge_facts(a, o, edge_rows[g - g0], offsets[g], ex);
    QueryLineAst query = query_for(d, g, ex.id);
    take(std::move(ex), std::move(query));
  }
}

}  // namespace

TuData read_tu(const std::string& dir, const std::string& name, TuPart part) {
  TuData d;
  read_tu_each(dir, name, part, d, [&](ExampleAst ex, QueryLineAst query) {
    d.examples.push_back(std::move(ex));
    d.queries.push_back(std::move(query));
  });
  return d;
}

// Each graph's sample is paired (as Dataset::from_ast pairs them: a TU graph and its query
// line share their id) and stored compactly as it is read.
Dataset load_tu(const std::string& dir, const std::string& name) {
  TuData info;
  return load_tu(dir, name, info, {});
}

Dataset load_tu(const std::string& dir, const std::string& name, TuData& info,
                const std::function<void(const TuData& info, const ExampleAst& example)>& each) {
  train::SampleStore::Builder samples;
  size_t parsed = 0;
  info = TuData{};
  read_tu_each(dir, name, {}, info, [&](ExampleAst ex, QueryLineAst query) {
    if (each) each(info, ex);
    std::vector<ExampleAst> one;
    one.push_back(std::move(ex));
    for (train::Sample& s : train::pair_samples(std::move(one), {query})) samples.add(std::move(s));
    ++parsed;
  });
  return Dataset::Impl::make(std::move(samples).finish(), parsed);
}

}  // namespace lrnn

namespace lrnn {

Dataset load_tu_share(const std::string& dir, const std::string& name) {
  const train::dist::World& w = train::dist::world();
  if (w.size <= 1) return load_tu(dir, name);
  TuData d = read_tu(dir, name, TuPart{static_cast<size_t>(w.rank), static_cast<size_t>(w.size), true});
  const size_t parsed = d.examples.size();
  return Dataset::share_from_ast(std::move(d.examples), d.queries, d.first_graph, d.graphs_total, parsed,
                                 d.owned_first, d.owned_last);
}

}  // namespace lrnn
