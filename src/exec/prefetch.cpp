#include "exec/prefetch.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace lrnn::exec {

namespace {

template <class Vector>
void prefetch_vector(const Vector& v) {
  prefetch_bytes_to_l2(v.data(), v.size() * sizeof(*v.data()));
}

// Level 1 of a rule group: its input blocks and its own index arrays.
void prefetch_rule_group(const RuleGroup& g) {
  prefetch_vector(g.inputs);
  prefetch_vector(g.transform.sources);
  prefetch_vector(g.transform.row_of);
  prefetch_vector(g.head_segments);
  prefetch_vector(g.head_order);
  prefetch_vector(g.softmax_perm);
  prefetch_vector(g.softmax_segments);
  prefetch_vector(g.direct.scalars);
  prefetch_vector(g.direct.scalar_off);
  prefetch_vector(g.direct.band_begin);
  prefetch_vector(g.direct.band_first);
  prefetch_vector(g.direct.tile_begin);
  prefetch_vector(g.readout_scale);
  prefetch_vector(g.readout_scale2);
}

}  // namespace

void prefetch(const Plan& plan, int level) {
  switch (level) {
    case 0:
      prefetch_bytes_to_l2(&plan, sizeof(Plan));
      return;
    case 1:
      prefetch_vector(plan.steps);
      prefetch_vector(plan.rule_groups);
      prefetch_vector(plan.atom_groups);
      prefetch_vector(plan.param_fact_off);
      prefetch_vector(plan.outputs);
      // Read by every step of a clearing backward (clear_step_gradients): unhinted, its
      // first read was a miss each pass, 3% of the NCI1 GCN epoch at batch 1.
      prefetch_vector(plan.step_values);
      return;
    case 2:
      for (const RuleGroup& g : plan.rule_groups) prefetch_rule_group(g);
      for (const AtomGroup& g : plan.atom_groups) {
        prefetch_vector(g.src);
        prefetch_vector(g.segments);
      }
      return;
    default:
      for (const RuleGroup& g : plan.rule_groups)
        for (const InputBlock& in : g.inputs) prefetch_vector(in.src);
      return;
  }
}

void prefetch_steps(const Plan& plan, size_t first, size_t last, const void* values, const void* grads,
                    size_t value_size) {
  uint32_t begin = UINT32_MAX, end = 0;
  for (size_t k = first; k <= last && k < plan.step_values.size(); ++k) {
    const auto [b, e] = plan.step_values[k];
    if (b == e) continue;
    begin = std::min(begin, b);
    end = std::max(end, e);
  }
  if (begin >= end) return;
  const size_t offset = size_t(begin) * value_size, bytes = size_t(end - begin) * value_size;
  prefetch_bytes(static_cast<const char*>(values) + offset, bytes, true);
  if (grads) prefetch_bytes(static_cast<const char*>(grads) + offset, bytes, true);
}

}  // namespace lrnn::exec
