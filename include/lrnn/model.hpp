// The public C++ API: templates, datasets and trainable models. Small and stable (the
// Python package binds it): plain structs, std containers, no Eigen, no internals.
//
//   lrnn::Template t = lrnn::Template::from_file("xor.lrnn");
//   lrnn::Dataset data = lrnn::Dataset::load("trainExamples.txt");
//   lrnn::Model model(t, {.epochs = 300, .lr = 0.1});
//   model.train(data);
//   for (const auto& o : model.evaluate(data).outputs) std::cout << o.query << " " << o.value[0];
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lrnn/ast.hpp"

namespace lrnn {

// A template (rules, weights, facts, predicate metadata).
class Template {
 public:
  static Template from_file(const std::string& path);
  static Template from_string(const std::string& text, const std::string& name = "<string>");
  static Template from_ast(TemplateAst ast);
  std::string to_text() const;  // canonical text (parses back to the same template)
  const TemplateAst& ast() const { return *ast_; }

 private:
  std::shared_ptr<const TemplateAst> ast_;
};

// Examples paired with their queries (targets). Cheap to copy (shared, immutable).
class Dataset {
 public:
  Dataset();
  // `queries_path` may be empty when the examples are labelled (`<1> q :- facts.`).
  static Dataset load(const std::string& examples_path, const std::string& queries_path = "");
  static Dataset from_text(const std::string& examples, const std::string& queries = "");
  static Dataset from_ast(std::vector<ExampleAst> examples, const std::vector<QueryLineAst>& queries = {});
  size_t size() const;  // samples (an example with the queries it answers)
  // (train, test): a seeded shuffle, the last round(fraction * size) samples are the test set.
  std::pair<Dataset, Dataset> split(double test_fraction, uint64_t seed = 1) const;

  struct Impl;  // opaque: the paired samples
  explicit Dataset(std::shared_ptr<const Impl> impl);
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

struct Settings {
  int epochs = 100;
  double lr = 0.01;
  std::string optimizer = "adam";      // adam | sgd | adamw
  double weight_decay = -1;            // < 0: the optimizer's default (AdamW 0.01, else 0)
  std::string loss = "mse";            // mse | crossentropy (from logits)
  size_t batch_size = 0;               // 0: the whole training set per step
  uint64_t seed = 1;                   // initialisation and shuffling
  std::string initializer = "glorot";  // glorot | he | uniform(s) | normal(s) | constant(v)
  std::string schedule = "constant";   // constant | step | exponential | cosine
  int patience = 0;                    // early stopping (0: off)
};

struct Metrics {
  double loss = 0;
  double accuracy = 0;
  double auc = 0;  // NaN unless the targets are binary single values
  size_t count = 0;  // outputs with a target
};

struct EpochInfo {
  int epoch = 0;  // 1-based, counting earlier training of the model
  Metrics train;  // running metrics of the epoch's training passes
  bool has_test = false;
  Metrics test;
  double seconds = 0;
};

struct TrainReport {
  int epochs = 0;
  bool stopped_early = false;
  double build_seconds = 0;  // grounding + neuralization + plan of the datasets
  double train_seconds = 0;
  std::vector<EpochInfo> history;
};

struct Output {
  size_t example = 0;       // sample index in the dataset
  std::string query;        // the ground query atom
  std::vector<double> target;      // empty: no target
  std::vector<double> value;       // the query neuron's output (row-major)
  std::vector<double> prediction;  // sigmoid/softmax of the value under crossentropy
};

struct Evaluation {
  Metrics metrics;
  std::vector<Output> outputs;
};

// A parameter (weight, offset or learnable fact) by name, row-major.
struct Parameter {
  std::string name;  // "$name" for named weights, "rule3.body1", "rule3.head", ...
  int rows = 1, cols = 1;
  bool learnable = true;
  std::vector<double> values;
};

// The ground network of one sample, for inspection: every atom neuron with its value
// and (after a backward pass of the loss) its gradient.
struct GroundNetwork {
  struct Atom {
    std::string text;  // `layer1(d1_3)`
    int depth = 0;     // 0: a fact
    int rows = 1, cols = 1;
    std::vector<double> value, gradient;
  };
  std::vector<Atom> atoms;
  size_t ground_rules = 0;
  size_t dropped_cycle_rules = 0;
  double loss = 0;
  std::vector<Parameter> parameter_gradients;  // same order as Model::parameters()
};

class Model {
 public:
  explicit Model(const Template& tmpl, const Settings& settings = {});
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  static Model load(const std::string& path);  // a file written by save() or `lrnn train --save`
  void save(const std::string& path) const;     // atomic (temporary file + rename)

  Settings& settings();
  const Settings& settings() const;

  // Trains on `data`; `test` (may be null) is evaluated every epoch. The callback may
  // return false to stop.
  TrainReport train(const Dataset& data, const Dataset* test = nullptr,
                    const std::function<bool(const EpochInfo&)>& on_epoch = {});
  Evaluation evaluate(const Dataset& data) const;
  // Output values only (one per query atom, in Evaluation::outputs order).
  std::vector<std::vector<double>> forward(const Dataset& data) const;

  std::vector<Parameter> parameters() const;  // the state dict
  Parameter parameter(const std::string& name) const;
  void set_parameter(const std::string& name, const std::vector<double>& values);
  void load_parameters(const std::vector<Parameter>& params);  // by name; shapes must match

  // The ground network of sample `index` of `data`, with gradients of the loss if asked.
  GroundNetwork network(const Dataset& data, size_t index, bool with_gradients = false) const;

  Template get_template() const;
  int epochs_trained() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Stratified k-fold cross-validation (`lrnn train --folds K`): the samples are classed by
// their query targets, dealt into k stratified folds (stratified_folds, seeded), and k fresh
// models built with `settings` each train on k-1 folds and are tested on the other one.
// Refuses k < 2, k above the smallest class's sample count, and samples without targets.
struct FoldResult {
  int fold = 0;  // 0-based
  size_t train_samples = 0, test_samples = 0;
  Metrics train, test;  // after the fold's last epoch
  int epochs = 0;
  double train_seconds = 0;
};

struct CrossValidationReport {
  int k = 0;
  std::vector<int> fold_of_sample;  // the test fold of every sample
  std::vector<FoldResult> folds;    // fewer than k only when on_epoch stopped the run
  double mean_accuracy = 0, std_accuracy = 0;  // over the folds' test accuracies (population std)
  double epoch_seconds = 0;                    // mean training time per epoch
};

// `on_epoch(fold, info)` may return false to stop the whole run.
CrossValidationReport cross_validate(const Template& tmpl, const Settings& settings, const Dataset& data, int k,
                                     uint64_t fold_seed = 1,
                                     const std::function<bool(int, const EpochInfo&)>& on_epoch = {});

}  // namespace lrnn
