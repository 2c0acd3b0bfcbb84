// lrnn::FactRows (include/lrnn/model.hpp): one sample grounded and planned once, run for many
// rows of values of its valued facts (docs/neurosymbolic.md "Batched neural predicates").
//
// The sample is prepared as a dataset with learnable facts (Engine::prepare): that names every
// valued example fact that is a neuron input by its ground literal and tells which network
// fact holds it, which is exactly the set of columns a row must give. The plan then runs on
// a copy of the network's fact data with each row's values written at those facts' offsets
// (a plan's data is laid out as SampleNetwork::fact_data), the same
// `exec::forward(plan, data, ...)` training uses for samples that share a plan.
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/dataset_impl.hpp"
#include "api/fact_rows.hpp"
#include "exec/plan.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"
#include "train/engine.hpp"
#include "train/example_facts.hpp"

namespace lrnn {

struct FactRows::Impl {
  const Model* model = nullptr;  // for its lock
  const train::Engine* engine = nullptr;
  neural::SampleNetwork network;
  exec::Plan plan;
  std::vector<std::string> facts;
  std::vector<size_t> fact_sizes;
  // Per column (fact): where its values go in the plan's data, one offset per network fact
  // that holds it, and where its values start in a row.
  std::vector<std::vector<uint32_t>> offsets;
  std::vector<size_t> row_begin;
  size_t row_size = 0;
  exec::Shape output_shape;
  size_t output_size = 0;
  // Reused between runs (a run allocates nothing once they have held a row).
  mutable exec::Workspace ws;
  mutable std::vector<double> data, output;

  // Row `row`'s values written over the network's fact data.
  void load_row(const double* row) const {
    for (size_t c = 0; c < offsets.size(); ++c)
      for (uint32_t off : offsets[c]) std::copy_n(row + row_begin[c], fact_sizes[c], data.begin() + off);
  }
  void run_forward(const double* row) const {
    load_row(row);
    exec::forward(plan, data, engine->parameters(), ws);
  }
};

namespace {

size_t shape_size(exec::Shape s) { return static_cast<size_t>(s.rows) * static_cast<size_t>(s.cols); }

}  // namespace

FactRows build_fact_rows(const Model& model, const train::Engine& engine, const Dataset& data,
                         size_t max_ground_rules) {
  if (data.held() != 1)
    throw Error(ErrorKind::Semantic, "fact rows are made from one sample, got a dataset of " +
                                         std::to_string(data.held()));
  auto impl = std::make_unique<FactRows::Impl>();
  impl->model = &model;
  impl->engine = &engine;
  train::PreparedSet set = engine.prepare(data.impl().samples, max_ground_rules, /*learnable_facts=*/true);
  if (set.outputs.size() != 1)
    throw Error(ErrorKind::Semantic, "fact rows need a sample with one output, the query " +
                                         (set.outputs.empty() ? std::string("(none)") : set.outputs[0].text) +
                                         " has " + std::to_string(set.outputs.size()));
  impl->network = std::move(set.networks[0]);
  const neural::SampleNetwork& net = impl->network;
  const train::ExampleFacts& params = *set.example_facts;
  impl->offsets.resize(params.params.count());
  for (uint32_t p = 0; p < params.params.count(); ++p) {
    if (params.literals[p].size() != 1 || params.params.info(p).name != params.literals[p][0])
      throw Error(ErrorKind::Semantic, "the fact " + params.literals[p][0] + " shares the named value " +
                                           params.params.info(p).name +
                                           " with other facts: fact rows give each fact its own value");
    impl->facts.push_back(params.literals[p][0]);
    impl->fact_sizes.push_back(shape_size(params.params.info(p).shape));
    impl->row_begin.push_back(impl->row_size);
    impl->row_size += impl->fact_sizes.back();
  }
  for (uint32_t f = 0; f < net.num_facts(); ++f)
    if (!net.fact_example_param.empty() && net.fact_example_param[f] != neural::kNone)
      impl->offsets[net.fact_example_param[f]].push_back(net.fact_data_begin[f]);
  impl->plan = exec::build_plan(engine.model(), {&impl->network});
  impl->data = net.fact_data;
  // The output's shape as the plan gives it: run once with the written values.
  impl->ws = {};
  exec::forward(impl->plan, impl->data, engine.parameters(), impl->ws);
  const exec::OutputRef& out = impl->plan.outputs[0];
  exec::copy_output_value(impl->plan, impl->ws, 0, impl->output);
  impl->output_size = impl->output.size();
  impl->output_shape = out.offset == exec::kNoValue ? exec::Shape{1, 1} : out.shape;
  return FactRows(std::move(impl));
}

FactRows::FactRows(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FactRows::~FactRows() = default;
FactRows::FactRows(FactRows&&) noexcept = default;
FactRows& FactRows::operator=(FactRows&&) noexcept = default;

const std::vector<std::string>& FactRows::facts() const { return impl_->facts; }
const std::vector<size_t>& FactRows::fact_sizes() const { return impl_->fact_sizes; }
size_t FactRows::row_size() const { return impl_->row_size; }
size_t FactRows::output_size() const { return impl_->output_size; }
int FactRows::output_rows() const { return impl_->output_shape.rows; }
int FactRows::output_cols() const { return impl_->output_shape.cols; }

std::vector<double> FactRows::forward(const double* rows, size_t count) const {
  const auto lock = impl_->model->lock();
  const Impl& s = *impl_;
  std::vector<double> out(count * s.output_size);
  for (size_t r = 0; r < count; ++r) {
    s.run_forward(rows + r * s.row_size);
    exec::copy_output_value(s.plan, s.ws, 0, s.output);
    std::copy(s.output.begin(), s.output.end(), out.begin() + r * s.output_size);
  }
  return out;
}

std::vector<double> FactRows::backward(const double* rows, const double* output_gradients, size_t count,
                                       std::vector<Parameter>& parameter_gradients) const {
  const auto lock = impl_->model->lock();
  const Impl& s = *impl_;
  const neural::Parameters& params = s.engine->parameters();
  std::vector<double> fact_grads(count * s.row_size, 0.0), param_grads(params.size(), 0.0);
  const exec::OutputRef& out = s.plan.outputs[0];
  for (size_t r = 0; r < count; ++r) {
    // The forward pass again (backward reads its values): rows are cheap, and keeping every
    // row's workspace would cost a plan's values per row.
    s.run_forward(rows + r * s.row_size);
    s.ws.grads.assign(s.plan.num_values, 0.0);
    if (out.offset == exec::kNoValue) continue;  // an output without a neuron: constant 0
    const double* g = output_gradients + r * s.output_size;
    for (size_t k = 0; k < s.output_size; ++k) s.ws.grads[out.offset + k] += g[k];
    exec::backward(s.plan, params, s.ws, param_grads);
    double* row_grads = fact_grads.data() + r * s.row_size;
    for (size_t c = 0; c < s.offsets.size(); ++c)
      for (uint32_t off : s.offsets[c])
        for (size_t k = 0; k < s.fact_sizes[c]; ++k) row_grads[s.row_begin[c] + k] += s.ws.grads[off + k];
  }
  parameter_gradients.clear();
  for (uint32_t p = 0; p < params.count(); ++p)
    parameter_gradients.push_back(train::parameter_of(params, p, param_grads.data()));
  return fact_grads;
}

}  // namespace lrnn
