// The test split of whole samples (`lrnn train --test-fraction`, Model::evaluate's held-out
// part): a seeded shuffle, the same on every platform.
#pragma once

#include <cstdint>
#include <vector>

#include "train/engine.hpp"

namespace lrnn::train {

// Splits samples into (train, test): a seeded shuffle, then the last round(fraction * n)
// samples are the test set (at least one of each when n >= 2).
void split_samples(std::vector<Sample>& all, double fraction, uint64_t seed, std::vector<Sample>& train,
                   std::vector<Sample>& test);
// The same split as indices of n samples, each part in ascending order.
void split_indices(size_t n, double fraction, uint64_t seed, std::vector<size_t>& train, std::vector<size_t>& test);

}  // namespace lrnn::train
