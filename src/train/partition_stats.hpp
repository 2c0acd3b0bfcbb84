// What a rank holds of one sample partitioned over the ranks of an MPI job
// (train/partition.hpp): the public lrnn::PartitionShare, apart so that PreparedSet
// (train/engine.hpp) can carry it without the partitioner's header.
#pragma once

#include "lrnn/training.hpp"

namespace lrnn::train {

using PartitionStats = lrnn::PartitionShare;

}  // namespace lrnn::train
