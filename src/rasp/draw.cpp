// SVG pictures of a RASP program on one input (RASPy-style): the s-op values by layer, and
// for each attention layer its selector matrices with queries on the left, keys on top
// and the aggregated values on the right.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "lrnn/rasp.hpp"
#include "syntax/markup.hpp"

namespace lrnn::rasp {

namespace {

constexpr int kCell = 26;
constexpr int kLabel = 190;
constexpr int kMargin = 16;

std::string escape(const std::string& s) { return xml_escape(s); }

// A cell's text: numbers with at most 3 significant decimals, booleans T/F, long strings
// cut to kMaxCellChars. Cells are as wide as the widest text (cell_width), never overflowing.
constexpr size_t kMaxCellChars = 6;

std::string cell_text(const Value& v) {
  if (std::holds_alternative<bool>(v)) return std::get<bool>(v) ? "T" : "F";
  std::string s;
  if (std::holds_alternative<double>(v)) {
    std::ostringstream o;
    o.precision(3);
    o << std::get<double>(v);
    s = o.str();
  } else {
    s = to_string(v);
  }
  if (s.size() > kMaxCellChars) s = s.substr(0, kMaxCellChars - 1) + "~";
  return s;
}

// Monospace at 12px is about 7.2px per character; a cell keeps 4px of padding either side.
int cell_width(const std::vector<std::vector<Value>>& rows) {
  size_t longest = 1;
  for (const auto& row : rows)
    for (const auto& v : row) longest = std::max(longest, cell_text(v).size());
  return std::max(kCell, static_cast<int>(longest * 72 + 9) / 10 + 8);
}

class Svg {
 public:
  void rect(int x, int y, int w, int h, const std::string& fill, const std::string& stroke = "#999") {
    body_ << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h << "\" fill=\"" << fill
          << "\" stroke=\"" << stroke << "\"/>\n";
    extend(x + w, y + h);
  }
  void text(int x, int y, const std::string& s, const std::string& anchor = "middle", int size = 12,
            const std::string& weight = "normal") {
    body_ << "<text x=\"" << x << "\" y=\"" << y << "\" text-anchor=\"" << anchor << "\" font-size=\"" << size
          << "\" font-weight=\"" << weight << "\">" << escape(s) << "</text>\n";
    int w = static_cast<int>(s.size()) * size * 6 / 10;
    extend(anchor == "start" ? x + w : x + w / 2, y + 4);
  }
  std::string str() const {
    std::ostringstream out;
    out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width_ + kMargin << "\" height=\""
        << height_ + kMargin << "\" font-family=\"monospace\">\n"
        << "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        << body_.str() << "</svg>\n";
    return out.str();
  }

 private:
  void extend(int x, int y) {
    width_ = std::max(width_, x);
    height_ = std::max(height_, y);
  }
  std::ostringstream body_;
  int width_ = 0, height_ = 0;
};

// A row of value cells starting at (x, y).
void value_row(Svg& svg, int x, int y, int cell, const std::vector<Value>& vals, const std::string& fill) {
  for (size_t i = 0; i < vals.size(); ++i) {
    svg.rect(x + static_cast<int>(i) * cell, y, cell, kCell, fill);
    svg.text(x + static_cast<int>(i) * cell + cell / 2, y + kCell * 2 / 3, cell_text(vals[i]));
  }
}

std::string clip(const std::string& s, size_t max) { return s.size() > max ? s.substr(0, max - 1) + "~" : s; }

// The s-ops a selector compares: keys and queries of its first plain select.
const Node* first_select(const Node* sel) {
  while (sel && sel->kind != Kind::Select) sel = sel->children.empty() ? nullptr : sel->children[0].get();
  return sel;
}

}  // namespace

std::string draw_svg(const SOp& output, const std::vector<Value>& input, Convention convention) {
  Evaluation ev = evaluate(output, input, convention);
  Analysis an = analyze(output);
  const int n = static_cast<int>(input.size());
  std::vector<std::vector<Value>> all_values;
  for (const auto& [node, vals] : ev.values) all_values.push_back(vals);
  const int cell = cell_width(all_values);
  Svg svg;
  int y = kMargin;
  int total_heads = 0;
  for (int h : an.heads_per_layer) total_heads += h;
  svg.text(kMargin, y + 12, "RASP program " + clip(output.node()->description(), 40) + " on " + std::to_string(n) +
                                " tokens: " + std::to_string(an.layers) + " layer(s), " + std::to_string(total_heads) +
                                " head(s)",
           "start", 14, "bold");
  y += 30;

  // s-ops worth showing: inputs, attention results, named ones and the output. A row whose
  // label and values repeat an earlier row's (an annotated copy such as x.numerical()) is
  // not repeated; different s-ops that share a name get a numbered label.
  std::vector<std::pair<const Node*, std::string>> shown;
  std::map<std::string, std::vector<const Node*>> by_label;
  for (const Node* node : ev.order) {
    if (node->is_selector() || node->kind == Kind::Constant) continue;
    bool show = node->kind == Kind::Tokens || node->kind == Kind::Indices || node->kind == Kind::Length ||
                node->kind == Kind::Aggregate || node->kind == Kind::SelectorWidth || !node->name.empty() ||
                node == output.node().get();
    if (!show) continue;
    std::string label = node->description();
    auto& same = by_label[label];
    bool duplicate = false;
    for (const Node* other : same) duplicate |= ev.values.at(other) == ev.values.at(node) && an.depth.at(other) == an.depth.at(node);
    if (duplicate) continue;
    same.push_back(node);
    if (same.size() > 1) label += " (" + std::to_string(same.size()) + ")";
    shown.emplace_back(node, label);
  }
  std::stable_sort(shown.begin(), shown.end(),
                   [&](const auto& a, const auto& b) { return an.depth.at(a.first) < an.depth.at(b.first); });
  svg.text(kMargin, y + 12, "values by layer", "start", 13, "bold");
  y += 22;
  for (const auto& [node, name] : shown) {
    std::string suffix = "  [L" + std::to_string(an.depth.at(node)) + "]";
    svg.text(kMargin, y + kCell * 2 / 3, clip(name, 28 - suffix.size()) + suffix, "start");
    value_row(svg, kMargin + kLabel, y, cell, ev.values.at(node),
              node == output.node().get() ? "#ffe7a8" : node->kind == Kind::Aggregate ? "#dceeff" : "#f4f4f4");
    y += kCell + 4;
  }
  y += 16;

  // each layer's heads, exactly as analyze counts them: `length` attends everywhere and a
  // selector_width is two heads (the selector or/and "key index == 0")
  for (int layer = 1; layer <= an.layers; ++layer) {
    std::vector<const Head*> heads;
    for (const Head& h : an.heads)
      if (h.layer == layer) heads.push_back(&h);
    if (heads.empty()) continue;
    svg.text(kMargin, y + 12, "layer " + std::to_string(layer) + ": " + std::to_string(heads.size()) + " head(s)",
             "start", 13, "bold");
    y += 24;
    int x = kMargin;
    int block_height = 0;
    for (const Head* head : heads) {
      const Node* agg = head->output_nodes.front();
      SelectorMatrix m(n, std::vector<uint8_t>(n, 1));
      const Node* plain = nullptr;
      if (head->selector_node) {
        m = ev.selectors.at(head->selector_node);
        plain = first_select(head->selector_node);
        for (int q = 0; q < n; ++q)
          for (int k = 0; k < n; ++k) {
            if (head->pattern == HeadPattern::WidthOr) m[q][k] = m[q][k] || k == 0;
            if (head->pattern == HeadPattern::WidthAnd) m[q][k] = m[q][k] && k == 0;
          }
      }
      std::vector<Value> keys = plain ? ev.values.at(plain->children[0].get()) : ev.values.at(agg);
      std::vector<Value> queries = plain ? ev.values.at(plain->children[1].get()) : ev.values.at(agg);
      if (!plain) {  // `length`: keys and queries are the tokens
        keys = input;
        queries = input;
      }
      int top = y;
      std::string title = agg->description();
      if (head->pattern == HeadPattern::WidthOr) title += " (or index 0)";
      if (head->pattern == HeadPattern::WidthAnd) title += " (and index 0)";
      int w = cell * (n + 2) + 30;
      svg.text(x, top + 10, clip(title, std::max<size_t>(12, static_cast<size_t>(std::max(w, 200)) / 7)), "start", 11,
               "bold");
      top += 16;
      // keys across the top, queries down the left, the head's output on the right
      value_row(svg, x + cell, top, cell, keys, "#e8f5e9");
      for (int q = 0; q < n; ++q) {
        int ry = top + kCell + q * kCell;
        svg.rect(x, ry, cell, kCell, "#fff3e0");
        svg.text(x + cell / 2, ry + kCell * 2 / 3, cell_text(queries[q]));
        for (int k = 0; k < n; ++k)
          svg.rect(x + cell + k * cell, ry, cell, kCell, m[q][k] ? "#263238" : "white", "#ccc");
        const Value& out = ev.values.at(agg)[q];
        svg.rect(x + cell * (n + 1) + 6, ry, cell, kCell, "#dceeff");
        svg.text(x + cell * (n + 1) + 6 + cell / 2, ry + kCell * 2 / 3, cell_text(out));
      }
      x += std::max(w, 200);
      block_height = std::max(block_height, 16 + kCell * (n + 1));
    }
    y += block_height + 24;
  }
  return svg.str();
}

}  // namespace lrnn::rasp

namespace lrnn::rasp {

namespace {

// #rrggbb from white (0) to a mid blue (1), light enough for black text.
std::string shade(double x) {
  x = std::clamp(x, 0.0, 1.0);
  auto channel = [&](int from, int to) { return static_cast<int>(from + (to - from) * x); };
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", channel(255, 110), channel(255, 150), channel(255, 230));
  return buf;
}

std::string number_text(double v) {
  if (std::fabs(v) < 5e-4) return "";
  std::ostringstream o;
  o.precision(2);
  o << v;
  return o.str();
}

}  // namespace

std::string draw_compiled_svg(const CompiledModel& model, const std::vector<Value>& input) {
  const std::vector<double> x = model.forward(input);
  const std::vector<std::vector<double>> patterns = model.attention(input);
  const int rows = static_cast<int>(input.size()) + 1;
  const int d = model.d_model;
  std::vector<Value> header{Value(std::string("BOS"))};
  header.insert(header.end(), input.begin(), input.end());
  std::vector<std::vector<Value>> cells{header};
  const int cell = std::max(cell_width(cells), 34);
  Svg svg;
  int y = kMargin;
  svg.text(kMargin, y + 12,
           "compiled " + clip(model.program.node()->description(), 40) + ": " + std::to_string(model.layers.size()) +
               " layer(s), " + std::to_string(model.heads()) + " head(s), residual " + std::to_string(d),
           "start", 14, "bold");
  y += 30;
  svg.text(kMargin, y + 12, "residual stream after the last layer", "start", 13, "bold");
  y += 22;
  value_row(svg, kMargin + kLabel, y, cell, header, "#e8f5e9");
  y += kCell;
  for (int dim = 0; dim < d; ++dim) {
    svg.text(kMargin, y + kCell * 2 / 3, clip(std::to_string(dim) + " " + model.dim_labels[dim], 28), "start");
    for (int r = 0; r < rows; ++r) {
      const double v = x[static_cast<size_t>(r) * d + dim];
      svg.rect(kMargin + kLabel + r * cell, y, cell, kCell, shade(std::fabs(v)), "#ccc");
      svg.text(kMargin + kLabel + r * cell + cell / 2, y + kCell * 2 / 3, number_text(v));
    }
    y += kCell;
  }
  y += 20;
  size_t head_index = 0;
  for (size_t l = 0; l < model.layers.size(); ++l) {
    const auto& heads = model.layers[l].heads;
    if (heads.empty()) continue;
    svg.text(kMargin, y + 12, "layer " + std::to_string(l + 1) + ": " + std::to_string(heads.size()) +
                                  " head(s), attention weights (queries down, keys across)",
             "start", 13, "bold");
    y += 24;
    int xpos = kMargin;
    for (const CompiledHead& head : heads) {
      const std::vector<double>& a = patterns.at(head_index++);
      const int w = std::max(cell * (rows + 1) + 30, 220);
      svg.text(xpos, y + 10, clip(head.output, static_cast<size_t>(w / 7)), "start", 11, "bold");
      value_row(svg, xpos + cell, y + 16, cell, header, "#e8f5e9");
      for (int q = 0; q < rows; ++q) {
        const int ry = y + 16 + kCell + q * kCell;
        svg.rect(xpos, ry, cell, kCell, "#fff3e0");
        svg.text(xpos + cell / 2, ry + kCell * 2 / 3, cell_text(header[q]));
        for (int k = 0; k < rows; ++k) {
          const double v = a[static_cast<size_t>(q) * rows + k];
          svg.rect(xpos + cell + k * cell, ry, cell, kCell, shade(v), "#ccc");
        }
      }
      xpos += w;
    }
    y += 16 + kCell * (rows + 1) + 24;
  }
  return svg.str();
}

}  // namespace lrnn::rasp
