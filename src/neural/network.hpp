// Neuralization of one grounded example (docs/language.md "From a template and an example to a
// network"): which atoms and ground rules become neurons, at which depth, with which fact
// values. Flat arrays only; built once per sample (in parallel across samples) and merged
// into execution plans (exec/plan.hpp) as often as minibatches need.
#pragma once

#include <cstdint>
#include <vector>

#include "neural/functions.hpp"
#include "logic/grounder.hpp"
#include "logic/grounding.hpp"
#include "lrnn/ast.hpp"
#include "neural/template_model.hpp"

namespace lrnn::neural {

// "No index" is the logic stage's sentinel (ids are copied across the stages unchanged).
using logic::kNone;

struct SampleNetwork {
  // Kept atoms (those a query depends on), local ids 0..num_atoms()-1.
  std::vector<uint32_t> atom_depth;      // 0: fact only; >= 1: atom neuron (derived)
  std::vector<uint32_t> atom_predicate;  // TemplateModel::predicates index if derived, else kNone
  std::vector<uint32_t> atom_fact;       // index into the fact arrays below, or kNone
  std::vector<uint32_t> atom_ground_id;  // the atom's id in the GroundSample

  // Facts: a template fact (learnable/fixed parameter) or an example fact (data).
  std::vector<uint32_t> fact_template;   // TemplateModel::facts index, or kNone for data
  std::vector<Shape> fact_shape;
  std::vector<uint32_t> fact_data_begin;  // per fact (size facts+1) into fact_data
  // May end before fact_data_begin.back(): the facts past its end are placeholders whose
  // values each pass writes before reading them (a partitioned sample's ghosts,
  // train/ghost_cut.hpp); a plan that copies the data gives them zeros.
  std::vector<double> fact_data;
  // Learnable example facts (PyNeuraLogic's build_dataset(learnable_facts=True)): per fact,
  // the index of its parameter in the dataset's own parameter block (train::ExampleFacts),
  // or kNone for a constant. Empty when the dataset's facts are all constants.
  std::vector<uint32_t> fact_example_param;

  // Kept ground rules, sorted by (rule, head, softmax group, grounding order).
  std::vector<uint32_t> rule;
  std::vector<uint32_t> head;          // local atom id
  std::vector<uint32_t> softmax_group; // per (rule, values of the non-normalised variables)
  std::vector<uint32_t> inputs_begin;  // size ground rules + 1
  std::vector<uint32_t> inputs;        // local atom ids, in input-literal order

  // Attention blocks (logic::PairBlock, atom ids local): their pairs are neither atoms nor
  // ground rules here; the plan computes each block's scores (at pair_depth) and weighted
  // sums (heads at head_depth, their atoms' depth) as dense or banded products.
  struct PairBlock {
    logic::PairBlock block;
    uint32_t pair_depth = 0, head_depth = 0;
  };
  std::vector<PairBlock> pair_blocks;

  // Per query of the example, the local atom ids it matched (empty: no neuron, output 0).
  std::vector<std::vector<uint32_t>> query_atoms;

  size_t dropped_cycle_rules = 0;  // ground rules dropped to break cycles
  uint64_t structure_hash = 0;     // equal for networks identical up to fact values

  size_t num_atoms() const { return atom_depth.size(); }
  // The bytes of its arrays (what the memory budget holds for it, lrnn/memory.hpp).
  uint64_t bytes() const {
    auto of = [](const auto& v) { return uint64_t(v.capacity()) * sizeof(v[0]); };
    uint64_t b = of(atom_depth) + of(atom_predicate) + of(atom_fact) + of(atom_ground_id) + of(fact_template) +
                 of(fact_shape) + of(fact_data_begin) + of(fact_data) + of(fact_example_param) + of(rule) + of(head) +
                 of(softmax_group) + of(inputs_begin) + of(inputs);
    for (const auto& q : query_atoms) b += of(q);
    for (const auto& pb : pair_blocks) b += pb.block.bytes();
    return b;
  }
  size_t num_ground_rules() const { return rule.size(); }
  size_t num_facts() const { return fact_shape.size(); }
};

// The number of fact values `net` lays out: its fact_data's, or, for a query batch's
// support whose values stay in the whole graph's (train::PreparedSet::value_tables), the
// count fact_data_begin still gives.
inline size_t fact_values_size(const SampleNetwork& net) {
  return net.fact_data_begin.empty() ? net.fact_data.size() : net.fact_data_begin.back();
}

// Builds the network of one example. Throws lrnn::Error on a fact value that cannot be a
// neuron value (dimensions only, unless `learnable_facts`: then the value is a parameter
// the dataset initialises, and its entries here are zeros) or a ground rule set that does
// not fit the template.
SampleNetwork neuralize(const TemplateModel& model, const ExampleAst& example,
                        const logic::GroundSample& ground, bool learnable_facts = false);
// The same with the example's facts read from `facts` (the source `ground` was grounded from).
SampleNetwork neuralize(const TemplateModel& model, const logic::FactSource& facts,
                        const logic::GroundSample& ground, bool learnable_facts = false);

// The score and weighted-sum rules of `model` that may be grounded as logic::PairBlocks
// (for logic::GroundingOptions::pair_blocks): the score rule a product of unweighted,
// unnegated inputs normalised by softmax over the key variable alone, the sum rule a
// product of its two unweighted inputs summed or averaged per head, without offset or
// activation, and the literals as logic::pair_block_structure requires.
std::vector<logic::PairBlockRules> pair_block_rules(const TemplateModel& model, const logic::Program& program);

// Everything but the fact values (the learnable facts' parameter indices included):
// networks with equal hashes share one execution plan.
uint64_t structure_hash(const SampleNetwork& net);

}  // namespace lrnn::neural
