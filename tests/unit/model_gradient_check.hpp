// The finite-difference check of a model's parameter gradients through the public API:
// Model::network's gradient of every learnable entry against the central difference of
// the same sample's loss. Shared by the kernel tests that build models (direct product,
// transform-sum, fused atom sums).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "lrnn/lrnn.hpp"

namespace lrnn_test {

// `to` takes every parameter value of `from` (two models of templates that differ only in
// how a kernel runs, compared on the same weights).
inline void copy_parameters(const lrnn::Model& from, lrnn::Model& to) {
  for (const lrnn::Parameter& p : from.parameters()) to.set_parameter(p.name, p.values);
}

struct GradientCheck {
  size_t checked = 0;   // learnable entries compared
  double largest = 0;   // the largest |finite difference| (a check of all zeros proves little)
};

inline void expect_gradients_match_finite_differences(lrnn::Model& model, const lrnn::Dataset& data,
                                                      GradientCheck* result = nullptr) {
  const lrnn::GroundNetwork net = model.network(data, 0, true);
  const auto params = model.parameters();
  ASSERT_EQ(net.parameter_gradients.size(), params.size());
  GradientCheck check;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].learnable) continue;
    for (size_t e = 0; e < params[i].values.size(); ++e) {
      auto loss_at = [&](double h) {
        auto v = params[i].values;
        v[e] += h;
        model.set_parameter(params[i].name, v);
        const double l = model.network(data, 0, true).loss;
        model.set_parameter(params[i].name, params[i].values);
        return l;
      };
      const double fd = (loss_at(1e-6) - loss_at(-1e-6)) / 2e-6;
      EXPECT_NEAR(net.parameter_gradients[i].values[e], fd, 1e-7 + 1e-6 * std::abs(fd))
          << params[i].name << "[" << e << "]";
      check.largest = std::max(check.largest, std::abs(fd));
      ++check.checked;
    }
  }
  if (result) *result = check;
}

}  // namespace lrnn_test
