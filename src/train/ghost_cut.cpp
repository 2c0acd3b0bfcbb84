#include "train/ghost_cut.hpp"

#include <algorithm>

#include "exec/plan.hpp"
#include "lrnn/diagnostics.hpp"
#include "train/dataset.hpp"
#include "train/partition.hpp"

namespace lrnn::train {

namespace {

// The ghosts of a rank's part, by predicate: each ghost's value is zeros of its predicate's
// shape (each pass writes the owner's values over them), held once per predicate.
struct GhostFacts {
  std::vector<ValueSpec> zeros;     // per ghost predicate
  std::vector<std::string> names;   // per ghost predicate
  std::vector<uint32_t> predicate;  // per ghost: its predicate's index above
};

// The facts of a rank's part followed by its ghosts.
class WithGhosts final : public logic::FactSource {
 public:
  WithGhosts(std::unique_ptr<logic::FactSource> base, GhostFacts ghosts)
      : base_(std::move(base)), ghosts_(std::move(ghosts)) {}
  size_t size() const override { return base_->size() + ghosts_.predicate.size(); }
  const Literal& fact(size_t i, Literal& scratch) const override {
    if (i < base_->size()) return base_->fact(i, scratch);
    scratch = Literal{};
    scratch.predicate = ghosts_.names[ghosts_.predicate[i - base_->size()]];
    return scratch;
  }
  const ValueSpec* value(size_t i) const override {
    return i < base_->size() ? base_->value(i) : &ghosts_.zeros[ghosts_.predicate[i - base_->size()]];
  }

 private:
  std::unique_ptr<logic::FactSource> base_;
  GhostFacts ghosts_;
};

ValueSpec zeros_of(neural::Shape s) {
  ValueSpec v;
  v.rows = s.rows;
  v.cols = s.cols;
  v.kind = s.size() == 1 ? ValueSpec::Kind::Scalar : s.cols == 1 ? ValueSpec::Kind::Vector : ValueSpec::Kind::Matrix;
  v.data.assign(static_cast<size_t>(s.size()), 0.0);
  return v;
}

[[noreturn]] void cannot(const std::string& why) {
  throw Error(ErrorKind::Semantic, "one sample cannot be cut at ghost atoms over MPI ranks: " + why +
                                       " (docs/distributed.md \"One sample over many ranks\")");
}

}  // namespace

std::map<std::string, uint32_t> predicate_levels(const TemplateAst& tmpl) {
  std::map<std::string, uint32_t> level;
  for (const Rule& r : tmpl.rules) level.emplace(predicate_key(r.head), 1);
  // Longest paths by relaxation; a level above the number of rules means a cycle.
  for (size_t round = 0;; ++round) {
    bool changed = false;
    for (const Rule& r : tmpl.rules) {
      uint32_t l = 1;
      for (const Literal& lit : r.body) {
        if (lit.builtin) continue;
        auto it = level.find(predicate_key(lit));
        if (it != level.end()) l = std::max(l, it->second + 1);
      }
      uint32_t& held = level[predicate_key(r.head)];
      if (l > held) {
        held = l;
        changed = true;
      }
    }
    if (!changed) return level;
    if (round > tmpl.rules.size() + 1) return {};
  }
}

std::set<std::string> query_closure(const TemplateAst& tmpl, const std::vector<std::string>& query_predicates) {
  std::set<std::string> seen(query_predicates.begin(), query_predicates.end());
  std::vector<std::string> todo(query_predicates.begin(), query_predicates.end());
  while (!todo.empty()) {
    const std::string p = todo.back();
    todo.pop_back();
    for (const Rule& r : tmpl.rules) {
      if (predicate_key(r.head) != p) continue;
      for (const Literal& lit : r.body)
        if (!lit.builtin && seen.insert(predicate_key(lit)).second) todo.push_back(predicate_key(lit));
    }
  }
  return seen;
}

std::unordered_map<std::string, neural::Shape> ghost_shapes(const neural::TemplateModel& model,
                                                           const neural::SampleNetwork& probe) {
  const exec::Plan plan = exec::build_plan(model, {&probe});
  std::unordered_map<std::string, neural::Shape> shapes;
  for (size_t l = 0; l < probe.num_atoms(); ++l)
    if (probe.atom_depth[l] > 0) shapes.emplace(model.predicates[probe.atom_predicate[l]].key(), plan.atom_shapes[0][l]);
  return shapes;
}

GhostCut::GhostCut(const logic::Program& program, std::map<std::string, uint32_t> levels, const TemplateAst& tmpl,
                   const std::vector<std::string>& query_predicates,
                   const std::unordered_map<std::string, int>& owners, int rank,
                   std::unordered_map<std::string, neural::Shape> shapes)
    : program_(program),
      owners_(owners),
      shapes_(std::move(shapes)),
      rank_(rank),
      levels_(std::move(levels)),
      closure_(query_closure(tmpl, query_predicates)) {
  if (levels_.empty()) cannot("the template has no layer order");
}

int GhostCut::owner_of_symbol(uint32_t symbol) {
  // Asked for every ground rule's head and inputs (millions on a big graph): the owners in
  // tables by id, of the interned symbols (a graph's node names) and of the small
  // non-negative integers (a graph of arrays' node ids), other tagged integers in a map.
  const auto from_table = [&](std::vector<int>& table, size_t at) {
    if (at >= table.size()) table.resize(std::max<size_t>(at + 1, 2 * table.size()), kUnasked);
    int& owner = table[at];
    if (owner == kUnasked) owner = owner_by_name(symbol);
    return owner;
  };
  if (!(symbol & logic::Symbols::kIntTag)) return from_table(owner_table_, symbol);
  const int64_t value = logic::Symbols::small_int(symbol);
  if (value >= 0 && value < kIntTableSize) return from_table(int_owner_table_, size_t(value));
  auto it = owner_cache_.find(symbol);
  if (it != owner_cache_.end()) return it->second;
  const int owner = owner_by_name(symbol);
  owner_cache_.emplace(symbol, owner);
  return owner;
}

int GhostCut::owner_by_name(uint32_t symbol) const {
  const logic::Symbols& symbols = program_.symbols();
  const std::string name = symbols.name(symbol);
  const auto at = owners_.find(constant_key(symbols.is_number(symbol) ? Term::Kind::Number : Term::Kind::Constant, name));
  // A constant no fact or query holds (made by a builtin): nobody's, read where it is made.
  return at == owners_.end() ? -1 : at->second;
}

std::string GhostCut::predicate_key(uint32_t p) const {
  return program_.predicate_name(p) + "/" + std::to_string(program_.predicate_arity(p));
}

uint32_t GhostCut::level_of(uint32_t p) const {
  auto it = levels_.find(predicate_key(p));
  return it == levels_.end() ? 0 : it->second;
}

void GhostCut::before_neuralize(logic::GroundSample& ground, std::unique_ptr<logic::FactSource>& facts) {
  if (!ground.pair_blocks.empty()) cannot("attention blocks");
  const size_t n = ground.num_atoms();
  const auto first_owner = [&](uint32_t a) {
    return ground.atom_args_begin[a] == ground.atom_args_begin[a + 1]
               ? -1
               : owner_of_symbol(ground.atom_args[ground.atom_args_begin[a]]);
  };
  std::vector<uint8_t> derived(n, 0);
  for (const logic::GroundRuleSet& set : ground.rules)
    for (uint32_t h : set.head) derived[h] = 1;

  // Keep the ground rules of owned heads; their inputs derived elsewhere become ghosts.
  std::vector<uint8_t> is_ghost(n, 0);
  GhostFacts ghost_facts;
  std::unordered_map<uint32_t, uint32_t> ghost_predicate;  // logic predicate -> GhostFacts index
  std::vector<uint8_t> rooted(n, 0);
  for (logic::GroundRuleSet& set : ground.rules) {
    size_t kept = 0;
    for (size_t g = 0; g < set.size(); ++g) {
      const uint32_t h = set.head[g];
      if (first_owner(h) != rank_) continue;
      if (!rooted[h] && closure_.count(predicate_key(ground.atom_pred[h]))) {
        rooted[h] = 1;
        root_ground_.push_back(h);
      }
      for (uint32_t k = 0; k < set.n_inputs; ++k) {
        const uint32_t a = set.inputs[g * set.n_inputs + k];
        if (!derived[a] || is_ghost[a]) continue;
        const int owner = first_owner(a);
        if (owner == rank_) continue;
        if (owner < 0) cannot("the atom " + program_.atom_text(ground, a) + " has no owner");
        if ((a < ground.atom_example_fact.size() && ground.atom_example_fact[a] != logic::kNone) ||
            (a < ground.atom_template_fact.size() && ground.atom_template_fact[a] != logic::kNone))
          cannot("the atom " + program_.atom_text(ground, a) + " is derived and also a fact");
        auto shape = shapes_.find(predicate_key(ground.atom_pred[a]));
        if (shape == shapes_.end())
          cannot("no shape known for the atoms of " + program_.predicate_name(ground.atom_pred[a]));
        is_ghost[a] = 1;
        auto [at, fresh] = ghost_predicate.emplace(ground.atom_pred[a], static_cast<uint32_t>(ghost_facts.zeros.size()));
        if (fresh) {
          ghost_facts.zeros.push_back(zeros_of(shape->second));
          ghost_facts.names.push_back(program_.predicate_name(ground.atom_pred[a]));
        }
        ghost_facts.predicate.push_back(at->second);
        ghost_ground_.push_back(a);
      }
      if (kept != g) {
        set.head[kept] = h;
        std::copy_n(set.inputs.begin() + g * set.n_inputs, set.n_inputs, set.inputs.begin() + kept * set.n_inputs);
        std::copy_n(set.bindings.begin() + g * set.n_vars, set.n_vars, set.bindings.begin() + kept * set.n_vars);
      }
      ++kept;
    }
    set.head.resize(kept);
    set.inputs.resize(kept * set.n_inputs);
    set.bindings.resize(kept * set.n_vars);
    // The other ranks' ground rules are freed before neuralizing, which makes the network:
    // a rank's peak memory is its grounding's or its network's, not both in full.
    set.head.shrink_to_fit();
    set.inputs.shrink_to_fit();
    set.bindings.shrink_to_fit();
  }
  std::erase_if(ground.rules, [](const logic::GroundRuleSet& s) { return s.size() == 0; });
  if (ground.atom_example_fact.size() < n) ground.atom_example_fact.resize(n, logic::kNone);
  for (size_t k = 0; k < ghost_ground_.size(); ++k)
    ground.atom_example_fact[ghost_ground_[k]] = static_cast<uint32_t>(facts->size() + k);
  // The owned derived atoms stay whether or not this rank's queries read them: other ranks
  // may (an extra query, taken off again after neuralizing).
  ground.query_atoms.push_back(root_ground_);
  facts = std::make_unique<WithGhosts>(std::move(facts), std::move(ghost_facts));
}

// The ghosts' facts moved after every other fact, so that their values lie last among the
// data facts' (from data_gradients_from on: the only data whose gradients are needed).
// `ghost_facts`: the ghosts' facts of `net`, in the order they are to lie.
void GhostCut::ghosts_last(neural::SampleNetwork& net, const std::vector<uint32_t>& ghost_facts) {
  if (!net.fact_example_param.empty()) cannot("learnable example facts");
  data_gradients_from = ghost_facts_last(net, ghost_facts);
}

uint32_t ghost_facts_last(neural::SampleNetwork& net, const std::vector<uint32_t>& ghost_facts) {
  const size_t facts = net.num_facts();
  std::vector<uint8_t> ghost(facts, 0);
  for (uint32_t f : ghost_facts) ghost[f] = 1;
  std::vector<uint32_t> order;
  for (uint32_t f = 0; f < facts; ++f)
    if (!ghost[f]) order.push_back(f);
  order.insert(order.end(), ghost_facts.begin(), ghost_facts.end());
  std::vector<uint32_t> new_index(facts);
  std::vector<uint32_t> templ(facts), begin{0};
  std::vector<neural::Shape> shape(facts);
  // The data move in place: the non-ghosts' values only ever move down (in their order). The
  // ghosts' hold none (each pass's exchange writes the owners' values there): fact_data ends
  // where they begin (a big graph's ghosts were a fifth of a rank's network).
  uint32_t data_gradients_from = 0;
  for (uint32_t k = 0; k < facts; ++k) {
    const uint32_t f = order[k];
    new_index[f] = k;
    templ[k] = net.fact_template[f];
    shape[k] = net.fact_shape[f];
    const uint32_t from = net.fact_data_begin[f], size = net.fact_data_begin[f + 1] - from;
    if (!ghost[f]) {
      std::copy(net.fact_data.begin() + from, net.fact_data.begin() + from + size, net.fact_data.begin() + begin.back());
      data_gradients_from = begin.back() + size;  // the non-ghosts' data ends here
    }
    begin.push_back(begin.back() + size);
  }
  net.fact_data.resize(data_gradients_from);
  net.fact_data.shrink_to_fit();
  for (uint32_t& f : net.atom_fact)
    if (f != neural::kNone) f = new_index[f];
  net.fact_template = std::move(templ);
  net.fact_shape = std::move(shape);
  net.fact_data_begin = std::move(begin);
  return data_gradients_from;
}

void GhostCut::after_neuralize(logic::GroundSample& ground, neural::SampleNetwork& net) {
  ground.query_atoms.pop_back();
  const std::vector<uint32_t> roots = std::move(net.query_atoms.back());
  net.query_atoms.pop_back();
  std::vector<uint32_t> local_of(ground.num_atoms(), neural::kNone);  // ground atom -> local atom
  for (uint32_t l = 0; l < net.num_atoms(); ++l) local_of[net.atom_ground_id[l]] = l;
  // Every derived atom at its predicate's level: the same layer on every rank.
  for (uint32_t l = 0; l < net.num_atoms(); ++l)
    if (net.atom_depth[l] > 0) {
      const uint32_t level = level_of(ground.atom_pred[net.atom_ground_id[l]]);
      if (level < net.atom_depth[l]) cannot("an atom deeper than its predicate's level");
      net.atom_depth[l] = level;
    }
  for (uint32_t g = 0; g < net.num_ground_rules(); ++g)
    for (uint32_t i = net.inputs_begin[g]; i < net.inputs_begin[g + 1]; ++i)
      if (net.atom_depth[net.inputs[i]] >= net.atom_depth[net.head[g]]) cannot("a rule reading its own level");
  for (size_t k = 0; k < root_ground_.size(); ++k) {
    const uint32_t l = roots[k];
    owned.emplace(program_.atom_text(ground, root_ground_[k]), Owned{l, net.atom_depth[l]});
  }
  // The ghosts by level, then owner (as GhostExchange receives them: each level's values
  // then arrive where they lie, in one block).
  for (uint32_t a : ghost_ground_) {
    if (local_of[a] == neural::kNone) continue;  // read only by atoms no query needs
    ghosts.push_back({program_.atom_text(ground, a), owner_of_symbol(ground.atom_args[ground.atom_args_begin[a]]),
                      level_of(ground.atom_pred[a]), local_of[a]});
  }
  std::stable_sort(ghosts.begin(), ghosts.end(), [](const Ghost& a, const Ghost& b) {
    return a.level != b.level ? a.level < b.level : a.owner < b.owner;
  });
  std::vector<uint32_t> ghost_facts;
  for (const Ghost& g : ghosts) ghost_facts.push_back(net.atom_fact[g.local]);
  ghosts_last(net, ghost_facts);
  net.structure_hash = neural::structure_hash(net);
}

}  // namespace lrnn::train
