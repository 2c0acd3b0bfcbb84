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
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "lrnn/ast.hpp"
#include "lrnn/training.hpp"

namespace lrnn {

// A template (rules, weights, facts, predicate metadata). Immutable once built: one may be
// read by any number of threads at once.
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

// Examples paired with their queries (targets). Cheap to copy (shared, immutable): one may be
// used by any number of threads and models at once (the groundings that models keep of a
// dataset with learnable facts are behind the dataset's own lock).
class Dataset {
 public:
  Dataset();
  // `queries_path` may be empty when the examples are labelled (`<1> q :- facts.`).
  static Dataset load(const std::string& examples_path, const std::string& queries_path = "");
  // The same with per-split query files (a query split, docs/big_graphs.md): the queries of
  // `queries_path` train, those of `val_queries_path` validate, those of `test_queries_path`
  // test (an empty path: no such part).
  static Dataset load_split(const std::string& examples_path, const std::string& queries_path,
                            const std::string& val_queries_path, const std::string& test_queries_path);
  static Dataset from_text(const std::string& examples, const std::string& queries = "");
  static Dataset from_ast(std::vector<ExampleAst> examples, const std::vector<QueryLineAst>& queries = {});
  // The same with query line l's queries in part line_split[l] of a query split (one per line).
  static Dataset from_ast(std::vector<ExampleAst> examples, const std::vector<QueryLineAst>& queries,
                          const std::vector<QuerySplit>& line_split);
  // In an MPI job of N > 1 ranks (docs/distributed.md): this rank's block of the samples
  // only, parsing only its examples and query lines (their boundaries are found by the
  // lexer); a model trains on it as on the whole dataset. Outside a job the same as load().
  // Query lines named `id :- ...` and a single example serving every query line pair
  // across the whole file: then every rank parses it all and keeps its block.
  static Dataset load_share(const std::string& examples_path, const std::string& queries_path = "");
  // A rank's share built by a reader (e.g. lrnn::load_tu_share): samples [first, first +
  // its size) of a dataset of `total`, of which the rank owns [owned_first, owned_last)
  // (the rest: margins into its neighbours' blocks, docs/distributed.md); `parsed`
  // examples were parsed to build it.
  static Dataset share_from_ast(std::vector<ExampleAst> examples, const std::vector<QueryLineAst>& queries,
                                size_t first, size_t total, size_t parsed, size_t owned_first, size_t owned_last);
  size_t size() const;  // samples (an example with the queries it answers), of every rank
  size_t held() const;  // the samples this process holds (size() unless a rank's share)
  // Examples this process parsed to build it (a subset or split counts its whole source).
  size_t parsed_examples() const;
  // The samples at `indices`, in that order (an index out of range is an error).
  Dataset subset(const std::vector<size_t>& indices) const;
  // (train, test): a seeded shuffle, the last round(fraction * size) samples are the test set.
  std::pair<Dataset, Dataset> split(double test_fraction, uint64_t seed = 1) const;

  // Query splits (docs/big_graphs.md "Query splits"): the queries of the samples themselves
  // split into training, validation and test parts, as PyG's node masks split one graph.
  // Every query of the dataset, sample by sample in dataset order, query by query.
  size_t num_queries() const;
  // The same samples with query q in part split[q] (one entry per query). On a dataset no
  // other Dataset shares (an rvalue), its facts are taken rather than copied.
  Dataset with_query_splits(const std::vector<QuerySplit>& split) const&;
  Dataset with_query_splits(const std::vector<QuerySplit>& split) &&;
  // A seeded random split: round(val * n) validation and round(test * n) test queries, the
  // rest (or round(train * n) when the fractions sum to less than 1) training queries.
  Dataset with_query_split(double train, double val, double test, uint64_t seed = 1) const&;
  Dataset with_query_split(double train, double val, double test, uint64_t seed = 1) &&;
  // Every query's part (Train for every query of a dataset without a split).
  std::vector<QuerySplit> query_splits() const;
  bool has_query_split() const;
  // The same samples with every valued example fact that is a neuron input a learnable
  // parameter of the data (PyNeuraLogic's build_dataset(learnable_facts=True)): a model
  // training on it trains them too. Each model that grounds it holds its own values
  // (Model::example_parameters); a fact written `$name=...` shares the name's parameter.
  Dataset with_learnable_facts() const;
  bool learnable_facts() const;
  // The same dataset (samples, their number of queries and split, and the identity a
  // model's grounding of it is kept under) without its examples' facts and its queries'
  // literals, which are freed once no other copy holds them: after Model::prepare, one big
  // graph trains and evaluates on a model's grounding without the compact store of its
  // facts (docs/big_graphs.md). Anything that would read the facts again (grounding by a
  // model that has not prepared it, a subset, a split, the network of a sample) is refused;
  // so is a dataset with learnable facts.
  Dataset without_facts() const;

  struct Impl;  // opaque: the paired samples
  explicit Dataset(std::shared_ptr<const Impl> impl);
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

class FactRows;  // below

// One learnable example fact of a dataset, as a model grounded it: keyed by its ground
// literal (`index`, PyNeuraLogic's running weight index, changes from one grounding to the
// next). Facts written with one weight name share `index` and `value`.
struct ExampleParameter {
  std::string literal;
  uint64_t index = 0;
  Parameter value;  // name: the literal, or "$name" for a named weight
};

// Threads. A Model may be used from several threads: each call below runs alone on it (a
// recursive mutex in the model serialises them, so two threads training one model train one
// after the other, each call as it would run alone, and a training callback may call the model
// it trains). Two models are independent and may train at the same time in two threads;
// they may share Templates and Datasets, which are immutable once built (a dataset with
// learnable facts holds its values per model, behind its own lock). Not serialised:
// settings(), which returns a reference (change settings while no other thread uses the
// model, or hold lock() around the change and the calls that depend on it), and moving or
// destroying a model another thread is using. `cross_validate` builds its own models.
class Model {
 public:
  explicit Model(const Template& tmpl, const Settings& settings = {});
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  static Model load(const std::string& path);  // a file written by save() or `lrnn train --save`
  void save(const std::string& path) const;     // atomic (temporary file + rename)

  Settings& settings();  // not serialised: see "Threads" above
  const Settings& settings() const;

  // Holds the model's lock until the returned object ends, so that several calls (change
  // settings(), then train) run without another thread's calls between them. Calls made by
  // the holder meanwhile take the same (recursive) lock.
  std::unique_lock<std::recursive_mutex> lock() const;

  // Trains on `data`; `test` (may be null) is evaluated every epoch. The callback may
  // return false to stop. In an MPI job (`mpirun -np N`, docs/distributed.md) every rank
  // calls this: each grounds its block of the data, and the gradients are summed exactly
  // over the ranks (the same weights whatever N); evaluate() and ground_queries() then
  // return every output on rank 0 (the metrics on every rank), and save() writes on rank 0.
  TrainReport train(const Dataset& data, const Dataset* test = nullptr,
                    const std::function<bool(const EpochInfo&)>& on_epoch = {});
  Evaluation evaluate(const Dataset& data) const;
  // Grounds `data` now, as train/evaluate do on first use (kept with the model); then
  // data.without_facts() may stand for it. Link prediction grounds its encoder in train.
  void prepare(const Dataset& data) const;
  // In an MPI job of several ranks, one sample is partitioned over them by its constants
  // (docs/distributed.md "One sample over many ranks"): what this rank holds of `data` once
  // prepared; nothing when `data` is not partitioned (or not prepared yet).
  std::optional<PartitionShare> partition_share(const Dataset& data) const;
  // After grounding `data` (as prepare does): its queries that nothing derives, the first
  // `listed` of them by text. `lrnn train` and `lrnn eval` warn about them, and so does the
  // Python package.
  UnderivableQueries underivable_queries(const Dataset& data, size_t listed = 3) const;
  // Output values only (one per query atom, in Evaluation::outputs order).
  std::vector<std::vector<double>> forward(const Dataset& data) const;

  std::vector<Parameter> parameters() const;  // the state dict
  Parameter parameter(const std::string& name) const;
  void set_parameter(const std::string& name, const std::vector<double>& values);
  void load_parameters(const std::vector<Parameter>& params);  // by name; shapes must match

  // The ground network of sample `index` of `data`, with gradients of the loss if asked.
  GroundNetwork network(const Dataset& data, size_t index, bool with_gradients = false) const;
  // The same with the gradients of a backward pass started from `output_gradients` (one
  // row per output of the sample) instead of the loss: a vector-Jacobian product.
  GroundNetwork network(const Dataset& data, size_t index, const std::vector<std::vector<double>>& output_gradients) const;
  // The outputs `data` asks for (each query's ground atoms, with targets), values empty:
  // grounds the dataset (cached with the model, as train/evaluate do).
  std::vector<Output> ground_queries(const Dataset& data) const;

  // The learnable example facts of `data` (a with_learnable_facts() dataset, grounded by
  // this model on first use), in dataset order; empty for any other dataset.
  std::vector<ExampleParameter> example_parameters(const Dataset& data) const;
  // Sets the value of the fact `literal` of `data` (every fact sharing its weight with it).
  // Throws lrnn::Error when `data` has no such learnable fact or the size is wrong.
  void set_example_parameter(const Dataset& data, const std::string& literal, const std::vector<double>& values);

  // One sample of `data` (it must hold exactly one, with one output) grounded and planned
  // once, to be run for many rows of its valued facts' values (FactRows). The model must
  // outlive it; its weights are read when a row runs, so rows see later changes to them.
  FactRows fact_rows(const Dataset& data) const;

  size_t num_parameter_values() const;  // entries over all parameters

  Template get_template() const;
  int epochs_trained() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// A sample grounded and planned once and run for many rows of values of its valued facts:
// the neural predicates of a torch model (lrnn.nn.NeuraLogic(batched=True), docs/neurosymbolic.md
// "Batched neural predicates"). Rows differ only in the values of those facts, so they share
// the sample's grounding and execution plan; the results are those of the same sample written
// with each row's values (the same kernels in the same order). Runs hold the model's lock.
class FactRows {
 public:
  struct Impl;
  explicit FactRows(std::unique_ptr<Impl> impl);
  ~FactRows();
  FactRows(FactRows&&) noexcept;
  FactRows& operator=(FactRows&&) noexcept;

  // The valued example facts that are neuron inputs (ground literals, as the engine prints
  // them), in the order a row lays out their values, and each one's number of values.
  const std::vector<std::string>& facts() const;
  const std::vector<size_t>& fact_sizes() const;
  size_t row_size() const;     // the sum of fact_sizes()
  size_t output_size() const;  // values of the output per row
  int output_rows() const;     // the output's shape
  int output_cols() const;
  // The output of each of `count` rows (row r's fact values at rows[r * row_size()], its
  // output at r * output_size() of the result).
  std::vector<double> forward(const double* rows, size_t count) const;
  // A vector-Jacobian product over `count` rows: the backward pass of each row started from
  // its output gradient (output_gradients[r * output_size()]), giving dL/d(row values)
  // (count * row_size(), the result) and the parameter gradients summed over the rows
  // (Model::parameters() order) in `parameter_gradients`.
  std::vector<double> backward(const double* rows, const double* output_gradients, size_t count,
                               std::vector<Parameter>& parameter_gradients) const;

 private:
  std::unique_ptr<Impl> impl_;
};

// Checks, before anything is loaded, what training would refuse (an lrnn::Error naming the
// setting at fault): every setting and the ones that need or exclude each other
// (`fanout` without `query_batch_size`, ...), as a Model trained with them does.
void check_settings(const Settings& settings);
// Checks one setting written as text, the way `lrnn train` options and the Python package
// spell it: "optimizer" (adam | sgd | adamw), "loss" (mse | crossentropy), "initializer"
// (glorot | he | uniform(s) | normal(s) | constant(v)), "schedule" (constant | step |
// exponential | cosine | linear | noam), "corrupt" (tail | head | both). An unknown setting
// name is refused too.
void check_setting_text(const std::string& setting, const std::string& text);
// Checks the fractions of Dataset::with_query_split: each in [0, 1], summing to at most 1.
void check_query_split(double train, double val, double test);

// Stratified k-fold cross-validation (`lrnn train --folds K`): the samples are classed by
// their query targets, dealt into k stratified folds (stratified_folds, seeded), and k fresh
// models built with `settings` each train on k-1 folds and are tested on the other one.
// Refuses k < 2, k above the smallest class's sample count, and samples without targets.
// (FoldResult and CrossValidationReport: include/lrnn/training.hpp.)
// `on_epoch(fold, info)` may return false to stop the whole run. `test_curve`: evaluate each
// fold's test set after every epoch too (FoldResult::test_by_epoch, the mean per epoch and
// its best epoch in the report; refused with early stopping); training is unchanged by it.
CrossValidationReport cross_validate(const Template& tmpl, const Settings& settings, const Dataset& data, int k,
                                     uint64_t fold_seed = 1,
                                     const std::function<bool(int, const EpochInfo&)>& on_epoch = {},
                                     bool test_curve = false);

}  // namespace lrnn
