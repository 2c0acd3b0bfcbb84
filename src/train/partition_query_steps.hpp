// The steps of query mini-batches over a sample partitioned over MPI ranks and cut at its
// ghosts (docs/distributed.md "One sample over many ranks"): a step runs on each rank only
// the part of its network the batch depends on, its share of the batch's support.
//
// Each rank starts from the batch's queries it owns. The ghosts that support reaches are
// asked of their owners, level by level from the highest exchanged one down (one alltoall
// each); an owner adds the atoms asked of it to what its support must compute, which may
// reach ghosts of lower levels, asked in the next round. The step's network is then the
// support of the owned queries and the asked atoms, and its exchange sends and receives
// only the atoms asked (GhostExchange over the support's lists). Every value the batch's
// outputs read is computed once, by its owner, from all its ground rules: the step computes
// what one process's support computes (no neighbour sampling), and the same gradients.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "train/engine.hpp"
#include "train/query_batches.hpp"

namespace lrnn::train::dist {

class PartitionQuerySteps {
 public:
  // `part`: this rank's part (PreparedSet::partitioned, cut at ghosts: part.ghosts set).
  PartitionQuerySteps(const neural::TemplateModel& model, const PreparedSet& part);
  // The step of `outputs` (indices into part.outputs: the first output of each of this
  // rank's queries of the batch, in batch order): a set of one network whose outputs are
  // those queries' (with their matches), origin[k] the part's output of the step's output
  // k. Collective: every rank calls it for every step.
  PreparedSet step(std::span<const uint32_t> outputs, std::vector<uint32_t>& origin);

 private:
  static constexpr uint32_t kNotGhost = 0xFFFFFFFFu;
  const PreparedSet& part_;
  FanOut every_rule_;
  RulesByHead heads_;
  SupportScratch scratch_;
  // Per atom of the part's network: for this rank's ghosts, the level index of its
  // exchange (GhostExchange::levels order), its owner and its place in their list.
  std::vector<uint32_t> ghost_level_, ghost_owner_, ghost_place_;
  std::vector<uint32_t> first_output_;  // per query of the part's network + 1, into part.outputs
};

}  // namespace lrnn::train::dist
