#include "neural/network.hpp"

#include "neural/grid_order.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <memory>
#include <numeric>

#include "logic/radix_sort.hpp"
#include "logic/relation.hpp"
#include "logic/row_set.hpp"
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
  uint32_t depth;      // 1 + the deepest input of the atom's kept ground rules so far (1: none)
  uint32_t rule_depth; // 1 + the deepest input of this ground rule so far
  uint32_t n_inputs;   // of this ground rule
  const uint32_t* inputs;
};

// The sample's ground rules numbered globally (grounding id g over every rule set), the
// first rule set deriving each atom, and (for the depth-first search only: index_by_head)
// the ground rules of each head atom (CSR, in grounding order).
struct FlatGroundRules {
  const logic::GroundSample& ground;
  std::vector<uint32_t> set_begin;  // per rule set: its first grounding id
  std::vector<uint32_t> first_set;  // per atom: the first rule set with it as a head, or kNone
  std::vector<uint32_t> head_begin, head_list;
  uint32_t size() const { return set_begin.back(); }
  mutable uint32_t last_set = 0;    // set_of's last answer
  // The rule set of grounding g: the last one found when g is in it (groundings are mostly
  // read in order), else a search in the few rule sets' bounds, which stay in cache (a
  // per-grounding array would be one more cache miss per lookup at n^2 groundings).
  uint32_t set_of(uint32_t g) const {
    if (g - set_begin[last_set] < set_begin[last_set + 1] - set_begin[last_set]) return last_set;
    last_set = static_cast<uint32_t>(std::upper_bound(set_begin.begin(), set_begin.end(), g) - set_begin.begin() - 1);
    return last_set;
  }
  const logic::GroundRuleSet& set(uint32_t g) const { return ground.rules[set_of(g)]; }
  uint32_t row(uint32_t g) const { return g - set_begin[set_of(g)]; }
  uint32_t head(uint32_t g) const { return set(g).head[row(g)]; }
  uint32_t n_inputs(uint32_t g) const { return set(g).n_inputs; }
  uint32_t input(uint32_t g, uint32_t i) const { return set(g).inputs[static_cast<size_t>(row(g)) * set(g).n_inputs + i]; }
  // Per atom: the pair block whose head it is (kNone: none); empty without blocks.
  std::vector<uint32_t> block_of_head;
  bool derived(uint32_t atom) const {
    return first_set[atom] != kNone || (!block_of_head.empty() && block_of_head[atom] != kNone);
  }
  // The template rule deriving a derived atom (its first rule set's, or its block's sum rule).
  uint32_t deriving_rule(uint32_t atom) const {
    return first_set[atom] != kNone ? ground.rules[first_set[atom]].rule
                                    : ground.pair_blocks[block_of_head[atom]].sum_rule;
  }
};

FlatGroundRules flatten(const TemplateModel& model, const logic::GroundSample& ground) {
  FlatGroundRules f{ground, std::vector<uint32_t>(ground.rules.size() + 1, 0), {}, {}, {}, 0, {}};
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
    f.set_begin[k + 1] = f.set_begin[k] + static_cast<uint32_t>(rs.size());
  }
  const size_t n_atoms = ground.num_atoms();
  f.first_set.assign(n_atoms, kNone);
  for (size_t k = ground.rules.size(); k-- > 0;) {
    for (uint32_t h : ground.rules[k].head) {
      if (h >= n_atoms) throw Error(ErrorKind::Runtime, "ground rule head is not an atom of the sample");
      f.first_set[h] = static_cast<uint32_t>(k);
    }
  }
  if (!ground.pair_blocks.empty()) f.block_of_head.assign(n_atoms, kNone);
  for (size_t b = 0; b < ground.pair_blocks.size(); ++b)
    for (uint32_t h : ground.pair_blocks[b].head_atom) {
      if (h >= n_atoms) throw Error(ErrorKind::Runtime, "pair block head is not an atom of the sample");
      f.block_of_head[h] = static_cast<uint32_t>(b);
    }
  return f;
}

// The ground rules of each head atom, in grounding order (the depth-first search's index).
void index_by_head(FlatGroundRules& f) {
  const size_t n_atoms = f.ground.num_atoms();
  f.head_begin.assign(n_atoms + 1, 0);
  for (const logic::GroundRuleSet& rs : f.ground.rules)
    for (uint32_t h : rs.head) ++f.head_begin[h + 1];
  for (size_t a = 0; a < n_atoms; ++a) f.head_begin[a + 1] += f.head_begin[a];
  f.head_list.resize(f.size());
  std::vector<uint32_t> fill(f.head_begin.begin(), f.head_begin.end() - 1);
  for (size_t k = 0; k < f.ground.rules.size(); ++k) {
    uint32_t g = f.set_begin[k];
    for (uint32_t h : f.ground.rules[k].head) f.head_list[fill[h]++] = g++;
  }
}

// What the depth-first search from the queries found: the atoms that support a query
// (state 2), their depths, and the ground rules dropped for closing a cycle.
struct Relevance {
  std::vector<uint8_t> state;  // 0 unseen, 1 on the path, 2 done (kept)
  std::vector<uint32_t> depth;
  std::vector<uint8_t> dropped;
  uint32_t dropped_count = 0;
};

// Relevance pruning, cycle breaking (a ground rule with an input on the current DFS path
// closes a cycle and is dropped) and depths, in one deterministic pass. Iterative, so deep
// chains cannot overflow the stack.
Relevance search_from_queries(const FlatGroundRules& f) {
  const size_t n_atoms = f.ground.num_atoms();
  Relevance r{std::vector<uint8_t>(n_atoms, 0), std::vector<uint32_t>(n_atoms, 0), std::vector<uint8_t>(f.size(), 0), 0};
  std::vector<DfsFrame> stack;
  // Points the frame at its atom's head_pos-th ground rule (its inputs read in place).
  auto enter_rule = [&](DfsFrame& fr) {
    fr.input_pos = 0;
    fr.rule_depth = 1;
    if (fr.head_pos == f.head_begin[fr.atom + 1] - f.head_begin[fr.atom]) return;
    const uint32_t g = f.head_list[f.head_begin[fr.atom] + fr.head_pos];
    const logic::GroundRuleSet& set = f.set(g);
    fr.n_inputs = set.n_inputs;
    fr.inputs = set.inputs.data() + static_cast<size_t>(f.row(g)) * set.n_inputs;
  };
  auto push = [&](uint32_t atom) {
    r.state[atom] = 1;
    stack.push_back({atom, 0, 0, 1, 1, 0, nullptr});
    enter_rule(stack.back());
  };
  auto visit = [&](uint32_t root) {
    if (root >= n_atoms) throw Error(ErrorKind::Runtime, "query atom is not an atom of the sample");
    if (r.state[root] != 0) return;
    push(root);
    while (!stack.empty()) {
      DfsFrame& fr = stack.back();
      const uint32_t a = fr.atom;
      const uint32_t n_heads = f.head_begin[a + 1] - f.head_begin[a];
      if (fr.head_pos < n_heads) {
        // The inputs of this ground rule: done ones count for the depth, one on the DFS
        // path closes a cycle (the rule is dropped), an unseen one is explored first.
        bool descended = false;
        while (fr.input_pos < fr.n_inputs) {
          const uint32_t b = fr.inputs[fr.input_pos];
          if (b >= n_atoms) throw Error(ErrorKind::Runtime, "ground rule input is not an atom of the sample");
          if (r.state[b] == 0) {
            push(b);  // invalidates fr; this input is read again once b is done
            descended = true;
            break;
          }
          if (r.state[b] == 1) break;
          fr.rule_depth = std::max(fr.rule_depth, r.depth[b] + 1);
          ++fr.input_pos;
        }
        if (descended) continue;
        if (fr.input_pos < fr.n_inputs) {
          r.dropped[f.head_list[f.head_begin[a] + fr.head_pos]] = 1;
          ++r.dropped_count;
        } else {
          fr.depth = std::max(fr.depth, fr.rule_depth);
        }
        ++fr.head_pos;
        enter_rule(fr);
        continue;
      }
      r.depth[a] = n_heads > 0 ? fr.depth : 0;
      r.state[a] = 2;
      stack.pop_back();
    }
  };
  for (const auto& atoms : f.ground.query_atoms)
    for (uint32_t a : atoms) visit(a);
  return r;
}

// Whether relevance kept the block (it keeps all of its heads or none).
bool block_kept(const logic::PairBlock& b, const std::vector<uint8_t>& state) {
  return !b.head_atom.empty() && state[b.head_atom[0]] == 2;
}

// A block is computed whole: when a query needs one of its heads, every atom it reads or
// derives is kept (its heads all derived by it alone, so none has another rule to visit).
void mark_block(const logic::PairBlock& b, std::vector<uint8_t>& state) {
  const bool needed = std::any_of(b.head_atom.begin(), b.head_atom.end(), [&](uint32_t h) { return state.at(h) == 2; });
  if (!needed) return;
  b.for_each_atom([&](uint32_t a) { state.at(a) = 2; });
}

// One depth for all of a block's pair atoms (1 + the deepest atom a score reads) and one
// for its heads (1 + the deeper of the pairs and the values): the plan computes the block's
// scores in one step and its sums in another.
struct BlockDepths {
  uint32_t pairs = 1, head = 2;
};
BlockDepths block_depths(const logic::PairBlock& b, const std::vector<uint32_t>& depth) {
  uint32_t inputs = 0, values = 0;
  for (const auto* atoms : {&b.row_atom, &b.column_atom})
    for (uint32_t a : *atoms) inputs = std::max(inputs, depth[a]);
  for (uint32_t a : b.score_inputs)
    if (a != logic::kRowInput && a != logic::kColumnInput) inputs = std::max(inputs, depth[a]);
  for (uint32_t a : b.value_atom) values = std::max(values, depth[a]);
  BlockDepths d;
  d.pairs = inputs + 1;
  d.head = std::max(d.pairs, values) + 1;
  return d;
}

// A big graph's ground rules read their atoms' entries at random (the heads of an edge
// rule in edge order): the entries of the ground rule this far ahead are fetched early.
constexpr size_t kRelevanceAhead = 16;
template <class T>
void prefetch_atoms(const logic::GroundRuleSet& s, size_t g, const T* per_atom) {
  __builtin_prefetch(per_atom + s.head[g]);
  for (uint32_t i = 0; i < s.n_inputs; ++i) __builtin_prefetch(per_atom + s.inputs[g * s.n_inputs + i]);
}

// search_from_queries when every rule set has a level (the grounder found no recursion):
// the ground rules form no cycle, so nothing is dropped, the kept atoms are those the
// queries reach (marked taking the rule sets from the highest level down, as the grounder
// prunes), and an atom's depth, 1 + the deepest input over its ground rules (0 without
// any), is final once the lower levels are done (a pass from the lowest level up). The
// same result as the search, without its per-atom stack and scattered reads.
bool layered_relevance(const FlatGroundRules& f, Relevance& r) {
  const auto& sets = f.ground.rules;
  const auto& blocks = f.ground.pair_blocks;
  for (const logic::GroundRuleSet& s : sets)
    if (s.level == kNone) return false;
  for (const logic::PairBlock& b : blocks)
    if (b.level == kNone) return false;
  const size_t n_atoms = f.ground.num_atoms();
  r = Relevance{std::vector<uint8_t>(n_atoms, 0), std::vector<uint32_t>(n_atoms, 0), std::vector<uint8_t>(f.size(), 0), 0};
  // Rule sets, then pair blocks (index sets.size() + b), from the highest level down.
  const std::vector<uint32_t> order =
      logic::by_level_descending(sets, blocks.size(), [&](size_t b) { return blocks[b].level; });
  for (const auto& atoms : f.ground.query_atoms)
    for (uint32_t a : atoms) {
      if (a >= n_atoms) throw Error(ErrorKind::Runtime, "query atom is not an atom of the sample");
      r.state[a] = 2;
    }
  for (uint32_t k : order) {
    if (k >= sets.size()) {
      mark_block(blocks[k - sets.size()], r.state);
      continue;
    }
    const logic::GroundRuleSet& s = sets[k];
    for (size_t g = 0; g < s.size(); ++g) {
      if (g + kRelevanceAhead < s.size()) prefetch_atoms(s, g + kRelevanceAhead, r.state.data());
      if (r.state[s.head[g]] != 2) continue;
      for (uint32_t i = 0; i < s.n_inputs; ++i) {
        const uint32_t b = s.inputs[g * s.n_inputs + i];
        if (b >= n_atoms) throw Error(ErrorKind::Runtime, "ground rule input is not an atom of the sample");
        r.state[b] = 2;
      }
    }
  }
  for (size_t j = order.size(); j-- > 0;) {
    if (order[j] >= sets.size()) {
      const logic::PairBlock& b = blocks[order[j] - sets.size()];
      if (!block_kept(b, r.state)) continue;
      const BlockDepths d = block_depths(b, r.depth);
      for (uint32_t h : b.head_atom) r.depth[h] = std::max(r.depth[h], d.head);
      continue;
    }
    const logic::GroundRuleSet& s = sets[order[j]];
    for (size_t g = 0; g < s.size(); ++g) {
      if (g + kRelevanceAhead < s.size()) {
        prefetch_atoms(s, g + kRelevanceAhead, r.state.data());
        prefetch_atoms(s, g + kRelevanceAhead, r.depth.data());
      }
      if (r.state[s.head[g]] != 2) continue;
      uint32_t rule_depth = 1;
      for (uint32_t i = 0; i < s.n_inputs; ++i) rule_depth = std::max(rule_depth, r.depth[s.inputs[g * s.n_inputs + i]] + 1);
      r.depth[s.head[g]] = std::max(r.depth[s.head[g]], rule_depth);
    }
  }
  return true;
}

// The kept atoms in ground-id order; returns ground id -> local atom index (kNone: pruned).
std::vector<uint32_t> add_atoms(SampleNetwork& net, const Relevance& r) {
  std::vector<uint32_t> local(r.state.size(), kNone);
  const size_t n_kept = static_cast<size_t>(std::count(r.state.begin(), r.state.end(), uint8_t{2}));
  net.atom_ground_id.reserve(n_kept);
  net.atom_depth.reserve(n_kept);
  net.atom_fact.reserve(n_kept);
  net.atom_predicate.reserve(n_kept);
  for (uint32_t a = 0; a < r.state.size(); ++a) {
    if (r.state[a] != 2) continue;
    local[a] = static_cast<uint32_t>(net.atom_depth.size());
    net.atom_ground_id.push_back(a);
    net.atom_depth.push_back(r.depth[a]);
    net.atom_fact.push_back(kNone);
    net.atom_predicate.push_back(kNone);
  }
  return local;
}

// One fact of an example: its shape and values appended to the network's fact data.
// Fact ef of `facts`, whose value is `value` (nullptr: none); the rest of the fact is read
// only for an error message.
void add_example_fact(SampleNetwork& net, const logic::FactSource& facts, uint32_t ef, const ValueSpec* value,
                      bool learnable) {
  net.fact_template.push_back(kNone);
  if (!value) {
    net.fact_shape.push_back({1, 1});
    net.fact_data.push_back(1.0);
    return;
  }
  const ValueSpec& v = *value;
  const auto predicate = [&] {
    Literal scratch;
    return facts.fact(ef, scratch).predicate;
  };
  if (learnable && v.kind == ValueSpec::Kind::Dims) {  // the dataset draws its initial value
    const Shape s = shape_of(v);
    net.fact_shape.push_back(s);
    net.fact_data.insert(net.fact_data.end(), static_cast<size_t>(s.size()), 0.0);
    return;
  }
  if (v.kind == ValueSpec::Kind::Dims || v.kind == ValueSpec::Kind::Reference)
    throw Error(ErrorKind::Semantic, v.span,
                "the value of example fact '" + predicate() + "' must be a number, vector or matrix");
  Shape s = shape_of(v);
  if (v.data.size() != static_cast<size_t>(s.size()))
    throw Error(ErrorKind::Shape, v.span, "malformed value of example fact '" + predicate() + "'");
  net.fact_shape.push_back(s);
  net.fact_data.insert(net.fact_data.end(), v.data.begin(), v.data.end());
}

// The value of a builtin @op_eval atom (GroundSample::computed_values), else 0.
double computed_value(const logic::GroundSample& ground, uint32_t atom) {
  const auto& values = ground.computed_values;
  auto it = std::lower_bound(values.begin(), values.end(), std::make_pair(atom, -std::numeric_limits<double>::infinity()));
  return it != values.end() && it->first == atom ? it->second : 0.0;
}

// Facts (template facts before example data) and the predicates of derived atoms.
void add_facts(SampleNetwork& net, const TemplateModel& model, const logic::FactSource& facts,
               const FlatGroundRules& f, bool learnable_facts) {
  const logic::GroundSample& ground = f.ground;
  net.fact_data_begin.push_back(0);
  // Room for every example fact's values at once (a sequence's facts hold n x d values:
  // grown by doubling they were copied and faulted in twice over).
  size_t example_values = 0;
  for (size_t i = 0; i < facts.size(); ++i) {
    const ValueSpec* value = facts.value(i);
    example_values += value ? value->data.size() : 1;
  }
  net.fact_data.reserve(example_values);
  for (uint32_t l = 0; l < net.num_atoms(); ++l) {
    const uint32_t a = net.atom_ground_id[l];
    const bool derived = f.derived(a);
    if (derived) net.atom_predicate[l] = model.rules[f.deriving_rule(a)].head_predicate;
    const uint32_t tf = a < ground.atom_template_fact.size() ? ground.atom_template_fact[a] : kNone;
    const uint32_t ef = a < ground.atom_example_fact.size() ? ground.atom_example_fact[a] : kNone;
    if (tf == kNone && ef == kNone && derived) continue;
    net.atom_fact[l] = static_cast<uint32_t>(net.fact_shape.size());
    if (tf != kNone) {  // a template fact (embedding) takes precedence over example data
      if (tf >= model.facts.size()) throw Error(ErrorKind::Runtime, "template fact index out of range");
      net.fact_template.push_back(tf);
      net.fact_shape.push_back(model.params.info(model.facts[tf].param).shape);
    } else if (ef != kNone) {
      if (ef >= facts.size()) throw Error(ErrorKind::Runtime, "example fact index out of range");
      add_example_fact(net, facts, ef, facts.value(ef), learnable_facts);
    } else {
      // Neither a fact nor derived: a builtin @op_eval(a, b) enters as its value a op b;
      // anything else cannot come out of a least model and enters as 0.
      net.fact_template.push_back(kNone);
      net.fact_shape.push_back({1, 1});
      net.fact_data.push_back(computed_value(ground, a));
    }
    net.fact_data_begin.push_back(static_cast<uint32_t>(net.fact_data.size()));
  }
}

// Numbers the softmax keys of one rule (the values of its softmax-group variables) in order
// of first appearance. Keys of one variable whose symbol ids lie close together (attention's
// positions: the n^2 scores' keys are n small integers) index a table by id, one load each
// where a hash probe hashes and compares the key; other keys are hashed, and so are these
// once their ids spread over more than a few times as many values as there are keys.
class SoftmaxKeys {
 public:
  explicit SoftmaxKeys(uint32_t width) : width_(width), in_table_(width == 1) {}
  uint32_t number(const uint32_t* key, uint32_t& n_groups) {
    if (in_table_ && fits_table(key[0])) {
      uint32_t& group = table_[key[0] - lo_];
      if (group == kNone) group = n_groups++, ++count_;
      return group;
    }
    if (!rows_) rows_ = std::make_unique<logic::RowSet>(width_);
    const auto [row, inserted] = rows_->number(key);
    if (inserted) by_row_.push_back(n_groups++);
    return by_row_[row];
  }

 private:
  // Widens the table to cover id x; false (and the table's keys moved to rows_) when the
  // table would grow too sparse.
  bool fits_table(uint32_t x) {
    if (table_.empty()) lo_ = x;
    if (x >= lo_ && x - lo_ < table_.size()) return true;
    if (!logic::widen_direct_table(table_, lo_, x, count_)) {
      in_table_ = false;
      rows_ = std::make_unique<logic::RowSet>(1);
      for (uint32_t t = 0; t < table_.size(); ++t) {
        if (table_[t] == kNone) continue;
        const uint32_t id = lo_ + t;
        rows_->number(&id);
        by_row_.push_back(table_[t]);
      }
      table_ = {};
      return false;
    }
    return true;
  }
  uint32_t width_;
  bool in_table_;
  uint32_t lo_ = 0, count_ = 0;         // the table's first id; keys numbered in it
  std::vector<uint32_t> table_;         // id - lo_ -> group, or kNone
  std::unique_ptr<logic::RowSet> rows_;  // the other keys: key -> row
  std::vector<uint32_t> by_row_;        // row -> group
};

// The softmax group of every kept ground rule of a softmax-aggregated rule: groundings of
// one rule that agree on the rule's softmax variables normalise together. Groups are
// numbered in order of first appearance in `kept` (ascending grounding ids, so each rule
// set's groundings are one run of it).
std::vector<uint32_t> softmax_groups(const TemplateModel& model, const FlatGroundRules& f,
                                     const std::vector<uint32_t>& kept) {
  // Read for softmax rules' ground rules only: none, no table (a big graph's 4 bytes per grounding).
  if (std::none_of(model.rules.begin(), model.rules.end(), [](const RuleSpec& r) { return r.softmax; })) return {};
  std::vector<uint32_t> group(f.size(), 0);
  std::vector<std::unique_ptr<SoftmaxKeys>> keys(model.rules.size());  // per rule
  uint32_t n_groups = 0;
  std::vector<uint32_t> key;
  for (size_t i = 0; i < kept.size();) {
    const uint32_t set = f.set_of(kept[i]), end = f.set_begin[set + 1];
    const logic::GroundRuleSet& rs = f.ground.rules[set];
    const RuleSpec& spec = model.rules[rs.rule];
    size_t e = i;
    while (e < kept.size() && kept[e] < end) ++e;
    if (spec.softmax) {
      for (uint32_t v : spec.softmax_group_vars)
        if (v >= rs.n_vars) throw Error(ErrorKind::Runtime, "ground rule set lacks variable bindings");
      if (!keys[rs.rule]) keys[rs.rule] = std::make_unique<SoftmaxKeys>(static_cast<uint32_t>(spec.softmax_group_vars.size()));
      SoftmaxKeys& numbers = *keys[rs.rule];
      key.resize(spec.softmax_group_vars.size());
      for (size_t t = i; t < e; ++t) {
        const uint32_t* bindings = rs.bindings.data() + static_cast<size_t>(kept[t] - f.set_begin[set]) * rs.n_vars;
        for (size_t v = 0; v < key.size(); ++v) key[v] = bindings[spec.softmax_group_vars[v]];
        group[kept[t]] = numbers.number(key.data(), n_groups);
      }
    }
    i = e;
  }
  return group;
}

// Key ranges up to this many sort by counting (its counters stay in cache); wider ones by radix.
constexpr uint32_t kCountingSortMaxRange = 1u << 16;

// A range of `kept` (ascending grounding ids of one rule set) listing the heads of its first
// `rows` groundings, in increasing order, over and over (cols times): attention's weighted
// sum out(I) :- w(I, J), v(J) grounded key by key. Sorted by head (stably), the range is
// the grid transposed: add_ground_rules writes it so, in strips of columns, where sorting
// `kept` and copying the ground rules in that order would read them a row apart each.
struct HeadGrid {
  size_t begin = 0, rows = 0, cols = 0;
};

// The HeadGrid over kept[b, e) (rows == 0: none).
template <class HeadOf>
HeadGrid head_grid(const std::vector<uint32_t>& kept, size_t b, size_t e, const FlatGroundRules& f, HeadOf head_of) {
  if (e - b < 4 || f.set_of(kept[b]) != f.set_of(kept[e - 1])) return {};
  std::vector<uint32_t> first{head_of(kept[b])};
  while (b + first.size() < e && head_of(kept[b + first.size()]) > first.back()) first.push_back(head_of(kept[b + first.size()]));
  const size_t rows = first.size();
  if (rows == e - b || (e - b) % rows != 0) return {};
  for (size_t k = b + rows; k < e; ++k)
    if (head_of(kept[k]) != first[(k - b) % rows]) return {};
  return {b, rows, (e - b) / rows};
}

// Sorts `kept` (ascending grounding ids) by (rule, head, softmax group, grounding id) in
// linear time with stable counting or radix sorts: by head and then by rule, or, when the
// rule sets come in rule order (the grounder lists them so), by head within each rule's
// range alone, over the range's span of heads and only where the heads are out of order
// (attention's n^2 scores already come one head after another). A head's groundings are
// then in grounding order, and only a head whose groups are out of order is sorted.
void sort_ground_rules(std::vector<uint32_t>& kept, const FlatGroundRules& f, const std::vector<uint32_t>& local,
                       const std::vector<uint32_t>& group, size_t n_atoms, const TemplateModel& model,
                       std::vector<HeadGrid>& grids) {
  const size_t n_rules = model.rules.size();
  auto rule_of = [&](uint32_t g) { return f.set(g).rule; };
  const bool all_kept = n_atoms == local.size();  // local ids are the ground ids
  auto head_of = [&](uint32_t g) { return all_kept ? f.head(g) : local[f.head(g)]; };
  // Stable counting sort of kept[b, e) by key(g) - lo, for keys in [lo, hi].
  auto counting_sort = [&](size_t b, size_t e, uint32_t lo, uint32_t hi, auto key_of) {
    std::vector<uint32_t> start(static_cast<size_t>(hi - lo) + 2, 0);
    for (size_t i = b; i < e; ++i) ++start[key_of(kept[i]) - lo + 1];
    for (size_t k = 0; k + 1 < start.size(); ++k) start[k + 1] += start[k];
    std::vector<uint32_t> out(e - b);
    for (size_t i = b; i < e; ++i) out[start[key_of(kept[i]) - lo]++] = kept[i];
    std::copy(out.begin(), out.end(), kept.begin() + static_cast<std::ptrdiff_t>(b));
  };
  // The same order where the key range outgrows the cache (a big graph's heads): each key
  // read once, then (key, g) pairs radix-sorted by the key's bits (logic/radix_sort.hpp),
  // where the counting sort's counters and scatter were a cache miss per grounding.
  auto sort_by_key = [&](size_t b, size_t e, uint32_t lo, uint32_t hi, auto key_of) {
    if (hi - lo < kCountingSortMaxRange) return counting_sort(b, e, lo, hi, key_of);
    std::vector<uint64_t> pairs(e - b);
    for (size_t i = b; i < e; ++i) pairs[i - b] = static_cast<uint64_t>(key_of(kept[i]) - lo) << 32 | kept[i];
    logic::radix_sort_bits(pairs, 32, static_cast<unsigned>(std::bit_width(hi - lo)));
    for (size_t i = b; i < e; ++i) kept[i] = static_cast<uint32_t>(pairs[i - b]);
  };
  // `kept` ascends, so its rules come in the order of the rule sets it meets (one check per set).
  bool in_rule_order = true;
  for (size_t i = 0, last_rule = 0; i < kept.size() && in_rule_order;) {
    const uint32_t set = f.set_of(kept[i]);
    in_rule_order = f.ground.rules[set].rule >= last_rule;
    last_rule = f.ground.rules[set].rule;
    i = static_cast<size_t>(std::lower_bound(kept.begin() + i, kept.end(), f.set_begin[set + 1]) - kept.begin());
  }
  std::vector<std::pair<size_t, size_t>> one_per_head;  // rule ranges whose heads strictly increase
  if (!in_rule_order) {
    if (!kept.empty()) {
      sort_by_key(0, kept.size(), 0, static_cast<uint32_t>(n_atoms), head_of);
      sort_by_key(0, kept.size(), 0, static_cast<uint32_t>(n_rules), rule_of);
    }
  } else {
    for (size_t b = 0; b < kept.size();) {
      size_t e = b;
      uint32_t lo = head_of(kept[b]), hi = lo, prev = lo;
      bool ordered = true, distinct = true;
      for (; e < kept.size() && rule_of(kept[e]) == rule_of(kept[b]); ++e) {
        const uint32_t h = head_of(kept[e]);
        ordered = ordered && prev <= h;
        distinct = distinct && (e == b || prev < h);
        lo = std::min(lo, h), hi = std::max(hi, h), prev = h;
      }
      if (distinct) one_per_head.emplace_back(b, e);
      // (Only rules without softmax: their range needs no ordering by group below.)
      const HeadGrid grid = ordered || model.rules[rule_of(kept[b])].softmax ? HeadGrid{} : head_grid(kept, b, e, f, head_of);
      if (grid.rows > 0) grids.push_back(grid);  // left unsorted: add_ground_rules transposes it
      else if (!ordered) sort_by_key(b, e, lo, hi, head_of);
      b = e;
    }
  }
  // Within each head, groundings by softmax group (a head with one grounding has nothing to order).
  auto distinct_range = one_per_head.begin();
  for (size_t b = 0; b < kept.size();) {
    if (distinct_range != one_per_head.end() && distinct_range->first == b) {
      b = distinct_range++->second;
      continue;
    }
    size_t e = b + 1;
    if (!model.rules[rule_of(kept[b])].softmax) {  // one group (0): nothing to order in the rule's range
      while (e < kept.size() && rule_of(kept[e]) == rule_of(kept[b])) ++e;
      b = e;
      continue;
    }
    bool ordered = true;
    while (e < kept.size() && rule_of(kept[e]) == rule_of(kept[b]) && head_of(kept[e]) == head_of(kept[b])) {
      ordered = ordered && group[kept[e - 1]] <= group[kept[e]];
      ++e;
    }
    if (!ordered)
      std::stable_sort(kept.begin() + b, kept.begin() + e, [&](uint32_t x, uint32_t y) { return group[x] < group[y]; });
    b = e;
  }
}

// Appends the ground rules of a HeadGrid (one rule set, no softmax) in head order: the
// grid transposed, visited in column strips (neural/grid_order.hpp).
void append_transposed(SampleNetwork& net, const FlatGroundRules& f, const std::vector<uint32_t>& kept,
                       const HeadGrid& grid, const std::vector<uint32_t>& local, bool all_kept) {
  const uint32_t set = f.set_of(kept[grid.begin]);
  const logic::GroundRuleSet& rs = f.ground.rules[set];
  const size_t n = grid.rows * grid.cols, ni = rs.n_inputs, p0 = net.head.size(), in0 = net.inputs.size();
  net.rule.insert(net.rule.end(), n, rs.rule);
  net.softmax_group.insert(net.softmax_group.end(), n, 0u);
  for (size_t t = 1; t <= n; ++t) net.inputs_begin.push_back(static_cast<uint32_t>(in0 + t * ni));
  net.head.resize(p0 + n);
  net.inputs.resize(in0 + n * ni);
  uint32_t* head = net.head.data() + p0;
  uint32_t* inputs = net.inputs.data() + in0;
  const uint32_t* member = kept.data() + grid.begin;
  visit_in_column_strips(grid.rows, grid.cols, [&](size_t i, size_t j) {
    const size_t row = member[j * grid.rows + i] - f.set_begin[set], at = i * grid.cols + j;
    head[at] = all_kept ? rs.head[row] : local[rs.head[row]];
    for (size_t k = 0; k < ni; ++k) {
      const uint32_t a = rs.inputs[row * ni + k];
      inputs[at * ni + k] = all_kept ? a : local[a];
    }
  });
}

// count copies of value appended to v (inline for the one-grounding runs of a sorted rule).
void append_copies(std::vector<uint32_t>& v, size_t count, uint32_t value) {
  if (count > 8) v.insert(v.end(), count, value);
  else
    for (size_t t = 0; t < count; ++t) v.push_back(value);
}

// The kept ground rules with their softmax groups, sorted by (rule, head, group, order).
void add_ground_rules(SampleNetwork& net, const TemplateModel& model, const FlatGroundRules& f, const Relevance& r,
                      const std::vector<uint32_t>& local) {
  std::vector<uint32_t> kept;
  kept.reserve(f.size());
  size_t n_inputs = 0;
  for (size_t k = 0; k < f.ground.rules.size(); ++k) {
    const logic::GroundRuleSet& rs = f.ground.rules[k];
    for (uint32_t row = 0, g = f.set_begin[k]; row < rs.size(); ++row, ++g)
      if (!r.dropped[g] && r.state[rs.head[row]] == 2) kept.push_back(g), n_inputs += rs.n_inputs;
  }
  const std::vector<uint32_t> group = softmax_groups(model, f, kept);
  std::vector<HeadGrid> grids;
  sort_ground_rules(kept, f, local, group, net.num_atoms(), model, grids);
  net.rule.reserve(kept.size());
  net.head.reserve(kept.size());
  net.softmax_group.reserve(kept.size());
  net.inputs_begin.reserve(kept.size() + 1);
  net.inputs.reserve(n_inputs);
  net.inputs_begin.push_back(0);
  // Runs of consecutive groundings of one rule set (a rule whose heads come in order, as
  // attention's n^2 scores do) are copied as blocks. When every atom is kept, local ids are
  // the ground ids: no lookup (attention's score atoms are read n apart here, so each
  // lookup would be a cache miss).
  // Runs are short where `kept` was sorted by head (a GCN's edge rule: one grounding per
  // run, read from a random row), so they are copied element by element rather than by a
  // memmove call each, and the rows of the grounding kPrefetch places ahead are fetched
  // early (at 2M edges the rows are 8 MB apart from cache; each read was a miss in line).
  const bool all_kept = net.num_atoms() == local.size();
  auto to_local = [&](const uint32_t* begin, size_t count, std::vector<uint32_t>& out) {
    if (all_kept && count > 8) out.insert(out.end(), begin, begin + count);
    else if (all_kept)
      for (size_t t = 0; t < count; ++t) out.push_back(begin[t]);
    else
      for (size_t t = 0; t < count; ++t) out.push_back(local[begin[t]]);
  };
  constexpr size_t kPrefetch = 16;
  auto grid = grids.begin();
  for (size_t i = 0; i < kept.size();) {
    if (grid != grids.end() && grid->begin == i) {
      append_transposed(net, f, kept, *grid, local, all_kept);
      i += grid->rows * grid->cols;
      ++grid;
      continue;
    }
    const uint32_t set = f.set_of(kept[i]), end = f.set_begin[set + 1];
    const logic::GroundRuleSet& rs = f.ground.rules[set];
    size_t e = i + 1;
    while (e < kept.size() && kept[e] == kept[e - 1] + 1 && kept[e] < end) ++e;
    const size_t count = e - i, row = kept[i] - f.set_begin[set];
    if (i + kPrefetch < kept.size()) {
      const uint32_t ahead = kept[i + kPrefetch];
      if (ahead >= f.set_begin[set] && ahead < end) {
        const size_t ahead_row = ahead - f.set_begin[set];
        __builtin_prefetch(rs.head.data() + ahead_row);
        if (rs.n_inputs > 0) __builtin_prefetch(rs.inputs.data() + ahead_row * rs.n_inputs);
      }
    }
    append_copies(net.rule, count, rs.rule);
    to_local(rs.head.data() + row, count, net.head);
    if (model.rules[rs.rule].softmax)
      net.softmax_group.insert(net.softmax_group.end(), group.begin() + kept[i], group.begin() + kept[i] + count);
    else
      append_copies(net.softmax_group, count, 0u);  // (one group for the others)
    to_local(rs.inputs.data() + row * rs.n_inputs, count * rs.n_inputs, net.inputs);
    for (size_t t = 0; t < count; ++t) net.inputs_begin.push_back(net.inputs_begin.back() + rs.n_inputs);
    i = e;
  }
}

// The kept pair blocks, their atoms renumbered to local ids, with their two depths.
void add_pair_blocks(SampleNetwork& net, const logic::GroundSample& ground, const Relevance& r,
                     const std::vector<uint32_t>& local) {
  for (const logic::PairBlock& b : ground.pair_blocks) {
    if (!block_kept(b, r.state)) continue;
    SampleNetwork::PairBlock nb;
    const BlockDepths d = block_depths(b, r.depth);
    nb.pair_depth = d.pairs;
    nb.head_depth = d.head;
    nb.block = b;
    nb.block.for_each_atom([&](uint32_t& a) {
      a = local[a];
      if (a == kNone) throw Error(ErrorKind::Runtime, "an atom of a needed pair block was pruned");
    });
    net.pair_blocks.push_back(std::move(nb));
  }
}

// A dataset's networks live as long as it is trained: grown by push_back, their arrays held
// up to twice their entries (on NCI1 about a third of the networks' memory).
void shrink_to_fit(SampleNetwork& net) {
  for (auto* v : {&net.atom_depth, &net.atom_predicate, &net.atom_fact, &net.atom_ground_id, &net.fact_template,
                  &net.fact_data_begin, &net.fact_example_param, &net.rule, &net.head, &net.softmax_group,
                  &net.inputs_begin, &net.inputs})
    v->shrink_to_fit();
  net.fact_shape.shrink_to_fit();
  net.fact_data.shrink_to_fit();
  net.query_atoms.shrink_to_fit();
}

}  // namespace

uint64_t structure_hash(const SampleNetwork& net) {
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
  mix(h, net.fact_example_param.size());
  for (uint32_t p : net.fact_example_param) mix(h, p);
  mix(h, net.pair_blocks.size());
  for (const SampleNetwork::PairBlock& nb : net.pair_blocks) {
    const logic::PairBlock& b = nb.block;
    for (uint64_t x : {uint64_t(b.score_rule), uint64_t(b.sum_rule), uint64_t(b.sum_pair_input), uint64_t(nb.pair_depth),
                       uint64_t(nb.head_depth)})
      mix(h, x);
    for (const auto* v : {&b.score_inputs, &b.row_atom, &b.head_atom, &b.column_atom, &b.value_atom, &b.band,
                          &b.band_first}) {
      mix(h, v->size());
      for (uint32_t x : *v) mix(h, x);
    }
  }
  return h;
}

// A batch-normalised predicate's atoms all at one depth (its deepest), and everything
// that reads them moved down as far as needed: batch statistics are taken at one point of
// a training step, where a GIN's isolated nodes (no neighbour sum) would otherwise put
// some of a layer's atoms one depth earlier than the rest. Each round settles at least the
// normalised predicates that depend on no unsettled one, so without recursion through one
// of them (its atoms feeding each other: no common depth exists) the rounds end after at
// most K + 1 of K predicates; more is refused instead of looping on.
void align_normalized_depths(SampleNetwork& net, const TemplateModel& model) {
  std::vector<uint32_t> norm_depth(model.predicates.size(), 0);
  for (size_t round = 0;; ++round) {
    bool moved = false;
    std::fill(norm_depth.begin(), norm_depth.end(), 0);
    for (size_t a = 0; a < net.num_atoms(); ++a) {
      const uint32_t p = net.atom_predicate[a];
      if (p != kNone && model.predicates[p].norm != kNoParam) norm_depth[p] = std::max(norm_depth[p], net.atom_depth[a]);
    }
    for (size_t a = 0; a < net.num_atoms(); ++a) {
      const uint32_t p = net.atom_predicate[a];
      if (p != kNone && net.atom_depth[a] != 0 && net.atom_depth[a] < norm_depth[p]) {
        net.atom_depth[a] = norm_depth[p];
        moved = true;
      }
    }
    if (!moved) return;
    if (round > 2 * model.batch_norms.size() + 1)
      throw Error(ErrorKind::Semantic, "normalization=batch: a batch-normalised predicate depends on itself "
                                       "(recursion through it), so its atoms have no common layer");
    // Heads below their inputs move down until none is (the ground rules form no cycle).
    for (bool relaxed = true; relaxed;) {
      relaxed = false;
      for (size_t g = 0; g < net.num_ground_rules(); ++g) {
        uint32_t depth = 1;
        for (uint32_t i = net.inputs_begin[g]; i < net.inputs_begin[g + 1]; ++i)
          depth = std::max(depth, net.atom_depth[net.inputs[i]] + 1);
        if (net.atom_depth[net.head[g]] < depth) {
          net.atom_depth[net.head[g]] = depth;
          relaxed = true;
        }
      }
    }
  }
}

SampleNetwork neuralize(const TemplateModel& model, const ExampleAst& example,
                        const logic::GroundSample& ground, bool learnable_facts) {
  return neuralize(model, logic::ExampleFacts(example), ground, learnable_facts);
}

SampleNetwork neuralize(const TemplateModel& model, const logic::FactSource& facts,
                        const logic::GroundSample& ground, bool learnable_facts) {
  SampleNetwork net;
  FlatGroundRules flat = flatten(model, ground);
  Relevance relevance;
  if (!layered_relevance(flat, relevance)) {
    if (!ground.pair_blocks.empty())
      throw Error(ErrorKind::Runtime, "pair blocks in a sample whose ground rules have no levels (recursion)");
    index_by_head(flat);
    relevance = search_from_queries(flat);
  }
  net.dropped_cycle_rules = relevance.dropped_count;
  const std::vector<uint32_t> local = add_atoms(net, relevance);
  // The network holds the depths now; only pair blocks read them again (held beside the
  // ground rules' copy, a big graph's 4 bytes per atom).
  if (ground.pair_blocks.empty()) std::vector<uint32_t>().swap(relevance.depth);
  add_facts(net, model, facts, flat, learnable_facts);
  add_ground_rules(net, model, flat, relevance, local);
  add_pair_blocks(net, ground, relevance, local);
  for (const auto& atoms : ground.query_atoms) {
    std::vector<uint32_t> q;
    for (uint32_t a : atoms) q.push_back(local[a]);
    net.query_atoms.push_back(std::move(q));
  }
  if (!model.batch_norms.empty()) align_normalized_depths(net, model);
  net.structure_hash = structure_hash(net);
  shrink_to_fit(net);
  return net;
}

}  // namespace lrnn::neural
