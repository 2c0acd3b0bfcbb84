// Engine::inspect: one sample's ground network with values and gradients, for the public
// API's Model::network (and so `model.ground_network` in Python).
#include "logic/grounder.hpp"
#include "train/engine.hpp"

namespace lrnn::train {

namespace {

Parameter parameter_of(const neural::Parameters& params, uint32_t p, const double* data) {
  const neural::ParamInfo& info = params.info(p);
  return {info.name, info.shape.rows, info.shape.cols, info.learnable,
          std::vector<double>(data + info.offset, data + info.offset + info.shape.size())};
}

}  // namespace

GroundNetwork Engine::inspect(const Sample& sample, LossKind loss_kind, bool with_gradients,
                              size_t max_ground_rules) const {
  // Grounding is deterministic: grounding again gives the ids the texts refer to.
  logic::GroundingOptions options;
  options.max_ground_rules = max_ground_rules;
  logic::GroundSample ground = logic::ground(*program_, sample.example, sample.queries, options);
  neural::SampleNetwork net = neural::neuralize(model_, sample.example, ground);
  exec::Plan plan = exec::build_plan(model_, {&net});
  exec::Workspace ws;
  exec::forward(plan, model_.params, ws);
  GroundNetwork out;
  out.ground_rules = net.num_ground_rules();
  out.dropped_cycle_rules = net.dropped_cycle_rules;
  if (with_gradients) {
    ws.grads.assign(plan.num_values, 0.0);
    std::vector<std::vector<double>> targets(plan.outputs.size());
    for (size_t o = 0; o < plan.outputs.size(); ++o) targets[o] = target_of(sample.queries[plan.outputs[o].query]);
    const LossSum loss = seed_loss_gradients(plan, ws, loss_kind,
                                             [&](size_t o) -> const std::vector<double>& { return targets[o]; });
    out.loss = loss.count ? loss.sum / static_cast<double>(loss.count) : 0.0;
    std::vector<double> param_grads(model_.params.size(), 0.0);
    exec::backward(plan, model_.params, ws, param_grads);
    for (uint32_t p = 0; p < model_.params.count(); ++p)
      out.parameter_gradients.push_back(parameter_of(model_.params, p, param_grads.data()));
  }
  for (uint32_t l = 0; l < net.num_atoms(); ++l) {
    GroundNetwork::Atom a;
    a.text = program_->atom_text(ground, net.atom_ground_id[l]);
    a.depth = static_cast<int>(net.atom_depth[l]);
    const exec::Shape s = plan.atom_shapes[0][l];
    a.rows = s.rows;
    a.cols = s.cols;
    const uint32_t off = plan.atom_offsets[0][l];
    a.value.assign(ws.values.begin() + off, ws.values.begin() + off + s.size());
    if (with_gradients) a.gradient.assign(ws.grads.begin() + off, ws.grads.begin() + off + s.size());
    out.atoms.push_back(std::move(a));
  }
  return out;
}

}  // namespace lrnn::train
