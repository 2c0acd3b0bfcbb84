// The model engine behind the CLI and the public API: a compiled template (logic program +
// neural parameters), datasets grounded and neuralized once, cached execution plans, the
// training loop (minibatches, optimizer, schedule, early stopping), evaluation and
// checkpoints.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "exec/batch_norm.hpp"
#include "exec/plan.hpp"
#include "lrnn/memory.hpp"
#include "lrnn/training.hpp"
#include "train/shard_layout.hpp"
#include "logic/program.hpp"
#include "neural/network.hpp"
#include "neural/template_model.hpp"
#include "train/dataset.hpp"
#include "train/numerics.hpp"
#include "train/partition_stats.hpp"

namespace lrnn::train {

// The public per-epoch report, metrics and evaluation are the engine's own (one struct each).
using lrnn::EpochInfo;
using lrnn::Evaluation;
using lrnn::Metrics;

struct TrainConfig {
  int epochs = 100;
  OptimizerConfig optimizer = OptimizerConfig::defaults(OptimizerKind::Adam);
  LossKind loss = LossKind::Mse;
  size_t batch_size = 0;  // 0: the whole training set in one batch
  uint64_t seed = 1;
  Initializer initializer;  // used for weights written as dimensions only
  Schedule schedule;
  int patience = 0;  // early stopping after this many epochs without improvement (0: off)
  bool shuffle = true;  // minibatch order drawn anew every epoch (false: dataset order)
  double clip_grad_value = 0;  // > 0: every gradient entry clipped into [-v, v]
  double clip_grad_norm = 0;   // > 0: the gradient's L2 norm scaled down to at most this
  Dtype dtype = Dtype::Float64;  // of the passes (the parameters and optimizer stay double)
  size_t query_batch_size = 0;   // > 0: steps over the queries' supports (train/query_batches.hpp)
  std::vector<size_t> fanout;    // with query batches: per hop, ground rules per (rule, head) per step
};

// torch's clip_grad_value_ then clip_grad_norm_ (same formula: scale max_norm /
// (norm + 1e-6) when the norm exceeds max_norm) over the whole gradient vector: `grads`
// and `more` (the learnable example facts' gradients) together.
void clip_gradients(std::vector<double>& grads, double clip_value, double clip_norm, std::span<double> more = {});

struct ExampleFacts;  // train/example_facts.hpp
class SampleStore;    // train/sample_store.hpp
class GhostExchange;  // train/ghost_exchange.hpp

// What Engine::prepare lets a caller change in a sample between grounding and neuralizing,
// and in its network after: a partitioned sample's ghost cut (train/ghost_cut.hpp).
class GroundRewrite {
 public:
  virtual ~GroundRewrite() = default;
  // May replace `facts` (the source neuralizing reads) by one that wraps it.
  virtual void before_neuralize(logic::GroundSample& ground, std::unique_ptr<logic::FactSource>& facts) = 0;
  virtual void after_neuralize(logic::GroundSample& ground, neural::SampleNetwork& net) = 0;
};

// One output of a dataset: a query atom of an example.
struct OutputInfo {
  uint32_t sample = 0;  // index into the dataset
  uint32_t query = 0;   // query of that sample
  std::string text;     // the ground atom (or the query as written if it matched nothing)
  std::vector<double> target;  // empty: no target
  double importance = 1.0;     // its query line's: a factor on its loss and gradient
  bool listed_target = false;  // the target was written as a list (lrnn::Output)
  QuerySplit split = QuerySplit::Train;  // its query's part of a query split
  // false: the query matched no atom of its example's least model; it outputs 0
  // (docs/semantics.md "Underivable queries").
  bool derived = true;
  // What training seeds a loss from: the target of a training query, nothing for the
  // validation and test queries of a split (they are only evaluated).
  const std::vector<double>& training_target() const {
    static const std::vector<double> none;
    return split == QuerySplit::Train ? target : none;
  }
};

// Training and evaluation read parameter (and example fact) gradients and outputs only: no
// gradients of the data facts (a GCN's first layer skips its dL/dX GEMM), and fused atom
// sums keep their outputs in place, and rules that pass their one input on unchanged are
// aliases of it (inspection, which shows every atom's and rule neuron's gradient, builds
// its own plan; `lrnn ground --stats` counts the rewrites of both).
// Rules that sum W x into the same atoms through one weight W (a GCN layer's self and
// neighbour rules) are one group, W (x_self + sum x_nbr), whose per-head sums the atoms then
// are (exec::AtomGroup::in_input_rows): on the 200k-node graph a fifth less time per step
// and 50 MB less memory than two rules sharing one transform of every node. Rules with
// weights of their own into the same summed atoms (a GraphSAGE layer's W1 x + W2 avg(x_nbr))
// add their values into one set of rows, which the atoms then are
// (exec::RuleGroup::adds_to_out).
inline constexpr exec::PlanOptions kTrainingPlan{.fact_gradients = false,
                                                 .in_place_atoms = true,
                                                 .alias_identity_rules = true,
                                                 .merge_shared_weight_rules = true,
                                                 .share_head_rows = true};

// A fresh PreparedSet::id (the engine's plan caches key by it).
uint64_t next_prepared_set_id();

// A dataset grounded and neuralized against one engine.
struct PreparedSet {
  size_t num_samples = 0;  // the samples themselves stay with the caller (their Dataset)
  std::vector<neural::SampleNetwork> networks;
  MemoryReservation memory;  // the networks' bytes, held against the budget (lrnn/memory.hpp)
  std::vector<OutputInfo> outputs;  // in plan order (sample, query, match)
  size_t size() const { return num_samples; }
  // Some query is not a training query (a query split: docs/big_graphs.md).
  bool has_query_split() const;
  double seconds = 0;  // grounding + neuralization
  uint64_t id = 0;     // identifies the set in the engine's plan caches
  // Sharded over the ranks of an MPI job (train/distributed.hpp): this rank holds samples
  // [shard_first, shard_first + size()) of `global_size`, and knows every sample's count
  // of targeted outputs. global_size 0: not sharded.
  size_t shard_first = 0, global_size = 0;
  std::vector<uint32_t> global_target_counts;
  bool sharded() const { return global_size != 0; }
  // Of the samples held, the rank owns (evaluates and reports) [owned_first, owned_last)
  // (local indices; the others are margins into its neighbours' blocks, which it only
  // computes in training steps). Without margins it owns every sample it holds.
  bool margins = false;
  size_t owned_first = 0, owned_last = 0;
  bool owns(size_t local) const { return !margins || (local >= owned_first && local < owned_last); }
  // Every rank's held range and every sample's cost (empty: each rank computes the
  // samples of its own block of each batch).
  dist::ShardLayout layout;
  // One sample partitioned over the ranks (train/partition.hpp): then every rank holds one
  // sample (its part, global index = its rank), a training step runs every part at once,
  // and this rank's output o is the sample's output partition_order[o] (its query's index).
  bool partitioned = false;
  std::vector<uint32_t> partition_order;
  PartitionStats partition;
  // A partitioned sample cut at its ghost atoms: each pass exchanges their values and
  // gradients with the ranks owning them, layer by layer (nullptr: each rank holds its halo).
  std::shared_ptr<GhostExchange> ghosts;
  // Prepared with learnable example facts: the data's own parameters. Their values are
  // the set's trainable state (train() steps them although the set is const), which is
  // why they are held by pointer.
  std::shared_ptr<ExampleFacts> example_facts;
  // A query batch's supports for float passes (train/query_batches.hpp): their facts'
  // values stay in a float copy of the whole sample's instead of being copied into each
  // support (fact_data is empty, fact_data_begin still sizes them). Fact f of network i
  // has its values at [value_rows[i][2f], value_rows[i][2f + 1]) of value_tables[i]; a
  // float pass gathers them (SampleSteps::build_float_facts), reading each row once.
  std::vector<const float*> value_tables;
  std::vector<std::vector<uint32_t>> value_rows;
};

// The loss of one pass against the targets of the plan's outputs (`target_of_output(o)`;
// empty: no target), each output's loss times its query's `importance_of_output(o)` (1 if none):
// importance x dL/dy / n is added into ws.grads at each targeted output (n: the
// outputs with a target, or `mean_over` when the loss is a mean over a larger batch, as
// one sample of a sharded batch is), the summed loss and the plan's count are returned, and
// `predictions` / `targets` (if given) are resized to the targeted outputs and receive each
// one's prediction and target (their elements' capacity reused: a step allocates nothing).
struct LossSum {
  double sum = 0;
  size_t count = 0;
};
template <class T>
LossSum seed_loss_gradients(const exec::Plan& plan, exec::BasicWorkspace<T>& ws, LossKind loss,
                            const std::function<const std::vector<double>&(size_t)>& target_of_output,
                            std::vector<std::vector<double>>* predictions = nullptr,
                            std::vector<std::vector<double>>* targets = nullptr, size_t mean_over = 0,
                            const std::function<double(size_t)>& importance_of_output = {});

// Loss, predictions and metrics over outputs (in OutputInfo order).
Metrics metrics_of(LossKind loss_kind, const std::vector<OutputInfo>& infos,
                   const std::vector<std::vector<double>>& outputs,
                   std::vector<std::vector<double>>* predictions_out);
// The same over the outputs of one part of a query split only (no predictions).
Metrics metrics_of_split(LossKind loss_kind, const std::vector<OutputInfo>& infos,
                         const std::vector<std::vector<double>>& outputs, QuerySplit split);

// Parameter `p` of `params` as the public struct, its values read from `data` (the
// parameter vector itself, or a gradient laid out like it).
Parameter parameter_of(const neural::Parameters& params, uint32_t p, const double* data);

// One sample's share of a minibatch step: the gradient of the batch loss from this sample
// (parameter layout), its loss sum and targeted-output count, and as asked its targeted
// outputs' predictions and targets and every output's value (in the sample's output order).
struct SampleGradient {
  // The parameter gradients: `grads` in double, or for a float pass `grads32` as the pass
  // summed them (then `grads` is empty; float converts to double exactly). Both empty when
  // this sample's gradient is part of an earlier sample's of the same batch (a
  // batch-normalised batch hands over the batch's whole gradient with its first sample).
  std::vector<double> grads;
  std::vector<float> grads32;
  bool has_gradient() const { return !grads.empty() || !grads32.empty(); }
  double grad(size_t i) const { return grads32.empty() ? grads[i] : double(grads32[i]); }
  // dst = the gradient (`assign`) or dst += it, entry by entry.
  void add_to(std::vector<double>& dst, bool assign) const;
  std::vector<double> example_grads;  // of the set's learnable example facts (empty without)
  LossSum loss;
  std::vector<std::vector<double>> predictions, targets, values;
};

// Minibatch steps run one sample at a time, each sample on its own execution plan: the
// plans are built once per prepared set (on the first batch that holds the sample) and
// kept for every epoch, where merging a batch's networks into one plan would cost a plan
// build per batch (the batches differ every epoch). Samples whose networks are identical
// up to fact values share one plan (its fact values are read from each network). The
// samples of a batch run in parallel (OpenMP, each thread its own workspace), each into its
// own gradient buffer, and are handed over in batch order: sums over them are the same
// whatever the number of threads.
class SampleSteps {
 public:
  // Forward + backward of the samples `locals` (indices into `set`, any order), the loss
  // of each seeded as a mean over `mean_over` targeted outputs (the whole batch's).
  // `take(pos, sample)` is called on the calling thread for pos = 0, 1, ... in order.
  // Throws lrnn::Error when a sample's plan cannot be built (the first such sample).
  // The passes run in `dtype` (float: on a float mirror of the parameters, refreshed here,
  // so after every optimizer step; the gradients handed over are double either way).
  void run(const neural::TemplateModel& model, const PreparedSet& set, std::span<const uint32_t> locals,
           LossKind loss, size_t mean_over, bool with_metrics, bool with_values,
           const std::function<void(size_t, SampleGradient&)>& take, Dtype dtype = Dtype::Float64);
  // Forward only of sample `local` (its plan built by plan_ahead), in the scalar type T of
  // `params` and `ws`: its outputs' values and shapes, written at the sample's positions of
  // `values` and `shapes` (set.outputs order).
  template <class T>
  void forward_sample(const exec::ParamView<T>& params, const PreparedSet& set, uint32_t local,
                      exec::BasicWorkspace<T>& ws, std::vector<std::vector<double>>& values,
                      std::vector<neural::Shape>& shapes) const;
  // The workspace a forward-only pass over the set runs in: the first thread's of training
  // (made if there is none), so that evaluating after training allocates no second one (a
  // 200k-node graph's float workspace is ~250 MB).
  template <class T>
  exec::BasicWorkspace<T>& evaluation_workspace() {
    auto& per_thread = [this]() -> auto& {
      if constexpr (std::is_same_v<T, float>) return workspaces32_;
      else return workspaces_;
    }();
    if (per_thread.empty()) per_thread.resize(1);
    return per_thread.front();
  }
  // Gives back the gradient buffers of the workspaces holding at least `min_values` of them:
  // after training, evaluation and the outputs read values only (a big graph's gradients
  // are a quarter of its peak memory; the next run writes them afresh).
  void release_gradients(size_t min_values);
  // Builds the plans of the samples `locals` that have none yet (in parallel).
  void plan_ahead(const neural::TemplateModel& model, const PreparedSet& set, std::span<const uint32_t> locals);
  size_t cached_plans() const { return plans_.size(); }
  // The samples of a batch (or wave) run on several threads only when their plans hold this
  // many values together: below it (MUTAG's batches of 32 hold ~1e5) a step lasts about a
  // millisecond, and on a shared machine one descheduled thread at the join costs more.
  size_t min_parallel_values = size_t{1} << 18;
  // Plans whose transform sums sum each head's inputs first when those are at least twice
  // the heads (exec::PlanOptions::transform_sum_first): the steps of query batches, whose
  // sampled supports read ~10 distinct inputs per head.
  bool sum_first_transforms = false;
  // The first output of sample `local` in set.outputs (the set of the last run).
  size_t first_output(uint32_t local) const { return first_output_[local]; }
  // The values of sample `local`'s plan (built by a run or plan_ahead): a measure of its
  // forward + backward work that does not depend on the machine's load.
  size_t plan_values(uint32_t local) const { return plans_[plan_of_[local]]->num_values; }
  // The values a pass of sample `local` computes (exec::Plan::computed_values).
  uint64_t plan_computed_values(uint32_t local) const { return plans_[plan_of_[local]]->computed_values; }
  // Prefetch hints for the samples after position `pos` of `locals` (their plans built), one
  // level of their plans each, issued before `locals[pos]` runs (exec/prefetch.hpp), and
  // two samples ahead their sparse fact entries and, given the `set` being run, their
  // outputs' records (read for the targets: a miss per sample); one sample ahead the
  // targets themselves. The same for the entries of the output sink (set_output_sink).
  void prefetch_ahead(std::span<const uint32_t> locals, size_t pos, const PreparedSet* set = nullptr) const;
  // Whether float64 passes read the float copy of the fact values (build_exact_float_facts).
  bool float64_reads_floats() const { return exact_floats_ == ExactFloats::kExact; }
  // Whether the float copy of the fact values is kept sparse (build_float_facts).
  bool facts_sparse() const { return !sparse_begin_.empty(); }
  // The samples that run right after the next run()'s, in their order (the next batches'
  // first ones; a hint, used up by that run): prefetch_ahead reaches past the batch's end
  // into them, so that a batch of one sample (PyNeuraLogic's table trains so) does not
  // start each pass on cold plans. Those not planned yet are skipped.
  void set_next_up(std::span<const uint32_t> locals) { next_up_.assign(locals.begin(), locals.end()); }
  // Where the next run()'s `take` stores each output's value, indexed as set.outputs (a
  // hint, used up by that run, as set_next_up): prefetch_ahead hints each coming sample's
  // entries, whose stores were a miss per sample in a shuffled order (2% of the NCI1 GCN
  // epoch at batch 1).
  void set_output_sink(const std::vector<std::vector<double>>* outputs) { output_sink_ = outputs; }
  // Per output of the set (set.outputs order): 1 where the next run() seeds the loss, 0 where
  // that output gets no loss although it has a training target (used up by that run, as
  // set_next_up). A query mini-batch of a halo's part (a partitioned sample without a layer
  // order) runs the whole part and seeds the batch's queries alone (sharded_batches.cpp).
  // Empty: every target.
  void seed_only(std::span<const uint8_t> outputs) { seeded_.assign(outputs.begin(), outputs.end()); }
  // Every sample's fact values in float, back to back, kept until the set changes (built
  // once, by the first float pass over the set): a float pass then reads half the bytes and
  // converts nothing. NCI1: 18 MB. Kept sparse instead (exec::SparseFacts: the nonzero
  // values and their positions) when that takes at most a quarter of the bytes: NCI1's
  // one-hot labels, 1 value in 37, take 1 MB, and a pass zeroes the slots in its workspace
  // (in cache) where it read 4 KB a graph from memory.
  void build_float_facts(const PreparedSet& set);
  // For a float64 pass over several samples: the float copy of the fact values when each is
  // a float exactly (node labels, 0/1 features), read widened, so that a pass moves half the
  // bytes; nothing otherwise.
  void build_exact_float_facts(const PreparedSet& set);
  // The copy of the fact values a pass in `dtype` reads (build_float_facts, or
  // build_exact_float_facts for float64): training and evaluation read the same.
  void build_fact_copies(const PreparedSet& set, Dtype dtype) {
    if (dtype == Dtype::Float32) build_float_facts(set);
    else build_exact_float_facts(set);
  }
  // After a step of a model with batch-normalised predicates: moves their running
  // statistics (fixed parameters of `params`) toward the last run's batch statistics.
  void update_running_stats(const neural::TemplateModel& model, neural::Parameters& params) const;

 private:
  void bind(const PreparedSet& set);
  // run() for a model with batch-normalised predicates (train/batch_norm_steps.cpp): the
  // batch's samples all held at once (one workspace each), run in phases on one thread.
  template <class T>
  void run_normalized(const neural::TemplateModel& model, const exec::ParamView<T>& params, const PreparedSet& set,
                      std::span<const uint32_t> locals, LossKind loss, size_t mean_over, bool with_metrics,
                      bool with_values, std::vector<exec::BasicWorkspace<T>>& workspaces,
                      const std::function<void(size_t, SampleGradient&)>& take);
  std::vector<uint32_t> norm_order(const neural::TemplateModel& model, std::span<const uint32_t> locals) const;
  template <class T>
  void take_outputs(const exec::Plan& plan, const PreparedSet& set, uint32_t local, LossKind loss, size_t mean_over,
                    bool with_metrics, bool with_values, exec::BasicWorkspace<T>& ws, SampleGradient& out) const;
  template <class T>
  void prepare_pass(const exec::Plan& plan, const PreparedSet& set, uint32_t local, const exec::ParamView<T>& params,
                    exec::BasicWorkspace<T>& ws, const neural::Parameters* example_params) const;
  template <class T>
  void forward_pass(const exec::Plan& plan, const PreparedSet& set, uint32_t local, const exec::ParamView<T>& params,
                    exec::BasicWorkspace<T>& ws, const neural::Parameters* example_params) const;
  template <class T>
  void run_sample(const exec::ParamView<T>& params, const PreparedSet& set, uint32_t local, LossKind loss,
                  size_t mean_over, bool with_metrics, bool with_values, exec::BasicWorkspace<T>& ws,
                  SampleGradient& out) const;

  uint64_t set_id_ = 0;
  void build_sparse_facts(const PreparedSet& set, size_t nonzero);
  std::span<const float> float_facts(uint32_t local) const {
    return {facts32_.data() + facts32_begin_[local], facts32_begin_[local + 1] - facts32_begin_[local]};
  }
  exec::SparseFacts sparse_facts(uint32_t local) const {
    const size_t begin = sparse_begin_[local], end = sparse_begin_[local + 1];
    return {facts32_begin_[local + 1] - facts32_begin_[local],
            {sparse_positions_.data() + begin, end - begin},
            {sparse_values_.data() + begin, end - begin}};
  }
  // The float copy's layout: per sample + 1, where its values begin in facts32_ (or would,
  // when the copy is sparse: its sizes); empty until built.
  std::vector<size_t> facts32_begin_;
  std::vector<float> facts32_;  // dense: the values, back to back; sparse: empty
  // Sparse: the nonzero values (+0 left out, -0 kept) of every sample in order, their
  // positions in the sample's values, and per sample + 1 where its entries begin.
  std::vector<uint32_t> sparse_positions_;
  std::vector<float> sparse_values_;
  std::vector<size_t> sparse_begin_;
  MemoryReservation facts32_memory_;  // the copy's bytes, held against the budget while it lives
  // Whether a float64 pass reads facts32_ (every fact value of the set a float exactly;
  // build_exact_float_facts): kUnknown until a float64 run of several samples asks.
  enum class ExactFloats : uint8_t { kUnknown, kExact, kInexact } exact_floats_ = ExactFloats::kUnknown;
  std::vector<uint32_t> plan_of_;                   // per sample: index into plans_, or kNone
  std::vector<uint32_t> next_up_;                   // set_next_up's samples
  std::vector<uint8_t> seeded_;                     // seed_only's outputs
  const std::vector<std::vector<double>>* output_sink_ = nullptr;  // set_output_sink's
  std::vector<std::unique_ptr<exec::Plan>> plans_;  // without their data (read from the networks)
  std::unordered_map<uint64_t, uint32_t> plan_by_structure_;
  std::vector<uint32_t> first_output_;  // per sample, into set.outputs (size samples + 1)
  std::vector<exec::Workspace> workspaces_;  // per thread
  std::vector<exec::Workspace32> workspaces32_;  // per thread (Dtype::Float32)
  exec::ParamMirror mirror_;
  std::vector<SampleGradient> slots_;        // per sample of the batch (or of a wave of it)
  std::vector<exec::Workspace> norm_workspaces_;      // per sample of a batch-normalised batch
  std::vector<exec::Workspace32> norm_workspaces32_;
  std::vector<float> batch_grads32_;           // a float batch-normalised batch's gradient sum
  std::vector<exec::BatchStats> batch_stats_;  // per BatchNormSpec, of the last run
  std::vector<uint8_t> batch_stats_set_;       // whether the last run's batch had its atoms
};

struct TrainResult {
  int epochs = 0;  // epochs run now
  bool stopped_early = false;
  int best_epoch = 0;  // of the lowest validation loss (lrnn::TrainReport)
  EpochInfo best;
  double train_seconds = 0;
  // Link prediction: grounding and planning the encoder and decoder; mini-batches of
  // queries: indexing the networks for the supports (QueryBatches). Part of training's
  // time, not of an epoch's.
  double setup_seconds = 0;
  std::vector<EpochInfo> history;
  std::vector<std::vector<double>> last_epoch_outputs;  // in the set's output order
  // Appends an epoch's report, keeping the epoch of the lowest validation loss (the first
  // on a tie) as the best.
  void record(const EpochInfo& report) {
    history.push_back(report);
    ++epochs;
    if (report.has_validation && (best_epoch == 0 || report.validation.loss < best.validation.loss)) {
      best_epoch = report.epoch;
      best = report;
    }
  }
};

namespace dist {
class ShardedStep;
struct PartitionTrainingQueries;  // train/distributed.hpp
}
class QueryBatches;  // train/query_batches.hpp
class BatchGradient;  // train/batch_gradient.hpp
struct LinkConfig;    // train/link_prediction.hpp

// What an epoch's training steps add up, sample by sample (train/batch_gradient.hpp).
struct EpochAccumulator;

class Engine {
 public:
  // Compiles the template and initialises every weight given as dimensions with the
  // initializer and seed. Throws lrnn::Error on a bad template.
  Engine(const TemplateAst& ast, const Initializer& init = {}, uint64_t seed = 1);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  // Grounds and neuralizes every sample (in parallel; results independent of threads).
  // A sample grounding to more than `max_ground_rules` ground rules is refused (Limit).
  // `learnable_facts`: every valued example fact that is a neuron input becomes a
  // parameter of the set (PreparedSet::example_facts), trained along with the model's.
  PreparedSet prepare(std::span<const Sample> samples, size_t max_ground_rules = kDefaultMaxGroundRules,
                      bool learnable_facts = false) const;
  // The same over a compact store (train/sample_store.hpp): each sample is decoded while it
  // is grounded, so its literals are held only then (learnable facts decode them all first).
  PreparedSet prepare(const SampleStore& samples, size_t max_ground_rules = kDefaultMaxGroundRules,
                      bool learnable_facts = false, GroundRewrite* rewrite = nullptr) const;
  // The same with sample i's queries (and id) taken from heads[i] instead of the store's own
  // (a partitioned sample's rank grounds the whole sample's facts for its own queries,
  // train/partition.hpp), without copying the facts.
  PreparedSet prepare(const SampleStore& facts, std::span<const Sample> heads, size_t max_ground_rules,
                      GroundRewrite* rewrite) const;
  // Atoms of one sample's least model beyond which prepare() refuses it (Limit).
  void set_max_atoms(size_t max_atoms) { max_atoms_ = max_atoms; }

  // Every output of the set (in OutputInfo order) with its value, prediction and target.
  Evaluation evaluate(const PreparedSet& set, LossKind loss, Dtype dtype = Dtype::Float64) const;

  // Trains on `train`; `test` (may be null) is evaluated after every epoch. The callback
  // (may be empty) sees each epoch and may return false to stop. At its end the gradient
  // buffers of `train`'s workspaces holding at least `release_gradients_from` values are
  // given back (SampleSteps::release_gradients): a big graph's are not held through its
  // evaluation and outputs, and the next call writes them afresh.
  size_t release_gradients_from = size_t{1} << 22;
  TrainResult train(const PreparedSet& train, const PreparedSet* test, const TrainConfig& config,
                    const std::function<bool(const EpochInfo&)>& on_epoch = {});

  // Link prediction on the one example of `data`, whose queries are its true links
  // (train/link_prediction.hpp, docs/big_graphs.md "Link prediction"): every epoch draws
  // negatives, and reports the validation and test links' metrics from its own pass.
  TrainResult train_links(const SampleStore& data, const TrainConfig& config, const LinkConfig& link,
                          size_t max_ground_rules = kDefaultMaxGroundRules,
                          const std::function<bool(const EpochInfo&)>& on_epoch = {});
  // What a link-prediction run holds and its per-dtype buffers (train/link_training.cpp).
  struct LinkSession;
  template <class T>
  struct LinkPass;

  // The ground network of one sample (grounded again: grounding is deterministic), with
  // every atom's value and, if asked, the gradients of the loss against its targets.
  // `output_gradients` (if given, one per output of the sample in plan order) replaces the
  // loss: the backward pass starts from these gradients of the outputs (a vector-Jacobian
  // product, as an autograd function's backward needs).
  GroundNetwork inspect(const Sample& sample, LossKind loss, bool with_gradients,
                        size_t max_ground_rules = kDefaultMaxGroundRules,
                        const std::vector<std::vector<double>>* output_gradients = nullptr) const;

  // Builds the per-sample execution plans of every sample of the set now (in parallel),
  // rather than on first use in train(): a set's plans are kept while the engine holds
  // plans of at most 8 sets.
  void plan_ahead(const PreparedSet& set) const;

  const TemplateAst& ast() const { return ast_; }
  const logic::Program& program() const { return *program_; }
  const neural::TemplateModel& model() const { return model_; }
  neural::Parameters& parameters() { return model_.params; }
  const neural::Parameters& parameters() const { return model_.params; }

  // Checkpoints: template text, every parameter by name, optimizer state and settings.
  std::string to_json(const TrainConfig& config) const;
  // Rebuilds an engine from to_json's text; `config` receives the saved settings.
  static std::unique_ptr<Engine> from_json(const std::string& json, TrainConfig& config,
                                           const std::string& name = "<model>");
  // Writes to_json to `path` through a temporary file and a rename (never partial).
  void save(const std::string& path, const TrainConfig& config) const;
  static std::unique_ptr<Engine> load(const std::string& path, TrainConfig& config);

  int epochs_trained() const { return epochs_trained_; }
  // Execution plans cached for minibatch training (one per distinct sample structure).
  size_t cached_batch_plans() const;

 private:
  // prepare's work: `facts_of(i)` gives sample i's facts (its example's literals, or read
  // from a store one at a time); `heads` are the samples for their queries (and, with
  // learnable facts, whole).
  PreparedSet prepare_each(std::span<const Sample> heads,
                           const std::function<std::unique_ptr<logic::FactSource>(size_t)>& facts_of,
                           size_t max_ground_rules, bool learnable_facts, GroundRewrite* rewrite = nullptr) const;
  void prepare_optimizer(const OptimizerConfig& wanted);
  // One epoch of steps over mini-batches of the set's training queries (their supports).
  void query_batch_epoch(QueryBatches& batches, const PreparedSet& set, const TrainConfig& config, double lr,
                         Rng& rng, std::vector<double>& fixed_values, EpochAccumulator& epoch);
  // The same over a sample partitioned over MPI ranks: each step runs every rank's whole
  // part and seeds the loss at the batch's queries alone (docs/distributed.md).
  // Each rank's step is its share (BatchGradient::add_query_batch: of the batch's support
  // for a part cut at its ghosts, dist::PartitionQuerySteps; a halo's part whole).
  void partitioned_query_epoch(BatchGradient& batches, const dist::PartitionTrainingQueries& queries,
                               const TrainConfig& config, double lr, Rng& rng, int epoch_number,
                               std::vector<double>& fixed_values, EpochAccumulator& epoch);
  // Every output's value (set.outputs order) from a forward pass over the set's samples in
  // this process (a partitioned sample's: this rank's part; collective then).
  std::vector<std::vector<double>> output_values(const PreparedSet& set, Dtype dtype,
                                                 std::vector<neural::Shape>* shapes = nullptr) const;
  void step_learnable(std::vector<double>& grads, double lr, const TrainConfig& config, std::vector<double>& fixed_values,
                      ExampleFacts* facts = nullptr);
  // Link prediction's stages (train/link_training.cpp).
  std::unique_ptr<LinkSession> start_links(const SampleStore& data, const LinkConfig& link, size_t max_ground_rules,
                                           uint64_t seed) const;
  void build_encoder(LinkSession& s, const SampleStore& data, size_t max_ground_rules) const;
  void build_decoder(LinkSession& s) const;
  template <class T>
  void link_epoch(LinkSession& s, const LinkConfig& link, const TrainConfig& config, Rng& rng, LinkPass<T>& pass,
                  EpochInfo& report, std::vector<std::vector<double>>& outputs);
  template <class T>
  Ranking rank_links(LinkSession& s, const LinkConfig& link, const std::vector<uint32_t>& links, LinkPass<T>& pass,
                     const exec::ParamView<T>& params) const;

  TemplateAst ast_;
  Initializer initializer_;  // also draws learnable example facts written as dimensions
  uint64_t seed_ = 1;
  mutable std::atomic<uint64_t> next_example_index_{0};  // ExampleFacts::first_index
  size_t max_atoms_ = kDefaultMaxAtoms;
  std::unique_ptr<logic::Program> program_;
  neural::TemplateModel model_;
  // Attention's score and weighted-sum rules grounded as blocks when preparing a dataset
  // (neural::pair_block_rules); inspection grounds without them, so it shows every pair.
  std::vector<logic::PairBlockRules> pair_blocks_;
  std::vector<uint32_t> fixed_;  // the parameters that are not learnable (their indices)
  std::unique_ptr<Optimizer> optimizer_;
  double last_step_lr_ = 0;  // the rate of the last optimizer step (a per-step schedule's report)
  // The optimizer's state and the gradient sums, per parameter: held against the memory
  // budget while the optimizer lives (Adam keeps two values per parameter, SGD one).
  MemoryReservation optimizer_memory_;
  void reserve_training_state(OptimizerKind kind);
  OptimizerConfig optimizer_config_;
  std::vector<double> optimizer_state_;  // restored from a checkpoint, applied on train()
  int epochs_trained_ = 0;
  SampleSteps& steps_for(const PreparedSet& set) const;
  // Per-sample plans (training runs one sample at a time) of the last sets used, by set id.
  mutable std::map<uint64_t, std::unique_ptr<SampleSteps>> sample_steps_;
  mutable exec::ParamMirror mirror_;
  std::unique_ptr<dist::ShardedStep> sharded_step_;  // training a sharded set (MPI)
  std::unique_ptr<SampleSteps> query_steps_;         // the steps of query batches (a plan per batch)
};

}  // namespace lrnn::train
