// "Did you mean ...?": the candidate closest to a misspelled name, for error messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lrnn {

// Levenshtein distance (insertions, deletions, substitutions).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `name`, or "" when none is within a third of its length (at
// least 2 edits): a far-fetched suggestion misleads more than none.
template <class Range>
std::string closest_name(std::string_view name, const Range& candidates) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(name, c);
    if (d < best_distance) best_distance = d, best = std::string(c);
  }
  const size_t allowed = name.size() / 3 > 2 ? name.size() / 3 : 2;
  return best_distance <= allowed ? best : std::string();
}

}  // namespace lrnn
