// Samples held in C++ for Python (lrnn.datasets.TUDataset, cross-validation): a public
// lrnn::Dataset read or converted once, subset by index and prepared by a model without a
// round trip through text.
#pragma once

#include <vector>

#include "api/dataset_impl.hpp"
#include "lrnn/model.hpp"

namespace lrnn::python {

struct SampleSet {
  Dataset data;
  const std::vector<train::Sample>& samples() const { return data.impl().samples; }
};

inline SampleSet sample_set(std::vector<train::Sample> samples) { return SampleSet{Dataset::Impl::make(std::move(samples))}; }

}  // namespace lrnn::python
