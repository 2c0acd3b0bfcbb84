// Pair blocks in the grounder (grounder_impl.hpp; the block itself: pair_block.hpp): which
// listed rule pairs an example grounds as blocks, and their heads.
#include <algorithm>

#include "logic/grounder_impl.hpp"

namespace lrnn::logic::detail {

// The listed rule pairs that may be grounded as blocks in this example: they pass
// pair_block_structure, their ground rules are stored and recorded while firing, a
// query's network needs the sum rule's head and no query names the pair predicate w.
void Grounder::select_pair_blocks(const std::vector<Literal>& queries) {
  if (opt_.pair_blocks.empty() || !opt_.store_ground_rules || !opt_.enumerate || !opt_.record_while_firing) return;
  block_of_rule_.assign(prog_.num_rules(), kNone);
  for (const PairBlockRules& rules : opt_.pair_blocks) {
    std::optional<PairBlockShape> shape = pair_block_shape(prog_, rules.score_rule, rules.sum_rule);
    if (!shape || !logic_relevant_[shape->head_pred] || !neural_relevant_[shape->head_pred]) continue;
    if (block_of_rule_[rules.score_rule] != kNone || block_of_rule_[rules.sum_rule] != kNone) continue;
    const uint32_t w = shape->pair_pred;
    if (std::any_of(queries.begin(), queries.end(), [&](const Literal& q) {
          return !q.builtin && prog_.predicate_id(q.predicate, q.arity()) == w;
        }))
      continue;
    block_of_rule_[rules.score_rule] = block_of_rule_[rules.sum_rule] = uint32_t(blocks_.size());
    blocks_.push_back({std::move(*shape), std::nullopt});
  }
}

// A pair block's rules: the score rule's firing waits for the sum rule's, which builds
// the block (every relation the two read is complete then) or, where the example allows
// none, fires the score rule as its own stratum would have and leaves the sum rule to
// fire as usual. True: rule r is done.
bool Grounder::fire_pair_block_rule(uint32_t r) {
  PendingBlock* pending = pending_block(r);
  if (!pending) return false;
  PendingBlock& pb = *pending;
  if (r == pb.shape.score_rule) return true;
  pb.block = build_pair_block(pb.shape, rels_, syms_);
  if (pb.block) {
    derive_block_heads(pb);
    return true;
  }
  const CompiledRule& score = prog_.compiled_rules()[pb.shape.score_rule];
  fire_once(pb.shape.score_rule, make_plan(score, kNone, std::vector<char>(score.body.size(), 0)));
  Relation& w = rels_[pb.shape.pair_pred];
  w.delta_begin = w.delta_end = w.rows();  // complete, as after its own stratum
  return false;
}

// The heads a(I) of a built block, one per row, and the two rules' substitutions counted
// against the limits as their firings would have counted them.
void Grounder::derive_block_heads(PendingBlock& pb) {
  PairBlock& block = *pb.block;
  const auto& rules = prog_.compiled_rules();
  for (uint32_t r : {pb.shape.score_rule, pb.shape.sum_rule})
    if ((model_substitutions_ += block.pairs()) > opt_.max_ground_rules) throw model_limit(rules[r]);
  const CompiledRule& sum = rules[pb.shape.sum_rule];
  Relation& head = rels_[sum.head_pred];
  for (const uint32_t i : block.row_symbol) {
    auto [row, inserted] = head.insert(&i);
    if (inserted && ++total_atoms_ > opt_.max_atoms) throw atom_limit(sum);
    if (inserted) add_bytes(atom_bytes_for(1), sum);
    block.head_atom.push_back(row);
  }
}

// The built blocks with final atom ids (a block none of whose heads is kept is dropped);
// each pair counts as two ground rules, a score and a weighted sum.
void Grounder::write_pair_blocks(GroundSample& sample, const std::vector<uint32_t>& new_id) {
  for (PendingBlock& pb : blocks_) {
    if (!pb.block || !remap_pair_block(*pb.block, new_id)) continue;
    sample.stats.ground_rules += 2 * pb.block->pairs();
    sample.pair_blocks.push_back(std::move(*pb.block));
  }
}

}  // namespace lrnn::logic::detail
