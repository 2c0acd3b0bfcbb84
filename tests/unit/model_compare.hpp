// Comparing two models' parameters (tests that train one model two ways).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "lrnn/model.hpp"

namespace lrnn_test {

// The largest absolute difference between the two models' parameter values (same layout).
inline double max_parameter_difference(const lrnn::Model& a, const lrnn::Model& b) {
  double d = 0;
  const auto pa = a.parameters(), pb = b.parameters();
  EXPECT_EQ(pa.size(), pb.size());
  for (size_t p = 0; p < pa.size() && p < pb.size(); ++p)
    for (size_t k = 0; k < pa[p].values.size() && k < pb[p].values.size(); ++k)
      d = std::max(d, std::abs(pa[p].values[k] - pb[p].values[k]));
  return d;
}

}  // namespace lrnn_test
