// Pass 7 of the weight compiler (passes.hpp): every layer's heads (attention.cpp) and MLP
// (mlp.cpp), in program order. The BOS residual is followed layer by layer, so that every
// head corrects its BOS key and every MLP unit is switched off at the BOS position.
#include <algorithm>

#include "rasp/passes/passes.hpp"

namespace lrnn::rasp::passes {

namespace {

// The inputs and rows an element-wise lookup reads: counts as 1/(w+1) when read directly.
std::pair<std::vector<const Feature*>, Table> lookup_inputs(const Laid& l, const Node* n) {
  const Table& t = l.tables.at(n);
  std::vector<const Feature*> inputs;
  if (!l.direct.count(n)) {
    auto sh = l.shadowed.find(n);
    for (const Node* in : t.inputs)
      inputs.push_back(sh != l.shadowed.end() && sh->second.count(in) ? &l.shadows.at(in) : &l.features.at(in));
    return {inputs, t};
  }
  Table mapped;
  mapped.inputs = t.inputs;
  std::vector<std::map<std::string, Value>> inverse;
  for (const Node* in : t.inputs) {
    inputs.push_back(is_count(l, in) ? &l.scratch.at(in) : &l.features.at(in));
    inverse.push_back(is_count(l, in) ? count_inverse(l, in) : std::map<std::string, Value>{});
  }
  for (const auto& [k, row] : t.rows) {
    std::vector<Value> x = row.first;
    for (size_t i = 0; i < x.size(); ++i)
      if (!inverse[i].empty()) x[i] = inverse[i].at(key_of(x[i]));
    mapped.rows.emplace(tuple_key(x), std::make_pair(x, row.second));
  }
  return {inputs, mapped};
}

// A joint's lookup rows as its MLP sees them: a numerical input and a categorical copy
// hold 1 and 1.0 in one place, so rows differing only so are one row.
Table joint_rows(const Laid& l, const Joint& j, const std::vector<const Feature*>& inputs) {
  Table out;
  out.inputs = j.table.inputs;
  for (const auto& [k, given] : j.table.rows) {
    auto row = given;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Feature& in = *inputs[i];
      Value& v = row.first[i];
      if (in.numerical && !in.constant) v = canon(Value(to_double(v)));
      else if (l.shadows.count(in.node) && &in == &l.shadows.at(in.node)) v = in.values[dim_of(in, v) - in.offset];
    }
    auto [it, inserted] = out.rows.emplace(tuple_key(row.first), row);
    if (!inserted && key_of(it->second.second) != key_of(row.second))
      refuse(j.selector, "the values it compares differ (" + to_string(it->second.second) + ", " +
                             to_string(row.second) + ") for inputs the weights hold alike (numbers that compare equal)");
  }
  return out;
}

// The MLP units of layer l: element-wise lookups, decoded counts, joint features and
// categorical copies whose features are ready after sublayer 2l.
MlpUnits mlp_units(const Laid& l, int layer, CompiledLayer& out) {
  const int d = l.model.d_model;
  MlpUnits units;
  for (const Node* n : l.order) {
    if (!l.needed.count(n)) continue;
    const Feature& f = l.features.at(n);
    if (f.constant || f.ready != 2 * layer) continue;
    if (elementwise(n->kind)) {
      auto [direct_inputs, direct_table] = lookup_inputs(l, n);
      lookup(n, direct_inputs, direct_table, f, d, l.linear, units);
    } else if (l.decoded.count(n)) {  // decode a count: 1/(w+1) -> the s-op's value
      lookup(n, {&l.scratch.at(n)}, l.width_tables.at(n), f, d, l.linear, units);
    } else {
      continue;  // read as 1/(w+1) by the element-wise s-ops that use it
    }
    out.mlp.outputs.push_back(n->description());
  }
  for (const auto& [sops, j] : l.joints) {
    if (j.embedded != Kind::Constant || j.feature.ready != 2 * layer) continue;
    std::vector<const Feature*> inputs;
    const auto sh = l.joint_shadowed.find(sops);
    for (const Node* in : j.table.inputs)
      inputs.push_back(sh != l.joint_shadowed.end() && sh->second.count(in) ? &l.shadows.at(in) : &l.features.at(in));
    lookup(j.selector, inputs, joint_rows(l, j, inputs), j.feature, d, l.linear, units);
    out.mlp.outputs.push_back(l.model.spaces[j.feature.space].name + " (joint values for " + j.selector->description() + ")");
  }
  for (const Node* n : l.order) {  // categorical copies, in program order
    auto it = l.shadows.find(n);
    if (it == l.shadows.end() || it->second.ready != 2 * layer) continue;
    const Feature& copy = it->second;
    Table identity;
    for (const auto& v : copy.values) identity.rows.emplace(tuple_key({v}), std::make_pair(std::vector<Value>{v}, v));
    lookup(n, {&l.features.at(n)}, identity, copy, d, l.linear, units);
    out.mlp.outputs.push_back(n->description() + " (categorical copy)");
  }
  return units;
}

}  // namespace

CompiledModel build_layers(Laid laid) {
  CompiledModel& m = laid.model;
  const int d = m.d_model;
  int top = 0;
  for (const auto& [n, f] : laid.features) top = std::max(top, f.ready);
  const int layers = (top + 1) / 2;
  std::vector<double> bos = m.bos_embedding;  // the BOS residual, known at every point
  for (int l = 1; l <= layers; ++l) {
    CompiledLayer layer;
    std::vector<double> written(d, 0.0);
    for (const Node* n : laid.order) {
      auto it = laid.attention_at.find(n);
      if (it == laid.attention_at.end() || it->second != 2 * l - 1 || laid.features.at(n).constant) continue;
      std::vector<double> w = head(laid, n, bos, layer);
      for (int i = 0; i < d; ++i) written[i] += w[i];
    }
    for (int i = 0; i < d; ++i) bos[i] += written[i];
    MlpUnits units = mlp_units(laid, l, layer);
    CompiledMlp& mlp = layer.mlp;
    mlp.hidden = static_cast<int>(units.b1.size());
    mlp.w1.assign(static_cast<size_t>(mlp.hidden) * d, 0.0);
    mlp.w2.assign(static_cast<size_t>(d) * mlp.hidden, 0.0);
    mlp.b1 = units.b1;
    for (int u = 0; u < mlp.hidden; ++u) {
      // switched off at the BOS position, whose residual is known
      double pre = units.b1[u];
      for (int j = 0; j < d; ++j)
        if (j != 1) pre += units.w1[u][j] * bos[j];
      units.w1[u][1] = -(std::max(pre, 0.0) + 1.0);
      for (int j = 0; j < d; ++j) {
        mlp.w1[static_cast<size_t>(u) * d + j] = units.w1[u][j];
        mlp.w2[static_cast<size_t>(j) * mlp.hidden + u] = units.w2[u][j];
      }
    }
    m.layers.push_back(std::move(layer));
  }
  m.output_space = laid.features.at(laid.output.node().get()).space;
  return std::move(m);
}

}  // namespace lrnn::rasp::passes
