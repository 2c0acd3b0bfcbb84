// Samples held in C++ for Python (lrnn.datasets.TUDataset, cross-validation): a dataset
// read or converted once, subset by index and prepared without a round trip through text.
#pragma once

#include <vector>

#include "train/dataset.hpp"

namespace lrnn::python {

struct SampleSet {
  std::vector<train::Sample> samples;
};

}  // namespace lrnn::python
