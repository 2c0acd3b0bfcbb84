// Pictures of one sample: its grounding (atoms and ground rules) and its neural network
// (fact, rule, aggregation and atom neurons by layer). Both read Model::network, the
// engine's own grounding, neuralization and forward (and backward) pass of the sample.
//
// A big network is not drawn whole: nodes are taken from the outputs backwards (what the
// queries depend on first) until the limit, and each layer's remainder is one
// "... N more" node, so the text stays bounded by the limit whatever the network's size.
#include <algorithm>
#include <deque>
#include <map>
#include <sstream>
#include <tuple>

#include "draw/dot_text.hpp"
#include "lrnn/draw.hpp"

namespace lrnn {

namespace {

// Node kinds of the network picture, in their order within a depth.
enum class Kind { Atom, Rule, Aggregation };

struct NodeRef {
  Kind kind;
  size_t index;
};

// Which nodes fit in the limit: a breadth-first walk from the outputs towards the facts.
class Selection {
 public:
  Selection(const GroundNetwork& net, bool with_rule_neurons, size_t max_nodes)
      : net_(net), rule_neurons_(with_rule_neurons), max_nodes_(max_nodes) {
    atom_kept_.assign(net.atoms.size(), false);
    rule_kept_.assign(net.rule_neurons.size(), false);
    agg_kept_.assign(net.aggregations.size(), false);
    aggs_of_head_.resize(net.atoms.size());
    for (size_t j = 0; j < net.aggregations.size(); ++j) aggs_of_head_[net.aggregations[j].head].push_back(j);
    rules_of_agg_.resize(net.aggregations.size());
    for (size_t g = 0; g < net.rule_neurons.size(); ++g) rules_of_agg_[net.rule_neurons[g].aggregation].push_back(g);
    walk();
  }
  bool atom(size_t l) const { return atom_kept_[l]; }
  bool rule(size_t g) const { return rule_kept_[g]; }
  bool aggregation(size_t j) const { return agg_kept_[j]; }
  size_t kept() const { return kept_; }
  const std::vector<size_t>& aggregations_of(size_t atom) const { return aggs_of_head_[atom]; }
  const std::vector<size_t>& rules_of(size_t aggregation) const { return rules_of_agg_[aggregation]; }

 private:
  bool take(std::vector<bool>& kept, size_t i) {
    if (kept[i] || kept_ >= max_nodes_) return false;
    kept[i] = true;
    ++kept_;
    return true;
  }
  void walk() {
    std::deque<NodeRef> queue;
    int max_depth = 0;
    for (const auto& a : net_.atoms) max_depth = std::max(max_depth, a.depth);
    bool any_query = false;
    for (const auto& a : net_.atoms) any_query = any_query || a.query;
    for (size_t l = 0; l < net_.atoms.size(); ++l)
      if (any_query ? net_.atoms[l].query : net_.atoms[l].depth == max_depth)
        if (take(atom_kept_, l)) queue.push_back({Kind::Atom, l});
    while (!queue.empty() && kept_ < max_nodes_) {
      const NodeRef n = queue.front();
      queue.pop_front();
      if (n.kind == Kind::Atom) {
        for (size_t j : aggs_of_head_[n.index]) {
          if (rule_neurons_) {
            if (take(agg_kept_, j)) queue.push_back({Kind::Aggregation, j});
          } else {
            for (size_t g : rules_of_agg_[j])
              for (size_t in : net_.rule_neurons[g].inputs)
                if (take(atom_kept_, in)) queue.push_back({Kind::Atom, in});
          }
        }
      } else if (n.kind == Kind::Aggregation) {
        for (size_t g : rules_of_agg_[n.index])
          if (take(rule_kept_, g)) queue.push_back({Kind::Rule, g});
      } else {
        for (size_t in : net_.rule_neurons[n.index].inputs)
          if (take(atom_kept_, in)) queue.push_back({Kind::Atom, in});
      }
    }
  }

  const GroundNetwork& net_;
  bool rule_neurons_;
  size_t max_nodes_, kept_ = 0;
  std::vector<bool> atom_kept_, rule_kept_, agg_kept_;
  std::vector<std::vector<size_t>> aggs_of_head_, rules_of_agg_;
};

// Value and gradient lines of a neuron label.
std::string value_lines(const std::vector<double>& value, const std::vector<double>& gradient, int rows, int cols,
                        const DrawOptions& o) {
  std::string out;
  const int digits = draw::detail_digits(o.value_detail);
  if (o.values) out += "\nvalue " + (value.empty() ? std::string("not stored") : draw::value_text(value, rows, cols, digits));
  if (o.gradients && !gradient.empty()) out += "\ngrad " + draw::value_text(gradient, rows, cols, digits);
  return out;
}

std::string atom_attrs(const GroundNetwork::Atom& a) {
  std::string attrs = a.depth == 0 ? "shape=box, style=filled, fillcolor=\"#eeeeee\""
                                   : "shape=ellipse, style=filled, fillcolor=\"#dbe9f6\"";
  if (a.query) attrs += ", peripheries=2";
  return attrs;
}

std::string atom_label(const GroundNetwork::Atom& a, const DrawOptions& o) {
  std::string label = a.text;
  if (a.depth == 0) label += "\nfact";
  else if (a.has_fact) label += "\natom + fact";
  return label + value_lines(a.value, a.gradient, a.rows, a.cols, o);
}

// Layers of the network picture: facts at 0; per depth d, rule neurons at 3d-2,
// aggregations at 3d-1, atom neurons at 3d. The ground picture uses the depth itself.
class Layers {
 public:
  explicit Layers(bool neurons) : neurons_(neurons) {}
  void add(int layer, const std::string& id) { members_[layer].push_back(id); }
  void omit(int layer) { ++omitted_[layer]; }
  size_t omitted() const {
    size_t n = 0;
    for (const auto& [layer, count] : omitted_) n += count;
    return n;
  }
  void write(std::ostringstream& dot) const {
    for (const auto& [layer, count] : omitted_) {
      const std::string id = "more" + std::to_string(layer);
      dot << "  " << draw::quoted(id) << " [label=" << draw::quoted("... " + std::to_string(count) + " more " + noun(layer))
          << ", shape=plaintext];\n";
    }
    std::map<int, std::vector<std::string>> all = members_;
    for (const auto& [layer, count] : omitted_) all[layer].push_back("more" + std::to_string(layer));
    for (const auto& [layer, ids] : all) {
      dot << "  { rank=same;";
      for (const std::string& id : ids) dot << " " << draw::quoted(id) << ";";
      dot << " }\n";
    }
    // A "... N more" node has no edges, so nothing would keep it in its layer's place:
    // invisible edges chain the layers bottom to top.
    if (omitted_.empty()) return;
    const std::string* below = nullptr;
    for (const auto& [layer, ids] : all) {
      if (below) dot << "  " << draw::quoted(*below) << " -> " << draw::quoted(ids.front()) << " [style=invis];\n";
      below = &ids.front();
    }
  }

 private:
  std::string noun(int layer) const {
    if (layer == 0) return "facts";
    if (!neurons_) return "atoms";
    return layer % 3 == 0 ? "atom neurons" : layer % 3 == 1 ? "rule neurons" : "aggregation neurons";
  }
  bool neurons_;
  std::map<int, std::vector<std::string>> members_;
  std::map<int, size_t> omitted_;
};

std::string header(const char* name, size_t index) {
  return std::string("digraph ") + name + " {\n  rankdir=BT;\n  labelloc=t;\n" +
         "  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n";
}

void check_limit(const DrawOptions& o) {
  draw::detail_digits(o.value_detail);  // refuses a bad level before any work
  if (o.max_nodes == 0) throw Error(ErrorKind::Semantic, "max_nodes must be at least 1");
}

}  // namespace

std::string ground_dot(const Model& model, const Dataset& data, size_t index, const DrawOptions& options) {
  check_limit(options);
  const GroundNetwork net = model.network(data, index, options.gradients);
  const Selection kept(net, false, options.max_nodes);
  std::ostringstream dot;
  dot << header("grounding", index);
  Layers layers(false);
  for (size_t l = 0; l < net.atoms.size(); ++l) {
    const auto& a = net.atoms[l];
    if (!kept.atom(l)) {
      layers.omit(a.depth);
      continue;
    }
    const std::string id = "a" + std::to_string(l);
    layers.add(a.depth, id);
    dot << "  " << draw::quoted(id) << " [label=" << draw::quoted(atom_label(a, options)) << ", " << atom_attrs(a)
        << "];\n";
  }
  // One edge per (input atom, head atom, rule), however many ground rules share it.
  std::map<std::tuple<size_t, size_t, int>, size_t> edges;
  for (const auto& r : net.rule_neurons)
    if (kept.atom(r.head))
      for (size_t in : r.inputs)
        if (kept.atom(in)) ++edges[{in, r.head, r.rule}];
  for (const auto& [key, count] : edges) {
    const auto [from, to, rule] = key;
    std::string label = "r" + std::to_string(rule);
    if (count > 1) label += " x" + std::to_string(count);
    dot << "  " << draw::quoted("a" + std::to_string(from)) << " -> " << draw::quoted("a" + std::to_string(to))
        << " [label=" << draw::quoted(label) << "];\n";
  }
  layers.write(dot);
  dot << "  label=" << draw::quoted("sample " + std::to_string(index) + ": " + std::to_string(net.atoms.size()) +
                                    " atoms, " + std::to_string(net.ground_rules) + " ground rules" +
                                    (layers.omitted() ? ", " + std::to_string(layers.omitted()) + " atoms not drawn" : ""))
      << ";\n}\n";
  return dot.str();
}

std::string network_dot(const Model& model, const Dataset& data, size_t index, const DrawOptions& options) {
  check_limit(options);
  const GroundNetwork net = model.network(data, index, options.gradients);
  const Selection kept(net, true, options.max_nodes);
  std::ostringstream dot;
  dot << header("network", index);
  Layers layers(true);
  for (size_t l = 0; l < net.atoms.size(); ++l) {
    const auto& a = net.atoms[l];
    const int layer = 3 * a.depth;
    if (!kept.atom(l)) {
      layers.omit(layer);
      continue;
    }
    const std::string id = "a" + std::to_string(l);
    layers.add(layer, id);
    dot << "  " << draw::quoted(id) << " [label=" << draw::quoted(atom_label(a, options)) << ", " << atom_attrs(a)
        << "];\n";
  }
  for (size_t j = 0; j < net.aggregations.size(); ++j) {
    const auto& g = net.aggregations[j];
    const int layer = 3 * net.atoms[g.head].depth - 1;
    if (!kept.aggregation(j)) {
      layers.omit(layer);
      continue;
    }
    const std::string id = "g" + std::to_string(j);
    layers.add(layer, id);
    dot << "  " << draw::quoted(id) << " [label="
        << draw::quoted("aggregate r" + std::to_string(g.rule) + value_lines(g.value, g.gradient, g.rows, g.cols, options))
        << ", shape=hexagon, style=filled, fillcolor=\"#e3f2d9\"];\n";
    dot << "  " << draw::quoted(id) << " -> " << draw::quoted("a" + std::to_string(g.head)) << ";\n";
  }
  for (size_t k = 0; k < net.rule_neurons.size(); ++k) {
    const auto& r = net.rule_neurons[k];
    const int layer = 3 * net.atoms[r.head].depth - 2;
    if (!kept.rule(k)) {
      layers.omit(layer);
      continue;
    }
    const std::string id = "n" + std::to_string(k);
    layers.add(layer, id);
    std::string tooltip = net.atoms[r.head].text + " :- ";
    for (size_t i = 0; i < r.inputs.size(); ++i) tooltip += (i ? ", " : "") + net.atoms[r.inputs[i]].text;
    dot << "  " << draw::quoted(id) << " [label="
        << draw::quoted("rule r" + std::to_string(r.rule) + value_lines(r.value, r.gradient, r.rows, r.cols, options))
        << ", tooltip=" << draw::quoted(tooltip) << ", shape=box, style=\"filled,rounded\", fillcolor=\"#fde2cf\"];\n";
    dot << "  " << draw::quoted(id) << " -> " << draw::quoted("g" + std::to_string(r.aggregation)) << ";\n";
    for (size_t in : r.inputs)
      if (kept.atom(in)) dot << "  " << draw::quoted("a" + std::to_string(in)) << " -> " << draw::quoted(id) << ";\n";
  }
  layers.write(dot);
  const size_t total = net.atoms.size() + net.aggregations.size() + net.rule_neurons.size();
  std::string title = "sample " + std::to_string(index) + ": " + std::to_string(total) + " neurons (" +
                      std::to_string(net.atoms.size()) + " atoms and facts, " +
                      std::to_string(net.rule_neurons.size()) + " rule, " + std::to_string(net.aggregations.size()) +
                      " aggregation)";
  if (layers.omitted()) title += ", " + std::to_string(layers.omitted()) + " not drawn";
  if (options.gradients) title += ", loss " + draw::value_text({net.loss}, 1, 1, draw::detail_digits(options.value_detail));
  dot << "  label=" << draw::quoted(title) << ";\n}\n";
  return dot.str();
}

}  // namespace lrnn
