// SequenceModel: a zoo module (or any sequence template) run by the engine, with one
// grounded execution plan cached per sequence structure (lengths + extra facts). New
// values are written straight into the cached plan's data, so repeated calls on sequences
// of a seen length never ground, neuralize or build a plan again. The cache holds at most
// kMaxCachedPlans structures, dropping the least recently used: a GNN layer trained on
// shuffled batches sees a new graph every step (~0.8 MB per plan of a 32-graph MUTAG batch),
// which an unbounded cache would keep for the whole training.
#include <algorithm>
#include <ctime>

#include "exec/plan.hpp"
#include "logic/grounder.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "lrnn/zoo.hpp"
#include "neural/network.hpp"
#include "train/engine.hpp"

namespace lrnn::zoo {

constexpr size_t kMaxCachedPlans = 128;

struct SequenceModel::Impl {
  struct Entry {
    neural::SampleNetwork net;
    exec::Plan plan;
    std::vector<std::vector<uint32_t>> input_offsets;  // per input, per row: value offset (kNoValue: unused)
    std::vector<std::pair<int, int>> input_shapes;     // (n, d) per input
    std::vector<uint32_t> output_offsets;              // per output position
    int output_dim = 0;
    size_t ground_rules = 0;
    uint64_t last_used = 0;  // Impl::clock at its last forward
  };

  std::string input, output;
  std::unique_ptr<train::Engine> engine;
  // Attention's score and weighted-sum rules are grounded as blocks (no per-pair atoms or
  // ground rules): a new length costs a few passes, not dozens (issue 13).
  logic::GroundingOptions grounding;
  std::map<std::string, std::unique_ptr<Entry>> cache;
  uint64_t clock = 0;
  Entry* current = nullptr;
  Dtype dtype = Dtype::Float64;
  exec::Workspace ws;
  exec::Workspace32 ws32;  // Dtype::Float32
  exec::ParamMirror mirror;
  std::vector<double> param_grads;
  Stats stats;

  uint32_t param_id(const std::string& name) const {
    const uint32_t p = engine->parameters().find("$" + name);
    if (p == neural::kNoParam) throw Error(ErrorKind::Semantic, "the model has no weight named $" + name);
    return p;
  }

  static std::string key_of(const std::vector<SequenceInput>& inputs, int out_n, const std::vector<Literal>& extra) {
    std::string key = std::to_string(out_n);
    for (const auto& in : inputs) key += "|" + in.predicate + "/" + std::to_string(in.n) + "x" + std::to_string(in.d);
    for (const auto& l : extra) key += "|" + print_literal(l);
    return key;
  }

  Entry& entry_for(const std::vector<SequenceInput>& inputs, int out_n, const std::vector<Literal>& extra) {
    const std::string key = key_of(inputs, out_n, extra);
    if (auto it = cache.find(key); it != cache.end()) {
      ++stats.cache_hits;
      it->second->last_used = ++clock;
      return *it->second;
    }
    if (cache.size() >= kMaxCachedPlans) drop_least_recent();
    auto e = std::make_unique<Entry>();
    e->last_used = ++clock;
    ExampleAst ex;
    std::vector<std::pair<uint32_t, uint32_t>> fact_source;  // example fact -> (input, row)
    for (uint32_t k = 0; k < inputs.size(); ++k) {
      const auto& in = inputs[k];
      auto facts = sequence_facts(in.predicate, in.data, in.n, in.d);
      for (int i = 0; i < in.n; ++i) fact_source.push_back({k, uint32_t(i)});
      ex.facts.insert(ex.facts.end(), facts.begin(), facts.end());
      e->input_shapes.push_back({in.n, in.d});
      e->input_offsets.emplace_back(in.n, exec::kNoValue);
    }
    ex.facts.insert(ex.facts.end(), extra.begin(), extra.end());
    const std::vector<Literal> queries = sequence_queries(output, out_n);
    const std::clock_t build_start = std::clock();
    logic::GroundSample ground = logic::ground(engine->program(), ex, queries, grounding);
    ++stats.groundings;
    e->ground_rules = ground.stats.ground_rules;
    e->net = neural::neuralize(engine->model(), ex, ground);
    e->plan = exec::build_plan(engine->model(), {&e->net});
    stats.build_cpu_seconds = double(std::clock() - build_start) / CLOCKS_PER_SEC;
    for (uint32_t l = 0; l < e->net.num_atoms(); ++l) {
      if (e->net.atom_depth[l] != 0) continue;
      const uint32_t k = ground.atom_example_fact[e->net.atom_ground_id[l]];
      if (k == logic::kNone || k >= fact_source.size()) continue;
      e->input_offsets[fact_source[k].first][fact_source[k].second] = e->plan.atom_offsets[0][l];
    }
    e->output_offsets.assign(out_n, exec::kNoValue);
    for (const exec::OutputRef& o : e->plan.outputs) {
      if (o.offset == exec::kNoValue)
        throw Error(ErrorKind::Semantic, output + "(" + std::to_string(o.query) + ") is not derived from the inputs");
      e->output_offsets[o.query] = o.offset;
      if (e->output_dim != 0 && e->output_dim != o.shape.size())
        throw Error(ErrorKind::Shape, "the outputs of " + output + " have different shapes");
      e->output_dim = o.shape.size();
    }
    for (int q = 0; q < out_n; ++q)
      if (e->output_offsets[q] == exec::kNoValue)
        throw Error(ErrorKind::Semantic, output + "(" + std::to_string(q) + ") is not derived from the inputs");
    Entry& ref = *e;
    cache.emplace(key, std::move(e));
    return ref;
  }

  void drop_least_recent() {
    auto oldest = cache.begin();
    for (auto it = cache.begin(); it != cache.end(); ++it)
      if (it->second->last_used < oldest->second->last_used) oldest = it;
    if (oldest->second.get() == current) current = nullptr;
    cache.erase(oldest);
  }

  // One pass in the scalar type T (double: the parameters, float: the mirror).
  template <class T>
  static std::vector<double> run_forward(const Entry& e, const exec::ParamView<T>& params,
                                  exec::BasicWorkspace<T>& ws, int out_n) {
    exec::forward(e.plan, e.plan.data, params, ws);
    std::vector<double> out(size_t(out_n) * e.output_dim);
    for (int q = 0; q < out_n; ++q)
      std::copy_n(ws.values.begin() + e.output_offsets[q], e.output_dim, out.begin() + size_t(q) * e.output_dim);
    return out;
  }

  template <class T>
  static std::vector<std::vector<double>> run_backward(const Entry& e, const exec::ParamView<T>& params,
                                                exec::BasicWorkspace<T>& ws, const std::vector<double>& grad_output,
                                                std::vector<double>& param_grads) {
    // Room for half as many again: calls on growing lengths then zero the buffer they have
    // instead of faulting in a new one each time.
    if (ws.grads.capacity() < e.plan.num_values) ws.grads.reserve(size_t(e.plan.num_values) * 3 / 2);
    ws.grads.assign(e.plan.num_values, T(0));
    for (size_t q = 0; q < e.output_offsets.size(); ++q)
      for (int c = 0; c < e.output_dim; ++c) ws.grads[e.output_offsets[q] + c] += grad_output[q * e.output_dim + c];
    exec::backward(e.plan, params, ws, param_grads);
    std::vector<std::vector<double>> out;
    for (size_t k = 0; k < e.input_offsets.size(); ++k) {
      const auto [n, d] = e.input_shapes[k];
      std::vector<double> g(size_t(n) * d, 0.0);
      for (int i = 0; i < n; ++i) {
        const uint32_t off = e.input_offsets[k][i];
        if (off != exec::kNoValue) std::copy_n(ws.grads.begin() + off, d, g.begin() + size_t(i) * d);
      }
      out.push_back(std::move(g));
    }
    return out;
  }
};

SequenceModel::SequenceModel(const Module& module, uint64_t seed)
    : SequenceModel(module.ast(), module.input, module.output, seed) {}

SequenceModel::SequenceModel(const TemplateAst& ast, std::string input, std::string output, uint64_t seed)
    : impl_(std::make_unique<Impl>()) {
  impl_->input = std::move(input);
  impl_->output = std::move(output);
  impl_->engine = std::make_unique<train::Engine>(ast, train::Initializer{}, seed);
  impl_->grounding.pair_blocks = neural::pair_block_rules(impl_->engine->model(), impl_->engine->program());
  impl_->param_grads.assign(impl_->engine->parameters().size(), 0.0);
}

SequenceModel::~SequenceModel() = default;
SequenceModel::SequenceModel(SequenceModel&&) noexcept = default;
SequenceModel& SequenceModel::operator=(SequenceModel&&) noexcept = default;

std::vector<std::string> SequenceModel::parameter_names() const {
  std::vector<std::string> out;
  const auto& params = impl_->engine->parameters();
  for (uint32_t p = 0; p < params.count(); ++p) {
    const std::string& n = params.info(p).name;
    if (!n.empty() && n[0] == '$') out.push_back(n.substr(1));
  }
  return out;
}

std::pair<int, int> SequenceModel::parameter_shape(const std::string& name) const {
  const auto s = impl_->engine->parameters().info(impl_->param_id(name)).shape;
  return {s.rows, s.cols};
}

std::vector<double> SequenceModel::parameter(const std::string& name) const {
  const auto& params = impl_->engine->parameters();
  const uint32_t p = impl_->param_id(name);
  return std::vector<double>(params.data(p), params.data(p) + params.info(p).shape.size());
}

void SequenceModel::set_parameter(const std::string& name, const std::vector<double>& values) {
  auto& params = impl_->engine->parameters();
  const uint32_t p = impl_->param_id(name);
  const auto shape = params.info(p).shape;
  if (values.size() != size_t(shape.size()))
    throw Error(ErrorKind::Shape, "weight $" + name + " has " + std::to_string(shape.size()) + " entries (" +
                                      exec::to_string(shape) + "), got " + std::to_string(values.size()));
  std::copy(values.begin(), values.end(), params.data(p));
}

void SequenceModel::load_torch(const std::vector<TorchSlice>& mapping, const std::map<std::string, TorchTensor>& state) {
  for (const TorchSlice& s : mapping) {
    auto it = state.find(s.torch_name);
    if (it == state.end()) throw Error(ErrorKind::Semantic, "torch state has no entry " + s.torch_name);
    const TorchTensor& t = it->second;
    if (s.row_end > t.rows || s.col_end > t.cols || size_t(t.rows) * t.cols != t.data.size())
      throw Error(ErrorKind::Shape, "torch tensor " + s.torch_name + " of shape " + std::to_string(t.rows) + "x" +
                                        std::to_string(t.cols) + " does not hold the slice for $" + s.weight);
    const auto [rows, cols] = parameter_shape(s.weight);
    if (rows != s.row_end - s.row_begin || cols != s.col_end - s.col_begin)
      throw Error(ErrorKind::Shape, "weight $" + s.weight + " is " + std::to_string(rows) + "x" + std::to_string(cols) +
                                        " but its torch slice of " + s.torch_name + " is " +
                                        std::to_string(s.row_end - s.row_begin) + "x" +
                                        std::to_string(s.col_end - s.col_begin));
    std::vector<double> v;
    v.reserve(size_t(rows) * cols);
    for (int r = s.row_begin; r < s.row_end; ++r)
      for (int c = s.col_begin; c < s.col_end; ++c) v.push_back(t.data[size_t(r) * t.cols + c]);
    set_parameter(s.weight, v);
  }
}

std::vector<double> SequenceModel::forward(const std::vector<SequenceInput>& inputs, int out_n,
                                           const std::vector<Literal>& extra_facts) {
  Impl& m = *impl_;
  Impl::Entry& e = m.entry_for(inputs, out_n, extra_facts);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const auto& in = inputs[k];
    for (int i = 0; i < in.n; ++i) {
      const uint32_t off = e.input_offsets[k][i];
      if (off != exec::kNoValue) std::copy_n(in.data + size_t(i) * in.d, in.d, e.plan.data.begin() + off);
    }
  }
  m.current = &e;
  m.stats.ground_rules = e.ground_rules;
  if (m.dtype == Dtype::Float32) return Impl::run_forward(e, m.mirror.refresh(m.engine->parameters()), m.ws32, out_n);
  return Impl::run_forward(e, exec::view_of(m.engine->parameters()), m.ws, out_n);
}

std::vector<double> SequenceModel::forward(const double* x, int n, int d) {
  return forward({SequenceInput{impl_->input, x, n, d}}, n);
}

std::vector<std::vector<double>> SequenceModel::backward(const std::vector<double>& grad_output) {
  Impl& m = *impl_;
  if (!m.current) throw Error(ErrorKind::Semantic, "backward needs a forward pass first");
  Impl::Entry& e = *m.current;
  if (grad_output.size() != e.output_offsets.size() * e.output_dim)
    throw Error(ErrorKind::Shape, "the output gradient has " + std::to_string(grad_output.size()) + " entries, expected " +
                                      std::to_string(e.output_offsets.size() * e.output_dim));
  // The float pass reads the mirror its forward refreshed (the parameters of that forward).
  if (m.dtype == Dtype::Float32) {
    const exec::ParamView<float> mirror{&m.engine->parameters(), m.mirror.values.data()};
    return Impl::run_backward(e, mirror, m.ws32, grad_output, m.param_grads);
  }
  return Impl::run_backward(e, exec::view_of(m.engine->parameters()), m.ws, grad_output, m.param_grads);
}

void SequenceModel::set_dtype(Dtype dtype) {
  impl_->dtype = dtype;
  impl_->current = nullptr;  // a backward needs a forward in the new dtype
}
Dtype SequenceModel::dtype() const { return impl_->dtype; }

std::vector<double> SequenceModel::parameter_grad(const std::string& name) const {
  const auto& params = impl_->engine->parameters();
  const uint32_t p = impl_->param_id(name);
  const size_t off = params.info(p).offset;
  return std::vector<double>(impl_->param_grads.begin() + off, impl_->param_grads.begin() + off + params.info(p).shape.size());
}

void SequenceModel::zero_grad() { std::fill(impl_->param_grads.begin(), impl_->param_grads.end(), 0.0); }

SequenceModel::Stats SequenceModel::stats() const { return impl_->stats; }

int SequenceModel::output_dim() const { return impl_->current ? impl_->current->output_dim : 0; }

}  // namespace lrnn::zoo
