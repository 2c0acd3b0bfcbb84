#include "train/query_batches.hpp"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <string>
#include <unordered_set>

#include "lrnn/diagnostics.hpp"

namespace lrnn::train {

RulesByHead rules_by_head(const neural::SampleNetwork& net, bool float_values) {
  RulesByHead h;
  const size_t num_atoms = net.num_atoms(), num_rules = net.num_ground_rules();
  h.begin.assign(num_atoms + 1, 0);
  for (uint32_t head : net.head) ++h.begin[head + 1];
  std::partial_sum(h.begin.begin(), h.begin.end(), h.begin.begin());
  // Each ground rule's place in head order; network order is (rule, head, grounding), so
  // a head's ground rules keep their network order.
  std::vector<uint32_t> place(num_rules);
  {
    std::vector<uint32_t> next(h.begin.begin(), h.begin.end() - 1);
    for (uint32_t g = 0; g < num_rules; ++g) place[g] = next[net.head[g]]++;
  }
  h.grounds.resize(num_rules + 1);
  for (uint32_t g = 0; g < num_rules; ++g)
    h.grounds[place[g]] = {net.rule[g], net.softmax_group[g], net.inputs_begin[g + 1] - net.inputs_begin[g]};
  uint32_t offset = 0;  // the input counts into ranges
  for (size_t i = 0; i < num_rules; ++i) offset += std::exchange(h.grounds[i].inputs_begin, offset);
  h.grounds[num_rules] = {neural::kNone, neural::kNone, offset};
  h.inputs.resize(offset);
  for (uint32_t g = 0; g < num_rules; ++g)
    std::copy(net.inputs.begin() + net.inputs_begin[g], net.inputs.begin() + net.inputs_begin[g + 1],
              h.inputs.begin() + h.grounds[place[g]].inputs_begin);
  h.has_rules.assign(num_atoms / 64 + 1, 0);
  for (uint32_t a = 0; a < num_atoms; ++a)
    if (h.begin[a + 1] > h.begin[a]) h.has_rules[a / 64] |= uint64_t{1} << (a % 64);
  h.atoms.resize(num_atoms);
  for (uint32_t a = 0; a < num_atoms; ++a) {
    const uint32_t depth = net.atom_depth[a], predicate = net.atom_predicate[a];
    if (depth >= RulesByHead::Atom::kNone16 || (predicate != neural::kNone && predicate >= RulesByHead::Atom::kNone16))
      throw Error(ErrorKind::Semantic, "mini-batches of queries take networks of at most 65,534 layers and "
                                       "predicates; this one has atom " + std::to_string(a) + " at depth " +
                                           std::to_string(depth) + " of predicate " + std::to_string(predicate));
    RulesByHead::Atom& r = h.atoms[a];
    r.depth16 = static_cast<uint16_t>(depth);
    r.predicate16 = predicate == neural::kNone ? RulesByHead::Atom::kNone16 : static_cast<uint16_t>(predicate);
    r.fact = net.atom_fact[a];
    r.ground_id = net.atom_ground_id[a];
    r.fact_template = neural::kNone;
    r.values_begin = r.values_end = 0;
    r.fact_shape = {};
    if (r.fact == neural::kNone) continue;
    r.fact_template = net.fact_template[r.fact];
    r.values_begin = net.fact_data_begin[r.fact];
    r.values_end = net.fact_data_begin[r.fact + 1];
    r.fact_shape = net.fact_shape[r.fact];
  }
  // A step reads a few percent of the facts' values at random places (a graph's feature
  // rows): from the float copy, or, for double passes, from the network's values, moved
  // onto huge pages so that their TLB misses stay few.
  if (float_values) h.values32.assign(net.fact_data.begin(), net.fact_data.end());
  else exec::collapse_huge_pages(net.fact_data.data(), net.fact_data.size() * sizeof(double));
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
// fan.at(hop) of each (rule, head) run drawn from `rng` when it has more. The atoms are
// sorted (network order); the rules are positions in scratch.kept (whose records say what
// the support copies of each) in network order, found without sorting either: the atoms
// are the set bits of scratch.reached, and the rules are each expanded head's kept ones
// (in network order within the head) taken head by head in atom order, then stably by
// rule: network order is by (rule, head, grounding). While it runs, scratch.local holds
// each reached head's hop (kNone: not reached); the caller resets it.
struct Support {
  std::vector<uint32_t> atoms, rules;
};

Support find_support(const neural::SampleNetwork& net, const RulesByHead& heads, std::span<const uint32_t> queries,
                     std::span<const uint32_t> roots, const FanOut& fan, Rng* rng, SupportScratch& scratch,
                     uint32_t leaves_to_depth = neural::kNone) {
  Support s;
  std::vector<uint32_t>& hop_of = scratch.local;  // kNone, or the least hop the head was reached at
  std::vector<uint64_t>& reached = scratch.reached;
  if (reached.size() != net.num_atoms() / 64 + 1) reached.assign(net.num_atoms() / 64 + 1, 0);
  // Heads to expand, per hop: a head is expanded once, at its least hop (hops are
  // expanded in order, and expanding hop k reaches atoms at hop k or k + 1 only).
  std::vector<std::vector<uint32_t>>& todo = scratch.todo;
  std::vector<uint32_t>& kept = scratch.kept;  // per expanded head: its kept ground rules
  std::vector<uint32_t>& expanded = scratch.expanded;  // (head, begin, end) into kept
  std::vector<uint32_t>& pick = scratch.pick;
  for (std::vector<uint32_t>* v : {&kept, &scratch.kept_rule, &scratch.kept_softmax, &scratch.kept_head,
                                   &scratch.kept_inputs_begin, &scratch.kept_inputs, &expanded})
    v->clear();
  if (todo.empty()) todo.resize(1);
  size_t num_atoms = 0;
  auto reach = [&](uint32_t atom, uint32_t hop) {
    uint64_t& word = reached[atom / 64];
    const uint64_t bit = uint64_t{1} << (atom % 64);
    if (!(word & bit)) {
      word |= bit;
      ++num_atoms;
    }
    if (!(heads.has_rules[atom / 64] & bit)) return;  // a leaf: nothing to expand
    if (leaves_to_depth != neural::kNone && heads.atoms[atom].depth() <= leaves_to_depth) return;  // taken as one
    if (hop_of[atom] != neural::kNone && hop_of[atom] <= hop) return;
    hop_of[atom] = hop;  // first reached, or reached at a lesser hop than before
    if (todo.size() <= hop) todo.resize(hop + 1);
    todo[hop].push_back(atom);
  };
  for (uint32_t q : queries)
    for (uint32_t l : net.query_atoms[q]) reach(l, 0);
  for (uint32_t a : roots) reach(a, 0);
  const RulesByHead::Ground* grounds = heads.grounds.data();
  const uint32_t* inputs = heads.inputs.data();
  // The heads of a hop are at random places of the index (a cache miss each at 200k nodes
  // and more), so those of the heads kDistance ahead are prefetched in three stages, each
  // reading what the stage before fetched: the head's range, then its ground rules, then
  // their inputs.
  constexpr size_t kDistance = 16;  // heads between two stages
  auto prefetch_lines = [](const void* from, const void* to) {
    for (auto p = reinterpret_cast<uintptr_t>(from) & ~uintptr_t{63}; p < reinterpret_cast<uintptr_t>(to); p += 64)
      __builtin_prefetch(reinterpret_cast<const void*>(p));
  };
  auto prefetch_head = [&](const std::vector<uint32_t>& list, size_t t) {
    if (t + 3 * kDistance < list.size()) {
      __builtin_prefetch(&heads.begin[list[t + 3 * kDistance]]);
      __builtin_prefetch(&hop_of[list[t + 3 * kDistance]]);
    }
    if (t + 2 * kDistance < list.size()) {
      const uint32_t a = list[t + 2 * kDistance];
      prefetch_lines(grounds + heads.begin[a], grounds + heads.begin[a + 1] + 1);
    }
    if (t + kDistance < list.size()) {
      const uint32_t a = list[t + kDistance];
      prefetch_lines(inputs + grounds[heads.begin[a]].inputs_begin, inputs + grounds[heads.begin[a + 1]].inputs_begin);
    }
  };
  auto keep = [&](uint32_t i, uint32_t head, uint32_t next_hop) {
    const RulesByHead::Ground& g = grounds[i];
    scratch.kept_softmax.push_back(g.softmax_group);
    scratch.kept_head.push_back(head);
    scratch.kept_inputs_begin.push_back(static_cast<uint32_t>(scratch.kept_inputs.size()));
    for (uint32_t x = g.inputs_begin; x < grounds[i + 1].inputs_begin; ++x) {
      scratch.kept_inputs.push_back(inputs[x]);
      reach(inputs[x], next_hop);
    }
  };
  for (uint32_t hop = 0; hop < todo.size(); ++hop) {
    const size_t fanout = fan.at(hop);
    // In atom order: the heads' records and inputs are then read in ascending addresses
    // (at a few percent of a big graph's atoms per step, those are a few lines apart)
    // instead of at random. By index: expanding a head may list more heads at this hop
    // (todo[hop] grows).
    std::sort(todo[hop].begin(), todo[hop].end());
    for (size_t t = 0; t < todo[hop].size(); ++t) {
      prefetch_head(todo[hop], t);
      const uint32_t a = todo[hop][t];
      if (hop_of[a] != hop) continue;  // listed at this hop, then reached at a lesser one
      expanded.insert(expanded.end(), {a, static_cast<uint32_t>(kept.size()), 0});
      for (uint32_t i = heads.begin[a]; i < heads.begin[a + 1];) {
        const uint32_t r = grounds[i].rule;
        uint32_t j = i + 1;  // the head's ground rules of one template rule: a run
        while (j < heads.begin[a + 1] && grounds[j].rule == r) ++j;
        const uint32_t n = j - i, next = hop + fan.hop_rule[r];
        const size_t first = kept.size();
        if (fanout == 0 || n <= fanout) {
          for (uint32_t k = i; k < j; ++k) kept.push_back(k);
        } else {  // a partial Fisher-Yates draw of `fanout` of the run, kept in network order
          pick.resize(n);
          std::iota(pick.begin(), pick.end(), i);
          for (size_t k = 0; k < fanout; ++k) {
            std::swap(pick[k], pick[k + uniform_below(*rng, n - k)]);
            kept.push_back(pick[k]);
          }
          std::sort(kept.begin() + static_cast<std::ptrdiff_t>(first), kept.end());
        }
        scratch.kept_rule.resize(kept.size(), r);
        for (size_t k = first; k < kept.size(); ++k) keep(kept[k], a, next);
        i = j;
      }
      expanded.back() = static_cast<uint32_t>(kept.size());
    }
    todo[hop].clear();
  }
  scratch.kept_inputs_begin.push_back(static_cast<uint32_t>(scratch.kept_inputs.size()));
  // The atoms: the set bits, ascending; rank[w] counts the set bits before word w, so an
  // atom's local id is a lookup in these two small tables (1 bit and 1/16 of a word per
  // atom: in cache) rather than in a per-atom table (a cache miss per lookup at 2M nodes).
  // The caller clears the bits (the kept atoms' words) when the support is built.
  s.atoms.reserve(num_atoms);
  scratch.rank.resize(reached.size());
  for (size_t w = 0; w < reached.size(); ++w) {
    scratch.rank[w] = static_cast<uint32_t>(s.atoms.size());
    for (uint64_t bits = reached[w]; bits; bits &= bits - 1)
      s.atoms.push_back(static_cast<uint32_t>(w * 64 + static_cast<unsigned>(__builtin_ctzll(bits))));
  }
  // The rules: the expanded heads in atom order, then a stable counting sort by rule.
  std::vector<uint32_t>& order = scratch.order;
  order.resize(expanded.size() / 3);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return expanded[3 * x] < expanded[3 * y]; });
  std::vector<uint32_t> count(fan.hop_rule.size() + 1, 0);
  for (uint32_t r : scratch.kept_rule) ++count[r + 1];
  std::partial_sum(count.begin(), count.end(), count.begin());
  s.rules.resize(kept.size());
  for (uint32_t e : order)
    for (uint32_t k = expanded[3 * e + 1]; k < expanded[3 * e + 2]; ++k) s.rules[count[scratch.kept_rule[k]]++] = k;
  return s;
}

// Leaves the walk's per-atom scratch as find_support found it (its reached bits and the
// expanded heads' hops), so that a walk costs its support, not the whole network.
void forget_walk(const Support& kept, SupportScratch& scratch) {
  for (uint32_t a : kept.atoms) scratch.reached[a / 64] = 0;
  // Every head find_support gave a hop was expanded once.
  for (size_t e = 0; e < scratch.expanded.size(); e += 3) scratch.local[scratch.expanded[e]] = neural::kNone;
}

}  // namespace

neural::SampleNetwork support_network(const neural::SampleNetwork& net, const RulesByHead& heads,
                                      std::span<const uint32_t> queries, const FanOut& fan, Rng* rng) {
  SupportScratch scratch;
  return support_network(net, heads, queries, fan, rng, scratch);
}

void support_atoms(const neural::SampleNetwork& net, const RulesByHead& heads, std::span<const uint32_t> queries,
                   std::span<const uint32_t> roots, const FanOut& fan, SupportScratch& scratch,
                   std::vector<uint32_t>& atom_ids, uint32_t leaves_to_depth) {
  if (fan.samples()) throw Error(ErrorKind::Runtime, "internal: support_atoms draws no ground rules");
  if (scratch.local.size() != net.num_atoms()) scratch.local.assign(net.num_atoms(), neural::kNone);
  const Support kept = find_support(net, heads, queries, roots, fan, nullptr, scratch, leaves_to_depth);
  atom_ids.assign(kept.atoms.begin(), kept.atoms.end());
  forget_walk(kept, scratch);
}

namespace {

// Empties every array of `net`, keeping their capacity.
void clear_keeping_capacity(neural::SampleNetwork& net) {
  for (std::vector<uint32_t>* v : {&net.atom_depth, &net.atom_predicate, &net.atom_fact, &net.atom_ground_id,
                                   &net.fact_template, &net.fact_data_begin, &net.fact_example_param, &net.rule,
                                   &net.head, &net.softmax_group, &net.inputs_begin, &net.inputs})
    v->clear();
  net.fact_shape.clear();
  net.fact_data.clear();
  net.pair_blocks.clear();
  net.query_atoms.clear();
}

}  // namespace

neural::SampleNetwork support_network(const neural::SampleNetwork& net, const RulesByHead& heads,
                                      std::span<const uint32_t> queries, const FanOut& fan, Rng* rng,
                                      SupportScratch& scratch, std::vector<uint32_t>* value_rows,
                                      std::span<const uint32_t> roots, std::vector<uint32_t>* atom_ids) {
  neural::SampleNetwork sub = std::move(scratch.spare);
  clear_keeping_capacity(sub);
  fill_support_network(net, heads, queries, fan, rng, scratch, sub, value_rows, roots, atom_ids);
  return sub;
}

void fill_support_network(const neural::SampleNetwork& net, const RulesByHead& heads,
                          std::span<const uint32_t> queries, const FanOut& fan, Rng* rng, SupportScratch& scratch,
                          neural::SampleNetwork& sub, std::vector<uint32_t>* value_rows,
                          std::span<const uint32_t> roots, std::vector<uint32_t>* atom_ids) {
  if (scratch.local.size() != net.num_atoms()) scratch.local.assign(net.num_atoms(), neural::kNone);
  if (scratch.fact_local.size() != net.num_facts()) {
    scratch.fact_local.assign(net.num_facts(), neural::kNone);
    scratch.fact_seen.assign(net.num_facts() / 64 + 1, 0);
  }
  const Support kept = find_support(net, heads, queries, roots, fan, rng, scratch);
  if (atom_ids) atom_ids->assign(kept.atoms.begin(), kept.atoms.end());
  std::vector<uint32_t>& fact_local = scratch.fact_local;
  // An atom's local id: its rank among the kept atoms (find_support's bits and counts).
  const uint64_t* reached = scratch.reached.data();
  const uint32_t* rank = scratch.rank.data();
  auto local = [&](uint32_t a) {
    const uint64_t below = reached[a / 64] & ((uint64_t{1} << (a % 64)) - 1);
    return rank[a / 64] + static_cast<uint32_t>(__builtin_popcountll(below));
  };
  const size_t n = kept.atoms.size(), m = kept.rules.size();
  sub.atom_depth.reserve(n);
  sub.atom_predicate.reserve(n);
  sub.atom_ground_id.reserve(n);
  sub.atom_fact.reserve(n);
  sub.rule.reserve(m);
  sub.head.reserve(m);
  sub.softmax_group.reserve(m);
  sub.inputs_begin.reserve(m + 1);
  sub.inputs.reserve(scratch.kept_inputs.size());
  sub.fact_data_begin.push_back(0);
  // The kept atoms are ascending but sparse: their records are read at random, and so are
  // their facts' values (a graph's features) when they are copied here, so the atoms ahead
  // have theirs prefetched, in two stages: the record, then the values it locates.
  constexpr size_t kAhead = 64;
  std::vector<uint64_t>& seen = scratch.fact_seen;
  const double* values = net.fact_data.data();
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) __builtin_prefetch(&heads.atoms[kept.atoms[i + kAhead]]);
    if (!value_rows && i + kAhead / 4 < n) {
      const RulesByHead::Atom& ahead = heads.atoms[kept.atoms[i + kAhead / 4]];
      for (const double* line = values + ahead.values_begin; line < values + ahead.values_end; line += 8)
        __builtin_prefetch(line);
    }
    const uint32_t a = kept.atoms[i];
    const RulesByHead::Atom& atom = heads.atoms[a];
    sub.atom_depth.push_back(atom.depth());
    sub.atom_predicate.push_back(atom.predicate());
    sub.atom_ground_id.push_back(atom.ground_id);
    const uint32_t f = atom.fact;
    if (f == neural::kNone) {
      sub.atom_fact.push_back(neural::kNone);
      continue;
    }
    const uint64_t bit = uint64_t{1} << (f % 64);
    if (seen[f / 64] & bit) {  // a fact another kept atom has too
      sub.atom_fact.push_back(fact_local[f]);
      continue;
    }
    seen[f / 64] |= bit;
    const auto local_fact = static_cast<uint32_t>(sub.fact_shape.size());
    fact_local[f] = local_fact;
    scratch.facts.push_back(f);
    sub.fact_template.push_back(atom.fact_template);
    sub.fact_shape.push_back(atom.fact_shape);
    if (value_rows) {
      value_rows->insert(value_rows->end(), {atom.values_begin, atom.values_end});
    } else if (atom.values_end <= net.fact_data.size()) {
      sub.fact_data.insert(sub.fact_data.end(), values + atom.values_begin, values + atom.values_end);
    } else {  // a ghost of a partitioned sample: each pass's exchange writes its values
      sub.fact_data.resize(sub.fact_data.size() + (atom.values_end - atom.values_begin), 0.0);
    }
    sub.fact_data_begin.push_back(sub.fact_data_begin.back() + (atom.values_end - atom.values_begin));
    if (!net.fact_example_param.empty()) sub.fact_example_param.push_back(net.fact_example_param[f]);
    sub.atom_fact.push_back(local_fact);
  }
  sub.inputs_begin.push_back(0);
  // Each rule from the walk's records (sequential, in cache), not from the network.
  for (uint32_t k : kept.rules) {
    sub.rule.push_back(scratch.kept_rule[k]);
    sub.head.push_back(local(scratch.kept_head[k]));
    sub.softmax_group.push_back(scratch.kept_softmax[k]);
    for (uint32_t x = scratch.kept_inputs_begin[k]; x < scratch.kept_inputs_begin[k + 1]; ++x)
      sub.inputs.push_back(local(scratch.kept_inputs[x]));
    sub.inputs_begin.push_back(static_cast<uint32_t>(sub.inputs.size()));
  }
  for (uint32_t q : queries) {
    std::vector<uint32_t>& atoms = sub.query_atoms.emplace_back();
    for (uint32_t l : net.query_atoms[q]) atoms.push_back(local(l));
  }
  // The scratch is left as it was found: a batch costs its support, not the whole network.
  for (uint32_t f : scratch.facts) {
    fact_local[f] = neural::kNone;
    seen[f / 64] = 0;
  }
  scratch.facts.clear();
  forget_walk(kept, scratch);
  sub.dropped_cycle_rules = net.dropped_cycle_rules;
  // A support is planned once, for its one step: a fresh number instead of its structure's
  // hash (which costs a pass over it), so no two supports ever share a plan.
  static std::atomic<uint64_t> supports{0};
  sub.structure_hash = 0x5157000000000000ULL + supports.fetch_add(1);
}

QueryBatches::QueryBatches(const neural::TemplateModel& model, const PreparedSet& set, std::vector<size_t> fanout,
                           bool float_values)
    : set_(set), fan_(fan_out(model, std::move(fanout))), heads_(set.size()), scratch_(set.size()),
      float_values_(float_values) {
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
  // The index of each sample that has training queries, now rather than in its first
  // step: it is part of training's setup, as NeighborLoader's CSC of the edges is of its own.
  for (const QueryRef& r : training_)
    if (heads_[r.sample].begin.empty()) heads_[r.sample] = rules_by_head(set.networks[r.sample], float_values);
}

PreparedSet QueryBatches::batch(std::span<const QueryRef> queries, Rng& rng, std::vector<uint32_t>& origin,
                                bool values_by_reference) {
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
  last_samples_ = samples;
  for (uint32_t k = 0; k < samples.size(); ++k) {
    const uint32_t s = samples[k];
    if (heads_[s].begin.empty()) heads_[s] = rules_by_head(set_.networks[s], float_values_);
    std::vector<uint32_t>* value_rows = nullptr;
    if (values_by_reference) {
      if (!float_values_) throw Error(ErrorKind::Runtime, "query batches: float values asked of an index without them");
      out.value_tables.push_back(heads_[s].values32.data());
      value_rows = &out.value_rows.emplace_back();
    }
    out.networks.push_back(support_network(set_.networks[s], heads_[s], picked[k], fan_,
                                           fan_.samples() ? &rng : nullptr, scratch_[s], value_rows));
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

void QueryBatches::recycle(PreparedSet&& batch) {
  for (size_t k = 0; k < batch.networks.size() && k < last_samples_.size(); ++k)
    scratch_[last_samples_[k]].spare = std::move(batch.networks[k]);
}

}  // namespace lrnn::train
