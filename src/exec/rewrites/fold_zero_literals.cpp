// The fold-zero-literals rewrite (registry.hpp; docs/semantics.md "Plan rewrites"): a body
// literal of a sum whose weight is fixed and zero adds W x = 0 to every grounding, so the
// rule computes the same without it. PyNeuraLogic's templates write a GCN layer's edge as
// such a literal (`W h(Y), <0.0> edge(Y, X)`): left in, every grounding gathers and weighs
// its edge value, and the rule is not one input under a matrix weight, which the transform
// sum runs once per node; folded out, it is lrnn's own `W h(Y), *edge(Y, X)`.
#include <algorithm>

#include "exec/plan_builder.hpp"
#include "exec/rewrites/registry.hpp"

const lrnn::exec::RewriteInfo lrnn::exec::rewrites::kFoldZeroLiterals{"fold_zero_literals",
    "literals of a sum under a fixed zero weight left out (they add 0)",
    "docs/semantics.md \"Plan rewrites\""};

namespace lrnn::exec::planning {

// Whether weight w is fixed (`<...>`, never trained) and every entry is 0 now. A weight
// written as dimensions only is filled by initialization: it is never taken for zero.
bool fixed_zero_weight(const neural::TemplateModel& model, uint32_t w) {
  if (w == neural::kNoParam) return false;
  const neural::ParamInfo& info = model.params.info(w);
  if (info.learnable || !info.initialized) return false;
  const double* v = model.params.data(w);
  return std::all_of(v, v + info.shape.size(), [](double x) { return x == 0.0; });
}

namespace {

// combination_shape, or nothing (rows 0) when the shapes do not combine.
Shape combined_or_none(CombinationKind c, const std::vector<Shape>& shapes) {
  try {
    return combination_shape(c, shapes);
  } catch (const Error&) {
    return {0, 0};
  }
}

}  // namespace

// Only a sum: an average would divide by one input fewer, and any other combination of a
// zero (max, product, ...) is not the combination without it. At least one input stays,
// and the others combine to the same shape (a zero vector broadcast against scalars sets
// the shape: it stays). Every entry of the literal's W x is 0 * x, which is 0 for any
// finite x; an infinite or NaN input value, which would make the plain sum NaN, is not
// propagated. Shapes that do not combine are left to the plain plan's error.
std::vector<uint32_t> fold_zero_literals(const neural::TemplateModel& model, CombinationKind combination,
                                         std::vector<InputBlock>& inputs, std::vector<Shape>& z_shapes) {
  if (combination != CombinationKind::Sum || inputs.size() < 2) return {};
  std::vector<char> zero(inputs.size());
  std::vector<Shape> kept;
  for (size_t i = 0; i < inputs.size(); ++i) {
    zero[i] = fixed_zero_weight(model, inputs[i].weight);
    if (!zero[i]) kept.push_back(z_shapes[i]);
  }
  if (kept.empty() || kept.size() == inputs.size()) return {};
  const Shape full = combined_or_none(combination, z_shapes);
  if (full.rows == 0 || !(combined_or_none(combination, kept) == full)) return {};
  std::vector<uint32_t> folded;
  size_t out = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (zero[i]) {
      folded.push_back(inputs[i].weight);
      continue;
    }
    if (out != i) inputs[out] = std::move(inputs[i]);
    ++out;
  }
  inputs.resize(out);
  z_shapes = std::move(kept);
  return folded;
}

}  // namespace lrnn::exec::planning
