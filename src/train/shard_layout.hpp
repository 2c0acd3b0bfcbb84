// How a sharded set (train/distributed.hpp) lies over the ranks of an MPI job: every rank's
// held range and every sample's cost, so that each rank computes the same work-balanced
// split of every global batch.
#pragma once

#include <cstdint>
#include <vector>

namespace lrnn::train::dist {

struct ShardLayout {
  std::vector<uint32_t> held_first, held_last;  // per rank, global sample indices
  std::vector<uint32_t> costs;                  // per global sample: its network's atoms and inputs
};

}  // namespace lrnn::train::dist
