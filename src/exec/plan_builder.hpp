// The builder of build_plan (plan.hpp), shared by the files that plan one part of it:
// plan.cpp builds the plain plan (facts, rule groups gathered per grounding, atom groups);
// each named rewrite that replaces a rule group's per-grounding work by a faster layout is
// in a file of its own under rewrites/ (listed, in the order they apply, in
// rewrites/registry.hpp), as Souffle's ram/transform keeps one transformation per file:
//   rewrites/fold_zero_literals.cpp  literals of a sum under a fixed zero weight left out
//   rewrites/drop_unit_weights.cpp   fixed weights multiplying as the identity left out
//   rewrites/direct_product.cpp  products of unweighted inputs read in place (DirectProduct),
//                                with their dense and banded (causal mask) blocks
//   rewrites/transform_sum.cpp   one input under a matrix weight, summed per head (TransformSum)
// The pair block (a pair block's scores and weighted sums, logic::PairBlock) is decided by
// the grounder and planned in plan_pair_blocks.cpp: it is not (yet) a named rewrite.
// An internal header: nothing outside src/exec includes it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "exec/plan.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/memory.hpp"

namespace lrnn::exec::planning {

std::string text(Shape s);
std::string literal_text(const Literal& l);
std::string rule_name(const neural::TemplateModel& model, uint32_t r);
// Whether B's transpose moves entries (a transposed vector is the same entries read as a row).
bool real_transpose(const InputBlock& B);

class Allocator {
 public:
  uint32_t take(size_t n) {
    uint64_t at = cursor_;
    cursor_ += n;
    if (cursor_ > 0xFFFFFFF0ULL)
      throw Error(ErrorKind::Limit, "the network needs more than 4 billion values");
    // Every value is a double of the workspace (and of its gradients when training): the
    // plan asks the memory budget each 1M values, before any workspace is made.
    if (cursor_ >= checked_ + (1u << 20)) {
      check_memory(16 * cursor_, "a network of " + std::to_string(cursor_) + " values (its workspace and gradients)");
      checked_ = cursor_;
    }
    return static_cast<uint32_t>(at);
  }
  // A block of rows (a group's per-grounding or per-head values) of 8 or more values each
  // starts at a multiple of kRowAlignment values, 64 bytes in float32 and 128 in float64
  // from the workspace's aligned base, so that a row's vector loads do not straddle cache
  // lines wherever the values before it happened to end. Where they ended differed with
  // the data before them (a batch's facts; PyNeuraLogic's spelling of a GCN, whose edge
  // facts hold values too), and MUTAG's rows at 15 floats past a line took a batch-32
  // epoch 8% longer than at 8. Narrower rows (no vector spans them) and the facts (the
  // data are one contiguous copy, `take`) stay packed.
  static constexpr uint64_t kRowAlignment = 16;
  uint32_t take_rows(size_t rows, size_t width) {
    if (width >= 8) cursor_ = (cursor_ + kRowAlignment - 1) / kRowAlignment * kRowAlignment;
    return take(rows * width);
  }
  uint32_t size() const { return static_cast<uint32_t>(cursor_); }

 private:
  uint64_t cursor_ = 0, checked_ = 0;
};

// ---- the fold-zero-literals rewrite (rewrites/fold_zero_literals.cpp) ----
// Removes from `inputs` and `z_shapes` the literals of a sum under a fixed zero weight;
// returns their weights (none when the rule does not allow it).
std::vector<uint32_t> fold_zero_literals(const neural::TemplateModel& model, CombinationKind combination,
                                         std::vector<InputBlock>& inputs, std::vector<Shape>& z_shapes);
// Whether weight w is fixed (never trained) and all zero now.
bool fixed_zero_weight(const neural::TemplateModel& model, uint32_t w);

// Adds to `list` the fixed weights a rewrite assumed (forward checks them), each listed once.
template <class List, class Assumed>
void note_assumed(List& list, const Assumed& assumed) {
  for (const auto& a : assumed)
    if (std::find(list.begin(), list.end(), a) == list.end()) list.push_back(a);
}

// ---- the drop-unit-weights rewrite (rewrites/drop_unit_weights.cpp) ----
// Reads the inputs under a fixed weight that multiplies as the identity as unweighted;
// returns those weights with the mode each was applied in.
std::vector<std::pair<uint32_t, WeightMode>> drop_unit_weights(const neural::TemplateModel& model,
                                                               std::vector<InputBlock>& inputs);

// ---- the transform-sum rewrite (rewrites/transform_sum.cpp) ----
bool transform_sum_applies(const RuleGroup& G, const neural::RuleSpec& spec);
// `data_inputs`: the group reads only data facts whose gradients nobody reads. `sum_first`:
// sum first when the distinct inputs are at least `sum_first_ratio` times the heads (and
// more than them), PlanOptions::transform_sum_first_ratio.
void plan_transform_sum(RuleGroup& G, Allocator& alloc, const RuleGroup* same_depth_begin,
                        const RuleGroup* same_depth_end, uint32_t heads, bool sum_first, bool data_inputs,
                        double sum_first_ratio);
// For a transform sum whose backward scatters onto kBackwardByRowMinEntries or more of
// transformed entries (not summed first, rows not the heads): its groundings by row,
// TransformSum::row_begin / row_heads. After G's head segments and rows_are_heads.
void plan_backward_by_row(RuleGroup& G);

// ---- the one-hot-inputs rewrite (rewrites/one_hot_inputs.cpp) ----
// Whether G's transform (planned over data facts without gradients) reads its one-hot rows
// as W's columns: it owns its rows, is not summed first, and each row in `data` (when the
// plan holds any) is one-hot. If so sets TransformSum::one_hot_inputs and takes hot_off.
bool plan_one_hot_inputs(RuleGroup& G, Allocator& alloc, const std::vector<double>& data);

// ---- the direct-product rewrite (rewrites/direct_product.cpp) ----
DirectProduct plan_direct_product(CombinationKind combination, const std::vector<InputBlock>& inputs);
void plan_dense_block(const RuleGroup& G, DirectProduct& d);
void plan_banded_block(const RuleGroup& G, DirectProduct& d);
// Sets G.direct.input_rows (and G.agg_off) when G's aggregates can be its input's rows
// where they lie; after G's head segments and head weight. False, nothing changed, if not.
bool plan_input_rows(RuleGroup& G);

// Plan::hot_only_facts of a built plan whose data facts are its first `data_values` values
// (plan_hot_facts.cpp).
uint32_t hot_only_facts(const Plan& plan, size_t data_values, const PlanOptions& options);

using Ref = std::pair<uint32_t, uint32_t>;  // (sample, local atom / ground rule)

// A rule group's value at the atom neuron it feeds: (sample, atom) <- (value offset, shape).
struct Contribution {
  uint32_t sample, atom, offset;
  Shape shape;
};

// Merges sample networks into one plan, depth by depth: the rule groups of a depth, then
// the atom groups they feed (build_plan's steps, one function each).
class PlanBuilder {
 public:
  PlanBuilder(const neural::TemplateModel& model, const std::vector<const neural::SampleNetwork*>& samples,
              const PlanOptions& options)
      : model(model), samples(samples), n_samples(samples.size()), options(options) {}

  Plan build();

 private:
  void drop_fact_input_gradients();
  // The weight-after-readout rewrite over the built steps (rewrites/weight_after_readout.cpp).
  void move_weights_after_readouts();
  // Rule groups left with nothing to do taken out of the steps (plan_drop_idle.cpp).
  void drop_idle_rule_groups();
  bool enabled(Rewrite r) const { return !options.disabled_rewrites.test(bit(r)); }

  const neural::TemplateModel& model;
  const std::vector<const neural::SampleNetwork*>& samples;
  const size_t n_samples;
  const PlanOptions options;
  Plan plan;
  Allocator alloc;
  std::vector<std::vector<uint32_t>> fact_off;       // per sample and fact: value offset
  size_t data_values = 0;  // the data facts' values, first in the values (plan.data's size)
  std::map<std::pair<uint32_t, uint32_t>, std::vector<Ref>> atom_buckets, rule_buckets;
  uint32_t max_depth = 0;
  // Per sample and atom: position in its group (made when a group first sorts its inputs).
  std::vector<std::vector<uint32_t>> atom_position;
  std::vector<std::vector<Contribution>> contributions;  // per predicate, this depth
  // This depth's rule groups whose per-head sums only their atoms read: [begin, end) of
  // each one's out rows (PlanBuilder::own_sum_rows; AtomGroup::in_input_rows).
  std::vector<std::pair<uint32_t, uint32_t>> sum_rows_of_atoms;
  // This depth's rule groups whose last rows later groups may add to
  // (PlanOptions::share_head_rows): the group and the (sample, atom) of each of its heads.
  struct HeadRows {
    uint32_t group;
    std::vector<Ref> heads;
  };
  std::vector<HeadRows> head_rows;
  size_t depth_first_group = 0;                      // first rule group of this depth

  void place_facts();

  void bucket_by_depth();

  // A ground rule's softmax segment (sample, group), and whether two share a head atom.
  std::pair<uint32_t, uint32_t> softmax_key(const Ref& ref) const {
    return std::make_pair(ref.first, samples[ref.first]->softmax_group[ref.second]);
  }
  bool same_head(const Ref& a, const Ref& b) const {
    return a.first == b.first && samples[a.first]->head[a.second] == samples[b.first]->head[b.second];
  }

  // The atom of ground rule `ref`'s input i (of its rule's spec_of).
  uint32_t input_atom(const Ref& ref, size_t i) const {
    const neural::SampleNetwork& net = *samples[ref.first];
    return net.inputs[net.inputs_begin[ref.second] + input_position(net.rule[ref.second], i)];
  }

  // A merge (merge_shared_weight_rules) that takes a rule whose other inputs are literals
  // under a fixed zero scalar weight on scalar values, PyNeuraLogic's `W h(Y), <0.0>
  // edge(Y, X)`, folds those out first (the fold-zero-literals rewrite, applied ahead): this
  // depth's such rules, each with the position of its one kept input among its ground
  // rules' inputs and its spec reduced to that input.
  std::map<uint32_t, std::pair<uint32_t, neural::RuleSpec>> reduced_rules;
  const neural::RuleSpec& spec_of(uint32_t r) const {
    if (reduced_rules.empty()) return model.rules[r];
    const auto it = reduced_rules.find(r);
    return it == reduced_rules.end() ? model.rules[r] : it->second.second;
  }
  // Where input i of rule r's spec_of lies among its ground rules' inputs.
  uint32_t input_position(uint32_t r, size_t i) const {
    if (reduced_rules.empty()) return static_cast<uint32_t>(i);
    const auto it = reduced_rules.find(r);
    return it == reduced_rules.end() ? static_cast<uint32_t>(i) : it->second.first;
  }
  // PlanOptions::merge_shared_weight_rules (plan_merge_rules.cpp).
  uint32_t merge_input(uint32_t r, const std::vector<Ref>& members) const;
  void reduce_to_merge_input(uint32_t r, uint32_t kept);

  InputBlock input_block(uint32_t r, size_t i, const std::vector<Ref>& members, InputBlock* scanned) const;

  void input_values(InputBlock& B, uint32_t r, size_t i, const std::vector<Ref>& members) const;

  // What scan_members found about a rule group's members.
  struct MemberScan {
    bool done = false;              // scan_members ran and succeeded
    bool softmax_in_order = false;  // softmax keys never decrease: G.softmax_segments are set
    std::vector<InputBlock> blocks;
    std::vector<uint32_t> head_atoms;  // per head segment
  };

  bool scan_members(RuleGroup& G, size_t n_inputs, bool softmax, const std::vector<Ref>& members,
                    MemberScan& scan) const;

  static uint32_t grid_rows(const neural::SampleNetwork& net, const std::vector<Ref>& members, size_t b, size_t e);

  bool order_by_softmax_segment(std::vector<Ref>& members, RuleGroup& G, size_t n_inputs, MemberScan* scan) const;

  // ---- pair blocks (plan_pair_blocks.cpp) ----
  std::vector<std::vector<uint32_t>> block_score_group;  // per sample and block: its scores' rule group

  void add_pair_block_groups(uint32_t depth);

  static std::vector<uint32_t> block_row_begin(const logic::PairBlock& b);

  bool back_to_back(uint32_t s, const std::vector<uint32_t>& atoms, uint32_t r, size_t input, Shape& shape,
                    uint32_t& first) const;

  void write_score_sources(uint32_t s, const logic::PairBlock& b, size_t i, std::vector<uint32_t>& src) const;

  uint32_t add_block_scores(uint32_t s, const logic::PairBlock& b);

  void add_block_sums(uint32_t s, const logic::PairBlock& b, const RuleGroup& scores);

  template <class Fits, class Sources>
  bool plan_block_inputs(RuleGroup& G, const neural::RuleSpec& spec, MemberScan& scan, bool fast, Fits direct_fits,
                         Sources sources_of, std::vector<Shape>& z_shapes);

  static bool block_tiles_fit(const logic::PairBlock& b, const std::vector<uint32_t>& row_begin);

  static void set_block_shape(DirectProduct& d, const logic::PairBlock& b, const std::vector<uint32_t>& row_begin);

  void add_rule_group(const uint32_t r, std::vector<Ref> members);

  RuleGroup new_rule_group(uint32_t r, size_t n) const;

  uint32_t add_rule_step(RuleGroup G);

  std::vector<Shape> plan_rule_inputs(RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                                      MemberScan& scan);

  void plan_combination_and_activation(RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Shape>& z_shapes);

  void plan_head_segments(RuleGroup& G, const std::vector<Ref>& members, bool scanned);

  void plan_softmax_segments(RuleGroup& G, const std::vector<Ref>& members, bool in_order);

  // With `members` and their scan, G's last stage may add to an earlier group's rows
  // (share_head_rows); without (a pair block's groups), it never does.
  void plan_aggregation_and_head_weight(RuleGroup& G, const neural::RuleSpec& spec,
                                        const std::vector<Ref>* members = nullptr, const MemberScan* scan = nullptr);

  // The (sample, atom) of G's head j.
  Ref head_atom(const RuleGroup& G, uint32_t j, const std::vector<Ref>& members, const MemberScan& scan) const {
    const auto [s, g] = members[G.head_segments[j]];
    return {s, scan.done ? scan.head_atoms[j] : samples[s]->head[g]};
  }

  // PlanOptions::share_head_rows (rewrites/shared_head_rows.cpp): whether G's last stage
  // (its head weight's GEMM, else its transform sum's per-head sums or GEMM) adds to an
  // earlier group's rows (then G.out_off is theirs and G.adds_to_out is set). If not,
  // note_head_rows notes G's own rows (allocated) for the groups after it.
  bool share_head_rows(RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                       const MemberScan& scan);
  void note_head_rows(const RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                      const MemberScan& scan);

  // PlanOptions::alias_identity_rules (plan_alias_rules.cpp): whether G (its inputs
  // planned) computes each head's one input unchanged; if so its heads' contributions are
  // the inputs' offsets and G gets no step.
  bool alias_identity_rule(RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                           const MemberScan& scan);
  void merge_shared_weight_rules(std::map<std::pair<uint32_t, uint32_t>, std::vector<Ref>>::iterator first,
                                 uint32_t depth);
  bool own_sum_rows(const RuleGroup& G) const;
  // Rewrite::SelfIntoSum (rewrites/self_into_sum.cpp): atoms summing their own row and a
  // plain neighbour sum's row become that sum's rows, the own row its first; true when done.
  bool fold_self_into_sum(const AtomGroup& A, const std::vector<Ref>& members);
  bool atoms_read_once(uint32_t p) const;
  // Whether G's transformed rows are its heads' values that no other rule's group can
  // read: it transforms them itself, one grounding per head, through a weight no other rule
  // reads (so no group of its depth shares the rows, TransformSum::owns_transform).
  bool transform_rows_alone(const RuleGroup& G) const;
  // How many template rules read parameter `weight` (as an input's or head weight, or an
  // offset); counted once per builder.
  uint32_t weight_readers(uint32_t weight) const;
  mutable std::vector<uint32_t> readers_of_weight;
  bool plan_in_input_rows(AtomGroup& A, const std::vector<Ref>& members);
  void add_contributions(const RuleGroup& G, const neural::RuleSpec& spec, const std::vector<Ref>& members,
                         const MemberScan& scan);

  bool pass_contributions_through(uint32_t p, size_t m, const std::vector<Contribution>& list, Shape shape);

  template <class Visit>
  static void for_each_by_atom(const std::vector<Contribution>& list, Visit visit);

  void sort_contributions_by_atom(AtomGroup& A, const std::vector<Ref>& members, const std::vector<Contribution>& list,
                                  const std::string& where);

  void add_atom_group(const uint32_t p, const std::vector<Ref>& members);

  void plan_batch_norm(AtomGroup& A, const neural::BatchNormSpec& norm, Shape red_shape, const std::string& where);
  bool x_hat_over_x(const AtomGroup& A) const;

  void place_outputs();
};

}  // namespace lrnn::exec::planning
