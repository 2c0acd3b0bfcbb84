// The table of plan rewrites (registry.hpp): each rewrite's file defines its RewriteInfo,
// listed here in the order of `Rewrite`.
#include "exec/rewrites/registry.hpp"

#include "lrnn/diagnostics.hpp"

namespace lrnn::exec {

const RewriteInfo& rewrite_info(Rewrite r) {
  static const std::array<const RewriteInfo*, kRewriteCount> table{
      &rewrites::kFoldZeroLiterals, &rewrites::kDropUnitWeights, &rewrites::kDirectProduct, &rewrites::kTransformSum,
      &rewrites::kOneHotInputs, &rewrites::kSharedHeadRows, &rewrites::kSelfIntoSum, &rewrites::kWeightAfterReadout};
  return *table[bit(r)];
}

Rewrite rewrite_named(std::string_view name) {
  std::string known;
  for (size_t i = 0; i < kRewriteCount; ++i) {
    const RewriteInfo& info = rewrite_info(static_cast<Rewrite>(i));
    if (info.name == name) return static_cast<Rewrite>(i);
    known += (i ? ", " : "") + std::string(info.name);
  }
  throw Error(ErrorKind::Semantic, "no plan rewrite is called '" + std::string(name) + "' (known: " + known + ")");
}

std::string describe_rewrites(const RewriteCounts& counts) {
  std::string out;
  for (size_t i = 0; i < kRewriteCount; ++i) {
    const RewriteInfo& info = rewrite_info(static_cast<Rewrite>(i));
    out += "rewrite " + std::string(info.name) + ": " + std::to_string(counts[i]) +
           (counts[i] == 1 ? " rule group (" : " rule groups (") + std::string(info.description) + ")\n";
  }
  return out;
}

}  // namespace lrnn::exec
