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
  // Ids, queries and targets (the examples' facts stay in the dataset's compact store).
  const std::vector<train::Sample>& samples_without_facts() const { return data.impl().samples.without_facts(); }
};

inline SampleSet sample_set(std::vector<train::Sample> samples) { return SampleSet{Dataset::Impl::make(std::move(samples))}; }

}  // namespace lrnn::python
