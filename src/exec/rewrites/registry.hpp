// The named rewrites of an execution plan (docs/semantics.md "Plan rewrites"): each turns
// the plain plan of a rule group (its inputs gathered per grounding, combined, activated,
// aggregated per head) into an equivalent faster one. Each lives in a file of its own in
// this folder, as Souffle's ram/transform keeps one transformation per file, with its name,
// a one-line description and the docs section that defines it; build_plan applies the
// enabled ones in the order of `Rewrite` (a later one sees what an earlier one left) and
// counts the rule groups each changed. PlanOptions::disabled_rewrites turns any of them
// off, so that tests can compare a rewritten plan with the plain one.
#pragma once

#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lrnn::exec {

// In the order they are applied.
enum class Rewrite : uint8_t {
  FoldZeroLiterals,  // rewrites/fold_zero_literals.cpp
  DropUnitWeights,   // rewrites/drop_unit_weights.cpp
  DirectProduct,     // rewrites/direct_product.cpp
  TransformSum,      // rewrites/transform_sum.cpp
  OneHotInputs,      // rewrites/one_hot_inputs.cpp
  SharedHeadRows,    // rewrites/shared_head_rows.cpp
  SelfIntoSum,       // rewrites/self_into_sum.cpp
  WeightAfterReadout,  // rewrites/weight_after_readout.cpp
};
inline constexpr size_t kRewriteCount = 8;

struct RewriteInfo {
  std::string_view name;         // as `lrnn ground --stats` prints it and tests disable it
  std::string_view description;  // one line
  std::string_view doc;          // the docs section that defines it
};

// Each defined in its rewrite's file.
namespace rewrites {
extern const RewriteInfo kFoldZeroLiterals, kDropUnitWeights, kDirectProduct, kTransformSum, kOneHotInputs,
    kSharedHeadRows, kSelfIntoSum, kWeightAfterReadout;
}  // namespace rewrites

const RewriteInfo& rewrite_info(Rewrite r);
// The rewrite called `name`; throws lrnn::Error naming the known ones when there is none.
Rewrite rewrite_named(std::string_view name);

using RewriteSet = std::bitset<kRewriteCount>;
inline size_t bit(Rewrite r) { return static_cast<size_t>(r); }

// Per rewrite: the rule groups of a plan it changed.
using RewriteCounts = std::array<uint32_t, kRewriteCount>;

// One line per rewrite, "rewrite NAME: K rule groups (DESCRIPTION)", in the order they apply.
std::string describe_rewrites(const RewriteCounts& counts);

}  // namespace lrnn::exec
