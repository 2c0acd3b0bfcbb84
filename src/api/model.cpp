// The public API (include/lrnn/model.hpp) over the training engine.
#include "lrnn/model.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>

#include "exec/plan.hpp"
#include "logic/grounder.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "train/cross_validation.hpp"
#include "train/engine.hpp"
#include "train/report.hpp"

namespace lrnn {

namespace {
std::atomic<uint64_t> next_dataset_id{1};
}

// ---- Template ---------------------------------------------------------------------------
Template Template::from_file(const std::string& path) { return from_ast(load_template(path)); }
Template Template::from_string(const std::string& text, const std::string& name) {
  return from_ast(parse_template(text, name));
}
Template Template::from_ast(TemplateAst ast) {
  Template t;
  t.ast_ = std::make_shared<const TemplateAst>(std::move(ast));
  return t;
}
std::string Template::to_text() const { return print_template(*ast_); }

// ---- Dataset ----------------------------------------------------------------------------
struct Dataset::Impl {
  std::vector<train::Sample> samples;
  uint64_t id = 0;  // keys the models' caches of grounded networks
  static Dataset make(std::vector<train::Sample> samples) {
    auto impl = std::make_shared<Impl>();
    impl->samples = std::move(samples);
    impl->id = next_dataset_id++;
    return Dataset(std::move(impl));
  }
};

Dataset::Dataset() : Dataset(std::make_shared<Impl>()) {}
Dataset::Dataset(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Dataset Dataset::from_ast(std::vector<ExampleAst> examples, const std::vector<QueryLineAst>& queries) {
  return Impl::make(train::pair_samples(std::move(examples), queries));
}
Dataset Dataset::load(const std::string& examples_path, const std::string& queries_path) {
  std::vector<QueryLineAst> q;
  if (!queries_path.empty()) q = load_queries(queries_path);
  return from_ast(load_examples(examples_path), q);
}
Dataset Dataset::from_text(const std::string& examples, const std::string& queries) {
  std::vector<QueryLineAst> q;
  if (!queries.empty()) q = parse_queries(queries, "<queries>");
  return from_ast(parse_examples(examples, "<examples>"), q);
}
size_t Dataset::size() const { return impl_->samples.size(); }

std::pair<Dataset, Dataset> Dataset::split(double test_fraction, uint64_t seed) const {
  std::vector<train::Sample> all = impl_->samples, tr, te;
  train::split_samples(all, test_fraction, seed, tr, te);
  return {Impl::make(std::move(tr)), Impl::make(std::move(te))};
}

// ---- Model ------------------------------------------------------------------------------
struct Model::Impl {
  Settings settings;
  std::unique_ptr<train::Engine> engine;
  mutable std::map<uint64_t, train::PreparedSet> prepared;

  train::TrainConfig config() const { return train_config(settings, engine->epochs_trained()); }

  // `settings` as the engine's configuration, for a model that has trained `epochs_before`.
  static train::TrainConfig train_config(const Settings& settings, int epochs_before) {
    train::TrainConfig c;
    c.epochs = settings.epochs;
    c.optimizer = train::OptimizerConfig::defaults(train::OptimizerConfig::parse(settings.optimizer));
    c.optimizer.lr = settings.lr;
    if (settings.weight_decay >= 0) c.optimizer.weight_decay = settings.weight_decay;
    c.loss = train::parse_loss(settings.loss);
    c.batch_size = settings.batch_size;
    c.seed = settings.seed;
    c.initializer = train::Initializer::parse(settings.initializer);
    c.schedule.kind = train::Schedule::parse(settings.schedule);
    c.schedule.total_epochs = epochs_before + settings.epochs;
    c.schedule.step_size = std::max(1, settings.epochs / 4);
    c.patience = settings.patience;
    return c;
  }

  const train::PreparedSet& prepare(const Dataset& d) const {
    auto it = prepared.find(d.impl().id);
    if (it != prepared.end()) return it->second;
    if (prepared.size() >= 16) prepared.clear();
    return prepared.emplace(d.impl().id, engine->prepare(d.impl().samples)).first->second;
  }
};

namespace {

Metrics public_metrics(const train::Metrics& m) { return {m.loss, m.accuracy, m.auc, m.count}; }

Parameter parameter_of(const neural::Parameters& params, uint32_t p, const double* data) {
  const neural::ParamInfo& info = params.info(p);
  return {info.name, info.shape.rows, info.shape.cols, info.learnable,
          std::vector<double>(data + info.offset, data + info.offset + info.shape.size())};
}

}  // namespace

Model::Model(const Template& tmpl, const Settings& settings) : impl_(std::make_unique<Impl>()) {
  impl_->settings = settings;
  impl_->engine = std::make_unique<train::Engine>(tmpl.ast(), train::Initializer::parse(settings.initializer),
                                                  settings.seed);
}
Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

Model Model::load(const std::string& path) {
  train::TrainConfig c;
  std::unique_ptr<train::Engine> engine = train::Engine::load(path, c);
  Model m(Template::from_ast(engine->ast()));
  m.impl_->engine = std::move(engine);
  Settings& s = m.impl_->settings;
  s.epochs = c.epochs;
  s.lr = c.optimizer.lr;
  s.optimizer = train::to_string(c.optimizer.kind);
  s.weight_decay = c.optimizer.weight_decay;
  s.loss = train::to_string(c.loss);
  s.batch_size = c.batch_size;
  s.seed = c.seed;
  s.initializer = train::to_string(c.initializer);
  s.schedule = train::to_string(c.schedule.kind);
  s.patience = c.patience;
  return m;
}

void Model::save(const std::string& path) const { impl_->engine->save(path, impl_->config()); }

Settings& Model::settings() { return impl_->settings; }
const Settings& Model::settings() const { return impl_->settings; }

TrainReport Model::train(const Dataset& data, const Dataset* test,
                         const std::function<bool(const EpochInfo&)>& on_epoch) {
  const auto t0 = std::chrono::steady_clock::now();
  const train::PreparedSet& train_set = impl_->prepare(data);
  const train::PreparedSet* test_set = test ? &impl_->prepare(*test) : nullptr;
  impl_->engine->plan_for(train_set);
  TrainReport report;
  report.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::function<bool(const train::EpochReport&)> cb;
  if (on_epoch)
    cb = [&](const train::EpochReport& r) {
      EpochInfo e{r.epoch, public_metrics(r.train), r.has_test, public_metrics(r.test), r.seconds};
      return on_epoch(e);
    };
  train::TrainResult result = impl_->engine->train(train_set, test_set, impl_->config(), cb);
  report.epochs = result.epochs;
  report.stopped_early = result.stopped_early;
  report.train_seconds = result.train_seconds;
  for (const auto& r : result.history)
    report.history.push_back({r.epoch, public_metrics(r.train), r.has_test, public_metrics(r.test), r.seconds});
  return report;
}

Evaluation Model::evaluate(const Dataset& data) const {
  const train::PreparedSet& set = impl_->prepare(data);
  train::Evaluation ev = impl_->engine->evaluate(set, train::parse_loss(impl_->settings.loss));
  Evaluation out;
  out.metrics = public_metrics(ev.metrics);
  for (size_t o = 0; o < set.outputs.size(); ++o)
    out.outputs.push_back({set.outputs[o].sample, set.outputs[o].text, set.outputs[o].target, ev.outputs[o],
                           ev.predictions[o]});
  return out;
}

std::vector<std::vector<double>> Model::forward(const Dataset& data) const {
  const train::PreparedSet& set = impl_->prepare(data);
  return impl_->engine->evaluate(set, train::parse_loss(impl_->settings.loss)).outputs;
}

std::vector<Parameter> Model::parameters() const {
  const neural::Parameters& params = impl_->engine->parameters();
  std::vector<Parameter> out;
  for (uint32_t p = 0; p < params.count(); ++p) out.push_back(parameter_of(params, p, params.values.data()));
  return out;
}

Parameter Model::parameter(const std::string& name) const {
  const neural::Parameters& params = impl_->engine->parameters();
  const uint32_t p = params.find(name);
  if (p == neural::kNoParam) throw Error(ErrorKind::Semantic, "no parameter named '" + name + "'");
  return parameter_of(params, p, params.values.data());
}

void Model::set_parameter(const std::string& name, const std::vector<double>& values) {
  neural::Parameters& params = impl_->engine->parameters();
  const uint32_t p = params.find(name);
  if (p == neural::kNoParam) throw Error(ErrorKind::Semantic, "no parameter named '" + name + "'");
  const neural::ParamInfo& info = params.info(p);
  if (values.size() != static_cast<size_t>(info.shape.size()))
    throw Error(ErrorKind::Shape, "parameter '" + name + "' has " + std::to_string(info.shape.size()) +
                                      " entries, got " + std::to_string(values.size()));
  std::copy(values.begin(), values.end(), params.data(p));
}

void Model::load_parameters(const std::vector<Parameter>& ps) {
  for (const Parameter& p : ps) {
    const Parameter current = parameter(p.name);
    if (current.rows != p.rows || current.cols != p.cols)
      throw Error(ErrorKind::Shape, "parameter '" + p.name + "' has shape " + std::to_string(current.rows) + "x" +
                                        std::to_string(current.cols) + ", got " + std::to_string(p.rows) + "x" +
                                        std::to_string(p.cols));
    set_parameter(p.name, p.values);
  }
}

GroundNetwork Model::network(const Dataset& data, size_t index, bool with_gradients) const {
  if (index >= data.size())
    throw Error(ErrorKind::Semantic, "sample " + std::to_string(index) + " of a dataset of " +
                                         std::to_string(data.size()));
  const train::Engine& engine = *impl_->engine;
  const train::Sample& sample = data.impl().samples[index];
  // Grounding is deterministic: grounding again gives the ids the texts refer to.
  logic::GroundSample ground = logic::ground(engine.program(), sample.example, sample.queries);
  neural::SampleNetwork net = neural::neuralize(engine.model(), sample.example, ground);
  exec::Plan plan = exec::build_plan(engine.model(), {&net});
  exec::Workspace ws;
  exec::forward(plan, engine.parameters(), ws);
  GroundNetwork out;
  out.ground_rules = net.num_ground_rules();
  out.dropped_cycle_rules = net.dropped_cycle_rules;
  std::vector<double> pgrads(engine.parameters().size(), 0.0);
  if (with_gradients) {
    ws.grads.assign(plan.num_values, 0.0);
    const train::LossKind loss_kind = train::parse_loss(impl_->settings.loss);
    size_t n_targets = 0;
    for (const auto& o : plan.outputs)
      if (!train::target_of(sample.queries[o.query]).empty()) ++n_targets;
    for (size_t o = 0; o < plan.outputs.size(); ++o) {
      const std::vector<double> target = train::target_of(sample.queries[plan.outputs[o].query]);
      if (target.empty()) continue;
      std::vector<double> y = exec::output_value(plan, ws, o), g(y.size());
      out.loss += train::loss(loss_kind, y, target, g) / n_targets;
      if (plan.outputs[o].offset == exec::kNoValue) continue;
      for (size_t k = 0; k < g.size(); ++k) ws.grads[plan.outputs[o].offset + k] += g[k] / n_targets;
    }
    exec::backward(plan, engine.parameters(), ws, pgrads);
    for (uint32_t p = 0; p < engine.parameters().count(); ++p)
      out.parameter_gradients.push_back(parameter_of(engine.parameters(), p, pgrads.data()));
  }
  for (uint32_t l = 0; l < net.num_atoms(); ++l) {
    GroundNetwork::Atom a;
    a.text = engine.program().atom_text(ground, net.atom_ground_id[l]);
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

Template Model::get_template() const { return Template::from_ast(impl_->engine->ast()); }
int Model::epochs_trained() const { return impl_->engine->epochs_trained(); }

// ---- cross-validation -------------------------------------------------------------------
CrossValidationReport cross_validate(const Template& tmpl, const Settings& settings, const Dataset& data, int k,
                                     uint64_t fold_seed, const std::function<bool(int, const EpochInfo&)>& on_epoch) {
  train::FoldEpochCallback cb;
  if (on_epoch)
    cb = [&](int fold, const train::EpochReport& r) {
      return on_epoch(fold, EpochInfo{r.epoch, public_metrics(r.train), false, {}, r.seconds});
    };
  const train::CrossValidation cv =
      train::cross_validate(tmpl.ast(), Model::Impl::train_config(settings, 0), data.impl().samples, k, fold_seed, cb);
  CrossValidationReport out;
  out.k = cv.k;
  out.fold_of_sample = cv.fold_of_sample;
  for (const train::FoldReport& f : cv.folds)
    out.folds.push_back({f.fold, f.train_samples, f.test_samples, public_metrics(f.train), public_metrics(f.test),
                         f.epochs, f.train_seconds});
  out.mean_accuracy = cv.mean_accuracy;
  out.std_accuracy = cv.std_accuracy;
  out.epoch_seconds = cv.epoch_seconds;
  return out;
}

}  // namespace lrnn
