// Rule groups left with nothing to do, taken out of the plan's steps.
//
// The weight-after-readout rewrite (rewrites/weight_after_readout.cpp) leaves groups whose
// forward and backward compute nothing: a layer's self rule whose head weight moved to the
// readout reads its input's rows where they lie (DirectProduct::input_rows) with no weight
// after them, and a neighbour sum the readout now reads through keeps no member. On NCI1's
// graphs at batch 1 such a group still cost its step's dispatch and clearing and, above all,
// the cache lines of its rule group (~660 bytes) and index arrays, which every pass brings in
// (exec/prefetch.hpp): a plan is read from main memory each pass, the set of one small plan
// per graph being larger than the caches. Two of a GraphSAGE plan's six rule groups, one of
// a GCN's four.
//
// The values such a group allocated stay where they are (its rows may be another group's
// now: the readout's slots lie in the moved layer's old rows): their gradients are cleared
// with the nearest step kept before it, or after it when none is (Plan::step_values), which
// runs backward after every step that can touch them (a step reads only its own values and
// earlier ones, and the dropped step touches none).
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "exec/plan_builder.hpp"

namespace lrnn::exec::planning {

namespace {

// Whether G's forward and backward leave every value and gradient as they were: a fused sum
// of one input's rows (no readout weights, no head weight, adding to no other group's rows)
// with no heads, or whose aggregates are its input's rows where they lie.
bool idle(const RuleGroup& G) {
  return !G.transform.enabled && G.direct.fused_sum && sums_input_rows(G.direct) &&
         G.head_weight == neural::kNoParam && G.head_mode == WeightMode::None && !G.adds_to_out &&
         G.readout_weight == neural::kNoParam && G.readout_weight2 == neural::kNoParam &&
         G.readout_scale.empty() && G.out_off == G.agg_off && (G.direct.input_rows || G.m == 0);
}

// The union of two value ranges of which one is empty or which meet (a dropped step's and
// the neighbouring kept step's: the buffer is allocated in step order).
std::pair<uint32_t, uint32_t> joined(std::pair<uint32_t, uint32_t> a, std::pair<uint32_t, uint32_t> b) {
  if (a.first == a.second) return b;
  if (b.first == b.second) return a;
  return {std::min(a.first, b.first), std::max(a.second, b.second)};
}

}  // namespace

void PlanBuilder::drop_idle_rule_groups() {
  std::vector<bool> drop(plan.rule_groups.size(), false);
  bool any = false;
  for (size_t g = 0; g < plan.rule_groups.size(); ++g) any |= drop[g] = idle(plan.rule_groups[g]);
  if (!any) return;
  const bool listed = plan.step_values.size() == plan.steps.size();
  std::vector<uint32_t> group_index(plan.rule_groups.size(), 0);
  std::vector<RuleGroup> groups;
  for (size_t g = 0; g < plan.rule_groups.size(); ++g)
    if (!drop[g]) {
      group_index[g] = static_cast<uint32_t>(groups.size());
      groups.push_back(std::move(plan.rule_groups[g]));
    }
  // new_index[k]: how many steps before old step k are kept (k's new index when it is kept).
  std::vector<uint32_t> new_index(plan.steps.size() + 1, 0);
  std::vector<Step> steps;
  std::vector<std::pair<uint32_t, uint32_t>> values;
  std::pair<uint32_t, uint32_t> pending{0, 0};  // dropped before any kept step
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    new_index[k] = static_cast<uint32_t>(steps.size());
    Step step = plan.steps[k];
    const std::pair<uint32_t, uint32_t> range = listed ? plan.step_values[k] : std::pair<uint32_t, uint32_t>{0, 0};
    if (!step.atom && drop[step.index]) {
      if (values.empty()) pending = joined(pending, range);
      else values.back() = joined(values.back(), range);
      continue;
    }
    if (!step.atom) step.index = group_index[step.index];
    steps.push_back(step);
    values.push_back(values.size() == 0 ? joined(pending, range) : range);
  }
  new_index[plan.steps.size()] = static_cast<uint32_t>(steps.size());
  for (uint32_t& s : plan.depth_steps) s = new_index[s];
  for (uint32_t& s : plan.norm_steps) s = new_index[s];
  plan.rule_groups = std::move(groups);
  plan.steps = std::move(steps);
  if (listed) plan.step_values = std::move(values);
}

}  // namespace lrnn::exec::planning
