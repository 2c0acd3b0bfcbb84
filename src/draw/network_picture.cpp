// Pictures of one sample: its grounding (atoms and ground rules) and its neural network
// (fact, rule, aggregation and atom neurons by layer). Both read Model::network, the
// engine's own grounding, neuralization and forward (and backward) pass of the sample.
//
// A big grounding is not drawn whole: atoms are taken from the outputs backwards (what the
// queries depend on first) until the limit, and each depth's remainder is one "... N more"
// node. A network is laid out by layer and group (NetworkLayout below), so its picture is
// bounded by the template's size, whatever the sample's.
#include <algorithm>
#include <deque>
#include <map>
#include <set>
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

// Layers of the grounding picture: atoms by depth, facts at 0.
class Layers {
 public:
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
  static std::string noun(int layer) { return layer == 0 ? "facts" : "atoms"; }
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
  Layers layers;
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

namespace {

// The network picture's layout (docs/pictures.md "Networks of real samples"). Every neuron
// has a layer (facts 0; per depth d: rule neurons 3d-2, aggregations 3d-1, atoms 3d) and a
// group (its predicate/arity, or its rule); a group shows at most max_per_group neurons, the
// ones the outputs reach first, and counts the rest in one "... N more" node; a layer wider
// than kRowWidth drawn nodes wraps into stacked rows. When the drawn nodes still exceed
// max_nodes, whole layers are cut from the facts upwards, each into one node counting its
// neurons. Edges run between what is drawn: a summarised or cut neuron's edges go to its
// summary node (dashed, once per pair of nodes).
constexpr size_t kRowWidth = 12;

struct NeuronRef {
  Kind kind;
  size_t index;
};

class NetworkLayout {
 public:
  NetworkLayout(const GroundNetwork& net, const DrawOptions& o) : net_(net) {
    for (size_t l = 0; l < net.atoms.size(); ++l) add({Kind::Atom, l}, 3 * net.atoms[l].depth, atom_group(l));
    for (size_t j = 0; j < net.aggregations.size(); ++j) {
      const auto& g = net.aggregations[j];
      add({Kind::Aggregation, j}, 3 * net.atoms[g.head].depth - 1, "aggregate r" + std::to_string(g.rule));
    }
    for (size_t k = 0; k < net.rule_neurons.size(); ++k) {
      const auto& r = net.rule_neurons[k];
      add({Kind::Rule, k}, 3 * net.atoms[r.head].depth - 2, "rule r" + std::to_string(r.rule));
    }
    const std::vector<size_t> order = reach_order();
    for (auto& [layer, groups] : layers_)
      for (auto& [name, members] : groups) {
        std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) { return order[a] < order[b]; });
        for (size_t m = 0; m < members.size(); ++m)
          shown_node_[members[m]] = m < o.max_per_group ? neuron_id(members[m]) : group_id(layer, name);
      }
    cut_layers(o.max_nodes);
  }

  const std::vector<NeuronRef>& neurons() const { return neurons_; }
  // The node a neuron is drawn as: its own, its group's summary or its cut layer's.
  const std::string& node_of(NeuronRef n) const { return shown_node_[position(n)]; }
  bool drawn(NeuronRef n) const { return node_of(n) == neuron_id(position(n)); }
  size_t not_drawn() const {
    size_t n = 0;
    for (size_t i = 0; i < neurons_.size(); ++i) n += shown_node_[i] != neuron_id(i);
    return n;
  }

  // Summary nodes, rows and the invisible edges that stack them.
  void write_layout(std::ostringstream& dot) const {
    std::string below;  // the first node of the row below
    for (const auto& [layer, groups] : layers_) {
      std::vector<std::string> row_nodes;
      if (cut_.count(layer)) {
        // the layer's count, and its four largest groups
        std::vector<std::pair<size_t, std::string>> sizes;
        size_t count = 0;
        for (const auto& [name, members] : groups) {
          count += members.size();
          sizes.emplace_back(members.size(), name);
        }
        std::stable_sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        std::string parts;
        for (size_t k = 0; k < std::min<size_t>(4, sizes.size()); ++k)
          parts += "\n" + std::to_string(sizes[k].first) + " " + sizes[k].second;
        if (sizes.size() > 4) parts += "\n...";
        const std::string id = layer_id(layer);
        dot << "  " << draw::quoted(id) << " [label="
            << draw::quoted("... " + std::to_string(count) + " more in layer " + std::to_string(layer) + " (" +
                            layer_noun(layer) + ")" + parts)
            << ", shape=note, style=dashed];\n";
        row_nodes.push_back(id);
      } else {
        for (const auto& [name, members] : groups) {
          size_t summarised = 0;
          for (size_t m : members) {
            if (shown_node_[m] == neuron_id(m)) row_nodes.push_back(neuron_id(m));
            else ++summarised;
          }
          if (summarised == 0) continue;
          const std::string id = group_id(layer, name);
          dot << "  " << draw::quoted(id) << " [label="
              << draw::quoted("... " + std::to_string(summarised) + " more " + name + (layer == 0 ? " facts" : ""))
              << ", shape=plaintext];\n";
          row_nodes.push_back(id);
        }
      }
      for (size_t first = 0; first < row_nodes.size(); first += kRowWidth) {
        dot << "  { rank=same;";
        for (size_t i = first; i < std::min(row_nodes.size(), first + kRowWidth); ++i)
          dot << " " << draw::quoted(row_nodes[i]) << ";";
        dot << " }\n";
        // rows bottom to top: facts first, a wrapped layer's rows one above the other
        if (!below.empty()) dot << "  " << draw::quoted(below) << " -> " << draw::quoted(row_nodes[first]) << " [style=invis];\n";
        below = row_nodes[first];
      }
    }
  }

  static std::string neuron_id(NeuronRef n) {
    return (n.kind == Kind::Atom ? "a" : n.kind == Kind::Rule ? "n" : "g") + std::to_string(n.index);
  }

 private:
  void add(NeuronRef n, int layer, const std::string& group) {
    const size_t i = neurons_.size();
    neurons_.push_back(n);
    index_of_[kind_slot(n.kind)].resize(
        n.kind == Kind::Atom ? net_.atoms.size() : n.kind == Kind::Rule ? net_.rule_neurons.size() : net_.aggregations.size());
    index_of_[kind_slot(n.kind)][n.index] = i;
    layers_[layer][group].push_back(i);
    shown_node_.push_back(neuron_id(n));
  }
  static int kind_slot(Kind k) { return k == Kind::Atom ? 0 : k == Kind::Rule ? 1 : 2; }
  size_t position(NeuronRef n) const { return index_of_[kind_slot(n.kind)][n.index]; }
  std::string neuron_id(size_t i) const { return neuron_id(neurons_[i]); }
  static std::string group_id(int layer, const std::string& group) { return "more " + std::to_string(layer) + " " + group; }
  static std::string layer_id(int layer) { return "layer " + std::to_string(layer); }
  static std::string layer_noun(int layer) {
    if (layer == 0) return "facts";
    return layer % 3 == 0 ? "atom neurons" : layer % 3 == 1 ? "rule neurons" : "aggregation neurons";
  }

  // `name/arity` of an atom's text (`bond(d1, d2, 0)` -> `bond/3`).
  std::string atom_group(size_t l) const {
    const std::string& text = net_.atoms[l].text;
    const size_t open = text.find('(');
    if (open == std::string::npos) return text + "/0";
    int depth = 0, arity = 1;
    for (size_t i = open + 1; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '(' || c == '[') ++depth;
      else if (c == ')' || c == ']') --depth;
      else if (c == ',' && depth == 0) ++arity;
    }
    return text.substr(0, open) + "/" + std::to_string(arity);
  }

  // Each neuron's place in a breadth-first walk from the outputs to the facts (neurons the
  // outputs do not reach come last), so a group shows what the outputs read first.
  std::vector<size_t> reach_order() const {
    std::vector<size_t> order(neurons_.size(), neurons_.size());
    std::vector<std::vector<size_t>> aggs_of_head(net_.atoms.size()), rules_of_agg(net_.aggregations.size());
    for (size_t j = 0; j < net_.aggregations.size(); ++j) aggs_of_head[net_.aggregations[j].head].push_back(j);
    for (size_t g = 0; g < net_.rule_neurons.size(); ++g) rules_of_agg[net_.rule_neurons[g].aggregation].push_back(g);
    std::deque<NeuronRef> queue;
    size_t next = 0;
    auto visit = [&](NeuronRef n) {
      size_t& o = order[position(n)];
      if (o != neurons_.size()) return;
      o = next++;
      queue.push_back(n);
    };
    int max_depth = 0;
    bool any_query = false;
    for (const auto& a : net_.atoms) max_depth = std::max(max_depth, a.depth), any_query = any_query || a.query;
    for (size_t l = 0; l < net_.atoms.size(); ++l)
      if (any_query ? net_.atoms[l].query : net_.atoms[l].depth == max_depth) visit({Kind::Atom, l});
    while (!queue.empty()) {
      const NeuronRef n = queue.front();
      queue.pop_front();
      if (n.kind == Kind::Atom)
        for (size_t j : aggs_of_head[n.index]) visit({Kind::Aggregation, j});
      else if (n.kind == Kind::Aggregation)
        for (size_t g : rules_of_agg[n.index]) visit({Kind::Rule, g});
      else
        for (size_t in : net_.rule_neurons[n.index].inputs) visit({Kind::Atom, in});
    }
    for (size_t i = 0; i < neurons_.size(); ++i)
      if (order[i] == neurons_.size()) order[i] = next++;
    return order;
  }

  // Nodes a layer draws: its shown neurons and its groups' summaries.
  size_t drawn_nodes(int layer) const {
    std::set<std::string> nodes;
    for (const auto& [name, members] : layers_.at(layer))
      for (size_t m : members) nodes.insert(shown_node_[m]);
    return nodes.size();
  }

  // Cuts whole layers, the facts first, while more than max_nodes nodes are drawn; the top
  // layer (the outputs) stays.
  void cut_layers(size_t max_nodes) {
    size_t total = 0;
    for (const auto& [layer, groups] : layers_) total += drawn_nodes(layer);
    for (auto it = layers_.begin(); total > max_nodes && std::next(it) != layers_.end(); ++it) {
      const int layer = it->first;
      total = total - drawn_nodes(layer) + 1;
      cut_.insert(layer);
      for (const auto& [name, members] : it->second)
        for (size_t m : members) shown_node_[m] = layer_id(layer);
    }
  }

  const GroundNetwork& net_;
  std::vector<NeuronRef> neurons_;
  std::vector<size_t> index_of_[3];
  std::map<int, std::map<std::string, std::vector<size_t>>> layers_;  // layer -> group -> neurons
  std::vector<std::string> shown_node_;
  std::set<int> cut_;
};

}  // namespace

std::string network_dot(const Model& model, const Dataset& data, size_t index, const DrawOptions& options) {
  check_limit(options);
  if (options.max_per_group == 0) throw Error(ErrorKind::Semantic, "max_per_group must be at least 1");
  const GroundNetwork net = model.network(data, index, options.gradients);
  const NetworkLayout layout(net, options);
  std::ostringstream dot;
  // At most 41.6 inches either way: Graphviz scales a larger layout down, so an SVG stays
  // within 2,995 pt and a PNG (96 dpi) within 3,994 px (docs/pictures.md).
  dot << header("network", index) << "  newrank=true;\n  size=\"41.6,41.6\";\n";
  for (const NeuronRef n : layout.neurons()) {
    if (!layout.drawn(n)) continue;
    const std::string id = NetworkLayout::neuron_id(n);
    if (n.kind == Kind::Atom) {
      const auto& a = net.atoms[n.index];
      dot << "  " << draw::quoted(id) << " [label=" << draw::quoted(atom_label(a, options)) << ", " << atom_attrs(a)
          << "];\n";
    } else if (n.kind == Kind::Aggregation) {
      const auto& g = net.aggregations[n.index];
      dot << "  " << draw::quoted(id) << " [label="
          << draw::quoted("aggregate r" + std::to_string(g.rule) + value_lines(g.value, g.gradient, g.rows, g.cols, options))
          << ", shape=hexagon, style=filled, fillcolor=\"#e3f2d9\"];\n";
    } else {
      const auto& r = net.rule_neurons[n.index];
      std::string tooltip = net.atoms[r.head].text + " :- ";
      for (size_t i = 0; i < r.inputs.size(); ++i) tooltip += (i ? ", " : "") + net.atoms[r.inputs[i]].text;
      dot << "  " << draw::quoted(id) << " [label="
          << draw::quoted("rule r" + std::to_string(r.rule) + value_lines(r.value, r.gradient, r.rows, r.cols, options))
          << ", tooltip=" << draw::quoted(tooltip) << ", shape=box, style=\"filled,rounded\", fillcolor=\"#fde2cf\"];\n";
    }
  }
  // input -> rule neuron -> aggregation -> head atom, between the nodes they are drawn as
  std::set<std::pair<std::string, std::string>> written;
  auto edge = [&](NeuronRef from, NeuronRef to) {
    const std::string &a = layout.node_of(from), &b = layout.node_of(to);
    if (a == b || !written.insert({a, b}).second) return;
    dot << "  " << draw::quoted(a) << " -> " << draw::quoted(b);
    if (!layout.drawn(from) || !layout.drawn(to)) dot << " [style=dashed, color=\"#888888\"]";
    dot << ";\n";
  };
  for (size_t k = 0; k < net.rule_neurons.size(); ++k) {
    const auto& r = net.rule_neurons[k];
    for (size_t in : r.inputs) edge({Kind::Atom, in}, {Kind::Rule, k});
    edge({Kind::Rule, k}, {Kind::Aggregation, r.aggregation});
  }
  for (size_t j = 0; j < net.aggregations.size(); ++j) edge({Kind::Aggregation, j}, {Kind::Atom, net.aggregations[j].head});
  layout.write_layout(dot);
  const size_t total = net.atoms.size() + net.aggregations.size() + net.rule_neurons.size();
  std::string title = "sample " + std::to_string(index) + ": " + std::to_string(total) + " neurons (" +
                      std::to_string(net.atoms.size()) + " atoms and facts, " +
                      std::to_string(net.rule_neurons.size()) + " rule, " + std::to_string(net.aggregations.size()) +
                      " aggregation)";
  if (layout.not_drawn()) title += ", " + std::to_string(layout.not_drawn()) + " counted in '...' nodes";
  if (options.gradients) title += ", loss " + draw::value_text({net.loss}, 1, 1, draw::detail_digits(options.value_detail));
  dot << "  label=" << draw::quoted(title) << ";\n}\n";
  return dot.str();
}

}  // namespace lrnn
