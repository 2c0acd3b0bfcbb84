// Pass 4 of the weight compiler (passes.hpp): how what the attention writes is read.
// - A count (selector_width, length, a sum of a constant) is 1/(w+1) after its head. An
//   element-wise s-op with no other numerical input reads that directly, in the MLP of the
//   same layer, instead of waiting a layer for the decoded count; the count is decoded
//   only for the attention and the output (or when a reader cannot take it directly).
// - An element-wise s-op of the tokens alone (or the indices alone) is part of the token
//   (position) embedding: no MLP, no layer.
// - An embedded s-op read only by attention needs no subspace when that saves width: the
//   head reads the one-hot it is a function of, the function folded into its tables.
// Also the questions several passes ask of the observed program (passes.hpp).
#include <algorithm>

#include "rasp/passes/passes.hpp"

namespace lrnn::rasp::passes {

std::vector<size_t> numerical_inputs(const Encoded& e, const std::vector<const Node*>& inputs) {
  std::vector<size_t> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Feature& f = e.features.at(inputs[i]);
    if (f.numerical && !f.constant) out.push_back(i);
  }
  return out;
}

bool width_based(const Encoded& e, const Node* n) {
  if (n->kind == Kind::SelectorWidth || n->kind == Kind::Length) return true;
  if (n->kind != Kind::Aggregate) return false;
  Convention conv = n->convention == Convention::Default ? e.options.convention : n->convention;
  if (conv != Convention::Sum || e.stats.at(n).max_selected < 2) return false;
  const Feature& v = e.features.at(n->children[1].get());
  if (v.values.size() != 1 || !is_number(v.values[0]))
    refuse(n, "it sums several selected values that are not one constant; a head averages, so sums compile "
              "only as a constant times selector_width (use convention mean, or sum a constant)");
  return true;
}

bool is_count(const Encoded& e, const Node* n) {
  return (n->kind == Kind::SelectorWidth || n->kind == Kind::Length || n->kind == Kind::Aggregate) &&
         !e.features.at(n).constant && width_based(e, n);
}

std::map<std::string, Value> count_inverse(const Observation& o, const Node* n) {
  std::map<std::string, Value> inverse;
  for (const auto& [k, row] : o.width_tables.at(n).rows) {
    auto [it, inserted] = inverse.emplace(key_of(row.second), row.first[0]);
    if (!inserted && key_of(it->second) != key_of(row.first[0])) return {};
  }
  return inverse;
}

bool read_by_lookup(const Readings& r, const Node* n) {
  for (const Node* e : r.order)
    if (r.needed.count(e) && elementwise(e->kind) && !r.embedded.count(e) && !r.features.at(e).constant) {
      const auto& inputs = r.tables.at(e).inputs;
      if (std::find(inputs.begin(), inputs.end(), n) != inputs.end()) return true;
    }
  for (const auto& [sops, j] : r.joints)
    if (j.embedded == Kind::Constant &&
        std::find(j.table.inputs.begin(), j.table.inputs.end(), n) != j.table.inputs.end())
      return true;
  return false;
}

std::pair<const Feature*, std::vector<Value>> view_of(const Encoded& e, const Node* n) {
  const Table& t = e.tables.at(n);
  const Feature* in = &e.features.at(t.inputs[0]);
  std::vector<Value> values;
  for (const Value& v : in->values) values.push_back(t.rows.at(tuple_key({canon(v)})).second);
  return {in, values};
}

namespace {

void choose_count_readers(Readings& r) {
  for (const Node* n : r.order)
    if (r.needed.count(n) && r.read_directly.count(n) && is_count(r, n)) r.decoded.insert(n);
  for (const Node* n : r.order) {
    if (!r.needed.count(n) || !elementwise(n->kind) || r.features.at(n).constant) continue;
    const Table& t = r.tables.at(n);
    size_t numeric = 0;
    std::vector<const Node*> counts;
    for (const Node* in : t.inputs) {
      if (is_count(r, in)) counts.push_back(in);
      else if (r.features.at(in).numerical && !r.features.at(in).constant) ++numeric;
    }
    bool direct = !counts.empty() && numeric + counts.size() <= 1 && !r.linear.count(n) && !r.shadowed.count(n);
    for (const Node* c : counts) direct = direct && !count_inverse(r, c).empty();
    if (direct) r.direct.insert(n);
    else r.decoded.insert(counts.begin(), counts.end());
  }
  for (const auto& [sops, j] : r.joints)  // a joint's lookup reads counts decoded
    for (const Node* in : j.table.inputs)
      if (is_count(r, in)) r.decoded.insert(in);
}

void choose_embedded(Readings& r) {
  for (const Node* n : r.order) {
    if (!r.needed.count(n) || !elementwise(n->kind) || r.features.at(n).constant) continue;
    const auto& inputs = r.tables.at(n).inputs;
    bool tokens_only = true, indices_only = true;
    for (const Node* in : inputs) {
      tokens_only &= in->kind == Kind::Tokens;
      indices_only &= in->kind == Kind::Indices;
    }
    if (tokens_only) r.embedded[n] = Kind::Tokens;
    else if (indices_only) r.embedded[n] = Kind::Indices;
  }
  for (auto& [sops, j] : r.joints) {
    bool tokens_only = true, indices_only = true;
    for (const Node* in : j.table.inputs) {
      tokens_only &= in->kind == Kind::Tokens;
      indices_only &= in->kind == Kind::Indices;
    }
    j.embedded = tokens_only ? Kind::Tokens : indices_only ? Kind::Indices : Kind::Constant;
  }
}

// Done only where it saves width: the s-ops' subspaces against the one-hot they are read
// through, when nothing else puts that one-hot in the residual.
void choose_viewed(Readings& r) {
  const Node* root = r.output.node().get();
  std::map<const Node*, std::vector<const Node*>> by_input;
  for (const auto& [n, by] : r.embedded) {
    const Table& t = r.tables.at(n);
    if (n == root || t.inputs.size() != 1 || r.features.at(t.inputs[0]).numerical) continue;
    if (read_by_lookup(r, n)) continue;
    bool every_value = true;  // a row for every token (position): the view is total
    for (const Value& e : r.features.at(t.inputs[0]).values)
      every_value &= t.rows.count(tuple_key({canon(e)})) > 0;
    if (every_value) by_input[t.inputs[0]].push_back(n);
  }
  for (const auto& [input, sops] : by_input) {
    size_t saved = 0;
    for (const Node* n : sops) saved += r.features.at(n).numerical ? 1 : r.features.at(n).values.size();
    const bool in_residual = r.read_directly.count(input) || read_by_lookup(r, input);
    if (saved > (in_residual ? 0 : r.features.at(input).values.size())) r.viewed.insert(sops.begin(), sops.end());
  }
}

}  // namespace

Readings choose_readings(Encoded encoded, Lookups lookups) {
  Readings r(std::move(encoded));
  r.shadowed = std::move(lookups.shadowed);
  r.linear = std::move(lookups.linear);
  r.joint_shadowed = std::move(lookups.joint_shadowed);
  choose_count_readers(r);
  choose_embedded(r);
  choose_viewed(r);
  return r;
}

}  // namespace lrnn::rasp::passes
