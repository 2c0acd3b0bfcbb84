// build_plan: the plain plan (facts, rule groups gathered per grounding, atom groups),
// with the named rewrites of rewrites/registry.hpp applied to the rule groups they fit.
#include "exec/plan.hpp"

#include "exec/atom_sum.hpp"
#include "exec/direct_product.hpp"
#include "exec/plan_builder.hpp"
#include "neural/grid_order.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <utility>

namespace lrnn::exec::planning {

std::string text(Shape s) { return std::to_string(s.rows) + "x" + std::to_string(s.cols); }

std::string literal_text(const Literal& l) {
  std::string t = (l.soft_negated ? "~" : "") + l.predicate;
  if (!l.args.empty()) {
    t += "(";
    for (size_t i = 0; i < l.args.size(); ++i) t += (i ? ", " : "") + l.args[i].text;
    t += ")";
  }
  if (l.transposed) t += "^T";
  return t;
}

std::string rule_name(const neural::TemplateModel& model, uint32_t r) {
  return "rule " + std::to_string(r + 1) + " (head " + literal_text(model.ast().rules[r].head) + ")";
}

bool real_transpose(const InputBlock& B) {
  return B.transposed && B.wout_shape.rows > 1 && B.wout_shape.cols > 1;
}

namespace {

// The aggregated shape of a rule group: the aggregation's shape rule (neural/functions) for
// its segments, which for concat must all be equally long.
Shape group_aggregation_shape(AggregationKind kind, Shape in, const std::vector<uint32_t>& seg,
                              const std::string& where, const Span& span) {
  const uint32_t len = seg.size() > 1 ? seg[1] - seg[0] : 0;
  if (kind == AggregationKind::Concat)
    for (size_t j = 1; j + 1 < seg.size(); ++j)
      if (seg[j + 1] - seg[j] != len)
        throw Error(ErrorKind::Shape, span,
                    where + ": concat aggregation needs the same number of groundings for every head, found " +
                        std::to_string(len) + " and " + std::to_string(seg[j + 1] - seg[j]));
  try {
    return aggregation_shape(kind, in, len);
  } catch (const Error& e) {
    throw Error(ErrorKind::Shape, span, where + ": " + e.message());
  }
}

// weight_mode, refusing a weight that cannot apply with the message `message()` gives
// (naming the literal or the head) at `span`.
template <class Message>
WeightMode weight_mode_or_refuse(Shape w, Shape in, Shape& out, const Span& span, Message message) {
  try {
    return weight_mode(w, in, out);
  } catch (const Error&) {
    throw Error(ErrorKind::Shape, span, message());
  }
}

void check_atom_offset_shape(const neural::TemplateModel& model, uint32_t offset, Shape red_shape,
                             const std::string& where) {
  const Shape b = model.params.info(offset).shape;
  if (!b.scalar() && !(b == red_shape))
    throw Error(ErrorKind::Shape, model.params.info(offset).span,
                where + ": offset shape " + text(b) + " differs from the atom value's shape " + text(red_shape));
}

}  // namespace

Plan PlanBuilder::build() {
  plan.atom_offsets.resize(n_samples);
  plan.atom_shapes.resize(n_samples);
  for (size_t s = 0; s < n_samples; ++s) {
    plan.atom_offsets[s].assign(samples[s]->num_atoms(), kNoValue);
    plan.atom_shapes[s].assign(samples[s]->num_atoms(), Shape{1, 1});
  }
  place_facts();
  bucket_by_depth();
  auto rule_it = rule_buckets.begin();
  auto atom_it = atom_buckets.begin();
  // The values each call allocates go with the first step it adds (Plan::step_values).
  const auto planned = [&](auto&& add) {
    const size_t first_step = plan.steps.size();
    const uint32_t begin = alloc.size();
    add();
    for (size_t k = first_step; k < plan.steps.size(); ++k)
      plan.step_values.emplace_back(k == first_step ? begin : alloc.size(), alloc.size());
  };
  for (uint32_t depth = 1; depth <= max_depth; ++depth) {
    plan.depth_steps.push_back(static_cast<uint32_t>(plan.steps.size()));
    contributions.assign(model.predicates.size(), {});
    sum_rows_of_atoms.clear();
    head_rows.clear();
    reduced_rules.clear();
    depth_first_group = plan.rule_groups.size();
    if (options.merge_shared_weight_rules) merge_shared_weight_rules(rule_it, depth);
    for (; rule_it != rule_buckets.end() && rule_it->first.first == depth; ++rule_it)
      if (!rule_it->second.empty())
        planned([&] { add_rule_group(rule_it->first.second, std::move(rule_it->second)); });  // (not copied: n^2)
    planned([&] { add_pair_block_groups(depth); });
    for (; atom_it != atom_buckets.end() && atom_it->first.first == depth; ++atom_it)
      planned([&] { add_atom_group(atom_it->first.second, atom_it->second); });
  }
  plan.depth_steps.push_back(static_cast<uint32_t>(plan.steps.size()));
  if (!options.fact_gradients) drop_fact_input_gradients();
  place_outputs();
  move_weights_after_readouts();
  // (Only weight_after_readout leaves such groups; inspection plans, which never have them,
  // keep one group per (depth, rule): train/inspect.cpp finds each by position.)
  if (options.share_head_rows) drop_idle_rule_groups();
  plan.hot_only_facts = hot_only_facts(plan, data_values, options);
  plan.num_values = alloc.size();
  return std::move(plan);
}

// Transforms that read only data facts (offsets below data_values: forward copies the
// data there) compute no input gradient. With learnable example facts among the data,
// every transform keeps it (their gradients are read).
void PlanBuilder::drop_fact_input_gradients() {
  if (!plan.example_fact_off.empty()) return;
  const size_t data_end = std::min<size_t>(data_values, options.data_gradients_from);
  for (RuleGroup& G : plan.rule_groups) {
    TransformSum& t = G.transform;
    if (!t.enabled || t.sources.empty()) continue;
    const size_t last = *std::max_element(t.sources.begin(), t.sources.end());
    t.input_gradients = last + G.inputs[0].raw_shape.size() > data_end;
  }
}

void PlanBuilder::place_facts() {
  // Facts: data first (one contiguous copy per forward), then template facts.
  fact_off.resize(n_samples);
  for (size_t s = 0; s < n_samples; ++s) data_values += neural::fact_values_size(*samples[s]);
  if (options.fact_values) plan.data.reserve(data_values);
  for (size_t s = 0; s < n_samples; ++s) {
    const neural::SampleNetwork& net = *samples[s];
    fact_off[s].assign(net.num_facts(), kNoValue);
    for (size_t f = 0; f < net.num_facts(); ++f) {
      if (net.fact_template[f] != neural::kNone) continue;
      const size_t size = net.fact_data_begin[f + 1] - net.fact_data_begin[f];
      fact_off[s][f] = alloc.take(size);
      if (options.fact_values) {  // a placeholder past the data's end: zeros
        const size_t first = std::min<size_t>(net.fact_data_begin[f], net.fact_data.size());
        const size_t last = std::min<size_t>(net.fact_data_begin[f + 1], net.fact_data.size());
        plan.data.insert(plan.data.end(), net.fact_data.begin() + first, net.fact_data.begin() + last);
        plan.data.resize(plan.data.size() + size - (last - first), 0.0);
      }
      if (!net.fact_example_param.empty() && net.fact_example_param[f] != neural::kNone) {
        plan.example_fact_off.push_back(fact_off[s][f]);
        plan.example_fact_param.push_back(net.fact_example_param[f]);
      }
    }
  }
  for (size_t s = 0; s < n_samples; ++s) {
    const neural::SampleNetwork& net = *samples[s];
    for (size_t f = 0; f < net.num_facts(); ++f) {
      if (net.fact_template[f] == neural::kNone) continue;
      fact_off[s][f] = alloc.take(net.fact_shape[f].size());
      plan.param_fact_off.push_back(fact_off[s][f]);
      plan.param_fact_param.push_back(model.facts[net.fact_template[f]].param);
    }
    for (size_t l = 0; l < net.num_atoms(); ++l) {
      if (net.atom_depth[l] == 0) {
        const uint32_t f = net.atom_fact[l];
        plan.atom_offsets[s][l] = fact_off[s][f];
        plan.atom_shapes[s][l] = net.fact_shape[f];
      }
    }
  }
}

// Buckets: derived atoms by (depth, predicate), ground rules by (head depth, rule).
// Counted first, so each bucket is filled without regrowing (attention's buckets hold
// n^2 members); consecutive members mostly share a bucket (ground rules come sorted by
// rule), so the map is searched once per run of equal keys.
void PlanBuilder::bucket_by_depth() {
  using Key = std::pair<uint32_t, uint32_t>;
  auto for_each_member = [&](auto visit) {  // visit(is_atom, key, ref): atoms, then ground rules
    for (uint32_t s = 0; s < n_samples; ++s) {
      const neural::SampleNetwork& net = *samples[s];
      for (uint32_t l = 0; l < net.num_atoms(); ++l)
        if (net.atom_depth[l] != 0) visit(true, Key{net.atom_depth[l], net.atom_predicate[l]}, Ref{s, l});
      for (uint32_t g = 0; g < net.num_ground_rules(); ++g)
        visit(false, Key{net.atom_depth[net.head[g]], net.rule[g]}, Ref{s, g});
    }
  };
  std::map<Key, size_t> atom_counts, rule_counts;
  for_each_member([&, last = Key{0, 0}, count = static_cast<size_t*>(nullptr), last_atom = false](
                      bool atom, const Key& key, const Ref&) mutable {
    if (!count || key != last || atom != last_atom) count = &(atom ? atom_counts : rule_counts)[key];
    last = key, last_atom = atom;
    ++*count;
    if (atom) max_depth = std::max(max_depth, key.first);
  });
  for (const auto& [key, n] : atom_counts) atom_buckets[key].reserve(n);
  for (const auto& [key, n] : rule_counts) rule_buckets[key].reserve(n);
  for_each_member([&, last = Key{0, 0}, bucket = static_cast<std::vector<Ref>*>(nullptr), last_atom = false](
                      bool atom, const Key& key, const Ref& ref) mutable {
    if (!bucket || key != last || atom != last_atom) bucket = &(atom ? atom_buckets : rule_buckets)[key];
    last = key, last_atom = atom;
    bucket->push_back(ref);
  });
}

// Input i of rule r over its groundings `members`: where each input value lives, its
// shape (the same for all) and how the literal's weight applies to it. `scanned`: the
// values' offsets and shape, already found by scan_members.
InputBlock PlanBuilder::input_block(uint32_t r, size_t i, const std::vector<Ref>& members, InputBlock* scanned) const {
  const neural::InputSpec& in = spec_of(r).inputs[i];
  const Literal& lit = model.ast().rules[r].body[in.body_index];
  InputBlock B;
  if (scanned) B = std::move(*scanned);
  else input_values(B, r, i, members);
  B.soft_negated = in.soft_negated;
  B.transposed = in.transposed;
  B.weight = in.weight;
  if (B.weight != neural::kNoParam) {
    const Shape w = model.params.info(B.weight).shape;
    B.mode = weight_mode_or_refuse(w, B.raw_shape, B.wout_shape, lit.span, [&] {
      return rule_name(model, r) + ", literal " + literal_text(lit) + ": weight shape " + text(w) +
             " cannot apply to input shape " + text(B.raw_shape);
    });
  } else {
    B.wout_shape = B.raw_shape;
  }
  B.out_shape = B.transposed ? Shape{B.wout_shape.cols, B.wout_shape.rows} : B.wout_shape;
  return B;
}

// B.src and B.raw_shape of input i of rule r; throws naming the literal when its values
// differ in shape.
void PlanBuilder::input_values(InputBlock& B, uint32_t r, size_t i, const std::vector<Ref>& members) const {
  const Literal& lit = model.ast().rules[r].body[spec_of(r).inputs[i].body_index];
  B.src.resize(members.size());
  const bool reduced = !reduced_rules.empty();  // (a merged group's members come from two rules)
  if (!members.empty()) B.raw_shape = plan.atom_shapes[members[0].first][input_atom(members[0], i)];
  // Members come in runs of one sample: its arrays are looked up once per run (attention
  // has n^2 members in one run).
  for (size_t k = 0; k < members.size();) {
    const uint32_t s = members[k].first;
    const neural::SampleNetwork& net = *samples[s];
    const uint32_t* begin = net.inputs_begin.data();
    const uint32_t* atoms = net.inputs.data() + i;
    const uint32_t* offsets = plan.atom_offsets[s].data();
    const Shape* shapes = plan.atom_shapes[s].data();
    for (; k < members.size() && members[k].first == s; ++k) {
      const uint32_t g = members[k].second;
      const uint32_t atom = reduced ? net.inputs[begin[g] + input_position(net.rule[g], i)] : atoms[begin[g]];
      if (!(shapes[atom] == B.raw_shape))
        throw Error(ErrorKind::Shape, lit.span,
                    rule_name(model, r) + ", literal " + literal_text(lit) +
                        ": input values have different shapes " + text(B.raw_shape) + " and " + text(shapes[atom]));
      B.src[k] = offsets[atom];
    }
  }
}

// One pass over the members reading each one's ground rule once, where the per-input,
// per-head and per-segment steps read it once each (attention's scores list their ground
// rules n apart, so each pass costs a cache miss per member): every input's value offsets
// and shape, the head segments with each head's atom, and, when the softmax keys never
// decrease, the softmax segments (softmax_in_order). False, with nothing kept, when an
// input's values differ in shape (input_values then names the literal).
bool PlanBuilder::scan_members(RuleGroup& G, size_t n_inputs, bool softmax, const std::vector<Ref>& members,
                               MemberScan& scan) const {
  std::vector<InputBlock>& blocks = scan.blocks;
  std::vector<uint32_t>& head_atoms = scan.head_atoms;
  bool& softmax_in_order = scan.softmax_in_order;
  const size_t n = members.size();
  const bool reduced = !reduced_rules.empty();  // (a merged group's members come from two rules)
  blocks.assign(n_inputs, InputBlock{});
  for (size_t i = 0; i < n_inputs; ++i) {
    blocks[i].src.resize(n);
    if (n) blocks[i].raw_shape = plan.atom_shapes[members[0].first][input_atom(members[0], i)];
  }
  G.head_segments.assign(1, 0);
  if (softmax) G.softmax_segments.assign(1, 0);
  softmax_in_order = softmax;
  head_atoms.clear();
  uint32_t last_head = 0, last_group = 0;
  for (size_t k = 0; k < n;) {
    const uint32_t s = members[k].first;
    const neural::SampleNetwork& net = *samples[s];
    const uint32_t* begin = net.inputs_begin.data();
    const uint32_t* offsets = plan.atom_offsets[s].data();
    const Shape* shapes = plan.atom_shapes[s].data();
    for (bool new_sample = true; k < n && members[k].first == s; ++k, new_sample = false) {
      // The inputs' offsets and shapes are read at random (a big graph's edge rule): the
      // member this far ahead has its entries fetched early.
      constexpr size_t kAhead = 16;
      if (k + kAhead < n && members[k + kAhead].first == s) {
        const uint32_t* ahead = net.inputs.data() + begin[members[k + kAhead].second];
        for (size_t i = 0; i < n_inputs; ++i) {
          __builtin_prefetch(offsets + ahead[i]);
          __builtin_prefetch(shapes + ahead[i]);
        }
      }
      const uint32_t g = members[k].second, h = net.head[g];
      if (k == 0 || new_sample || h != last_head) {
        if (k) G.head_segments.push_back(static_cast<uint32_t>(k));
        head_atoms.push_back(h);
      }
      if (softmax_in_order) {
        const uint32_t group = net.softmax_group[g];
        if (k && !new_sample && group < last_group) softmax_in_order = false;
        else if (k && (new_sample || group != last_group)) G.softmax_segments.push_back(static_cast<uint32_t>(k));
        last_group = group;
      }
      last_head = h;
      const uint32_t* atoms = net.inputs.data() + begin[g];
      for (size_t i = 0; i < n_inputs; ++i) {
        const uint32_t atom = atoms[reduced ? input_position(net.rule[g], i) : i];
        if (!(shapes[atom] == blocks[i].raw_shape)) return false;
        blocks[i].src[k] = offsets[atom];
      }
    }
  }
  if (n) G.head_segments.push_back(static_cast<uint32_t>(n));
  if (n && softmax_in_order) G.softmax_segments.push_back(static_cast<uint32_t>(n));
  return true;
}

// The members [b, e) of one sample form a grid when their softmax groups repeat one run
// of consecutive groups, rows = the run's length, over and over (cols times: full
// attention's scores listed key by key); then the stable sort by group is the grid's
// transposition. Returns rows, or 0 when the members form no grid (or one run only).
uint32_t PlanBuilder::grid_rows(const neural::SampleNetwork& net, const std::vector<Ref>& members, size_t b, size_t e) {
  const auto group = [&](size_t k) { return net.softmax_group[members[k].second]; };
  const uint32_t first = group(b);
  size_t rows = 1;
  while (b + rows < e && group(b + rows) == first + rows) ++rows;
  if (rows == e - b || (e - b) % rows != 0) return 0;
  for (size_t k = b + rows; k < e; ++k)
    if (group(k) != first + (k - b) % rows) return 0;
  return static_cast<uint32_t>(rows);
}

// When every head has one grounding (attention weights w(I, J)) the members may be
// listed in any order: listing them by softmax segment makes every segment a contiguous
// run, so no permutation is needed (and full attention's scores are one row-major block
// per query). Members come sorted by (sample, head). Returns whether it reordered them.
// With `scan` (the in-order shortcuts), the reordering pass is also scan_members' pass:
// each member's ground rule is read in the network's order (sequential reads) and what
// it gives is written at the member's new position, and the softmax segments come from
// the counting sort itself (scan->done false, with the order still made, when an input's
// values differ in shape: input_values then names the literal).
bool PlanBuilder::order_by_softmax_segment(std::vector<Ref>& members, RuleGroup& G, size_t n_inputs,
                                           MemberScan* scan) const {
  bool one_per_head = true;
  for (size_t k = 1; k < members.size() && one_per_head; ++k) one_per_head = !same_head(members[k], members[k - 1]);
  const auto by_segment = [&](const Ref& a, const Ref& b) { return softmax_key(a) < softmax_key(b); };
  if (!one_per_head || std::is_sorted(members.begin(), members.end(), by_segment)) return false;
  const size_t n = members.size();
  bool scanning = scan != nullptr;
  if (scan) {
    scan->blocks.assign(n_inputs, InputBlock{});
    for (size_t i = 0; i < n_inputs; ++i) {
      scan->blocks[i].src.resize(n);
      scan->blocks[i].raw_shape = plan.atom_shapes[members[0].first][input_atom(members[0], i)];
    }
    scan->head_atoms.resize(n);
    G.softmax_segments.clear();
  }
  // Members are in sample order already: a stable counting sort by group within each
  // sample's run is the stable sort by (sample, group), in linear time.
  std::vector<Ref> sorted(n);
  for (size_t b = 0; b < n;) {
    const uint32_t s = members[b].first;
    const neural::SampleNetwork& net = *samples[s];
    const uint32_t* offsets = plan.atom_offsets[s].data();
    const Shape* shapes = plan.atom_shapes[s].data();
    size_t e = b;
    uint32_t groups = 0;
    for (; e < n && members[e].first == s; ++e) groups = std::max(groups, net.softmax_group[members[e].second] + 1);
    std::vector<uint32_t> start(size_t(groups) + 1, 0);
    for (size_t k = b; k < e; ++k) ++start[net.softmax_group[members[k].second] + 1];
    for (uint32_t q = 0; q < groups; ++q) start[q + 1] += start[q];
    if (scan)
      for (uint32_t q = 0; q < groups; ++q)
        if (start[q + 1] > start[q]) G.softmax_segments.push_back(static_cast<uint32_t>(b + start[q]));
    auto place = [&](size_t k, size_t at) {
      const uint32_t g = members[k].second;
      sorted[at] = members[k];
      if (!scanning) return;
      scan->head_atoms[at] = net.head[g];
      const uint32_t* atoms = net.inputs.data() + net.inputs_begin[g];
      for (size_t i = 0; i < n_inputs && scanning; ++i) {
        scanning = shapes[atoms[i]] == scan->blocks[i].raw_shape;
        scan->blocks[i].src[at] = offsets[atoms[i]];
      }
    };
    const uint32_t rows = scan ? grid_rows(net, members, b, e) : 0;  // (the general sort without shortcuts)
    if (rows > 0) {
      // The sort is a transposition (member j * rows + i goes to i * cols + j), done in
      // column strips (neural/grid_order.hpp).
      const size_t cols = (e - b) / rows;
      neural::visit_in_column_strips(rows, cols,
                                     [&](size_t i, size_t j) { place(b + j * rows + i, b + i * cols + j); });
    } else {
      for (size_t k = b; k < e; ++k) place(k, b + start[net.softmax_group[members[k].second]]++);
    }
    b = e;
  }
  members = std::move(sorted);
  if (scanning) {
    G.softmax_segments.push_back(static_cast<uint32_t>(n));
    G.head_segments.resize(n + 1);
    for (size_t k = 0; k <= n; ++k) G.head_segments[k] = static_cast<uint32_t>(k);
    scan->softmax_in_order = true;
    scan->done = true;
  } else if (scan) {
    *scan = MemberScan{};
    G.softmax_segments.clear();
  }
  return true;
}

// All ground rules of template rule r at this depth: one RuleGroup, planned in steps
// (their order is the order of the value buffer's allocations).
void PlanBuilder::add_rule_group(const uint32_t r, std::vector<Ref> members) {
  const neural::RuleSpec& spec = spec_of(r);
  RuleGroup G = new_rule_group(r, members.size());
  MemberScan scan;
  MemberScan* scanning = options.in_order_shortcuts ? &scan : nullptr;
  const bool reordered = spec.softmax && order_by_softmax_segment(members, G, spec.inputs.size(), scanning);
  if (scanning && !reordered) scan.done = scan_members(G, spec.inputs.size(), spec.softmax, members, scan);
  const std::vector<Shape> z_shapes = plan_rule_inputs(G, spec, members, scan);
  if (options.alias_identity_rules && alias_identity_rule(G, spec, members, scan)) return;
  plan_combination_and_activation(G, spec, z_shapes);
  plan_head_segments(G, members, scan.done);
  if (G.softmax) plan_softmax_segments(G, members, scan.done && scan.softmax_in_order);
  plan_aggregation_and_head_weight(G, spec, &members, &scan);
  add_contributions(G, spec, members, scan);
  add_rule_step(std::move(G));
}

// A group of n ground rules of template rule r, its functions set from the rule.
RuleGroup PlanBuilder::new_rule_group(uint32_t r, size_t n) const {
  RuleGroup G;
  G.rule = r;
  G.n = static_cast<uint32_t>(n);
  G.combination = model.rules[r].combination;
  G.activation = model.rules[r].activation;
  return G;
}

// Appends G and the step that runs it; returns G's index.
uint32_t PlanBuilder::add_rule_step(RuleGroup G) {
  plan.steps.push_back({false, static_cast<uint32_t>(plan.rule_groups.size())});
  plan.rule_groups.push_back(std::move(G));
  return static_cast<uint32_t>(plan.rule_groups.size() - 1);
}

// The input blocks (weights applied, transposes) and where their values live; a direct
// product or a transform-sum needs no per-grounding inputs. Returns the inputs' shapes.
std::vector<Shape> PlanBuilder::plan_rule_inputs(RuleGroup& G, const neural::RuleSpec& spec,
                                                 const std::vector<Ref>& members, MemberScan& scan) {
  const uint32_t r = G.rule;
  std::vector<Shape> z_shapes;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    G.inputs.push_back(input_block(r, i, members, scan.done ? &scan.blocks[i] : nullptr));
    z_shapes.push_back(G.inputs.back().out_shape);
  }
  if (enabled(Rewrite::FoldZeroLiterals)) {
    const std::vector<uint32_t> folded = fold_zero_literals(model, G.combination, G.inputs, z_shapes);
    if (!folded.empty()) ++plan.rewrites[bit(Rewrite::FoldZeroLiterals)];
    note_assumed(plan.folded_zero_weights, folded);
  }
  if (enabled(Rewrite::DropUnitWeights)) {
    const auto dropped = drop_unit_weights(model, G.inputs);
    if (!dropped.empty()) ++plan.rewrites[bit(Rewrite::DropUnitWeights)];
    note_assumed(plan.dropped_unit_weights, dropped);
  }
  if (enabled(Rewrite::DirectProduct)) G.direct = plan_direct_product(G.combination, G.inputs);
  if (G.direct.kind != DirectProduct::Kind::None) ++plan.rewrites[bit(Rewrite::DirectProduct)];
  if (enabled(Rewrite::TransformSum) && transform_sum_applies(G, spec)) {
    ++plan.rewrites[bit(Rewrite::TransformSum)];
    const RuleGroup* groups = plan.rule_groups.data();
    // Whether the group reads only data facts whose gradients nobody reads (as
    // drop_fact_input_gradients decides at the end).
    const InputBlock& B = G.inputs[0];
    const bool data_inputs = !options.fact_gradients && plan.example_fact_off.empty() && !B.src.empty() &&
                             *std::max_element(B.src.begin(), B.src.end()) + B.raw_shape.size() <=
                                 std::min<size_t>(data_values, options.data_gradients_from);
    // The distinct heads (members come sorted by (sample, head)): whether to sum first.
    uint32_t heads = 0;
    if (options.transform_sum_first || data_inputs) {
      if (scan.done) heads = static_cast<uint32_t>(G.head_segments.size() - 1);
      else
        for (size_t k = 0; k < members.size(); ++k) heads += k == 0 || !same_head(members[k], members[k - 1]);
    }
    plan_transform_sum(G, alloc, groups + depth_first_group, groups + plan.rule_groups.size(), heads,
                       options.transform_sum_first, data_inputs, options.transform_sum_first_ratio);
    G.transform.constant_sums = G.transform.sum_first && data_inputs;
    if (enabled(Rewrite::OneHotInputs) && data_inputs && plan_one_hot_inputs(G, alloc, plan.data))
      ++plan.rewrites[bit(Rewrite::OneHotInputs)];
  } else if (G.direct.kind == DirectProduct::Kind::None) {
    for (InputBlock& B : G.inputs) {
      B.x_off = alloc.take_rows(G.n, B.raw_shape.size());
      B.w_off = B.mode == WeightMode::None ? B.x_off
                                            : alloc.take_rows(G.n, B.wout_shape.size());
      B.z_off = real_transpose(B) ? alloc.take_rows(G.n, B.out_shape.size()) : B.w_off;
    }
  } else {
    for (InputBlock& B : G.inputs) B.x_off = B.w_off = B.z_off = kNoValue;
  }
  return z_shapes;
}

// The combined value's shape, the offset and the activation, and their buffers.
void PlanBuilder::plan_combination_and_activation(RuleGroup& G, const neural::RuleSpec& spec,
                                                  const std::vector<Shape>& z_shapes) {
  const uint32_t r = G.rule;
  const Rule& rule = model.ast().rules[r];
  if (z_shapes.empty()) {
    G.comb_shape = {1, 1};
  } else {
    try {
      G.comb_shape = combination_shape(spec.combination, z_shapes);
    } catch (const Error& e) {
      throw Error(ErrorKind::Shape, rule.span, rule_name(model, r) + ": " + e.message());
    }
  }
  G.offset = spec.offset;
  G.softmax = spec.softmax;
  G.aggregation = spec.softmax ? AggregationKind::Sum : spec.aggregation.kind;
  G.direct.fused_sum = G.direct.kind != DirectProduct::Kind::None && G.offset == neural::kNoParam &&
                       G.activation.kind == ActivationKind::Identity && !G.softmax &&
                       (G.aggregation == AggregationKind::Sum || G.aggregation == AggregationKind::Avg);
  // A fused sum never stores the per-grounding values: no room is taken for them.
  const size_t per_rule = G.direct.fused_sum || G.transform.enabled ? 0 : G.n;
  G.comb_off = alloc.take_rows(per_rule, G.comb_shape.size());
  G.pre_off = G.comb_off;
  if (G.offset != neural::kNoParam) {
    const Shape b = model.params.info(G.offset).shape;
    if (!b.scalar() && !(b == G.comb_shape))
      throw Error(ErrorKind::Shape, rule.offset ? rule.offset->span : rule.span,
                  rule_name(model, r) + ": offset shape " + text(b) +
                      " differs from the combined value's shape " + text(G.comb_shape));
    G.pre_off = alloc.take_rows(G.n, G.comb_shape.size());
  }
  try {
    G.act_shape = activation_shape(spec.activation, G.comb_shape);
  } catch (const Error& e) {
    throw Error(ErrorKind::Shape, rule.span, rule_name(model, r) + ": " + e.message());
  }
  // An identity activation leaves the values where they are.
  G.act_off = G.direct.fused_sum || G.transform.enabled || G.activation.kind == ActivationKind::Identity
                  ? G.pre_off
                  : alloc.take_rows(per_rule, G.act_shape.size());
}

// Head segments (unless `scanned`): members are sorted by (sample, head).
void PlanBuilder::plan_head_segments(RuleGroup& G, const std::vector<Ref>& members, bool scanned) {
  if (!scanned) {
    G.head_segments.assign(1, 0);
    for (uint32_t k = 1; k <= G.n; ++k)
      if (k == G.n || !same_head(members[k], members[k - 1])) G.head_segments.push_back(k);
  }
  G.m = static_cast<uint32_t>(G.head_segments.size() - 1);
  if (G.direct.kind != DirectProduct::Kind::None) {
    plan_dense_block(G, G.direct);
    if (!G.direct.dense) plan_banded_block(G, G.direct);
  }
}

// Softmax segments: groundings of one sample agreeing on the non-normalised variables.
// (`in_order`: scan_members found them contiguous and set G.softmax_segments.)
void PlanBuilder::plan_softmax_segments(RuleGroup& G, const std::vector<Ref>& members, bool in_order) {
  auto key = [&](uint32_t k) { return softmax_key(members[k]); };
  bool identity = in_order;
  if (!identity) {
    G.softmax_perm.resize(G.n);
    for (uint32_t k = 0; k < G.n; ++k) G.softmax_perm[k] = k;
    const auto by_key = [&](uint32_t a, uint32_t b) { return key(a) < key(b); };
    // Already in segment order when every head has one grounding (attention): no sort.
    if (!std::is_sorted(G.softmax_perm.begin(), G.softmax_perm.end(), by_key))
      std::stable_sort(G.softmax_perm.begin(), G.softmax_perm.end(), by_key);
    G.softmax_segments.assign(1, 0);
    for (uint32_t k = 1; k <= G.n; ++k)
      if (k == G.n || key(G.softmax_perm[k]) != key(G.softmax_perm[k - 1])) G.softmax_segments.push_back(k);
    identity = true;
    for (uint32_t k = 0; k < G.n && identity; ++k) identity = G.softmax_perm[k] == k;
  }
  const size_t len = static_cast<size_t>(G.n) * G.act_shape.size();
  if (identity) {
    G.softmax_perm.clear();  // segments already contiguous: nothing to permute
    G.perm_off = G.act_off;
    G.psoft_off = alloc.take(len);
    G.soft_off = G.psoft_off;
  } else {
    G.perm_off = alloc.take(len);
    G.psoft_off = alloc.take(len);
    G.soft_off = alloc.take(len);
  }
}

// The aggregation over each head's groundings and the head weight after it.
void PlanBuilder::plan_aggregation_and_head_weight(RuleGroup& G, const neural::RuleSpec& spec,
                                                   const std::vector<Ref>* members, const MemberScan* scan) {
  const uint32_t r = G.rule;
  const Rule& rule = model.ast().rules[r];
  G.agg_shape = group_aggregation_shape(G.aggregation, G.act_shape, G.head_segments, rule_name(model, r), rule.span);
  // One grounding per head and a sum/avg/max/min: each aggregate is its one input.
  G.identity_aggregation =
      G.m == G.n && !G.direct.fused_sum && !G.transform.enabled && neural::single_value_identity(G.aggregation);
  if (G.transform.enabled) {
    TransformSum& t = G.transform;
    t.rows_are_heads = G.m == G.n && t.sources.size() == G.n;
    for (uint32_t k = 0; k < G.n && t.rows_are_heads; ++k) t.rows_are_heads = t.row_of[k] == k;
    plan_backward_by_row(G);
  }
  G.head_weight = spec.head_weight;
  G.out_shape = G.agg_shape;
  if (G.head_weight != neural::kNoParam) {
    const Shape w = model.params.info(G.head_weight).shape;
    G.head_mode = weight_mode_or_refuse(w, G.agg_shape, G.out_shape, rule.head.span, [&] {
      return rule_name(model, r) + ": head weight shape " + text(w) + " cannot apply to the aggregated value's shape " +
             text(G.agg_shape);
    });
  }
  // The last stage's rows: the head weight's products, else the aggregates; either may be
  // an earlier group's rows added to (share_head_rows).
  const bool head = G.head_weight != neural::kNoParam;
  if (G.identity_aggregation) G.agg_off = G.softmax ? G.soft_off : G.act_off;
  else if (G.transform.rows_are_heads) G.agg_off = G.transform.t_off;
  else if (!head && members && share_head_rows(G, spec, *members, *scan)) G.agg_off = G.out_off;
  else if (!(head && options.alias_identity_rules && plan_input_rows(G))) G.agg_off = alloc.take_rows(G.m, G.agg_shape.size());
  if (!head) G.out_off = G.agg_off;
  else if (!(members && share_head_rows(G, spec, *members, *scan))) G.out_off = alloc.take_rows(G.m, G.out_shape.size());
  if (members && !G.adds_to_out) note_head_rows(G, spec, *members, *scan);
}

// Whether G's out rows are its own per-head sums that nothing but its head atoms reads,
// values or gradients: a transform sum's heads summed into rows of their own, or its
// transformed rows themselves where no other rule could share them (its weight is read by
// no other rule: transform_rows_alone), a fused sum of direct products, or the products of
// a matrix head weight on column vectors in rows of their own (those of groups adding to
// them included: RuleGroup::adds_to_out). Their backward reads only the rows' gradients (a
// head weight's, the aggregates' values; a transform's, its inputs).
bool PlanBuilder::own_sum_rows(const RuleGroup& G) const {
  if (G.softmax || G.m == 0 || G.adds_to_out) return false;
  if (G.head_weight != neural::kNoParam)
    return G.head_mode == WeightMode::MatMul && G.agg_shape.cols == 1 && G.out_off != G.agg_off;
  if (G.transform.enabled)
    return G.transform.rows_are_heads ? transform_rows_alone(G) : G.out_off != G.transform.t_off;
  return G.direct.kind != DirectProduct::Kind::None && G.direct.fused_sum && !G.identity_aggregation;
}

bool PlanBuilder::transform_rows_alone(const RuleGroup& G) const {
  const TransformSum& t = G.transform;
  return t.enabled && t.rows_are_heads && t.owns_transform && !t.sum_first && weight_readers(G.inputs[0].weight) == 1;
}

uint32_t PlanBuilder::weight_readers(uint32_t weight) const {
  if (readers_of_weight.empty()) {
    readers_of_weight.assign(model.params.count(), 0);
    for (const neural::RuleSpec& rule : model.rules) {
      std::vector<uint32_t> read;
      for (const neural::InputSpec& in : rule.inputs) read.push_back(in.weight);
      read.push_back(rule.head_weight);
      read.push_back(rule.offset);
      std::sort(read.begin(), read.end());
      read.erase(std::unique(read.begin(), read.end()), read.end());
      for (uint32_t w : read)
        if (w < readers_of_weight.size()) ++readers_of_weight[w];
    }
  }
  return weight < readers_of_weight.size() ? readers_of_weight[weight] : 0;
}

// Each head's value is a contribution to its atom; a group adding to an earlier group's
// rows (RuleGroup::adds_to_out) contributes through those.
void PlanBuilder::add_contributions(const RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                                    const MemberScan& scan) {
  if (G.adds_to_out) return;
  if (options.in_place_atoms && own_sum_rows(G))
    sum_rows_of_atoms.emplace_back(G.out_off, G.out_off + G.m * static_cast<uint32_t>(G.out_shape.size()));
  std::vector<Contribution>& list = contributions[spec.head_predicate];
  if (list.capacity() < list.size() + G.m) list.reserve(std::max(list.size() + G.m, 2 * list.capacity()));
  for (uint32_t j = 0; j < G.m; ++j) {
    const Ref head = head_atom(G, j, members, scan);
    list.push_back({head.first, head.second, G.out_off + j * static_cast<uint32_t>(G.out_shape.size()), G.out_shape});
  }
}

// When every one of the m atoms of predicate p at this depth has exactly one contribution
// (attention's pair atoms w(I, J): one ground rule each, no fact value), a pass-through
// group's atoms take their input's value offset straight from the contributions, in
// whatever order they come (softmax order for the weights), without sorting them by atom.
// False, with nothing changed, when an atom has none or several.
bool PlanBuilder::pass_contributions_through(uint32_t p, size_t m, const std::vector<Contribution>& list, Shape shape) {
  if (list.size() != m) return false;
  // Set as visited; an atom already placed (a second contribution, a fact) or of another
  // predicate stops it, and what was set is unset (an unplaced atom's shape is 1x1).
  size_t set = 0;
  bool ok = true;
  for_each_by_atom(list, [&](const Contribution& c) {
    if (!ok) return;
    uint32_t& off = plan.atom_offsets[c.sample][c.atom];
    ok = off == kNoValue && samples[c.sample]->atom_predicate[c.atom] == p;
    if (!ok) return;
    off = c.offset;
    plan.atom_shapes[c.sample][c.atom] = shape;
    ++set;
  });
  if (ok) return true;
  size_t undone = 0;
  for_each_by_atom(list, [&](const Contribution& c) {
    if (undone++ >= set) return;
    plan.atom_offsets[c.sample][c.atom] = kNoValue;
    plan.atom_shapes[c.sample][c.atom] = Shape{1, 1};
  });
  return false;
}

// Visits every contribution of `list` once: in list order, or, when the list's atoms are
// a grid numbered the other way round (entry i * cols + j is atom a0 + j * rows + i, all
// of one sample: attention's pair atoms w(I, J), numbered key by key and listed query by
// query), in column strips (neural/grid_order.hpp).
template <class Visit>
void PlanBuilder::for_each_by_atom(const std::vector<Contribution>& list, Visit visit) {
  const size_t n = list.size();
  size_t cols = 1;
  const uint32_t a0 = n ? list[0].atom : 0, step = n > 1 ? list[1].atom - a0 : 0;
  while (cols < n && list[cols].atom == a0 + cols * step && list[cols].sample == list[0].sample) ++cols;
  const size_t rows = cols > 1 && cols < n && n % cols == 0 ? n / cols : 0;
  bool grid = rows > 1 && step == rows;
  for (size_t k = 0; k < n && grid; ++k)
    grid = list[k].sample == list[0].sample && list[k].atom == a0 + (k % cols) * rows + k / cols;
  if (!grid) {
    for (const Contribution& c : list) visit(c);
    return;
  }
  neural::visit_in_column_strips(rows, cols, [&](size_t i, size_t j) { visit(list[i * cols + j]); });
}

// A.segments and A.src: the contributions sorted by atom (stable: rule order kept).
void PlanBuilder::sort_contributions_by_atom(AtomGroup& A, const std::vector<Ref>& members,
                                             const std::vector<Contribution>& list, const std::string& where) {
  if (atom_position.empty()) {
    atom_position.resize(n_samples);
    for (size_t s = 0; s < n_samples; ++s) atom_position[s].assign(samples[s]->num_atoms(), kNoValue);
  }
  // Each derived atom is in one group, so the entries of other groups never collide.
  for (uint32_t j = 0; j < A.m; ++j) atom_position[members[j].first][members[j].second] = j;
  std::vector<uint32_t> count(A.m + 1, 0);
  std::vector<uint32_t> pos_of(list.size());
  for (size_t c = 0; c < list.size(); ++c) {
    const uint32_t j = atom_position[list[c].sample][list[c].atom];
    if (j >= A.m || !(members[j] == Ref{list[c].sample, list[c].atom}))
      throw Error(ErrorKind::Runtime, where + ": contribution to an unknown atom");
    pos_of[c] = j;
    ++count[j + 1];
  }
  for (uint32_t j = 0; j < A.m; ++j) count[j + 1] += count[j];
  A.segments = count;
  A.src.resize(list.size());
  std::vector<uint32_t> fill(count.begin(), count.end() - 1);
  for (size_t c = 0; c < list.size(); ++c) A.src[fill[pos_of[c]]++] = list[c].offset;
}

// All derived atoms of predicate p at this depth: one AtomGroup (none when each atom is
// its one input).
void PlanBuilder::add_atom_group(const uint32_t p, const std::vector<Ref>& members) {
  const neural::PredicateSpec& pred = model.predicates[p];
  const std::string where = "atoms of " + pred.key();
  AtomGroup A;
  A.predicate = p;
  A.m = static_cast<uint32_t>(members.size());
  std::vector<Contribution>& list = contributions[p];
  for (uint32_t j = 0; j < A.m; ++j) {
    const auto [s, l] = members[j];
    const uint32_t f = samples[s]->atom_fact[l];
    if (f != neural::kNone) list.push_back({s, l, fact_off[s][f], samples[s]->fact_shape[f]});
  }
  A.in_shape = list.empty() ? Shape{1, 1} : list[0].shape;
  for (const Contribution& c : list)
    if (!(c.shape == A.in_shape))
      throw Error(ErrorKind::Shape, where + ": the rules deriving them (and their fact values) "
                                            "give different shapes " +
                                        text(A.in_shape) + " and " + text(c.shape));
  // (A product of matrices is refused below, even of one input.)
  const bool passes_one_input = neural::passes_one_input(pred, A.in_shape);
  if (options.in_order_shortcuts && passes_one_input && pass_contributions_through(p, A.m, list, A.in_shape))
    return;
  sort_contributions_by_atom(A, members, list, where);
  A.combination = pred.combination;
  if (pred.scalars_only && !A.in_shape.scalar())
    throw Error(ErrorKind::Shape, where + ": combination 'product' of atoms multiplies matrices, which lrnn "
                                          "does for rule inputs only; the rules give " + text(A.in_shape) +
                                          " values (use elproduct for an element-wise product)");
  // Atoms with one input each, combined by sum/avg/max/min, without offset and with an
  // identity activation are their input: they take its value offset and run no step.
  bool one_input_each = true;
  for (uint32_t j = 0; j <= A.m && one_input_each; ++j) one_input_each = A.segments[j] == j;
  const bool pass_through = one_input_each && passes_one_input;
  if (pass_through) {
    for (uint32_t j = 0; j < A.m; ++j) {
      const auto [s, l] = members[j];
      plan.atom_offsets[s][l] = A.src[j];
      plan.atom_shapes[s][l] = A.in_shape;
    }
    return;
  }
  A.offset = pred.offset;
  A.activation = pred.activation;
  if (one_input_each && plan_in_input_rows(A, members)) return;
  if (fold_self_into_sum(A, members)) return;
  const Shape red_shape = A.combination == AggregationKind::Count ? Shape{1, 1} : A.in_shape;
  A.summed_in_place = A.combination == AggregationKind::Sum || A.combination == AggregationKind::Avg;
  A.c_off = A.summed_in_place ? kNoValue : alloc.take_rows(A.src.size(), A.in_shape.size());
  A.x_in_inputs = options.in_place_atoms && pred.norm != neural::kNoParam && one_input_each && A.summed_in_place &&
                  rows_in_order(A.src, static_cast<uint32_t>(A.in_shape.size()));
  A.red_off = A.x_in_inputs ? A.src[0] : alloc.take_rows(A.m, red_shape.size());
  A.pre_off = A.red_off;
  if (A.offset != neural::kNoParam && !A.summed_in_place) {
    A.pre_off = alloc.take_rows(A.m, red_shape.size());
  }
  if (A.offset != neural::kNoParam) check_atom_offset_shape(model, A.offset, red_shape, where);
  if (pred.norm != neural::kNoParam) plan_batch_norm(A, model.batch_norms[pred.norm], red_shape, where);
  A.out_shape = activation_shape(A.activation, red_shape);
  // In place (PlanOptions::in_place_atoms): a fused sum's outputs in its sums' slot, a
  // normalised group's (ReLU or identity) in its scaled and shifted values' own slot.
  const bool relu_or_identity =
      A.activation.kind == ActivationKind::Relu || A.activation.kind == ActivationKind::Identity;
  if (options.in_place_atoms && fusable_atom_sum(A)) A.out_off = A.red_off;
  else if (options.in_place_atoms && A.norm != neural::kNoParam && relu_or_identity) A.out_off = A.pre_off;
  else A.out_off = alloc.take_rows(A.m, A.out_shape.size());
  for (uint32_t j = 0; j < A.m; ++j) {
    const auto [s, l] = members[j];
    plan.atom_offsets[s][l] = A.out_off + j * static_cast<uint32_t>(A.out_shape.size());
    plan.atom_shapes[s][l] = A.out_shape;
  }
  if (A.norm != neural::kNoParam) plan.norm_steps.push_back(static_cast<uint32_t>(plan.steps.size()));
  plan.steps.push_back({true, static_cast<uint32_t>(plan.atom_groups.size())});
  plan.atom_groups.push_back(std::move(A));
}

// AtomGroup::in_input_rows: when each of the m atoms' one input is row j of one rule
// group's own per-head sums (own_sum_rows), in atom order, and the atoms sum (or average:
// one input) them with a ReLU or identity activation and no batch norm, the atoms are
// those rows. False, with nothing planned, otherwise.
bool PlanBuilder::plan_in_input_rows(AtomGroup& A, const std::vector<Ref>& members) {
  if (!options.in_place_atoms || A.m == 0 || model.predicates[A.predicate].norm != neural::kNoParam) return false;
  const uint32_t size = static_cast<uint32_t>(A.in_shape.size());
  const uint32_t begin = A.src[0], end = begin + A.m * size;
  const auto rows = std::find(sum_rows_of_atoms.begin(), sum_rows_of_atoms.end(), std::make_pair(begin, end));
  if (rows == sum_rows_of_atoms.end()) return false;
  if (!rows_in_order(A.src, size)) return false;
  A.summed_in_place = A.combination == AggregationKind::Sum || A.combination == AggregationKind::Avg;
  A.red_off = A.pre_off = A.out_off = begin;
  A.out_shape = A.in_shape;
  if (!fusable_atom_sum(A)) return false;  // (nothing allocated yet: the caller plans it as usual)
  if (A.offset != neural::kNoParam) check_atom_offset_shape(model, A.offset, A.in_shape, "atoms of " +
                                                            model.predicates[A.predicate].key());
  A.in_input_rows = true;
  A.src.clear();
  A.segments.clear();
  for (uint32_t j = 0; j < A.m; ++j) {
    const auto [s, l] = members[j];
    plan.atom_offsets[s][l] = begin + j * size;
    plan.atom_shapes[s][l] = A.out_shape;
  }
  plan.steps.push_back({true, static_cast<uint32_t>(plan.atom_groups.size())});
  plan.atom_groups.push_back(std::move(A));
  return true;
}

// Whether the normalised group A may write x^ over its x (AtomGroup::norm_off): x is the
// rows of this depth's GEMM of one rule (a transform sum whose rows are its heads': a
// Linear before the norm, GIN's `mlp(I) :- {64,64} in(I)`), which only A reads (a rule's
// aggregates feed its head atoms alone; no other group shares the transform's rows) and
// whose backward reads its inputs, never its rows. x is dead once x^ is taken.
bool PlanBuilder::x_hat_over_x(const AtomGroup& A) const {
  if (!A.x_in_inputs) return false;
  const RuleGroup* owner = nullptr;
  for (size_t i = depth_first_group; i < plan.rule_groups.size(); ++i) {
    const RuleGroup& G = plan.rule_groups[i];
    if (G.agg_off == A.red_off && G.out_off == G.agg_off && G.m == A.m) owner = &G;
  }
  if (!owner || !owner->transform.enabled || !owner->transform.owns_transform || !owner->transform.rows_are_heads ||
      owner->transform.sum_first)
    return false;
  for (size_t i = depth_first_group; i < plan.rule_groups.size(); ++i) {
    const RuleGroup& G = plan.rule_groups[i];
    if (&G != owner && G.transform.enabled && !G.transform.owns_transform && G.transform.t_off == owner->transform.t_off)
      return false;
  }
  return true;
}

// x^ and the scaled, shifted values get slots of their own (the offset is then never
// added in place: red_off keeps the unnormalised sums that backward reads through x^),
// x^ in training plans over x where nothing else reads x (x_hat_over_x): a training
// step's batch of workspaces is held at once, and each slot less is cache kept.
void PlanBuilder::plan_batch_norm(AtomGroup& A, const neural::BatchNormSpec& norm, Shape red_shape,
                                  const std::string& where) {
  if (A.combination == AggregationKind::Count)
    throw Error(ErrorKind::Semantic, where + ": normalization=batch of a count combination is not supported");
  const Shape shape = model.params.info(norm.scale).shape;
  if (!(shape == red_shape))
    throw Error(ErrorKind::Shape, model.params.info(norm.scale).span,
                where + ": normalization=batch takes its shape " + text(shape) +
                    " from the predicate's offset, but the atoms' values are " + text(red_shape));
  A.norm = model.predicates[A.predicate].norm;
  A.norm_scale = norm.scale;
  A.norm_mean = norm.mean;
  A.norm_var = norm.var;
  A.norm_off = x_hat_over_x(A) ? A.red_off : alloc.take_rows(A.m, red_shape.size());
  if (A.pre_off == A.red_off) A.pre_off = alloc.take_rows(A.m, red_shape.size());
}

void PlanBuilder::place_outputs() {
  for (uint32_t s = 0; s < n_samples; ++s) {
    const neural::SampleNetwork& net = *samples[s];
    for (uint32_t q = 0; q < net.query_atoms.size(); ++q) {
      if (net.query_atoms[q].empty()) {
        plan.outputs.push_back({s, q, kNoValue, kNoValue, {1, 1}});
        continue;
      }
      for (uint32_t l : net.query_atoms[q])
        plan.outputs.push_back({s, q, l, plan.atom_offsets[s][l], plan.atom_shapes[s][l]});
    }
  }
}

}  // namespace lrnn::exec::planning

namespace lrnn::exec {

WeightMode weight_mode(Shape w, Shape x, Shape& out) {
  using planning::text;
  if (w.scalar()) {
    out = x;
    return WeightMode::Scalar;
  }
  if (x.scalar()) {
    out = w;
    return WeightMode::Outer;
  }
  if (w.cols == x.rows) {
    out = checked_shape(w.rows, x.cols, "a weight of shape " + text(w) + " applied to a value of shape " + text(x));
    return WeightMode::MatMul;
  }
  if (w == x) {
    out = x;
    return WeightMode::Elementwise;
  }
  throw Error(ErrorKind::Shape, "weight of shape " + text(w) + " cannot apply to a value of shape " + text(x));
}

namespace {

// Plan::computed_values of a built plan.
uint64_t values_computed_per_pass(const Plan& plan) {
  if (plan.step_values.size() != plan.steps.size() || plan.steps.empty()) return plan.num_values;
  uint64_t computed = 0;
  for (const auto& [begin, end] : plan.step_values) computed += end - begin;
  for (const RuleGroup& g : plan.rule_groups)
    if (g.transform.constant_sums && !g.inputs.empty())  // constant_sums implies sum_first
      computed -= uint64_t(g.m) * uint64_t(g.inputs[0].raw_shape.size());
  return computed;
}

}  // namespace

Plan build_plan(const neural::TemplateModel& model,
                const std::vector<const neural::SampleNetwork*>& samples, const PlanOptions& options) {
  static std::atomic<uint64_t> next_serial{1};
  Plan plan = planning::PlanBuilder(model, samples, options).build();
  for (RuleGroup& G : plan.rule_groups) order_heads_by_count(G);
  plan.serial = next_serial++;
  plan.computed_values = values_computed_per_pass(plan);
  return plan;
}

}  // namespace lrnn::exec
