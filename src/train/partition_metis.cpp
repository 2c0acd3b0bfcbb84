// The constants of one big sample assigned to ranks by METIS (train/partition.hpp): a k-way
// partition of their co-occurrence graph with a small edge cut. Without METIS (built with
// -DLRNN_METIS=OFF, or libmetis-dev missing) there is none and the caller hashes.
#include <algorithm>
#include <string>
#include <vector>

#include "lrnn/diagnostics.hpp"
#include "train/partition.hpp"

#ifndef LRNN_WITH_METIS
#define LRNN_WITH_METIS 0
#endif
#if LRNN_WITH_METIS
#include <metis.h>
#endif

namespace lrnn::train {

bool metis_available() { return LRNN_WITH_METIS != 0; }

std::vector<int> metis_owners(size_t num_constants, std::span<const uint64_t> fact_begin,
                              std::span<const uint32_t> fact_constants, int size) {
#if LRNN_WITH_METIS
  if (size < 2 || num_constants < static_cast<size_t>(size)) return {};
  // The graph: constants adjacent when they share a fact, each pair weighted by the facts
  // they share; each constant weighted by 1 + its facts (its share of the grounding's work).
  // Built in two passes over the facts into one array (a list per constant cost a big
  // graph's build a malloc per edge): each constant's neighbours, then sorted and merged.
  const size_t num_facts = fact_begin.empty() ? 0 : fact_begin.size() - 1;
  std::vector<idx_t> vertex_weight(num_constants, 1);
  std::vector<size_t> begin(num_constants + 1, 0);
  std::vector<uint32_t> fact;
  const auto distinct_constants = [&](size_t f) {
    fact.assign(fact_constants.begin() + static_cast<ptrdiff_t>(fact_begin[f]),
                fact_constants.begin() + static_cast<ptrdiff_t>(fact_begin[f + 1]));
    std::sort(fact.begin(), fact.end());
    fact.erase(std::unique(fact.begin(), fact.end()), fact.end());
  };
  for (size_t f = 0; f < num_facts; ++f) {
    distinct_constants(f);
    for (uint32_t a : fact) {
      ++vertex_weight[a];
      begin[a + 1] += fact.size() - 1;
    }
  }
  for (size_t c = 0; c < num_constants; ++c) begin[c + 1] += begin[c];
  std::vector<uint32_t> neighbours(begin.back());
  std::vector<size_t> filled(begin.begin(), begin.end() - 1);
  for (size_t f = 0; f < num_facts; ++f) {
    distinct_constants(f);
    for (uint32_t a : fact)
      for (uint32_t b : fact)
        if (a != b) neighbours[filled[a]++] = b;
  }
  std::vector<size_t>().swap(filled);
  // Each pair once, weighted by the facts it shares.
  std::vector<idx_t> xadj{0}, adjncy, adjwgt;
  for (size_t c = 0; c < num_constants; ++c) {
    std::sort(neighbours.begin() + static_cast<ptrdiff_t>(begin[c]), neighbours.begin() + static_cast<ptrdiff_t>(begin[c + 1]));
    for (size_t k = begin[c]; k < begin[c + 1]; ++k) {
      if (k > begin[c] && neighbours[k] == neighbours[k - 1]) {
        ++adjwgt.back();
        continue;
      }
      adjncy.push_back(static_cast<idx_t>(neighbours[k]));
      adjwgt.push_back(1);
    }
    xadj.push_back(static_cast<idx_t>(adjncy.size()));
  }
  std::vector<uint32_t>().swap(neighbours);
  idx_t n = static_cast<idx_t>(num_constants), constraints = 1, parts = size, cut = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = 1;  // the same partition on every rank and every run
  options[METIS_OPTION_NUMBERING] = 0;
  std::vector<idx_t> part(num_constants);
  const int status = METIS_PartGraphKway(&n, &constraints, xadj.data(), adjncy.data(), vertex_weight.data(), nullptr,
                                         adjwgt.data(), &parts, nullptr, nullptr, options, &cut, part.data());
  if (status != METIS_OK)
    throw Error(ErrorKind::Runtime, "METIS_PartGraphKway failed (status " + std::to_string(status) + ") on " +
                                        std::to_string(num_constants) + " constants");
  return std::vector<int>(part.begin(), part.end());
#else
  (void)num_constants, (void)fact_begin, (void)fact_constants, (void)size;
  return {};
#endif
}

}  // namespace lrnn::train
