// Grounding attention's score rule and the weighted sum reading it as one PairBlock
// (grounding.hpp): which rule pairs have the block's literals (pair_block_shape, behind
// pair_block_structure), the block of one example built from its complete relations, and
// the block's atoms through relevance pruning and renumbering. The grounder decides when
// (grounder.cpp); these functions know the block's layout.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "logic/grounding.hpp"
#include "logic/program.hpp"
#include "logic/relation.hpp"
#include "logic/symbols.hpp"

namespace lrnn::logic {

// The literals of a score rule and a sum rule that pass pair_block_structure, as the
// grounder reads them.
struct PairBlockShape {
  uint32_t score_rule = 0, sum_rule = 0;
  uint32_t pair_pred = kNone, head_pred = kNone;                       // w/2, a/1
  uint32_t row_pred = kNone, column_pred = kNone, value_pred = kNone;  // q(I), k(J), v(J)
  // The comparison (BuiltinOp::True: none) and whether its first argument is the column
  // J (@leq(J, I), @lt(J, I)) or the row I (@geq(I, J), @gt(I, J)).
  BuiltinOp comparison = BuiltinOp::True;
  bool column_first = false;
  // A sliding window instead: @sub(I, J, D) and bounds @op(D, constant) (op one of leq,
  // lt, geq, gt) on the offset D = I - J, the rule's third variable.
  bool window = false;
  std::vector<std::pair<BuiltinOp, uint32_t>> window_bounds;
  // Per input slot of the score rule: kRowInput, kColumnInput, or the index of a ground
  // literal in ground_pred / ground_tuple.
  std::vector<uint32_t> score_inputs;
  std::vector<uint32_t> ground_pred;
  std::vector<std::vector<uint32_t>> ground_tuple;
  uint32_t sum_pair_input = 0;  // the sum rule's input slot of w(I, J)
  uint32_t level = 0;           // the sum rule's stratum
};

// The shape of rules score_rule and sum_rule when they pass pair_block_structure
// (grounder.hpp), else nothing.
std::optional<PairBlockShape> pair_block_shape(const Program& program, uint32_t score_rule, uint32_t sum_rule);

// The block of one example once every relation the two rules read is complete, its atoms
// as rows of their relations (head_atom empty: the grounder inserts the heads a(I), one
// per row, named by row_symbol). Nothing when the example needs the general path: w has
// rows (an example fact), a ground literal's atom is missing, a key J has no value v(J),
// or, with a comparison or a window, the keys do not ascend strictly (and, with a window,
// a position is no small integer). Rows whose band is empty are
// left out (the comparison allows no key: their a(I) is not derived), and so are keys past
// every row's band (no pair reads them).
std::optional<PairBlock> build_pair_block(const PairBlockShape& shape, const std::vector<Relation>& rels,
                                          const Symbols& symbols);

// Relation rows -> provisional atom ids (base[pred] + row) in place.
void offset_pair_block(PairBlock& block, const PairBlockShape& shape, const std::vector<uint32_t>& base);

// Relevance pruning: the block is computed whole, so if any of its heads is kept, every
// atom it reads and every head is kept. Returns whether the block is kept.
bool keep_pair_block(const PairBlock& block, std::vector<char>& keep);

// Provisional -> final atom ids in place; false (the block dropped) when no head is kept.
bool remap_pair_block(PairBlock& block, const std::vector<uint32_t>& new_id);

}  // namespace lrnn::logic
