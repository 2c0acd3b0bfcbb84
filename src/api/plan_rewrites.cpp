// lrnn::logic::plan_rewrites (include/lrnn/logic.hpp): the samples grounded and neuralized
// as a model's training grounds them, each planned alone for inspection and for training,
// and the rewrites' rule groups counted (exec/rewrites/registry.hpp).
#include "api/dataset_impl.hpp"
#include "exec/plan.hpp"
#include "lrnn/logic.hpp"
#include "train/engine.hpp"

namespace lrnn::logic {

std::vector<PlanRewrite> plan_rewrites(const TemplateAst& tmpl, const std::vector<ExampleAst>& examples,
                                       const std::vector<QueryLineAst>& query_lines, size_t max_ground_rules,
                                       size_t max_atoms) {
  const Dataset data = Dataset::from_ast(examples, query_lines);
  train::Engine engine(tmpl);
  engine.set_max_atoms(max_atoms);  // the limits `lrnn ground` was given, for both groundings
  const train::PreparedSet set = engine.prepare(data.impl().samples, max_ground_rules);
  exec::RewriteCounts counts{}, training{};
  for (const neural::SampleNetwork& net : set.networks) {
    const exec::Plan plan = exec::build_plan(engine.model(), {&net});
    const exec::Plan trained = exec::build_plan(engine.model(), {&net}, train::kTrainingPlan);
    for (size_t i = 0; i < exec::kRewriteCount; ++i) {
      counts[i] += plan.rewrites[i];
      training[i] += trained.rewrites[i];
    }
  }
  std::vector<PlanRewrite> out;
  for (size_t i = 0; i < exec::kRewriteCount; ++i) {
    const exec::RewriteInfo& info = exec::rewrite_info(static_cast<exec::Rewrite>(i));
    out.push_back({std::string(info.name), std::string(info.description), counts[i], training[i]});
  }
  return out;
}

}  // namespace lrnn::logic
