// SVG pictures of a RASP program on one input (RASPy-style): the s-op values by layer, and
// for each attention layer its selector matrices with queries on the left, keys on top
// and the aggregated values on the right.
#include <algorithm>
#include <set>
#include <sstream>

#include "lrnn/rasp.hpp"

namespace lrnn::rasp {

namespace {

constexpr int kCell = 26;
constexpr int kLabel = 190;
constexpr int kMargin = 16;

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string cell_text(const Value& v) {
  std::string s = std::holds_alternative<double>(v) ? [&] {
    std::ostringstream o;
    o.precision(3);
    o << std::get<double>(v);
    return o.str();
  }() : to_string(v);
  if (std::holds_alternative<bool>(v)) s = std::get<bool>(v) ? "T" : "F";
  if (s.size() > 4) s = s.substr(0, 4);
  return s;
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
void value_row(Svg& svg, int x, int y, const std::vector<Value>& vals, const std::string& fill) {
  for (size_t i = 0; i < vals.size(); ++i) {
    svg.rect(x + static_cast<int>(i) * kCell, y, kCell, kCell, fill);
    svg.text(x + static_cast<int>(i) * kCell + kCell / 2, y + kCell * 2 / 3, cell_text(vals[i]));
  }
}

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
  Svg svg;
  int y = kMargin;
  svg.text(kMargin, y + 12, "RASP program " + output.node()->display_name() + " on " + std::to_string(n) +
                                " tokens: " + std::to_string(an.layers) + " layer(s)",
           "start", 14, "bold");
  y += 30;

  // s-ops worth showing: inputs, attention results, named ones and the output
  std::vector<const Node*> shown;
  for (const Node* node : ev.order) {
    if (node->is_selector() || node->kind == Kind::Constant) continue;
    bool show = node->kind == Kind::Tokens || node->kind == Kind::Indices || node->kind == Kind::Length ||
                node->kind == Kind::Aggregate || node->kind == Kind::SelectorWidth || !node->name.empty() ||
                node == output.node().get();
    if (show) shown.push_back(node);
  }
  std::stable_sort(shown.begin(), shown.end(),
                   [&](const Node* a, const Node* b) { return an.depth.at(a) < an.depth.at(b); });
  svg.text(kMargin, y + 12, "values by layer", "start", 13, "bold");
  y += 22;
  for (const Node* node : shown) {
    std::string label = node->display_name() + "  [L" + std::to_string(an.depth.at(node)) + "]";
    if (label.size() > 28) label = label.substr(0, 27) + "~";
    svg.text(kMargin, y + kCell * 2 / 3, label, "start");
    value_row(svg, kMargin + kLabel, y, ev.values.at(node),
              node == output.node().get() ? "#ffe7a8" : node->kind == Kind::Aggregate ? "#dceeff" : "#f4f4f4");
    y += kCell + 4;
  }
  y += 16;

  // each layer's heads: the selectors aggregated at that depth
  for (int layer = 1; layer <= an.layers; ++layer) {
    std::vector<std::pair<const Node*, const Node*>> heads;  // (selector, aggregate)
    std::set<const Node*> seen;
    for (const Node* node : ev.order) {
      if ((node->kind != Kind::Aggregate && node->kind != Kind::SelectorWidth) || an.depth.at(node) != layer) continue;
      const Node* sel = node->children[0].get();
      if (seen.insert(sel).second) heads.emplace_back(sel, node);
    }
    if (heads.empty()) continue;
    svg.text(kMargin, y + 12, "layer " + std::to_string(layer) + ": " + std::to_string(heads.size()) + " selector(s)",
             "start", 13, "bold");
    y += 24;
    int x = kMargin;
    int block_height = 0;
    for (const auto& [sel, agg] : heads) {
      const SelectorMatrix& m = ev.selectors.at(sel);
      const Node* plain = first_select(sel);
      std::vector<Value> keys = plain ? ev.values.at(plain->children[0].get()) : std::vector<Value>(n);
      std::vector<Value> queries = plain ? ev.values.at(plain->children[1].get()) : std::vector<Value>(n);
      int top = y;
      std::string title = agg->display_name();
      svg.text(x, top + 10, title.size() > 30 ? title.substr(0, 29) + "~" : title, "start", 11, "bold");
      top += 16;
      // keys across the top, queries down the left, the aggregate's output on the right
      value_row(svg, x + kCell, top, keys, "#e8f5e9");
      for (int q = 0; q < n; ++q) {
        int ry = top + kCell + q * kCell;
        svg.rect(x, ry, kCell, kCell, "#fff3e0");
        svg.text(x + kCell / 2, ry + kCell * 2 / 3, cell_text(queries[q]));
        for (int k = 0; k < n; ++k)
          svg.rect(x + kCell + k * kCell, ry, kCell, kCell, m[q][k] ? "#263238" : "white", "#ccc");
        const Value& out = ev.values.at(agg)[q];
        svg.rect(x + kCell * (n + 1) + 6, ry, kCell, kCell, "#dceeff");
        svg.text(x + kCell * (n + 1) + 6 + kCell / 2, ry + kCell * 2 / 3, cell_text(out));
      }
      int w = kCell * (n + 2) + 30;
      x += std::max(w, 200);
      block_height = std::max(block_height, 16 + kCell * (n + 1));
    }
    y += block_height + 24;
  }
  return svg.str();
}

}  // namespace lrnn::rasp
