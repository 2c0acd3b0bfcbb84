#include "neural/network.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "lrnn/diagnostics.hpp"

namespace lrnn::neural {

namespace {

inline void mix(uint64_t& h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
}

struct DfsFrame {
  uint32_t atom;
  uint32_t head_pos;   // which of the atom's ground rules is being explored
  uint32_t input_pos;  // which input of that ground rule comes next
};

}  // namespace

SampleNetwork neuralize(const TemplateModel& model, const ExampleAst& example,
                        const logic::GroundSample& ground) {
  const size_t n_atoms = ground.num_atoms();
  SampleNetwork net;

  // Flatten the ground rules: global grounding id -> (rule set, row).
  std::vector<uint32_t> set_begin(ground.rules.size() + 1, 0);
  for (size_t k = 0; k < ground.rules.size(); ++k) {
    const logic::GroundRuleSet& rs = ground.rules[k];
    if (rs.rule >= model.rules.size())
      throw Error(ErrorKind::Runtime, "ground rule set refers to rule " + std::to_string(rs.rule) +
                                          " of a template with " +
                                          std::to_string(model.rules.size()) + " rules");
    if (rs.n_inputs != model.rules[rs.rule].inputs.size())
      throw Error(ErrorKind::Runtime, model.ast().rules[rs.rule].span,
                  "ground rule set has " + std::to_string(rs.n_inputs) + " inputs, the rule has " +
                      std::to_string(model.rules[rs.rule].inputs.size()));
    set_begin[k + 1] = set_begin[k] + static_cast<uint32_t>(rs.size());
  }
  const uint32_t n_ground = set_begin.back();
  std::vector<uint32_t> g_set(n_ground);
  for (size_t k = 0; k < ground.rules.size(); ++k)
    std::fill(g_set.begin() + set_begin[k], g_set.begin() + set_begin[k + 1], static_cast<uint32_t>(k));
  auto g_row = [&](uint32_t g) { return g - set_begin[g_set[g]]; };
  auto g_head = [&](uint32_t g) { return ground.rules[g_set[g]].head[g_row(g)]; };
  auto g_n_inputs = [&](uint32_t g) { return ground.rules[g_set[g]].n_inputs; };
  auto g_input = [&](uint32_t g, uint32_t i) {
    const logic::GroundRuleSet& rs = ground.rules[g_set[g]];
    return rs.inputs[static_cast<size_t>(g_row(g)) * rs.n_inputs + i];
  };

  // Ground rules per head atom (CSR), in grounding order.
  std::vector<uint32_t> head_begin(n_atoms + 1, 0);
  for (uint32_t g = 0; g < n_ground; ++g) {
    uint32_t h = g_head(g);
    if (h >= n_atoms) throw Error(ErrorKind::Runtime, "ground rule head is not an atom of the sample");
    ++head_begin[h + 1];
  }
  for (size_t a = 0; a < n_atoms; ++a) head_begin[a + 1] += head_begin[a];
  std::vector<uint32_t> head_list(n_ground);
  {
    std::vector<uint32_t> fill(head_begin.begin(), head_begin.end() - 1);
    for (uint32_t g = 0; g < n_ground; ++g) head_list[fill[g_head(g)]++] = g;
  }

  // Depth-first search from the queries: relevance pruning, cycle breaking (a ground rule
  // with an input on the current DFS path closes a cycle and is dropped) and depths, in
  // one deterministic pass. Iterative, so deep chains cannot overflow the stack.
  std::vector<uint8_t> state(n_atoms, 0);  // 0 unseen, 1 on the path, 2 done
  std::vector<uint32_t> depth(n_atoms, 0);
  std::vector<uint8_t> dropped(n_ground, 0);
  std::vector<DfsFrame> stack;
  auto visit = [&](uint32_t root) {
    if (root >= n_atoms) throw Error(ErrorKind::Runtime, "query atom is not an atom of the sample");
    if (state[root] != 0) return;
    state[root] = 1;
    stack.push_back({root, 0, 0});
    while (!stack.empty()) {
      DfsFrame& f = stack.back();
      const uint32_t a = f.atom;
      const uint32_t n_heads = head_begin[a + 1] - head_begin[a];
      if (f.head_pos < n_heads) {
        const uint32_t g = head_list[head_begin[a] + f.head_pos];
        if (f.input_pos < g_n_inputs(g)) {
          const uint32_t b = g_input(g, f.input_pos);
          if (b >= n_atoms) throw Error(ErrorKind::Runtime, "ground rule input is not an atom of the sample");
          if (state[b] == 1) {
            dropped[g] = 1;
            ++net.dropped_cycle_rules;
            ++f.head_pos;
            f.input_pos = 0;
          } else {
            ++f.input_pos;
            if (state[b] == 0) {
              state[b] = 1;
              stack.push_back({b, 0, 0});  // invalidates f
            }
          }
        } else {
          ++f.head_pos;
          f.input_pos = 0;
        }
        continue;
      }
      if (n_heads > 0) {
        uint32_t d = 0;
        for (uint32_t k = head_begin[a]; k < head_begin[a + 1]; ++k) {
          const uint32_t g = head_list[k];
          if (dropped[g]) continue;
          for (uint32_t i = 0; i < g_n_inputs(g); ++i) d = std::max(d, depth[g_input(g, i)]);
        }
        depth[a] = d + 1;
      }
      state[a] = 2;
      stack.pop_back();
    }
  };
  for (const auto& atoms : ground.query_atoms)
    for (uint32_t a : atoms) visit(a);

  // Kept atoms in ground-id order.
  std::vector<uint32_t> local(n_atoms, kNone);
  for (uint32_t a = 0; a < n_atoms; ++a) {
    if (state[a] != 2) continue;
    local[a] = static_cast<uint32_t>(net.atom_depth.size());
    net.atom_ground_id.push_back(a);
    net.atom_depth.push_back(depth[a]);
    net.atom_fact.push_back(kNone);
    net.atom_predicate.push_back(kNone);
  }

  // Facts and derived atoms' predicates.
  net.fact_data_begin.push_back(0);
  for (uint32_t l = 0; l < net.num_atoms(); ++l) {
    const uint32_t a = net.atom_ground_id[l];
    const bool derived = head_begin[a + 1] > head_begin[a];
    if (derived)
      net.atom_predicate[l] = model.rules[ground.rules[g_set[head_list[head_begin[a]]]].rule].head_predicate;
    const uint32_t tf = a < ground.atom_template_fact.size() ? ground.atom_template_fact[a] : kNone;
    const uint32_t ef = a < ground.atom_example_fact.size() ? ground.atom_example_fact[a] : kNone;
    if (tf == kNone && ef == kNone && derived) continue;
    net.atom_fact[l] = static_cast<uint32_t>(net.fact_shape.size());
    if (tf != kNone) {  // a template fact (embedding) takes precedence over example data
      if (tf >= model.facts.size()) throw Error(ErrorKind::Runtime, "template fact index out of range");
      net.fact_template.push_back(tf);
      net.fact_shape.push_back(model.params.info(model.facts[tf].param).shape);
    } else if (ef != kNone) {
      if (ef >= example.facts.size()) throw Error(ErrorKind::Runtime, "example fact index out of range");
      const Literal& fact = example.facts[ef];
      net.fact_template.push_back(kNone);
      if (!fact.weight) {
        net.fact_shape.push_back({1, 1});
        net.fact_data.push_back(1.0);
      } else {
        const ValueSpec& v = *fact.weight;
        if (v.kind == ValueSpec::Kind::Dims || v.kind == ValueSpec::Kind::Reference)
          throw Error(ErrorKind::Semantic, v.span,
                      "the value of example fact '" + fact.predicate +
                          "' must be a number, vector or matrix");
        Shape s = shape_of(v);
        if (v.data.size() != static_cast<size_t>(s.size()))
          throw Error(ErrorKind::Shape, v.span, "malformed value of example fact '" + fact.predicate + "'");
        net.fact_shape.push_back(s);
        net.fact_data.insert(net.fact_data.end(), v.data.begin(), v.data.end());
      }
    } else {
      // Neither a fact nor derived: cannot come out of a least model; enters as 0.
      net.fact_template.push_back(kNone);
      net.fact_shape.push_back({1, 1});
      net.fact_data.push_back(0.0);
    }
    net.fact_data_begin.push_back(static_cast<uint32_t>(net.fact_data.size()));
  }

  // Kept ground rules with their softmax groups, sorted by (rule, head, group, order).
  std::vector<uint32_t> kept;
  for (uint32_t g = 0; g < n_ground; ++g)
    if (!dropped[g] && state[g_head(g)] == 2) kept.push_back(g);
  std::vector<uint32_t> group(n_ground, 0);
  std::map<std::pair<uint32_t, std::vector<uint32_t>>, uint32_t> group_ids;
  std::vector<uint32_t> key;
  for (uint32_t g : kept) {
    const logic::GroundRuleSet& rs = ground.rules[g_set[g]];
    const RuleSpec& spec = model.rules[rs.rule];
    if (!spec.softmax) continue;
    key.clear();
    for (uint32_t v : spec.softmax_group_vars) {
      if (v >= rs.n_vars) throw Error(ErrorKind::Runtime, "ground rule set lacks variable bindings");
      key.push_back(rs.bindings[static_cast<size_t>(g_row(g)) * rs.n_vars + v]);
    }
    auto [it, inserted] = group_ids.emplace(std::make_pair(rs.rule, key), static_cast<uint32_t>(group_ids.size()));
    group[g] = it->second;
  }
  std::sort(kept.begin(), kept.end(), [&](uint32_t x, uint32_t y) {
    const uint32_t rx = ground.rules[g_set[x]].rule, ry = ground.rules[g_set[y]].rule;
    if (rx != ry) return rx < ry;
    const uint32_t hx = local[g_head(x)], hy = local[g_head(y)];
    if (hx != hy) return hx < hy;
    if (group[x] != group[y]) return group[x] < group[y];
    return x < y;
  });
  net.inputs_begin.push_back(0);
  for (uint32_t g : kept) {
    net.rule.push_back(ground.rules[g_set[g]].rule);
    net.head.push_back(local[g_head(g)]);
    net.softmax_group.push_back(group[g]);
    for (uint32_t i = 0; i < g_n_inputs(g); ++i) net.inputs.push_back(local[g_input(g, i)]);
    net.inputs_begin.push_back(static_cast<uint32_t>(net.inputs.size()));
  }

  for (const auto& atoms : ground.query_atoms) {
    std::vector<uint32_t> q;
    for (uint32_t a : atoms) q.push_back(local[a]);
    net.query_atoms.push_back(std::move(q));
  }

  // Structure hash: everything but the fact values.
  uint64_t h = 1469598103934665603ULL;
  mix(h, net.num_atoms());
  mix(h, net.num_facts());
  mix(h, net.num_ground_rules());
  mix(h, net.inputs.size());
  mix(h, net.query_atoms.size());
  for (size_t l = 0; l < net.num_atoms(); ++l) {
    mix(h, net.atom_depth[l]);
    mix(h, net.atom_predicate[l]);
    mix(h, net.atom_fact[l]);
  }
  for (size_t f = 0; f < net.num_facts(); ++f) {
    mix(h, net.fact_template[f]);
    mix(h, static_cast<uint64_t>(net.fact_shape[f].rows) << 32 | static_cast<uint32_t>(net.fact_shape[f].cols));
  }
  for (size_t g = 0; g < net.num_ground_rules(); ++g) {
    mix(h, net.rule[g]);
    mix(h, net.head[g]);
    mix(h, net.softmax_group[g]);
  }
  for (uint32_t x : net.inputs) mix(h, x);
  for (const auto& q : net.query_atoms) {
    mix(h, q.size());
    for (uint32_t a : q) mix(h, a);
  }
  net.structure_hash = h;
  return net;
}

}  // namespace lrnn::neural
