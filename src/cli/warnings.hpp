// Warnings of the `lrnn` command: what runs, but is probably not what was meant.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "lrnn/distributed.hpp"
#include "lrnn/model.hpp"

namespace lrnn::cli {

// Queries that nothing derives in their example output 0 and give no gradient
// (docs/semantics.md "Underivable queries"): one line on stderr naming how many and the
// first few, from rank 0 of an MPI job (counted over every rank). `what`: "training data".
inline void warn_underivable_queries(const Model& model, const Dataset& data, const std::string& what) {
  const UnderivableQueries mine = model.underivable_queries(data);
  const std::vector<uint32_t> counts =
      gather_from_every_process({static_cast<uint32_t>(mine.count), static_cast<uint32_t>(mine.total)});
  size_t count = 0, total = 0;
  for (size_t r = 0; r + 1 < counts.size(); r += 2) count += counts[r], total += counts[r + 1];
  if (count == 0 || !is_root_process()) return;
  std::string listed;
  for (const std::string& q : mine.listed) listed += (listed.empty() ? "" : ", ") + q;
  // Rank 0 names only its own; the others' are counted, not named (one line per job).
  if (listed.empty()) listed = "all held by other ranks of the job";
  else if (count > mine.listed.size()) listed += ", ...";
  std::fprintf(stderr,
               "lrnn: warning: %zu of %zu queries of the %s are derived by no rule or fact of their example, so "
               "they output 0 (docs/semantics.md \"Underivable queries\"): %s\n",
               count, total, what.c_str(), listed.c_str());
}

}  // namespace lrnn::cli
