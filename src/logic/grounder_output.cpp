// The sample a grounding writes out (grounder_impl.hpp): the atoms kept (those a query's
// network reaches), renumbered, and the ground rules over them.
#include <algorithm>

#include "logic/grounder_impl.hpp"

namespace lrnn::logic::detail {

namespace {

// Remaps a set's atoms to their new ids in place, dropping the ground rules whose head was
// pruned (no copy: the arrays can hold hundreds of millions of ids).
void remap_ground_rules(GroundRuleSet& s, const std::vector<uint32_t>& new_id) {
  size_t w = 0;
  for (size_t g = 0; g < s.size(); ++g) {
    uint32_t h = new_id[s.head[g]];
    if (h == kNone) continue;
    s.head[w] = h;
    for (uint32_t i = 0; i < s.n_inputs; ++i) s.inputs[w * s.n_inputs + i] = new_id[s.inputs[g * s.n_inputs + i]];
    if (w != g)
      std::copy(s.bindings.begin() + g * s.n_vars, s.bindings.begin() + (g + 1) * s.n_vars,
                s.bindings.begin() + w * s.n_vars);
    ++w;
  }
  s.head.resize(w);
  s.inputs.resize(w * s.n_inputs);
  s.bindings.resize(w * s.n_vars);
}

}  // namespace

// Which provisional atoms to keep: those supporting a query (when pruning), else all
// atoms of logically relevant predicates and the query atoms.
std::vector<char> Grounder::atoms_to_keep(const std::vector<GroundRuleSet>& sets,
                                          const std::vector<std::vector<std::pair<uint32_t, uint32_t>>>& query_matches,
                                          const std::vector<uint32_t>& base) const {
  const uint32_t n_preds = uint32_t(prog_.num_predicates());
  const uint32_t n_prov = base[n_preds] + uint32_t(eval_values_.size());
  std::vector<char> keep(n_prov, 0);
  for (auto& qm : query_matches)
    for (auto [p, r] : qm) keep[base[p] + r] = 1;
  const bool prune = opt_.prune && has_queries_ && opt_.store_ground_rules;
  if (!prune) {
    for (uint32_t p = 0; p < n_preds; ++p)
      if (logic_relevant_[p]) std::fill(keep.begin() + base[p], keep.begin() + base[p + 1], 1);
    std::fill(keep.begin() + base[n_preds], keep.end(), 1);
    return keep;
  }
  if (keep_without_recursion(sets, keep)) return keep;
  if (std::any_of(blocks_.begin(), blocks_.end(), [](const PendingBlock& pb) { return pb.block.has_value(); }))
    throw Error(ErrorKind::Runtime, "internal: a pair block in a grounding whose rule sets have no levels");
  // Ground rules by head atom (CSR), then a walk down from the query atoms.
  std::vector<uint32_t> start(n_prov + 1, 0);
  for (const auto& s : sets)
    for (uint32_t h : s.head) ++start[h + 1];
  for (uint32_t a = 0; a < n_prov; ++a) start[a + 1] += start[a];
  std::vector<uint32_t> fill(start.begin(), start.end() - 1);
  std::vector<std::pair<uint32_t, uint32_t>> by_head(start[n_prov]);
  for (uint32_t si = 0; si < sets.size(); ++si)
    for (uint32_t g = 0; g < sets[si].size(); ++g) by_head[fill[sets[si].head[g]]++] = {si, g};
  std::vector<uint32_t> stack;
  for (uint32_t a = 0; a < n_prov; ++a)
    if (keep[a]) stack.push_back(a);
  while (!stack.empty()) {
    uint32_t a = stack.back();
    stack.pop_back();
    for (uint32_t k = start[a]; k < start[a + 1]; ++k) {
      const GroundRuleSet& s = sets[by_head[k].first];
      const uint32_t* in = s.inputs.data() + size_t(by_head[k].second) * s.n_inputs;
      for (uint32_t i = 0; i < s.n_inputs; ++i)
        if (!keep[in[i]]) keep[in[i]] = 1, stack.push_back(in[i]);
    }
  }
  return keep;
}

// atoms_to_keep's walk when the rule sets have levels (no recursion): a ground rule's
// inputs are derived only by rule sets of lower levels, so taking the rule sets from the
// highest level down, every ground rule that can reach an atom is seen before the rule
// sets deriving it, and one pass per rule set (marking the inputs of each ground rule
// whose head is kept) marks what the walk would, without the index of ground rules by
// head. False (keep untouched beyond the query atoms) without levels.
bool Grounder::keep_without_recursion(const std::vector<GroundRuleSet>& sets, std::vector<char>& keep) const {
  for (const GroundRuleSet& s : sets)
    if (s.level == kNone) return false;
  // The rule sets, then the pair blocks (at their sum rule's level: taken whole).
  const std::vector<uint32_t> order =
      by_level_descending(sets, blocks_.size(), [&](size_t b) { return blocks_[b].shape.level; });
  for (uint32_t si : order) {
    if (si >= sets.size()) {
      if (const auto& block = blocks_[si - sets.size()].block) keep_pair_block(*block, keep);
      continue;
    }
    const GroundRuleSet& s = sets[si];
    for (size_t g = 0; g < s.size(); ++g)
      if (keep[s.head[g]])
        for (uint32_t i = 0; i < s.n_inputs; ++i) keep[s.inputs[g * s.n_inputs + i]] = 1;
  }
  return true;
}

// The kept atoms, renumbered densely; returns provisional id -> new id (kNone: dropped).
std::vector<uint32_t> Grounder::write_atoms(GroundSample& sample, const std::vector<char>& keep,
                                            const std::vector<uint32_t>& base) {
  std::vector<uint32_t> new_id(keep.size(), kNone);
  size_t n_kept = 0, n_args = 0;
  for (uint32_t p = 0; p < prog_.num_predicates(); ++p)
    for (uint32_t r = 0; r < rels_[p].rows(); ++r)
      if (keep[base[p] + r]) ++n_kept, n_args += rels_[p].arity();
  n_kept += eval_values_.size(), n_args += 2 * eval_values_.size();
  sample.atom_pred.reserve(n_kept);
  sample.atom_args_begin.reserve(n_kept + 1);
  sample.atom_args.reserve(n_args);
  sample.atom_example_fact.reserve(n_kept);
  sample.atom_template_fact.reserve(n_kept);
  sample.atom_args_begin.push_back(0);
  for (uint32_t p = 0; p < prog_.num_predicates(); ++p) {
    // Runs of kept rows are appended at once (their arguments lie back to back).
    const Relation& rel = rels_[p];
    const char* kept = keep.data() + base[p];
    const uint32_t arity = rel.arity();
    for (uint32_t r = 0; r < rel.rows();) {
      if (!kept[r]) {
        ++r;
        continue;
      }
      uint32_t e = r + 1;
      while (e < rel.rows() && kept[e]) ++e;
      const uint32_t first = uint32_t(sample.atom_pred.size());
      for (uint32_t t = r; t < e; ++t) new_id[base[p] + t] = first + (t - r);
      sample.atom_pred.insert(sample.atom_pred.end(), e - r, p);
      sample.atom_args.insert(sample.atom_args.end(), rel.row(r), rel.row(r) + size_t(e - r) * arity);
      for (uint32_t t = r; t < e; ++t) {
        sample.atom_args_begin.push_back(sample.atom_args_begin.back() + arity);
        sample.atom_example_fact.push_back(rel.example_fact(t));
        sample.atom_template_fact.push_back(rel.template_fact(t));
      }
      r = e;
    }
  }
  for (uint32_t k = 0; k < eval_values_.size(); ++k) {
    if (!keep[eval_base_ + k]) continue;
    const uint32_t id = uint32_t(sample.atom_pred.size());
    new_id[eval_base_ + k] = id;
    sample.atom_pred.push_back(eval_atoms_[3 * k]);
    sample.atom_args.insert(sample.atom_args.end(), eval_atoms_.begin() + 3 * k + 1, eval_atoms_.begin() + 3 * k + 3);
    sample.atom_args_begin.push_back(uint32_t(sample.atom_args.size()));
    sample.atom_example_fact.push_back(kNone);
    sample.atom_template_fact.push_back(kNone);
    sample.computed_values.emplace_back(id, eval_values_[k]);
  }
  return new_id;
}

void Grounder::write_ground_rules(GroundSample& sample, std::vector<GroundRuleSet>& sets,
                                  const std::vector<size_t>& counted, const std::vector<uint32_t>& new_id) const {
  size_t n_ground = 0;
  for (size_t si = 0; si < sets.size(); ++si) {
    GroundRuleSet& s = sets[si];
    if (!opt_.store_ground_rules) {
      n_ground += counted[si];
      continue;
    }
    remap_ground_rules(s, new_id);
    if (s.size() == 0) continue;
    n_ground += s.size();
    sample.rules.push_back(std::move(s));
  }
  if (!opt_.store_ground_rules) {
    // Counting mode: one empty set per rule that had groundings, its count in stats.
    for (auto& s : sets) sample.rules.push_back(GroundRuleSet{s.rule, s.n_inputs, s.n_vars, {}, {}, {}, kNone});
  }
  sample.stats.ground_rules = n_ground;
}

}  // namespace lrnn::logic::detail
