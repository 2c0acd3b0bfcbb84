// Pass 1 of the weight compiler (passes.hpp): which s-ops the transformer materialises, and
// what each does on every input over the vocabulary up to max_len. Nothing is guessed: the
// value sets, the lookup tables of element-wise s-ops and how many keys each selector
// picks are observed by running the interpreter (docs/rasp.md, "Weight compiler").
//
// An element-wise s-op is not materialised one by one: it is one MLP lookup over the
// non-element-wise s-ops it depends on (its frontier), unless an earlier round of
// split_lookups gave one of its element-wise children its own MLP (`materialized`).
#include <algorithm>
#include <set>

#include "rasp/passes/passes.hpp"

namespace lrnn::rasp::passes {

namespace {

class Observer {
 public:
  Observer(Observation& o) : o_(o) {}

  // The non-element-wise s-ops an element-wise s-op is a function of (constants aside).
  const std::vector<const Node*>& frontier(const Node* n) {
    if (auto it = o_.frontier.find(n); it != o_.frontier.end()) return it->second;
    std::vector<const Node*> out;
    std::set<const Node*> seen;
    std::vector<const Node*> stack{n};
    while (!stack.empty()) {
      const Node* c = stack.back();
      stack.pop_back();
      if (!seen.insert(c).second) continue;
      if (c != n && (!elementwise(c->kind) || o_.materialization.materialized.count(c))) {
        if (c->kind != Kind::Constant) out.push_back(c);
        continue;
      }
      for (const auto& k : c->children) stack.push_back(k.get());
    }
    std::sort(out.begin(), out.end(), [](const Node* a, const Node* b) { return a->id < b->id; });
    return o_.frontier[n] = out;
  }

  void need(const Node* n) {
    if (!o_.needed.insert(n).second) return;
    switch (n->kind) {
      case Kind::Map: case Kind::ZipMap: case Kind::Unary: case Kind::Binary: case Kind::Where:
        for (const Node* f : frontier(n)) need(f);
        break;
      case Kind::Aggregate:
        need(n->children[1].get());
        o_.read_directly.insert(n->children[1].get());
        need_selector(n->children[0].get());
        break;
      case Kind::SelectorWidth: need_selector(n->children[0].get()); break;
      default: break;
    }
  }

  void enumerate() {
    const size_t total = compiled_input_count(o_.vocab.size(), o_.max_len);
    if (total > o_.options.max_inputs)
      throw Error(ErrorKind::Semantic,
                  "cannot compile: " + (total == SIZE_MAX ? std::string("too many") : std::to_string(total)) +
                      " inputs over a vocabulary of " + std::to_string(o_.vocab.size()) + " up to length " +
                      std::to_string(o_.max_len) + " (the compiler runs every input to find exact value sets; the limit is " +
                      std::to_string(o_.options.max_inputs) + ": use a smaller vocabulary or max_len)");
    for (const Node* n : o_.needed) {
      if (elementwise(n->kind)) {
        Table& t = o_.tables[n];
        t.inputs = frontier(n);
      }
    }
    for (size_t k = 0; k < total; ++k) {
      std::vector<Value> in = compiled_input(o_.vocab, o_.max_len, k);
      Evaluation ev;
      try {
        ev = evaluate(o_.output, in, o_.options.convention);
      } catch (const Error& e) {
        std::string shown;
        for (size_t i = 0; i < in.size(); ++i) shown += (i ? ", " : "") + repr(in[i]);
        throw Error(ErrorKind::Semantic, "cannot compile: the program fails on the input [" + shown + "]: " + e.message());
      }
      observe(ev, in.size());
    }
  }

 private:
  void need_selector(const Node* s) {
    if (s->kind == Kind::Select) {
      if (s->predicate == Predicate::True || s->predicate == Predicate::False) return;
      need(s->children[0].get());
      need(s->children[1].get());
      o_.read_directly.insert(s->children[0].get());
      o_.read_directly.insert(s->children[1].get());
      return;
    }
    if (compared_pairs(s) > 1 && s->kind != Kind::SelectAnd) {  // one table over joint values
      need_side(s, 0);
      need_side(s, 1);
      return;
    }
    for (const auto& c : s->children) need_selector(c.get());
  }

  // One side (0: keys, 1: queries) of a selector compiled as one table: a single s-op is
  // read as it is, several through their joint feature.
  void need_side(const Node* sel, int side) {
    const std::vector<const Node*> sops = side_sops(sel, side);
    if (sops.size() <= 1) {
      for (const Node* c : sops) {
        need(c);
        o_.read_directly.insert(c);
      }
      return;
    }
    Joint& j = o_.joints[sops];
    if (j.components.empty()) {
      j.components = sops;
      j.selector = sel;
      j.feature.node = sel;
      j.feature.ready = -1;
      std::set<const Node*> inputs;
      const bool by_components = o_.materialization.joint_by_components.count(sops) > 0;
      for (const Node* c : sops) {
        if (by_components || !elementwise(c->kind)) inputs.insert(c);
        else for (const Node* f : frontier(c)) inputs.insert(f);
      }
      j.table.inputs.assign(inputs.begin(), inputs.end());
      std::sort(j.table.inputs.begin(), j.table.inputs.end(),
                [](const Node* a, const Node* b) { return a->id < b->id; });
    }
    for (const Node* in : j.table.inputs) need(in);
  }

  void observe(const Evaluation& ev, size_t n) {
    for (auto& [sops, j] : o_.joints) observe_joint(j, ev, n);
    for (const Node* node : o_.needed) {
      const auto& vals = ev.values.at(node);
      ValueSet& set = o_.values[node];
      for (const auto& v : vals) set.add(canon(v));
      if (elementwise(node->kind)) {
        Table& t = o_.tables[node];
        for (size_t i = 0; i < n; ++i) {
          std::vector<Value> tuple;
          for (const Node* f : t.inputs) tuple.push_back(canon(ev.values.at(f)[i]));
          Value y = canon(vals[i]);
          auto [it, inserted] = t.rows.emplace(tuple_key(tuple), std::make_pair(tuple, y));
          if (!inserted && key_of(it->second.second) != key_of(y))
            refuse(node, "its value is not a function of its inputs' values (" + repr(it->second.second) + " and " +
                             repr(y) + " for the same inputs)");
        }
      }
      if (node->kind == Kind::Aggregate || node->kind == Kind::SelectorWidth || node->kind == Kind::Length)
        observe_head(node, ev, vals, n);
    }
  }

  // How many keys each query of an aggregate / width / length selects, and the table
  // from 1/(w+1) to its value.
  void observe_head(const Node* node, const Evaluation& ev, const std::vector<Value>& vals, size_t n) {
    HeadStats& st = o_.stats[node];
    Table& widths = o_.width_tables[node];
    const bool causal = o_.options.causal;
    for (size_t q = 0; q < n; ++q) {
      size_t selected = n;
      if (node->kind == Kind::Length && causal && q + 1 < n && st.causal_violation.empty())
        st.causal_violation = "length attends every position";
      if (node->kind != Kind::Length) {
        const SelectorMatrix& m = ev.selectors.at(node->children[0].get());
        selected = 0;
        for (size_t k = 0; k < n; ++k) {
          if (!m[q][k]) continue;
          ++selected;
          if (k > q && causal && st.causal_violation.empty())
            st.causal_violation = "query " + std::to_string(q) + " selects the later key " + std::to_string(k);
        }
      }
      st.max_selected = std::max(st.max_selected, selected);
      st.some_empty |= selected == 0;
      std::vector<Value> x{canon(Value(1.0 / static_cast<double>(selected + 1)))};
      widths.rows.emplace(tuple_key(x), std::make_pair(x, canon(vals[q])));
    }
  }

  // The tuples of the components' values that occur, and the lookup that computes them.
  void observe_joint(Joint& j, const Evaluation& ev, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      std::vector<Value> in, tuple;
      for (const Node* f : j.table.inputs) in.push_back(canon(ev.values.at(f)[i]));
      for (const Node* c : j.components) tuple.push_back(canon(ev.values.at(c)[i]));
      auto [at, added] = j.index.emplace(number_tuple_key(tuple), j.tuples.size());
      if (added && j.tuples.size() == kMaxJointWidth)
        refuse(j.selector, "it compares " + joint_name(j) + " jointly, which take more than " +
                               std::to_string(kMaxJointWidth) +
                               " different tuples of values (one dimension each); use a smaller vocabulary or max_len");
      if (added) {
        std::string label;
        for (const auto& v : tuple) label += (label.empty() ? "" : ", ") + repr(v);
        label = "(" + label + ")";
        for (const auto& other : j.feature.values)  // two tuples that print alike stay apart
          if (std::get<std::string>(other) == label) label += " #" + std::to_string(j.tuples.size());
        j.tuples.push_back(tuple);
        j.feature.values.emplace_back(label);
      }
      const Value& label = j.feature.values[at->second];
      auto [row, inserted] = j.table.rows.emplace(tuple_key(in), std::make_pair(in, label));
      if (!inserted && key_of(row->second.second) != key_of(label))
        refuse(j.selector, "the values it compares are not a function of the s-ops they are computed from");
    }
  }

  Observation& o_;
};

}  // namespace

Observation observe(const CompileInput& input, const Materialization& materialization) {
  Observation o(input);
  o.materialization = materialization;
  Observer observer(o);
  const Node* root = o.output.node().get();
  observer.need(root);
  o.read_directly.insert(root);
  observer.enumerate();
  return o;
}

const std::vector<const Node*>& frontier_of(const Observation& o, const Node* n) { return o.frontier.at(n); }

}  // namespace lrnn::rasp::passes
