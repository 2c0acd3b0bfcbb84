// The grounder's limits (GroundingOptions::max_atoms, max_ground_rules) and its memory
// budget (lrnn/memory.hpp): the errors that name the rule being grounded.
#include <algorithm>
#include <string>

#include "logic/grounder_impl.hpp"

namespace lrnn::logic::detail {

Error Grounder::atom_limit(const CompiledRule& cr) const {
  return Error(ErrorKind::Limit, cr.span,
               "grounding exceeded " + std::to_string(opt_.max_atoms) + " atoms while deriving " +
                   prog_.predicate_name(cr.head_pred) + " (GroundingOptions::max_atoms)");
}

Error Grounder::model_limit(const CompiledRule& cr) const {
  return Error(ErrorKind::Limit, cr.span,
               "grounding exceeded " + std::to_string(opt_.max_ground_rules) +
                   " ground rules (GroundingOptions::max_ground_rules) while computing the least model of " +
                   prog_.predicate_name(cr.head_pred) + " (each body substitution counts)");
}

// Reserves up to bytes_ and a chunk beyond (so the next rows need no call), or exactly
// bytes_ near the limit; past it, refuses naming the rule being grounded.
void Grounder::reserve_bytes(const CompiledRule& cr) {
  constexpr uint64_t kChunk = uint64_t{8} << 20;
  if (memory_.try_grow(bytes_ + kChunk - memory_.bytes()) || memory_.try_grow(bytes_ - memory_.bytes())) return;
  memory_.refuse(bytes_ - memory_.bytes(),
                 "grounding (" + std::to_string(total_atoms_) + " atoms and " +
                     std::to_string(std::max(model_substitutions_, ground_rules_)) + " ground rules so far, " +
                     format_memory_size(bytes_) + " estimated) while deriving " + prog_.predicate_name(cr.head_pred) +
                     " by this rule",
                 cr.span);
}

Error Grounder::ground_rule_limit(const CompiledRule& cr) const {
  return Error(ErrorKind::Limit, cr.span,
               "grounding exceeded " + std::to_string(opt_.max_ground_rules) +
                   " ground rules (GroundingOptions::max_ground_rules) while enumerating this rule");
}

}  // namespace lrnn::logic::detail
