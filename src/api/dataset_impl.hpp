// What a public lrnn::Dataset holds: the paired samples (an example with the queries it
// answers). Internal to the api stage and the bindings that build datasets from samples.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lrnn/model.hpp"
#include "train/dataset.hpp"

namespace lrnn {

struct Dataset::Impl {
  std::vector<train::Sample> samples;
  uint64_t id = 0;  // keys the models' caches of grounded networks
  static Dataset make(std::vector<train::Sample> samples);
};

}  // namespace lrnn
