#include "train/query_batches.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <unordered_set>

#include "lrnn/diagnostics.hpp"

namespace lrnn::train {

RulesByHead rules_by_head(const neural::SampleNetwork& net) {
  RulesByHead h;
  h.begin.assign(net.num_atoms() + 1, 0);
  for (uint32_t head : net.head) ++h.begin[head + 1];
  std::partial_sum(h.begin.begin(), h.begin.end(), h.begin.begin());
  h.rules.resize(net.num_ground_rules());
  std::vector<uint32_t> next(h.begin.begin(), h.begin.end() - 1);
  for (uint32_t g = 0; g < net.num_ground_rules(); ++g) h.rules[next[net.head[g]]++] = g;
  return h;
}

bool FanOut::samples() const {
  return std::any_of(per_hop.begin(), per_hop.end(), [](size_t f) { return f > 0; });
}

FanOut fan_out(const neural::TemplateModel& model, std::vector<size_t> per_hop) {
  FanOut fan;
  fan.per_hop = std::move(per_hop);
  for (const Rule& rule : model.ast().rules) {
    std::unordered_set<std::string> head;
    for (const Term& t : rule.head.args)
      if (t.is_variable()) head.insert(t.text);
    bool hop = false;
    for (const Literal& l : rule.body)
      for (const Term& t : l.args) hop = hop || (t.is_variable() && !head.count(t.text));
    fan.hop_rule.push_back(hop ? 1 : 0);
  }
  return fan;
}

namespace {

// The atoms and ground rules `queries` depend on: every ground rule of a kept head, or
// fan.at(hop) of each (rule, head) run drawn from `rng` when it has more. Both lists
// sorted (network order). While it runs, scratch.local holds each reached atom's hop
// (kNone: not reached); it is reset by the caller.
struct Support {
  std::vector<uint32_t> atoms, rules;
};

Support find_support(const neural::SampleNetwork& net, const RulesByHead& heads, std::span<const uint32_t> queries,
                     const FanOut& fan, Rng* rng, SupportScratch& scratch) {
  Support s;
  std::vector<uint32_t>& hop_of = scratch.local;  // kNone, or the least hop the atom was reached at
  // Atoms to expand, per hop: an atom is expanded once, at its least hop (hops are
  // expanded in order, and expanding hop k reaches atoms at hop k or k + 1 only).
  std::vector<std::vector<uint32_t>> todo(1);
  std::vector<uint32_t> pick;
  auto reach = [&](uint32_t atom, uint32_t hop) {
    if (hop_of[atom] == neural::kNone) s.atoms.push_back(atom);
    else if (hop_of[atom] <= hop) return;
    hop_of[atom] = hop;  // first reached, or reached at a lesser hop than before
    if (todo.size() <= hop) todo.resize(hop + 1);
    todo[hop].push_back(atom);
  };
  for (uint32_t q : queries)
    for (uint32_t l : net.query_atoms[q]) reach(l, 0);
  const uint32_t* rules = heads.rules.data();
  for (uint32_t hop = 0; hop < todo.size(); ++hop) {
    const size_t fanout = fan.at(hop);
    while (!todo[hop].empty()) {
      const uint32_t a = todo[hop].back();
      todo[hop].pop_back();
      if (hop_of[a] != hop) continue;  // listed at this hop, then reached at a lesser one
      for (uint32_t i = heads.begin[a]; i < heads.begin[a + 1];) {
        const uint32_t r = net.rule[rules[i]];
        uint32_t j = i + 1;  // the head's ground rules of one template rule: a run
        while (j < heads.begin[a + 1] && net.rule[rules[j]] == r) ++j;
        const uint32_t n = j - i, next = hop + fan.hop_rule[r];
        auto keep_rule = [&](uint32_t g) {
          s.rules.push_back(g);
          for (uint32_t k = net.inputs_begin[g]; k < net.inputs_begin[g + 1]; ++k) reach(net.inputs[k], next);
        };
        if (fanout == 0 || n <= fanout) {
          for (uint32_t k = i; k < j; ++k) keep_rule(rules[k]);
        } else {  // a partial Fisher-Yates draw of `fanout` of the run
          pick.resize(n);
          std::iota(pick.begin(), pick.end(), i);
          for (size_t k = 0; k < fanout; ++k) {
            std::swap(pick[k], pick[k + uniform_below(*rng, n - k)]);
            keep_rule(rules[pick[k]]);
          }
        }
        i = j;
      }
    }
  }
  std::sort(s.atoms.begin(), s.atoms.end());
  std::sort(s.rules.begin(), s.rules.end());
  return s;
}

}  // namespace

neural::SampleNetwork support_network(const neural::SampleNetwork& net, const RulesByHead& heads,
                                      std::span<const uint32_t> queries, const FanOut& fan, Rng* rng) {
  SupportScratch scratch;
  return support_network(net, heads, queries, fan, rng, scratch);
}

neural::SampleNetwork support_network(const neural::SampleNetwork& net, const RulesByHead& heads,
                                      std::span<const uint32_t> queries, const FanOut& fan, Rng* rng,
                                      SupportScratch& scratch) {
  if (scratch.local.size() != net.num_atoms()) scratch.local.assign(net.num_atoms(), neural::kNone);
  if (scratch.fact_local.size() != net.num_facts()) scratch.fact_local.assign(net.num_facts(), neural::kNone);
  const Support kept = find_support(net, heads, queries, fan, rng, scratch);
  std::vector<uint32_t>& local = scratch.local;
  std::vector<uint32_t>& fact_local = scratch.fact_local;
  neural::SampleNetwork sub;
  sub.fact_data_begin.push_back(0);
  for (uint32_t a : kept.atoms) {
    local[a] = static_cast<uint32_t>(sub.atom_depth.size());
    sub.atom_depth.push_back(net.atom_depth[a]);
    sub.atom_predicate.push_back(net.atom_predicate[a]);
    sub.atom_ground_id.push_back(net.atom_ground_id[a]);
    const uint32_t f = net.atom_fact[a];
    if (f == neural::kNone) {
      sub.atom_fact.push_back(neural::kNone);
      continue;
    }
    if (fact_local[f] == neural::kNone) {
      fact_local[f] = static_cast<uint32_t>(sub.fact_shape.size());
      sub.fact_template.push_back(net.fact_template[f]);
      sub.fact_shape.push_back(net.fact_shape[f]);
      sub.fact_data.insert(sub.fact_data.end(), net.fact_data.begin() + net.fact_data_begin[f],
                           net.fact_data.begin() + net.fact_data_begin[f + 1]);
      sub.fact_data_begin.push_back(static_cast<uint32_t>(sub.fact_data.size()));
      if (!net.fact_example_param.empty()) sub.fact_example_param.push_back(net.fact_example_param[f]);
    }
    sub.atom_fact.push_back(fact_local[f]);
  }
  sub.inputs_begin.push_back(0);
  for (uint32_t g : kept.rules) {
    sub.rule.push_back(net.rule[g]);
    sub.head.push_back(local[net.head[g]]);
    sub.softmax_group.push_back(net.softmax_group[g]);
    for (uint32_t i = net.inputs_begin[g]; i < net.inputs_begin[g + 1]; ++i) sub.inputs.push_back(local[net.inputs[i]]);
    sub.inputs_begin.push_back(static_cast<uint32_t>(sub.inputs.size()));
  }
  for (uint32_t q : queries) {
    std::vector<uint32_t>& atoms = sub.query_atoms.emplace_back();
    for (uint32_t l : net.query_atoms[q]) atoms.push_back(local[l]);
  }
  // The scratch is left as it was found: a batch costs its support, not the whole network.
  for (uint32_t a : kept.atoms) {
    const uint32_t f = net.atom_fact[a];
    if (f != neural::kNone) fact_local[f] = neural::kNone;
    local[a] = neural::kNone;
  }
  sub.dropped_cycle_rules = net.dropped_cycle_rules;
  sub.structure_hash = neural::structure_hash(sub);
  return sub;
}

QueryBatches::QueryBatches(const neural::TemplateModel& model, const PreparedSet& set, std::vector<size_t> fanout)
    : set_(set), fan_(fan_out(model, std::move(fanout))), heads_(set.size()), scratch_(set.size()) {
  if (!model.batch_norms.empty())
    throw Error(ErrorKind::Semantic, "mini-batches of queries cannot train normalization=batch yet (its statistics "
                                     "would be over each batch's support, not the samples')");
  if (set.sharded())
    throw Error(ErrorKind::Semantic, "mini-batches of queries cannot be trained sharded over MPI ranks yet");
  first_output_.resize(set.size());
  for (size_t s = 0; s < set.size(); ++s) {
    if (!set.networks[s].pair_blocks.empty())
      throw Error(ErrorKind::Semantic, "mini-batches of queries cannot cut attention blocks (sample " +
                                           std::to_string(s) + "): train it with --batch-size instead");
    first_output_[s].assign(set.networks[s].query_atoms.size() + 1, 0);
  }
  for (const OutputInfo& o : set.outputs) ++first_output_[o.sample][o.query + 1];
  for (auto& first : first_output_) std::partial_sum(first.begin(), first.end(), first.begin());
  // Outputs are in (sample, query, match) order: offset each sample's counts by the ones before.
  uint32_t offset = 0;
  for (auto& first : first_output_) {
    for (uint32_t& f : first) f += offset;
    offset = first.back();
  }
  for (uint32_t o = 0; o < set.outputs.size(); ++o) {
    const OutputInfo& info = set.outputs[o];
    if (info.training_target().empty()) continue;
    if (!training_.empty() && training_.back().sample == info.sample && training_.back().query == info.query) continue;
    training_.push_back({info.sample, info.query});
  }
}

PreparedSet QueryBatches::batch(std::span<const QueryRef> queries, Rng& rng, std::vector<uint32_t>& origin) {
  PreparedSet out;
  out.id = next_prepared_set_id();
  out.example_facts = set_.example_facts;
  origin.clear();
  // The batch's samples in order of first appearance, each with its queries in batch order.
  std::vector<uint32_t> samples;
  std::vector<std::vector<uint32_t>> picked;
  for (const QueryRef& r : queries) {
    auto it = std::find(samples.begin(), samples.end(), r.sample);
    if (it == samples.end()) {
      samples.push_back(r.sample);
      picked.emplace_back();
      it = samples.end() - 1;
    }
    picked[static_cast<size_t>(it - samples.begin())].push_back(r.query);
  }
  out.num_samples = samples.size();
  out.networks.reserve(samples.size());
  for (uint32_t k = 0; k < samples.size(); ++k) {
    const uint32_t s = samples[k];
    if (heads_[s].begin.empty()) heads_[s] = rules_by_head(set_.networks[s]);
    out.networks.push_back(
        support_network(set_.networks[s], heads_[s], picked[k], fan_, fan_.samples() ? &rng : nullptr, scratch_[s]));
    for (uint32_t q = 0; q < picked[k].size(); ++q)
      for (uint32_t o = first_output_[s][picked[k][q]]; o < first_output_[s][picked[k][q] + 1]; ++o) {
        OutputInfo info = set_.outputs[o];
        info.sample = k;
        info.query = q;
        out.outputs.push_back(std::move(info));
        origin.push_back(o);
      }
  }
  return out;
}

}  // namespace lrnn::train
