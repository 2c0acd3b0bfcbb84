// Engine::inspect: one sample's ground network with values and gradients, for the public
// API's Model::network (and so `model.ground_network` in Python).
#include <algorithm>
#include <map>

#include "logic/grounder.hpp"
#include "lrnn/diagnostics.hpp"
#include "train/engine.hpp"

namespace lrnn::train {

namespace {


// Rule and aggregation neurons of a one-sample plan, read where the plan keeps them. The
// plan runs one group per (head depth, rule), in that order, over the ground rules in
// network order (attention weights with one grounding per head: by softmax group); a group
// that does not match is left without values rather than guessed.
void add_rule_neurons(const neural::SampleNetwork& net, const exec::Plan& plan, const exec::Workspace& ws,
                      bool with_gradients, GroundNetwork& out) {
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> buckets;  // (depth, rule) -> ground rules
  for (uint32_t g = 0; g < net.num_ground_rules(); ++g)
    buckets[{net.atom_depth[net.head[g]], net.rule[g]}].push_back(g);
  auto read = [&](size_t off, size_t n, std::vector<double>& value, std::vector<double>& gradient) {
    value.assign(ws.values.begin() + off, ws.values.begin() + off + n);
    if (with_gradients) gradient.assign(ws.grads.begin() + off, ws.grads.begin() + off + n);
  };
  size_t group = 0;
  for (auto& [key, members] : buckets) {
    const exec::RuleGroup* G = group < plan.rule_groups.size() ? &plan.rule_groups[group] : nullptr;
    ++group;
    if (G && G->softmax) {
      bool one_per_head = true;
      for (size_t k = 1; k < members.size() && one_per_head; ++k)
        one_per_head = net.head[members[k]] != net.head[members[k - 1]];
      if (one_per_head)
        std::stable_sort(members.begin(), members.end(),
                         [&](uint32_t a, uint32_t b) { return net.softmax_group[a] < net.softmax_group[b]; });
    }
    const bool located = G && G->rule == key.second && G->n == members.size();
    size_t head_in_group = 0;
    for (size_t k = 0; k < members.size(); ++k) {
      const uint32_t g = members[k];
      const bool new_head = k == 0 || net.head[g] != net.head[members[k - 1]];
      if (k > 0 && new_head) ++head_in_group;
      if (new_head) {
        GroundNetwork::Aggregation a;
        a.rule = static_cast<int>(key.second);
        a.head = net.head[g];
        if (located && head_in_group < G->m && G->head_segments[head_in_group] == k) {
          a.rows = G->agg_shape.rows;
          a.cols = G->agg_shape.cols;
          read(G->agg_off + head_in_group * G->agg_shape.size(), G->agg_shape.size(), a.value, a.gradient);
        }
        out.aggregations.push_back(std::move(a));
      }
      GroundNetwork::RuleNeuron r;
      r.rule = static_cast<int>(key.second);
      r.head = net.head[g];
      for (uint32_t i = net.inputs_begin[g]; i < net.inputs_begin[g + 1]; ++i) r.inputs.push_back(net.inputs[i]);
      r.aggregation = out.aggregations.size() - 1;
      if (located && G->transform.enabled) {
        // Nothing per grounding is stored: its value is its input's row of W x (the
        // combination of one input, identity activation, no offset). The rows' gradients
        // sum over every grounding of the same input, so none is given per grounding.
        r.rows = G->act_shape.rows;
        r.cols = G->act_shape.cols;
        const size_t size = G->act_shape.size(), off = G->transform.t_off + G->transform.row_of[k] * size;
        r.value.assign(ws.values.begin() + off, ws.values.begin() + off + size);
      } else if (located && G->direct.fused_sum && G->inputs.size() == 1 && head_in_group < G->m) {
        // A rule of one unweighted input summed (averaged) in place: its value is its
        // input's, its gradient its head's (times 1 / groundings for an average).
        r.rows = G->act_shape.rows;
        r.cols = G->act_shape.cols;
        const size_t size = G->act_shape.size(), off = G->inputs[0].src[k];
        r.value.assign(ws.values.begin() + off, ws.values.begin() + off + size);
        const double scale = exec::head_scale(*G, static_cast<uint32_t>(head_in_group));
        for (double ga : out.aggregations.back().gradient) r.gradient.push_back(scale * ga);
      } else if (located && !G->direct.fused_sum) {
        r.rows = G->act_shape.rows;
        r.cols = G->act_shape.cols;
        read(G->act_off + k * G->act_shape.size(), G->act_shape.size(), r.value, r.gradient);
      }
      out.rule_neurons.push_back(std::move(r));
    }
  }
}

}  // namespace

Parameter parameter_of(const neural::Parameters& params, uint32_t p, const double* data) {
  const neural::ParamInfo& info = params.info(p);
  return {info.name, info.shape.rows, info.shape.cols, info.learnable,
          std::vector<double>(data + info.offset, data + info.offset + info.shape.size())};
}

namespace {

// Seeds the backward pass with given output gradients instead of a loss's.
void seed_output_gradients(const exec::Plan& plan, exec::Workspace& ws,
                           const std::vector<std::vector<double>>& output_gradients) {
  if (output_gradients.size() != plan.outputs.size())
    throw Error(ErrorKind::Semantic, std::to_string(output_gradients.size()) + " output gradients for a sample of " +
                                         std::to_string(plan.outputs.size()) + " outputs");
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    const exec::OutputRef& ref = plan.outputs[o];
    const size_t n = exec::output_value(plan, ws, o).size();
    if (output_gradients[o].size() != n)
      throw Error(ErrorKind::Semantic, "output " + std::to_string(o) + " has " + std::to_string(n) +
                                           " entries, its gradient " + std::to_string(output_gradients[o].size()));
    if (ref.offset == exec::kNoValue) continue;
    for (size_t k = 0; k < n; ++k) ws.grads[ref.offset + k] += output_gradients[o][k];
  }
}

}  // namespace

GroundNetwork Engine::inspect(const Sample& sample, LossKind loss_kind, bool with_gradients,
                              size_t max_ground_rules,
                              const std::vector<std::vector<double>>* output_gradients) const {
  // Grounding is deterministic: grounding again gives the ids the texts refer to.
  logic::GroundingOptions options;
  options.max_ground_rules = max_ground_rules;
  options.max_atoms = max_atoms_;
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
    if (output_gradients) {
      seed_output_gradients(plan, ws, *output_gradients);
    } else {
      std::vector<std::vector<double>> targets(plan.outputs.size());
      // The loss training takes: a query split's validation and test queries give none.
      for (size_t o = 0; o < plan.outputs.size(); ++o)
        if (sample.split_of(plan.outputs[o].query) == QuerySplit::Train)
          targets[o] = target_of(sample.queries[plan.outputs[o].query]);
      const LossSum loss = seed_loss_gradients(
          plan, ws, loss_kind, [&](size_t o) -> const std::vector<double>& { return targets[o]; }, nullptr, nullptr, 0,
          [&](size_t o) { return sample.importance_of(plan.outputs[o].query); });
      out.loss = loss.count ? loss.sum / loss_divisor(loss_kind, loss.count) : 0.0;
    }
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
    a.has_fact = net.atom_fact[l] != neural::kNone;
    out.atoms.push_back(std::move(a));
  }
  for (const auto& matched : net.query_atoms)
    for (uint32_t l : matched) out.atoms[l].query = true;
  add_rule_neurons(net, plan, ws, with_gradients, out);
  return out;
}

}  // namespace lrnn::train
