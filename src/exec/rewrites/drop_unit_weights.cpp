// The drop-unit-weights rewrite (registry.hpp; docs/semantics.md "Plan rewrites"): a literal
// under a fixed weight that multiplies as the identity (a scalar 1, an identity matrix, or
// all ones applied entry by entry) is read as its input, unweighted: no product per
// grounding, and an input without a weight may then be read where it lies (the direct
// product, which comes next).
#include <algorithm>

#include "exec/plan_builder.hpp"
#include "exec/rewrites/registry.hpp"

const lrnn::exec::RewriteInfo lrnn::exec::rewrites::kDropUnitWeights{"drop_unit_weights",
    "fixed weights that multiply as the identity (1, an identity matrix, ones) left out",
    "docs/semantics.md \"Plan rewrites\""};

namespace lrnn::exec {

bool multiplies_as_identity(const double* w, Shape shape, WeightMode mode) {
  switch (mode) {
    case WeightMode::Scalar:
      return w[0] == 1.0;
    case WeightMode::Elementwise:
      return std::all_of(w, w + shape.size(), [](double x) { return x == 1.0; });
    case WeightMode::MatMul:
      if (shape.rows != shape.cols) return false;
      for (int i = 0; i < shape.rows; ++i)
        for (int j = 0; j < shape.cols; ++j)
          if (w[size_t(i) * shape.cols + j] != (i == j ? 1.0 : 0.0)) return false;
      return true;
    default:  // None, and Outer: a scalar input scaling a matrix gives the matrix's shape
      return false;
  }
}

namespace planning {

// An identity matrix's W x is x exactly for finite x (each off-diagonal 0 * x_j is 0); an
// infinite or NaN entry, which makes the plain product's other entries NaN, is not
// propagated. A scalar 1 or ones entry by entry give x exactly, whatever x is.
std::vector<std::pair<uint32_t, WeightMode>> drop_unit_weights(const neural::TemplateModel& model,
                                                               std::vector<InputBlock>& inputs) {
  std::vector<std::pair<uint32_t, WeightMode>> dropped;
  for (InputBlock& B : inputs) {
    if (B.weight == neural::kNoParam) continue;
    const neural::ParamInfo& info = model.params.info(B.weight);
    if (info.learnable || !info.initialized || !multiplies_as_identity(model.params.data(B.weight), info.shape, B.mode))
      continue;
    dropped.emplace_back(B.weight, B.mode);
    B.weight = neural::kNoParam;
    B.mode = WeightMode::None;
    B.wout_shape = B.raw_shape;  // W x has x's shape: out_shape stays
  }
  return dropped;
}

}  // namespace planning
}  // namespace lrnn::exec
