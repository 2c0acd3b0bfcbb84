// The RASP analyser: attention depth of every node, layers and heads per layer.
#include <algorithm>
#include <map>
#include <set>

#include "lrnn/rasp.hpp"

namespace lrnn::rasp {

namespace {

// Canonical ids by structure, so that `select(indices, indices, <=)` written twice is one
// head. Functions given as code (lambdas) are only equal to themselves.
class Canon {
 public:
  int id(const Node* n) {
    auto it = memo_.find(n);
    if (it != memo_.end()) return it->second;
    std::string key = std::to_string(static_cast<int>(n->kind)) + "|";
    switch (n->kind) {
      case Kind::Constant: key += n->constant.index() == 0 ? "none" : repr(n->constant) + ":" + type_name(n->constant); break;
      case Kind::Map: case Kind::ZipMap:
        // Built-in maps are named functions; anything else is opaque code.
        if (n->builtin) key += n->label;
        else key += "#" + std::to_string(n->id);
        break;
      case Kind::Unary: case Kind::Binary: key += op_symbol(n->op); break;
      case Kind::Select: key += predicate_symbol(n->predicate); break;
      case Kind::Aggregate:
        key += repr(n->constant) + ":" + std::to_string(static_cast<int>(n->convention));
        break;
      default: break;
    }
    for (const auto& c : n->children) key += "," + std::to_string(id(c.get()));
    auto [pos, inserted] = ids_.emplace(key, static_cast<int>(ids_.size()));
    memo_[n] = pos->second;
    return pos->second;
  }

 private:
  std::map<std::string, int> ids_;
  std::map<const Node*, int> memo_;
};

std::string describe_selector(const Node* n) {
  if (!n->name.empty()) return n->name;
  switch (n->kind) {
    case Kind::Select:
      return "select(" + n->children[0]->display_name() + ", " + n->children[1]->display_name() + ", " +
             predicate_symbol(n->predicate) + ")";
    case Kind::SelectAnd:
      return "(" + describe_selector(n->children[0].get()) + " and " + describe_selector(n->children[1].get()) + ")";
    case Kind::SelectOr:
      return "(" + describe_selector(n->children[0].get()) + " or " + describe_selector(n->children[1].get()) + ")";
    case Kind::SelectNot: return "not " + describe_selector(n->children[0].get());
    default: return n->display_name();
  }
}

}  // namespace

Analysis analyze(const SOp& output) {
  if (!output.node()) throw Error(ErrorKind::Semantic, "cannot analyse an empty s-op");
  Analysis a;
  Canon canon;
  auto order = topological_order(output.node());
  // (layer, head key) -> head index
  std::map<std::pair<int, std::string>, size_t> heads;
  auto add_head = [&](int layer, const std::string& key, const std::string& selector, const Node* out,
                      HeadPattern pattern, const Node* sel) {
    auto [it, inserted] = heads.emplace(std::make_pair(layer, key), a.heads.size());
    if (inserted) a.heads.push_back(Head{layer, selector, {}, pattern, sel, {}});
    a.heads[it->second].outputs.push_back(out->display_name());
    a.heads[it->second].output_nodes.push_back(out);
  };
  for (const Node* n : order) {
    int d = 0;
    for (const auto& c : n->children) d = std::max(d, a.depth.at(c.get()));
    switch (n->kind) {
      case Kind::Length:
        d = 1;
        add_head(1, "length", "select(tokens, tokens, true)", n, HeadPattern::All, nullptr);
        break;
      case Kind::Aggregate: {
        d += 1;
        const Node* sel = n->children[0].get();
        add_head(d, "agg:" + std::to_string(canon.id(sel)), describe_selector(sel), n, HeadPattern::Selector, sel);
        break;
      }
      case Kind::SelectorWidth: {
        d += 1;
        const Node* sel = n->children[0].get();
        std::string s = describe_selector(sel);
        std::string id = std::to_string(canon.id(sel));
        add_head(d, "width-or:" + id, "(" + s + " or select(indices, 0, ==))", n, HeadPattern::WidthOr, sel);
        add_head(d, "width-and:" + id, "(" + s + " and select(indices, 0, ==))", n, HeadPattern::WidthAnd, sel);
        break;
      }
      default: break;
    }
    a.depth[n] = d;
  }
  for (const auto& h : a.heads) a.layers = std::max(a.layers, h.layer);
  a.layers = std::max(a.layers, a.depth.at(output.node().get()));
  a.heads_per_layer.assign(a.layers, 0);
  for (const auto& h : a.heads) a.heads_per_layer[h.layer - 1]++;
  for (int h : a.heads_per_layer) a.max_heads = std::max(a.max_heads, h);
  std::stable_sort(a.heads.begin(), a.heads.end(),
                   [](const Head& x, const Head& y) { return x.layer < y.layer; });
  return a;
}

}  // namespace lrnn::rasp
