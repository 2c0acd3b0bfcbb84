// Attention as a heat map: for each rule normalised by softmax over head variables (the
// zoo's `w(I, J) :- ... [aggregation=softmax(J)]`), the weights the engine computed for one
// sample, queries as rows and keys as columns. A grid of cells is not a graph, so this
// picture is SVG written here rather than laid out by Graphviz.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "draw/dot_text.hpp"
#include "exec/functions.hpp"
#include "logic/program.hpp"
#include "lrnn/draw.hpp"
#include "lrnn/syntax.hpp"
#include "neural/template_model.hpp"
#include "syntax/markup.hpp"

namespace lrnn {

namespace {

constexpr size_t kMaxCells = 64;  // rows and columns drawn per map; the rest is counted

// The arguments of a ground atom's text (`w(3, "a, b")` -> 3, a, b), read by the parser.
std::vector<std::string> atom_arguments(const std::string& text) {
  std::vector<std::string> out;
  for (const Term& t : parse_literal(text, "<atom>").args) out.push_back(t.text);
  return out;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out;
}

// Constants in reading order: numbers by value, then the rest as text.
struct ConstantOrder {
  bool operator()(const std::string& a, const std::string& b) const {
    char* end_a = nullptr;
    char* end_b = nullptr;
    const double x = std::strtod(a.c_str(), &end_a), y = std::strtod(b.c_str(), &end_b);
    const bool num_a = !a.empty() && *end_a == '\0', num_b = !b.empty() && *end_b == '\0';
    if (num_a != num_b) return num_a;
    if (num_a && x != y) return x < y;
    return a < b;
  }
};

// One map: the weights of one attention rule's head predicate.
struct AttentionMap {
  std::string title;  // `w(I, J): softmax over J`
  std::vector<std::string> query_vars, key_vars;
  std::map<std::string, size_t, ConstantOrder> rows, cols;  // label -> index, filled after collection
  std::map<std::pair<std::string, std::string>, double> weight;
  size_t non_scalar = 0;
};

std::vector<AttentionMap> collect_maps(const Model& model, const GroundNetwork& net) {
  const Template tmpl = model.get_template();
  const TemplateAst& ast = tmpl.ast();
  const logic::Program program(ast);
  std::vector<std::vector<std::string>> vars(program.num_rules());
  for (uint32_t r = 0; r < program.num_rules(); ++r) vars[r] = program.rule_variables(r);
  const neural::TemplateModel compiled = neural::TemplateModel::compile(ast, vars);

  std::vector<AttentionMap> maps;
  std::map<int, size_t> map_of_rule;
  for (size_t r = 0; r < ast.rules.size(); ++r) {
    const exec::Aggregation& agg = compiled.rules[r].aggregation;
    if (agg.kind != exec::AggregationKind::Softmax) continue;
    const Literal& head = ast.rules[r].head;
    AttentionMap m;
    std::vector<std::string> head_vars;
    for (const Term& t : head.args) head_vars.push_back(t.text);
    for (const Term& t : head.args) {
      const bool normalised = std::find(agg.over.begin(), agg.over.end(), t.text) != agg.over.end();
      (normalised ? m.key_vars : m.query_vars).push_back(t.text);
    }
    if (m.key_vars.empty()) continue;  // normalised within one head atom: no map over keys
    m.title = head.predicate + "(" + joined(head_vars) + "): softmax over " + joined(m.key_vars);
    map_of_rule[static_cast<int>(r)] = maps.size();
    maps.push_back(std::move(m));
  }
  for (const GroundNetwork::Aggregation& a : net.aggregations) {
    auto it = map_of_rule.find(a.rule);
    if (it == map_of_rule.end()) continue;
    AttentionMap& m = maps[it->second];
    const GroundNetwork::Atom& atom = net.atoms[a.head];
    if (atom.value.size() != 1) {
      ++m.non_scalar;
      continue;
    }
    const std::vector<std::string> args = atom_arguments(atom.text);
    const Literal& head = ast.rules[static_cast<size_t>(a.rule)].head;
    if (args.size() != head.args.size()) continue;
    std::vector<std::string> q, k;
    for (size_t i = 0; i < args.size(); ++i) {
      const bool key = std::find(m.key_vars.begin(), m.key_vars.end(), head.args[i].text) != m.key_vars.end();
      (key ? k : q).push_back(args[i]);
    }
    m.rows.emplace(joined(q), 0);
    m.cols.emplace(joined(k), 0);
    m.weight[{joined(q), joined(k)}] = atom.value[0];
  }
  return maps;
}

std::string cell_colour(double w) {
  // white (0) to dark blue (1), the usual sequential scale of attention pictures
  const double t = std::clamp(w, 0.0, 1.0);
  auto channel = [t](int from, int to) { return static_cast<int>(std::lround(from + (to - from) * t)); };
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", channel(255, 8), channel(255, 48), channel(255, 107));
  return buf;
}

std::string number(double w, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, w);
  return buf;
}

// Draws one map at (x0, y0); returns its height.
double draw_map(std::ostringstream& svg, const AttentionMap& m, double x0, double y0, int digits, double& width) {
  const size_t n_rows = std::min(m.rows.size(), kMaxCells), n_cols = std::min(m.cols.size(), kMaxCells);
  const double cell = std::max(n_rows, n_cols) <= 12 ? 36 : (std::max(n_rows, n_cols) <= 32 ? 18 : 10);
  const bool write_values = cell >= 36;
  const double label_w = 90, label_h = 40, title_h = 22;
  const double gx = x0 + label_w, gy = y0 + title_h + label_h;
  svg << "<text x=\"" << x0 << "\" y=\"" << y0 + 15 << "\" font-weight=\"bold\">" << xml_escape(m.title)
      << "</text>\n";
  svg << "<text x=\"" << gx << "\" y=\"" << y0 + title_h + 12 << "\" font-size=\"10\" fill=\"#555\">keys ("
      << xml_escape(joined(m.key_vars)) << ") \u2192</text>\n";
  size_t c = 0;
  for (const auto& [label, _] : m.cols) {
    if (c == n_cols) break;
    svg << "<text x=\"" << gx + c * cell + cell / 2 << "\" y=\"" << gy - 4
        << "\" font-size=\"10\" text-anchor=\"middle\">" << xml_escape(label) << "</text>\n";
    ++c;
  }
  size_t r = 0;
  for (const auto& [q, _] : m.rows) {
    if (r == n_rows) break;
    const double y = gy + r * cell;
    svg << "<text x=\"" << gx - 6 << "\" y=\"" << y + cell / 2 + 4 << "\" font-size=\"10\" text-anchor=\"end\">"
        << xml_escape(q) << "</text>\n";
    c = 0;
    for (const auto& [k, __] : m.cols) {
      if (c == n_cols) break;
      const double x = gx + c * cell;
      auto it = m.weight.find({q, k});
      if (it == m.weight.end()) {  // not computed at all: masked, drawn hatched-grey
        svg << "<rect class=\"masked\" x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell << "\" height=\"" << cell
            << "\" fill=\"#f0f0f0\" stroke=\"#ffffff\"/>\n";
      } else {
        const double w = it->second;
        svg << "<rect class=\"weight\" x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell << "\" height=\"" << cell
            << "\" fill=\"" << cell_colour(w) << "\" stroke=\"#ffffff\"><title>" << xml_escape(q) << " \u2192 "
            << xml_escape(k) << ": " << number(w, 6) << "</title></rect>\n";
        if (write_values)
          svg << "<text x=\"" << x + cell / 2 << "\" y=\"" << y + cell / 2 + 4
              << "\" font-size=\"10\" text-anchor=\"middle\" fill=\"" << (w > 0.5 ? "#ffffff" : "#000000") << "\">"
              << number(w, digits) << "</text>\n";
      }
      ++c;
    }
    ++r;
  }
  double height = title_h + label_h + n_rows * cell + 8;
  std::string note;
  if (m.rows.size() > n_rows || m.cols.size() > n_cols)
    note = "showing " + std::to_string(n_rows) + " of " + std::to_string(m.rows.size()) + " queries and " +
           std::to_string(n_cols) + " of " + std::to_string(m.cols.size()) + " keys";
  if (m.non_scalar)
    note += (note.empty() ? "" : "; ") + std::to_string(m.non_scalar) + " atoms with vector values not drawn";
  if (!note.empty()) {
    svg << "<text x=\"" << gx << "\" y=\"" << y0 + height + 4 << "\" font-size=\"10\" fill=\"#555\">"
        << xml_escape(note) << "</text>\n";
    height += 16;
  }
  svg << "<text x=\"" << x0 << "\" y=\"" << gy + 10 << "\" font-size=\"10\" fill=\"#555\">queries ("
      << xml_escape(joined(m.query_vars)) << ")</text>\n";
  width = std::max(width, label_w + n_cols * cell + 20);
  return height + 14;
}

}  // namespace

std::string attention_svg(const Model& model, const Dataset& data, size_t index, const DrawOptions& options) {
  const GroundNetwork net = model.network(data, index, false);
  const std::vector<AttentionMap> maps = collect_maps(model, net);
  if (maps.empty())
    throw Error(ErrorKind::Semantic,
                "the template has no attention rule to draw (a rule with aggregation=softmax(V) over a variable V "
                "of its head, as the zoo's attention writes)");
  const int digits = std::max(2, draw::detail_digits(options.value_detail) - 1);
  std::ostringstream body;
  double y = 10, width = 320;
  for (const AttentionMap& m : maps) {
    if (m.rows.empty()) continue;
    y += draw_map(body, m, 10, y, digits, width);
  }
  if (y == 10)
    throw Error(ErrorKind::Semantic, "sample " + std::to_string(index) +
                                         " grounds none of the template's attention rules (nothing to draw)");
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << y
      << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      << body.str() << "</svg>\n";
  return svg.str();
}

}  // namespace lrnn
