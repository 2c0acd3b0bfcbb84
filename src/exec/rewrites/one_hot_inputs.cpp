// The one-hot-inputs rewrite (registry.hpp; docs/semantics.md "Plan rewrites"): a transform
// sum's rows that read one-hot data facts (a graph's node labels, `{10,37} x(X)`) are W's
// columns, not a GEMM. A row whose one entry 1 is at column k transforms to W[:, k], and
// adds its gradient to that column alone, dW[:, k] += gT[r]: no GEMM either way. The values
// are the GEMM's up to the sign of a zero (the GEMM adds W[i, j] * 0 terms) and except for a
// non-finite weight (whose 0 * inf the GEMM would spread as NaN); the weight gradients are
// the GEMM's up to the order of additions (and the same non-finite terms).
//
// It applies to a transform that owns its rows and is not summed first, over data facts
// that take no gradient (PlanBuilder's data_inputs, TransformSum::input_gradients false once
// the plan is built: no ghost, no learnable example fact, fact gradients off, as training
// plans are): the inputs are then fixed values, read by nothing else. A plan holding its
// data (PlanOptions::fact_values) applies it to a group only when each of its rows is
// one-hot now; a training plan, shared by the samples of its structure and given each one's
// data, cannot know, so its kernels check each pass's rows (TransformSum::one_hot_inputs)
// and run the GEMMs from the first that is not one-hot on. Forward leaves each row's column
// at TransformSum::hot_off, and backward reads them there, not the rows again.
//
// Checking a 37-wide row costs about what its forward GEMM row did (perf on NCI1, batch 1);
// backward's dW GEMM is what goes. NCI1 GCN epochs: -8 to -14% in float64 (bench/README.md).
#include "exec/one_hot.hpp"
#include "exec/plan_builder.hpp"
#include "exec/rewrites/registry.hpp"

const lrnn::exec::RewriteInfo lrnn::exec::rewrites::kOneHotInputs{"one_hot_inputs",
    "one-hot data inputs under a transform read as the weight's columns, not a GEMM; training plans only, where data facts take no gradient",
    "docs/semantics.md \"Plan rewrites\""};

namespace lrnn::exec::planning {

namespace {

// Whether every row of t's inputs (`in` entries each) in `data` is one-hot; true when the
// plan holds no data (each pass checks its own).
bool data_rows_one_hot(const TransformSum& t, uint32_t in, const std::vector<double>& data) {
  if (data.empty()) return true;
  for (uint32_t source : t.sources)
    if (size_t(source) + in > data.size() || hot_entry(data.data() + source, in) == kOneHotNone) return false;
  return true;
}

}  // namespace

bool plan_one_hot_inputs(RuleGroup& G, Allocator& alloc, const std::vector<double>& data) {
  TransformSum& t = G.transform;
  if (t.sum_first || !t.owns_transform || t.sources.empty()) return false;
  if (!data_rows_one_hot(t, static_cast<uint32_t>(G.inputs[0].raw_shape.size()), data)) return false;
  t.one_hot_inputs = true;
  t.hot_off = alloc.take(t.sources.size());
  return true;
}

}  // namespace lrnn::exec::planning
