// lrnn.Model over the public C++ API (include/lrnn/model.hpp), the same one the CLI uses:
// build from template text, ground datasets, train with a per-epoch Python callback,
// evaluate, read/write parameters as NumPy arrays, save/load, and inspect the ground
// network of one sample. Settings come from Python as a dict whose keys are the fields
// of lrnn::Settings (default_settings() gives them with their defaults). Long-running
// calls release the GIL.
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/memory.hpp"
#include "lrnn/model.hpp"
#include "api/dataset_impl.hpp"
#include "sample_set.hpp"
#include "train/dataset.hpp"

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
std::vector<size_t> shape_of(int rows, int cols) {
  if (rows == 1 && cols == 1) return {};
  if (cols == 1) return {static_cast<size_t>(rows)};
  return {static_cast<size_t>(rows), static_cast<size_t>(cols)};
}

nb::dict metrics_dict(const Metrics& m) {
  nb::dict d;
  d["loss"] = m.loss;
  d["accuracy"] = m.accuracy;
  d["auc"] = m.auc;
  d["count"] = m.count;
  if (m.has_ranking) {
    d["mrr"] = m.ranking.mrr;
    d["hits@1"] = m.ranking.hits1;
    d["hits@3"] = m.ranking.hits3;
    d["hits@10"] = m.ranking.hits10;
  }
  return d;
}

nb::dict epoch_dict(const EpochInfo& r) {
  nb::dict d;
  d["epoch"] = r.epoch;
  d["train"] = metrics_dict(r.train);
  if (r.has_validation) d["val"] = metrics_dict(r.validation);
  if (r.has_test) d["test"] = metrics_dict(r.test);
  d["lr"] = r.lr;
  d["seconds"] = r.seconds;
  return d;
}

// A memory size from Python: bytes as an int > 0, or a text such as "4G" (lrnn/memory.hpp);
// anything else is an Error naming `where`.
uint64_t memory_size(nb::handle value, const std::string& where) {
  if (nb::isinstance<nb::str>(value)) return parse_memory_size(nb::cast<std::string>(value), where);
  if (nb::isinstance<nb::int_>(value) && !nb::isinstance<nb::bool_>(value)) {
    uint64_t bytes = 0;
    if (nb::try_cast<uint64_t>(value, bytes) && bytes > 0) return bytes;  // -1 and 2**64 fail the cast
  }
  throw Error(ErrorKind::Parse, where + " takes a size such as \"4G\", \"512M\", \"0.5T\" or a number of bytes > 0, got " +
                                    nb::cast<std::string>(nb::repr(value)));
}

nb::dict settings_dict(const Settings& s) {
  nb::dict d;
  d["epochs"] = s.epochs;
  d["lr"] = s.lr;
  d["optimizer"] = s.optimizer;
  d["loss"] = s.loss;
  d["label_smoothing"] = s.label_smoothing;
  d["batch_size"] = s.batch_size;
  d["seed"] = s.seed;
  d["initializer"] = s.initializer;
  d["schedule"] = s.schedule;
  d["gamma"] = s.gamma;
  d["warmup"] = s.warmup;
  d["d_model"] = s.d_model ? nb::cast(*s.d_model) : nb::none();
  d["patience"] = s.patience;
  d["max_ground_rules"] = s.max_ground_rules;
  d["max_atoms"] = s.max_atoms;
  d["max_memory"] = s.max_memory ? nb::cast(s.max_memory) : nb::none();
  d["shuffle"] = s.shuffle;
  d["query_batch_size"] = s.query_batch_size;
  d["fanout"] = s.fanout;
  d["link_prediction"] = s.link_prediction;
  d["negatives"] = s.negatives;
  d["corrupt"] = s.corrupt;
  d["margin"] = s.margin;
  d["ranking"] = s.ranking;
  d["link_chunk"] = s.link_chunk;
  d["dtype"] = to_string(s.dtype);
  d["clip_grad_value"] = s.clip_grad_value ? nb::cast(*s.clip_grad_value) : nb::none();
  d["clip_grad_norm"] = s.clip_grad_norm ? nb::cast(*s.clip_grad_norm) : nb::none();
  return d;
}

// Settings(fanout=F) for every hop, or fanout=[F1, F2, ...] one per hop (outermost first,
// as NeighborLoader's num_neighbors): docs/big_graphs.md "Mini-batches of queries".
std::vector<size_t> fanout_of(nb::handle value) {
  if (nb::isinstance<nb::int_>(value)) return {nb::cast<size_t>(value)};
  try {
    return nb::cast<std::vector<size_t>>(value);
  } catch (const nb::cast_error&) {
    throw nb::type_error("Settings(fanout=...) takes an integer >= 0 or a list of them (one per hop, outermost "
                         "first, as NeighborLoader's num_neighbors)");
  }
}

// The dict's entries over `s` (the rest keeps its value); an unknown key is refused, so
// a misspelled setting never goes unnoticed.
Settings settings_from(const nb::dict& d, Settings s) {
  for (auto [key, value] : d) {
    const std::string k = nb::cast<std::string>(key);
    if (value.is_none()) continue;
    if (k == "epochs") s.epochs = nb::cast<int>(value);
    else if (k == "lr") s.lr = nb::cast<double>(value);
    else if (k == "optimizer") s.optimizer = nb::cast<std::string>(value);
    else if (k == "weight_decay") s.weight_decay = nb::cast<double>(value);
    else if (k == "momentum") s.momentum = nb::cast<double>(value);
    else if (k == "beta1") s.beta1 = nb::cast<double>(value);
    else if (k == "beta2") s.beta2 = nb::cast<double>(value);
    else if (k == "eps") s.eps = nb::cast<double>(value);
    else if (k == "loss") s.loss = nb::cast<std::string>(value);
    else if (k == "label_smoothing") s.label_smoothing = nb::cast<double>(value);
    else if (k == "warmup") s.warmup = nb::cast<int>(value);
    else if (k == "d_model") s.d_model = nb::cast<int>(value);
    else if (k == "batch_size") s.batch_size = nb::cast<size_t>(value);
    else if (k == "seed") s.seed = nb::cast<uint64_t>(value);
    else if (k == "initializer") s.initializer = nb::cast<std::string>(value);
    else if (k == "schedule") s.schedule = nb::cast<std::string>(value);
    else if (k == "step_size") s.step_size = nb::cast<int>(value);
    else if (k == "gamma") s.gamma = nb::cast<double>(value);
    else if (k == "patience") s.patience = nb::cast<int>(value);
    else if (k == "max_ground_rules") s.max_ground_rules = nb::cast<size_t>(value);
    else if (k == "max_atoms") s.max_atoms = nb::cast<size_t>(value);
    else if (k == "max_memory") s.max_memory = memory_size(value, "Settings(max_memory=...)");
    else if (k == "shuffle") s.shuffle = nb::cast<bool>(value);
    else if (k == "query_batch_size") s.query_batch_size = nb::cast<size_t>(value);
    else if (k == "fanout") s.fanout = fanout_of(value);
    else if (k == "link_prediction") s.link_prediction = nb::cast<bool>(value);
    else if (k == "negatives") s.negatives = nb::cast<size_t>(value);
    else if (k == "corrupt") s.corrupt = nb::cast<std::string>(value);
    else if (k == "margin") s.margin = nb::cast<double>(value);
    else if (k == "ranking") s.ranking = nb::cast<bool>(value);
    else if (k == "link_chunk") s.link_chunk = nb::cast<size_t>(value);
    else if (k == "dtype") s.dtype = parse_dtype(nb::cast<std::string>(value));
    else if (k == "clip_grad_value") s.clip_grad_value = nb::cast<double>(value);
    else if (k == "clip_grad_norm") s.clip_grad_norm = nb::cast<double>(value);
    else throw Error(ErrorKind::Semantic, "unknown setting '" + k + "'");
  }
  return s;
}

// A dataset grounded by a model: the public Dataset and its outputs (ground query
// atoms and targets), grounded when built so that errors surface there.
struct BuiltSet {
  Dataset data;
  std::vector<Output> outputs;
};

BuiltSet build_set(const Model& model, Dataset data) {
  nb::gil_scoped_release release;
  BuiltSet set{std::move(data), {}};
  set.outputs = model.ground_queries(set.data);
  return set;
}

Dataset learnable(Dataset data, bool learnable_facts) {
  return learnable_facts ? data.with_learnable_facts() : data;
}

// The model's lock (include/lrnn/model.hpp, "Threads") for one whole binding call, so that
// applying a call's settings and running it are one step when threads share a model. It is
// waited for with the GIL released: the thread holding it may need the GIL for its epoch
// callback.
std::unique_lock<std::recursive_mutex> lock_model(const Model& model) {
  nb::gil_scoped_release release;
  return model.lock();
}

// Applies the training settings of a call; the initializer and seed the model was built
// with stay (they already shaped its weights), unless the dict says otherwise.
void apply(Model& model, const nb::dict& config) {
  const auto lock = lock_model(model);
  Settings base;
  base.initializer = model.settings().initializer;
  base.seed = model.settings().seed;
  model.settings() = settings_from(config, base);
}

// A Python callback called from training (the GIL released): takes the GIL, lets Ctrl-C
// stop training, and keeps an exception in `error` (rethrown once the engine returns)
// rather than letting it cross the engine; false stops the run.
template <class Call>
bool call_python(std::exception_ptr& error, Call&& call) {
  nb::gil_scoped_acquire acquire;
  try {
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
    return call();
  } catch (...) {
    error = std::current_exception();
    return false;
  }
}

nb::dict ground_network(Model& model, const BuiltSet& set, size_t index, const std::string& loss) {
  const auto lock = lock_model(model);
  model.settings().loss = loss;
  GroundNetwork net;
  {
    nb::gil_scoped_release release;
    net = model.network(set.data, index, true);
  }
  nb::list texts, values, grads, is_fact;
  for (GroundNetwork::Atom& a : net.atoms) {
    texts.append(a.text);
    values.append(to_array(std::move(a.value), shape_of(a.rows, a.cols)));
    grads.append(to_array(std::move(a.gradient), shape_of(a.rows, a.cols)));
    is_fact.append(a.depth == 0);
  }
  nb::dict d;
  d["atoms"] = texts;
  d["values"] = values;
  d["gradients"] = grads;
  d["is_fact"] = is_fact;
  d["num_ground_rules"] = net.ground_rules;
  d["loss"] = net.loss;
  return d;
}

// One sample's outputs, the gradients of its atoms and of every parameter after a backward
// pass seeded with `output_gradients` (lrnn.nn.torch_function's backward).
nb::dict vector_jacobian(Model& model, const BuiltSet& set, size_t index,
                         const std::vector<std::vector<double>>& output_gradients) {
  const auto lock = lock_model(model);
  GroundNetwork net;
  {
    nb::gil_scoped_release release;
    net = model.network(set.data, index, output_gradients);
  }
  nb::list texts, grads, params;
  for (GroundNetwork::Atom& a : net.atoms) {
    texts.append(a.text);
    grads.append(to_array(std::move(a.gradient), shape_of(a.rows, a.cols)));
  }
  for (Parameter& p : net.parameter_gradients)
    params.append(nb::make_tuple(p.name, to_array(std::move(p.values), shape_of(p.rows, p.cols))));
  nb::dict d;
  d["atoms"] = texts;
  d["gradients"] = grads;
  d["parameter_gradients"] = params;
  return d;
}

// A run whose loss or weights are no longer finite has diverged: an error, as `lrnn train`
// refuses the same run, rather than a history ending in nan and a model of NaN weights.
void refuse_divergence(const Model& model, const TrainReport& result) {
  const double loss = result.history.empty() ? 0.0 : result.history.back().train.loss;
  std::string weight;
  for (const Parameter& p : model.parameters())
    if (std::any_of(p.values.begin(), p.values.end(), [](double v) { return !std::isfinite(v); })) weight = p.name;
  if (std::isfinite(loss) && weight.empty()) return;
  throw Error(ErrorKind::Runtime, "training diverged: after " + std::to_string(model.epochs_trained()) +
                                      " epochs the training loss is " + std::to_string(loss) +
                                      (weight.empty() ? std::string() : " and weight '" + weight + "' is not finite") +
                                      " (try a smaller learning rate)");
}

nb::dict train(Model& model, const BuiltSet& train_set, const BuiltSet* test_set, const nb::dict& config,
               nb::object callback) {
  const auto lock = lock_model(model);
  apply(model, config);
  std::exception_ptr callback_error;
  auto on_epoch = [&](const EpochInfo& r) {
    return call_python(callback_error, [&] { return callback.is_none() || nb::cast<bool>(callback(epoch_dict(r))); });
  };
  TrainReport result;
  {
    nb::gil_scoped_release release;
    result = model.train(train_set.data, test_set ? &test_set->data : nullptr, on_epoch);
  }
  if (callback_error) std::rethrow_exception(callback_error);
  refuse_divergence(model, result);
  nb::list history;
  for (const EpochInfo& r : result.history) history.append(epoch_dict(r));
  nb::dict d;
  d["epochs"] = result.epochs;
  d["stopped_early"] = result.stopped_early;
  d["train_seconds"] = result.train_seconds;
  d["history"] = history;
  if (result.best_epoch > 0) d["best"] = epoch_dict(result.best);
  nb::list outputs;
  for (std::vector<double>& v : result.last_epoch_outputs) outputs.append(std::move(v));
  d["last_epoch_outputs"] = outputs;
  return d;
}

nb::dict evaluate(Model& model, const BuiltSet& set, const std::string& loss) {
  const auto lock = lock_model(model);
  model.settings().loss = loss;
  Evaluation ev;
  {
    nb::gil_scoped_release release;
    ev = model.evaluate(set.data);
  }
  nb::dict d = metrics_dict(ev.metrics);
  nb::list outputs, predictions, listed;
  for (Output& o : ev.outputs) {
    listed.append(o.listed_target);
    const size_t n_value = o.value.size(), n_prediction = o.prediction.size();
    // a matrix output keeps its shape; scalars and column vectors stay flat
    const bool matrix = o.rows > 1 && o.cols > 1 && static_cast<size_t>(o.rows) * o.cols == n_value;
    outputs.append(to_array(std::move(o.value), matrix ? shape_of(o.rows, o.cols) : std::vector<size_t>{n_value}));
    predictions.append(to_array(std::move(o.prediction), {n_prediction}));
  }
  d["outputs"] = outputs;
  d["predictions"] = predictions;
  d["listed_targets"] = listed;
  if (ev.has_splits) {
    nb::dict splits;
    splits["train"] = metrics_dict(ev.train);
    splits["val"] = metrics_dict(ev.validation);
    splits["test"] = metrics_dict(ev.test);
    d["splits"] = splits;
  }
  return d;
}

// A query split of `data` (lrnn.splits.QuerySplitSpec): query q in part split[q] (0 train,
// 1 validation, 2 test, 3 none: QuerySplit), or drawn by the fractions (train, val, test)
// with `seed` (Dataset::with_query_split); neither: no split.
struct SplitArgs {
  std::vector<uint8_t> parts;
  std::vector<double> fractions;
  uint64_t seed = 1;
};

Dataset with_splits(Dataset data, const SplitArgs& args) {
  if (!args.fractions.empty()) {
    if (args.fractions.size() != 3) throw Error(ErrorKind::Semantic, "a query split takes three fractions (train, val, test)");
    return data.with_query_split(args.fractions[0], args.fractions[1], args.fractions[2], args.seed);
  }
  const std::vector<uint8_t>& split = args.parts;
  if (split.empty()) return data;
  std::vector<QuerySplit> parts(split.size());
  for (size_t q = 0; q < split.size(); ++q) {
    if (split[q] > static_cast<uint8_t>(QuerySplit::None))
      throw Error(ErrorKind::Semantic, "query split part " + std::to_string(split[q]) + " of query " +
                                           std::to_string(q) + ": expected 0 (train), 1 (val), 2 (test) or 3 (none)");
    parts[q] = static_cast<QuerySplit>(split[q]);
  }
  return data.with_query_splits(parts);
}

// Stratified k-fold cross-validation of this model's template with the dict's settings
// (fresh models per fold, initialised as this one was); `callback(fold, epoch)` may
// return False to stop.
nb::dict cross_validate_set(Model& model, const SampleSet& set, const nb::dict& config, int k, uint64_t seed,
                            nb::object callback, bool test_curve) {
  const auto lock = lock_model(model);
  apply(model, config);
  std::exception_ptr callback_error;
  auto on_epoch = [&](int fold, const EpochInfo& r) {
    return call_python(callback_error,
                       [&] { return callback.is_none() || nb::cast<bool>(callback(fold, epoch_dict(r))); });
  };
  CrossValidationReport cv;
  {
    nb::gil_scoped_release release;
    cv = cross_validate(model.get_template(), model.settings(), set.data, k, seed, on_epoch, test_curve);
  }
  if (callback_error) std::rethrow_exception(callback_error);
  nb::list folds;
  for (const FoldResult& f : cv.folds) {
    nb::dict d;
    d["fold"] = f.fold;
    d["train_samples"] = f.train_samples;
    d["test_samples"] = f.test_samples;
    d["epochs"] = f.epochs;
    d["train"] = metrics_dict(f.train);
    d["test"] = metrics_dict(f.test);
    d["train_seconds"] = f.train_seconds;
    d["build_seconds"] = f.build_seconds;
    if (test_curve) {
      nb::list curve;
      for (const Metrics& m : f.test_by_epoch) curve.append(metrics_dict(m));
      d["test_by_epoch"] = curve;
    }
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
  if (test_curve) {
    d["mean_accuracy_by_epoch"] = cv.mean_accuracy_by_epoch;
    d["std_accuracy_by_epoch"] = cv.std_accuracy_by_epoch;
    d["best_epoch"] = cv.best_epoch;
    d["best_epoch_mean_accuracy"] = cv.best_epoch_mean_accuracy;
    d["best_epoch_std_accuracy"] = cv.best_epoch_std_accuracy;
  }
  return d;
}

using RowArray = nb::ndarray<double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

void check_rows(const FactRows& rows, const RowArray& values, const char* what) {
  if (values.shape(1) != rows.row_size())
    throw Error(ErrorKind::Shape, std::string(what) + " have " + std::to_string(values.shape(1)) +
                                      " values per row, the sample's facts " + std::to_string(rows.row_size()));
}

// FactRows::forward over a (rows, row_size) array: (rows, output_size).
Array fact_rows_forward(const FactRows& rows, const RowArray& values) {
  check_rows(rows, values, "the fact values");
  const size_t count = values.shape(0);
  std::vector<double> out;
  {
    nb::gil_scoped_release release;
    out = rows.forward(values.data(), count);
  }
  return to_array(std::move(out), {count, rows.output_size()});
}

// FactRows::backward: (dL/d(fact values) as (rows, row_size), [(parameter name, gradient)]) for
// the learnable parameters only: the fixed ones (a template's <...> weights, such as the rows
// that read a vector fact's entries) are never stepped, and making an array of each cost more
// than the engine's backward of a row.
nb::tuple fact_rows_backward(const FactRows& rows, const RowArray& values, const RowArray& output_gradients) {
  check_rows(rows, values, "the fact values");
  const size_t count = values.shape(0);
  if (output_gradients.shape(0) != count || output_gradients.shape(1) != rows.output_size())
    throw Error(ErrorKind::Shape, "output gradients of shape (" + std::to_string(output_gradients.shape(0)) + ", " +
                                      std::to_string(output_gradients.shape(1)) + ") for " + std::to_string(count) +
                                      " rows of " + std::to_string(rows.output_size()) + " output values");
  std::vector<double> grads;
  std::vector<Parameter> parameter_gradients;
  {
    nb::gil_scoped_release release;
    grads = rows.backward(values.data(), output_gradients.data(), count, parameter_gradients);
  }
  nb::list params;
  for (Parameter& p : parameter_gradients)
    if (p.learnable) params.append(nb::make_tuple(p.name, to_array(std::move(p.values), shape_of(p.rows, p.cols))));
  return nb::make_tuple(to_array(std::move(grads), {count, rows.row_size()}), params);
}

// The process-wide settings: the memory budget, the defaults, the seeded query split.
void bind_process(nb::module_& m) {
  m.def(
      "random_query_split",
      [](size_t n, double train, double val, double test, uint64_t seed) {
        std::vector<uint8_t> out;
        for (QuerySplit p : train::random_query_split(n, train, val, test, seed)) out.push_back(static_cast<uint8_t>(p));
        return out;
      },
      nb::arg("n"), nb::arg("train"), nb::arg("val"), nb::arg("test"), nb::arg("seed"),
      "The seeded random query split of `lrnn train --query-split` (0 train, 1 val, 2 test, 3 none per query)");
  // The process's memory budget (lrnn/memory.hpp), as lrnn.set_max_memory() and
  // Settings(max_memory=...) set it.
  m.def(
      "set_max_memory",
      [](nb::object size) { set_memory_limit(size.is_none() ? 0 : memory_size(size, "set_max_memory(...)")); },
      nb::arg("size").none());
  m.def("max_memory", [] { return memory_limit(); });
  m.def("memory_held", [] { return memory_held(); });
  m.def("parse_memory_size", [](const std::string& text, const std::string& where) {
    return parse_memory_size(text, where);
  });
  m.def("check_memory", [](uint64_t bytes, const std::string& what) { check_memory(bytes, what); });
  m.attr("MAX_VALUE_ENTRIES") = kMaxValueEntries;
  m.def("default_settings", [] { return settings_dict(Settings{}); },
        "lrnn::Settings{} as a dict: the defaults of the CLI, the C++ API and lrnn.Settings");
}

// What Model.prepare_* return: a dataset grounded against a model, and a query split's
// arguments.
void bind_built_sets(nb::module_& m) {
  nb::class_<SplitArgs>(m, "SplitArgs")
      .def(nb::init<>())
      .def_rw("parts", &SplitArgs::parts)
      .def_rw("fractions", &SplitArgs::fractions)
      .def_rw("seed", &SplitArgs::seed);

  nb::class_<BuiltSet>(m, "BuiltSet")
      .def("__len__", [](const BuiltSet& s) { return s.data.size(); })
      .def("outputs", [](const BuiltSet& s) {
        nb::list out;
        for (const Output& o : s.outputs) out.append(nb::make_tuple(o.example, o.query, o.target));
        return out;
      })
      // Per output: its query line's importance (`0.25 id :- 1.0 q.`), and whether its target
      // was written as a list (a one-entry value is then a vector).
      .def("importances", [](const BuiltSet& s) {
        nb::list out;
        for (const Output& o : s.outputs) out.append(o.importance);
        return out;
      })
      .def("num_queries", [](const BuiltSet& s) { return s.data.num_queries(); })
      .def("query_splits", [](const BuiltSet& s) {
        std::vector<uint8_t> out;
        for (QuerySplit p : s.data.query_splits()) out.push_back(static_cast<uint8_t>(p));
        return out;
      })
      .def("output_splits", [](const BuiltSet& s) {
        std::vector<uint8_t> out;
        for (const Output& o : s.outputs) out.push_back(static_cast<uint8_t>(o.split));
        return out;
      })
      .def("listed_targets", [](const BuiltSet& s) {
        nb::list out;
        for (const Output& o : s.outputs) out.append(o.listed_target);
        return out;
      })
      // (sample index, query) of every output no rule or fact derives (docs/semantics.md
      // "Underivable queries"): it is 0 whatever the weights.
      .def("underivable", [](const BuiltSet& s) {
        nb::list out;
        for (const Output& o : s.outputs)
          if (!o.derived) out.append(nb::make_tuple(o.example, o.query));
        return out;
      });
}

void bind_fact_rows(nb::module_& m) {
  // One sample grounded and planned once, run for rows of its valued facts' values
  // (lrnn.nn.NeuraLogic(batched=True)); made by Model.fact_rows, which it keeps alive.
  nb::class_<FactRows>(m, "FactRows")
      .def("facts", &FactRows::facts)
      .def("fact_sizes", &FactRows::fact_sizes)
      .def_prop_ro("row_size", &FactRows::row_size)
      .def_prop_ro("output_size", &FactRows::output_size)
      .def_prop_ro("output_shape", [](const FactRows& r) { return shape_of(r.output_rows(), r.output_cols()); })
      .def("forward", &fact_rows_forward, nb::arg("values"))
      .def("backward", &fact_rows_backward, nb::arg("values"), nb::arg("output_gradients"));
}

// lrnn::Model's construction, the datasets it prepares and their learnable facts.
void bind_model_data(nb::class_<Model>& model) {
  model
      .def("__init__",
           [](Model* self, const std::string& template_text, const std::string& initializer, uint64_t seed,
              nb::object max_memory) {
             Settings s;
             s.initializer = initializer;
             s.seed = seed;
             // The budget holds before the weights are allocated (Settings(max_memory=...)).
             if (!max_memory.is_none()) s.max_memory = memory_size(max_memory, "Settings(max_memory=...)");
             nb::gil_scoped_release release;
             new (self) Model(Template::from_string(template_text, "<template>"), s);
           },
           nb::arg("template_text"), nb::arg("initializer") = Settings{}.initializer, nb::arg("seed") = Settings{}.seed,
           nb::arg("max_memory").none() = nb::none())
      // `split`: a query split (docs/big_graphs.md), one part per query (empty: every query trains).
      .def("prepare_text",
           [](const Model& self, const std::string& examples, const std::string& queries, bool learnable_facts,
              const SplitArgs& split) {
             return build_set(self,
                              learnable(with_splits(Dataset::from_text(examples, queries), split), learnable_facts));
           },
           nb::arg("examples"), nb::arg("queries"), nb::arg("learnable_facts") = false,
           nb::arg("split") = SplitArgs{})
      .def("prepare_files",
           [](const Model& self, const std::string& examples, const std::string& queries, bool learnable_facts,
              const SplitArgs& split) {
             // In an MPI job each rank parses only its share (learnable facts are not sharded).
             if (!split.parts.empty() || !split.fractions.empty())
               return build_set(self, learnable(with_splits(Dataset::load(examples, queries), split), learnable_facts));
             return build_set(self, learnable_facts ? learnable(Dataset::load(examples, queries), true)
                                                    : Dataset::load_share(examples, queries));
           },
           nb::arg("examples"), nb::arg("queries"), nb::arg("learnable_facts") = false,
           nb::arg("split") = SplitArgs{})
      .def("prepare_samples",
           [](const Model& self, const SampleSet& set, bool learnable_facts, const SplitArgs& split) {
             return build_set(self, learnable(with_splits(set.data, split), learnable_facts));
           },
           nb::arg("samples"), nb::arg("learnable_facts") = false, nb::arg("split") = SplitArgs{})
      .def("example_parameters",
           [](const Model& self, const BuiltSet& set) {
             const auto lock = lock_model(self);
             nb::list out;
             for (ExampleParameter& p : self.example_parameters(set.data))
               out.append(nb::make_tuple(p.literal, p.index, p.value.name,
                                         to_array(std::move(p.value.values), shape_of(p.value.rows, p.value.cols))));
             return out;
           },
           "(literal, running index, parameter name, value) of every learnable example fact of the set")
      .def("set_example_parameter",
           [](Model& self, const BuiltSet& set, const std::string& literal,
              nb::ndarray<double, nb::c_contig, nb::device::cpu> value) {
             const auto lock = lock_model(self);
             self.set_example_parameter(set.data, literal, std::vector<double>(value.data(), value.data() + value.size()));
           });
}

// Training, evaluation and the settings a run applies.
void bind_model_training(nb::class_<Model>& model) {
  model
      .def("cross_validate", &cross_validate_set, nb::arg("samples"), nb::arg("config"), nb::arg("k"), nb::arg("seed"),
           nb::arg("callback").none(), nb::arg("test_curve") = false)
      .def("configure", &apply, "Applies a settings dict (keys: the fields of lrnn::Settings)")
      .def("evaluate", &evaluate)
      .def("train", &train, nb::arg("train_set"), nb::arg("test_set").none(), nb::arg("config"),
           nb::arg("callback").none());
}

// The weights, read and written by name.
void bind_model_weights(nb::class_<Model>& model) {
  model
      .def("parameters",
           [](const Model& self) {
             const auto lock = lock_model(self);
             nb::list out;
             for (Parameter& p : self.parameters())
               out.append(nb::make_tuple(p.name, to_array(std::move(p.values), shape_of(p.rows, p.cols)), p.learnable));
             return out;
           })
      .def("set_parameter",
           [](Model& self, const std::string& name, nb::ndarray<double, nb::c_contig, nb::device::cpu> value) {
             const auto lock = lock_model(self);
             self.set_parameter(name, std::vector<double>(value.data(), value.data() + value.size()));
           })
      .def_prop_ro("epochs_trained",
                   [](const Model& self) {
                     const auto lock = lock_model(self);
                     return self.epochs_trained();
                   });
}

// The template, saving and loading, and looking inside: a sample's ground network, its
// vector-Jacobian product, the batched rows of one sample's facts.
void bind_model_files_and_inspection(nb::class_<Model>& model) {
  model
      .def("template_text", [](const Model& self) {
        const auto lock = lock_model(self);
        return self.get_template().to_text();
      })
      .def("save",
           [](Model& self, const std::string& path, const nb::dict& config) {
             const auto lock = lock_model(self);
             apply(self, config);
             nb::gil_scoped_release release;
             self.save(path);
           })
      .def_static("load",
                  [](const std::string& path) {
                    std::unique_ptr<Model> model;
                    {
                      nb::gil_scoped_release release;
                      model = std::make_unique<Model>(Model::load(path));
                    }
                    std::string text = model->get_template().to_text();
                    return nb::make_tuple(nb::cast(model.release(), nb::rv_policy::take_ownership), text);
                  })
      .def("ground_network", &ground_network)
      .def("vector_jacobian", &vector_jacobian)
      .def(
          "fact_rows",
          [](const Model& self, const BuiltSet& set) {
            nb::gil_scoped_release release;
            return self.fact_rows(set.data);
          },
          nb::arg("sample"), nb::keep_alive<0, 1>());
}

}  // namespace

void bind_engine(nb::module_& m) {
  bind_process(m);
  bind_built_sets(m);
  bind_fact_rows(m);
  nb::class_<Model> model(m, "Model");
  bind_model_data(model);
  bind_model_training(model);
  bind_model_weights(model);
  bind_model_files_and_inspection(model);
}

}  // namespace lrnn::python
