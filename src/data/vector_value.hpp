// A column vector value (n x 1) of `data`: the value of a graph's feature, attribute and
// one-hot label facts and targets, for the readers of src/data/ (TU folders, arrays).
#pragma once

#include <utility>
#include <vector>

#include "lrnn/ast.hpp"

namespace lrnn::data {

inline ValueSpec vector_value(std::vector<double> data) {
  ValueSpec v;
  v.kind = ValueSpec::Kind::Vector;
  v.rows = static_cast<int>(data.size());
  v.cols = 1;
  v.data = std::move(data);
  return v;
}

}  // namespace lrnn::data
