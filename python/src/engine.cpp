// The training engine (src/train/engine.hpp) for lrnn.Model: build from template text,
// prepare datasets (ground + neuralize, in C++), train with a per-epoch Python callback,
// evaluate, read/write parameters as NumPy arrays, save/load checkpoints, and inspect the
// ground network of one sample. Long-running calls release the GIL.
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "sample_set.hpp"
#include "exec/plan.hpp"
#include "logic/grounder.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "train/cross_validation.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace lrnn::python {

namespace {

using Array = nb::ndarray<nb::numpy, double>;

// A NumPy array that owns `values`; `shape` as given (empty: a 0-d scalar).
Array to_array(std::vector<double> values, std::vector<size_t> shape) {
  auto* heap = new std::vector<double>(std::move(values));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  return Array(heap->data(), shape.size(), shape.data(), owner);
}

// Weights and neuron values: 1x1 -> 0-d, r x 1 -> (r,), else (r, c).
std::vector<size_t> shape_of(exec::Shape s) {
  if (s.rows == 1 && s.cols == 1) return {};
  if (s.cols == 1) return {static_cast<size_t>(s.rows)};
  return {static_cast<size_t>(s.rows), static_cast<size_t>(s.cols)};
}

nb::dict metrics_dict(const train::Metrics& m) {
  nb::dict d;
  d["loss"] = m.loss;
  d["accuracy"] = m.accuracy;
  d["auc"] = m.auc;
  d["count"] = m.count;
  return d;
}

train::InitKind init_kind(const std::string& name) {
  if (name == "uniform") return train::InitKind::Uniform;
  if (name == "normal") return train::InitKind::Normal;
  if (name == "glorot") return train::InitKind::Glorot;
  if (name == "he") return train::InitKind::He;
  if (name == "constant") return train::InitKind::Constant;
  throw Error(ErrorKind::Semantic, "unknown initializer '" + name + "' (glorot, he, uniform, normal, constant)");
}

template <class T>
T get_or(const nb::dict& d, const char* key, T fallback) {
  return d.contains(key) ? nb::cast<T>(d[key]) : fallback;
}

struct PyEngine {
  std::unique_ptr<train::Engine> engine;
  train::TrainConfig config;  // initializer and seed as built; the rest per train() call

  // The CLI's mapping of options to a TrainConfig (src/cli/train.cpp), from a dict the
  // Python side fills with the CLI's defaults.
  train::TrainConfig config_from(const nb::dict& d) const {
    train::TrainConfig c = config;
    c.epochs = get_or<int>(d, "epochs", 100);
    if (c.epochs < 0) throw Error(ErrorKind::Semantic, "epochs must be >= 0");
    c.optimizer = train::OptimizerConfig::defaults(train::OptimizerConfig::parse(get_or<std::string>(d, "optimizer", "adam")));
    c.optimizer.lr = get_or<double>(d, "lr", 0.01);
    if (d.contains("weight_decay")) c.optimizer.weight_decay = nb::cast<double>(d["weight_decay"]);
    if (d.contains("momentum")) c.optimizer.momentum = nb::cast<double>(d["momentum"]);
    if (d.contains("beta1")) c.optimizer.beta1 = nb::cast<double>(d["beta1"]);
    if (d.contains("beta2")) c.optimizer.beta2 = nb::cast<double>(d["beta2"]);
    if (d.contains("eps")) c.optimizer.eps = nb::cast<double>(d["eps"]);
    c.loss = train::parse_loss(get_or<std::string>(d, "loss", "mse"));
    c.batch_size = get_or<size_t>(d, "batch_size", 0);
    c.seed = get_or<uint64_t>(d, "seed", 1);
    c.schedule.kind = train::Schedule::parse(get_or<std::string>(d, "schedule", "constant"));
    c.patience = get_or<int>(d, "patience", 0);
    c.schedule.total_epochs = engine->epochs_trained() + c.epochs;
    c.schedule.step_size = std::max(1, c.epochs / 4);
    return c;
  }
};

std::vector<train::Sample> samples_from_text(const std::string& examples, const std::string& queries) {
  std::vector<ExampleAst> ex = parse_examples(examples, "<examples>");
  std::vector<QueryLineAst> q;
  if (!queries.empty()) q = parse_queries(queries, "<queries>");
  return train::pair_samples(std::move(ex), q);
}

std::vector<train::Sample> samples_from_files(const std::string& examples, const std::string& queries) {
  std::vector<ExampleAst> ex = load_examples(examples);
  std::vector<QueryLineAst> q;
  if (!queries.empty()) q = load_queries(queries);
  return train::pair_samples(std::move(ex), q);
}

nb::dict epoch_dict(const train::EpochReport& r) {
  nb::dict d;
  d["epoch"] = r.epoch;
  d["train"] = metrics_dict(r.train);
  if (r.has_test) d["test"] = metrics_dict(r.test);
  d["lr"] = r.lr;
  d["seconds"] = r.seconds;
  return d;
}

// One sample's network after forward and backward: every kept atom's text, value, gradient.
nb::dict ground_network(PyEngine& self, const train::PreparedSet& set, size_t index, const std::string& loss_name) {
  if (index >= set.size()) throw Error(ErrorKind::Semantic, "sample index out of range");
  const train::Engine& engine = *self.engine;
  const train::LossKind loss_kind = train::parse_loss(loss_name);
  const train::Sample& sample = set.samples[index];
  const neural::SampleNetwork& net = set.networks[index];
  std::vector<std::string> texts;
  exec::Plan plan;
  exec::Workspace ws;
  double total_loss = 0;
  {
    nb::gil_scoped_release release;
    // Grounding is deterministic, so grounding again gives the ids the network refers to.
    logic::GroundSample ground = logic::ground(engine.program(), sample.example, sample.queries);
    texts.reserve(net.num_atoms());
    for (size_t a = 0; a < net.num_atoms(); ++a) texts.push_back(engine.program().atom_text(ground, net.atom_ground_id[a]));
    plan = exec::build_plan(engine.model(), {&net});
    exec::forward(plan, engine.model().params, ws);
    ws.grads.assign(plan.num_values, 0.0);
    // The sample's outputs, in the set's order (sample, query, match).
    size_t first = 0;
    while (first < set.outputs.size() && set.outputs[first].sample != index) ++first;
    size_t n_targets = 0;
    for (size_t o = 0; o < plan.outputs.size(); ++o)
      if (!set.outputs[first + o].target.empty()) ++n_targets;
    for (size_t o = 0; o < plan.outputs.size(); ++o) {
      const train::OutputInfo& info = set.outputs[first + o];
      if (info.target.empty()) continue;
      std::vector<double> y = exec::output_value(plan, ws, o);
      std::vector<double> g(y.size(), 0.0);
      total_loss += train::loss(loss_kind, y, info.target, g);
      const exec::OutputRef& ref = plan.outputs[o];
      if (ref.offset == exec::kNoValue) continue;
      for (size_t k = 0; k < y.size(); ++k) ws.grads[ref.offset + k] += g[k] / n_targets;
    }
    if (n_targets) total_loss /= static_cast<double>(n_targets);
    std::vector<double> param_grads(engine.model().params.size(), 0.0);
    exec::backward(plan, engine.model().params, ws, param_grads);
  }
  nb::list values, grads, is_fact;
  const auto& offsets = plan.atom_offsets[0];
  const auto& shapes = plan.atom_shapes[0];
  for (size_t a = 0; a < net.num_atoms(); ++a) {
    const size_t off = offsets[a];
    const exec::Shape s = shapes[a];
    const size_t n = static_cast<size_t>(s.size());
    values.append(to_array(std::vector<double>(ws.values.begin() + off, ws.values.begin() + off + n), shape_of(s)));
    grads.append(to_array(std::vector<double>(ws.grads.begin() + off, ws.grads.begin() + off + n), shape_of(s)));
    is_fact.append(net.atom_depth[a] == 0);
  }
  nb::dict d;
  d["atoms"] = texts;
  d["values"] = values;
  d["gradients"] = grads;
  d["is_fact"] = is_fact;
  d["num_ground_rules"] = net.num_ground_rules();
  d["loss"] = total_loss;
  return d;
}

// Stratified k-fold cross-validation of this engine's template (fresh engines per fold,
// initialised as this one was); `callback(fold, epoch_report)` may return False to stop.
nb::dict cross_validate_samples(PyEngine& self, const SampleSet& set, const nb::dict& config_dict, int k, uint64_t seed,
                                nb::object callback) {
  train::TrainConfig config = self.config_from(config_dict);
  config.schedule.total_epochs = config.epochs;
  std::exception_ptr callback_error;
  auto on_epoch = [&](int fold, const train::EpochReport& r) -> bool {
    nb::gil_scoped_acquire acquire;
    try {
      if (PyErr_CheckSignals() != 0) throw nb::python_error();
      if (callback.is_none()) return true;
      return nb::cast<bool>(callback(fold, epoch_dict(r)));
    } catch (...) {
      callback_error = std::current_exception();
      return false;
    }
  };
  train::CrossValidation cv;
  {
    nb::gil_scoped_release release;
    cv = train::cross_validate(self.engine->ast(), config, set.samples, k, seed, on_epoch);
  }
  if (callback_error) std::rethrow_exception(callback_error);
  nb::list folds;
  for (const train::FoldReport& f : cv.folds) {
    nb::dict d;
    d["fold"] = f.fold;
    d["train_samples"] = f.train_samples;
    d["test_samples"] = f.test_samples;
    d["epochs"] = f.epochs;
    d["train"] = metrics_dict(f.train);
    d["test"] = metrics_dict(f.test);
    d["train_seconds"] = f.train_seconds;
    d["build_seconds"] = f.build_seconds;
    folds.append(d);
  }
  nb::dict d;
  d["k"] = cv.k;
  d["seed"] = cv.seed;
  d["fold_of_sample"] = cv.fold_of_sample;
  d["folds"] = folds;
  d["mean_accuracy"] = cv.mean_accuracy;
  d["std_accuracy"] = cv.std_accuracy;
  d["epoch_seconds"] = cv.epoch_seconds;
  return d;
}

}  // namespace

void bind_engine(nb::module_& m) {
  nb::class_<train::PreparedSet>(m, "PreparedSet")
      .def("__len__", &train::PreparedSet::size)
      .def_ro("seconds", &train::PreparedSet::seconds)
      .def("outputs", [](const train::PreparedSet& s) {
        nb::list out;
        for (const auto& o : s.outputs) out.append(nb::make_tuple(o.sample, o.query, o.text, o.target));
        return out;
      });

  nb::class_<PyEngine>(m, "Engine")
      .def("__init__",
           [](PyEngine* self, const std::string& template_text, const std::string& init, double scale, uint64_t seed) {
             new (self) PyEngine();
             self->config.initializer.kind = init_kind(init);
             self->config.initializer.scale = scale;
             self->config.seed = seed;
             nb::gil_scoped_release release;
             self->engine = std::make_unique<train::Engine>(parse_template(template_text, "<template>"),
                                                            self->config.initializer, seed);
           },
           nb::arg("template_text"), nb::arg("initializer") = "glorot", nb::arg("scale") = 1.0, nb::arg("seed") = 1)
      .def("prepare_text",
           [](PyEngine& self, const std::string& examples, const std::string& queries) {
             nb::gil_scoped_release release;
             return self.engine->prepare(samples_from_text(examples, queries));
           })
      .def("prepare_files",
           [](PyEngine& self, const std::string& examples, const std::string& queries) {
             nb::gil_scoped_release release;
             return self.engine->prepare(samples_from_files(examples, queries));
           })
      .def("prepare_samples",
           [](PyEngine& self, const SampleSet& set) {
             nb::gil_scoped_release release;
             return self.engine->prepare(set.samples);
           })
      .def("cross_validate", &cross_validate_samples, nb::arg("samples"), nb::arg("config"), nb::arg("k"),
           nb::arg("seed"), nb::arg("callback").none())
      .def("evaluate",
           [](PyEngine& self, const train::PreparedSet& set, const std::string& loss) {
             train::Evaluation ev;
             {
               nb::gil_scoped_release release;
               ev = self.engine->evaluate(set, train::parse_loss(loss));
             }
             nb::dict d = metrics_dict(ev.metrics);
             nb::list outputs, predictions;
             for (auto& y : ev.outputs) outputs.append(to_array(y, {y.size()}));
             for (auto& p : ev.predictions) predictions.append(to_array(p, {p.size()}));
             d["outputs"] = outputs;
             d["predictions"] = predictions;
             return d;
           })
      .def("train",
           [](PyEngine& self, const train::PreparedSet& train_set, const train::PreparedSet* test_set,
              const nb::dict& config_dict, nb::object callback) {
             train::TrainConfig config = self.config_from(config_dict);
             std::exception_ptr callback_error;
             auto on_epoch = [&](const train::EpochReport& r) -> bool {
               nb::gil_scoped_acquire acquire;
               try {
                 if (PyErr_CheckSignals() != 0) throw nb::python_error();  // Ctrl-C stops training
                 if (callback.is_none()) return true;
                 return nb::cast<bool>(callback(epoch_dict(r)));
               } catch (...) {
                 callback_error = std::current_exception();
                 return false;
               }
             };
             train::TrainResult result;
             {
               nb::gil_scoped_release release;
               result = self.engine->train(train_set, test_set, config, on_epoch);
             }
             if (callback_error) std::rethrow_exception(callback_error);
             nb::list history;
             for (const auto& r : result.history) history.append(epoch_dict(r));
             nb::dict d;
             d["epochs"] = result.epochs;
             d["stopped_early"] = result.stopped_early;
             d["train_seconds"] = result.train_seconds;
             d["history"] = history;
             return d;
           },
           nb::arg("train_set"), nb::arg("test_set").none(), nb::arg("config"), nb::arg("callback").none())
      .def("parameters",
           [](PyEngine& self) {
             const neural::Parameters& params = self.engine->parameters();
             nb::list out;
             for (uint32_t p = 0; p < params.count(); ++p) {
               const neural::ParamInfo& info = params.info(p);
               const double* data = params.data(p);
               out.append(nb::make_tuple(info.name,
                                         to_array(std::vector<double>(data, data + info.shape.size()), shape_of(info.shape)),
                                         info.learnable));
             }
             return out;
           })
      .def("set_parameter",
           [](PyEngine& self, const std::string& name, nb::ndarray<double, nb::c_contig, nb::device::cpu> value) {
             neural::Parameters& params = self.engine->parameters();
             const uint32_t p = params.find(name);
             if (p == neural::kNoParam) throw Error(ErrorKind::Semantic, "the model has no weight named '" + name + "'");
             const neural::ParamInfo& info = params.info(p);
             if (value.size() != static_cast<size_t>(info.shape.size()))
               throw Error(ErrorKind::Shape, "weight '" + name + "' is " + exec::to_string(info.shape) + " (" +
                                                 std::to_string(info.shape.size()) + " values), got " +
                                                 std::to_string(value.size()) + " values");
             std::copy(value.data(), value.data() + value.size(), params.data(p));
           })
      .def_prop_ro("epochs_trained", [](const PyEngine& self) { return self.engine->epochs_trained(); })
      .def("template_text", [](const PyEngine& self) { return print_template(self.engine->ast()); })
      .def("save",
           [](PyEngine& self, const std::string& path, const nb::dict& config_dict) {
             train::TrainConfig config = self.config_from(config_dict);
             nb::gil_scoped_release release;
             self.engine->save(path, config);
           })
      .def_static("load",
                  [](const std::string& path) {
                    auto self = std::make_unique<PyEngine>();
                    {
                      nb::gil_scoped_release release;
                      self->engine = train::Engine::load(path, self->config);
                    }
                    std::string text = print_template(self->engine->ast());
                    return nb::make_tuple(nb::cast(self.release(), nb::rv_policy::take_ownership), text);
                  })
      .def("ground_network", &ground_network);
}

}  // namespace lrnn::python
