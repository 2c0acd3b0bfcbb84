// A template's networks on text examples, planned under any options: what the rewrite tests
// (exec_self_into_sum_test.cpp, exec_weight_after_readout_test.cpp) compare, the plan with a
// rewrite against the plan without it and the plain plan (plain_plan_options).
#pragma once

#include <string>
#include <vector>

#include "api/dataset_impl.hpp"
#include "exec/plan.hpp"
#include "lrnn/lrnn.hpp"
#include "lrnn/syntax.hpp"
#include "train/engine.hpp"

namespace lrnn::test {

struct PlannedNetworks {
  train::Engine engine;
  Dataset data;
  train::PreparedSet set;
  PlannedNetworks(const std::string& tmpl, const std::string& examples, const std::string& queries)
      : engine(parse_template(tmpl)),
        data(Dataset::from_text(examples, queries)),
        set(engine.prepare(data.impl().samples)) {}
  std::vector<const neural::SampleNetwork*> nets() const {
    std::vector<const neural::SampleNetwork*> out;
    for (const auto& n : set.networks) out.push_back(&n);
    return out;
  }
  // Every network in one plan.
  exec::Plan plan(const exec::PlanOptions& o) const { return exec::build_plan(engine.model(), nets(), o); }
};

// Every rewrite off: the plain plan.
inline exec::PlanOptions plain_plan_options() {
  exec::PlanOptions none;
  none.disabled_rewrites.set();
  return none;
}

}  // namespace lrnn::test
