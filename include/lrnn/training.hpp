// Plain data of training, shared by the public API (lrnn/model.hpp), the training engine
// (src/train) and the bindings: the settings with their defaults, metrics, per-epoch
// reports, evaluations, parameters, the inspected ground network of one sample, and
// cross-validation (its folds and results).
//
// The defaults written here are THE defaults of lrnn: the CLI's options, the C++ API and
// the Python package all start from a default-constructed Settings (docs/architecture.md
// lists them in one table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lrnn {

// Ground rules of one sample beyond which grounding stops with a Limit error naming the
// rule (the grounder's own default too).
inline constexpr size_t kDefaultMaxGroundRules = 100'000'000;
// Atoms of one sample's least model beyond which grounding stops with a Limit error naming
// the rule (what ends an infinite model such as n(Y) :- n(X), @add(X, 1, Y).).
inline constexpr size_t kDefaultMaxAtoms = 50'000'000;

// The scalar type of the forward and backward passes. Float32 halves the bytes every pass
// moves; the parameters' master copy, the optimizer state, losses and metrics stay
// float64 in both (docs/float32.md). Float64 is what every exactness test uses.
enum class Dtype { Float64, Float32 };
// "float32" | "float64"; anything else is an Error naming the closest valid value.
Dtype parse_dtype(const std::string& name);
const char* to_string(Dtype dtype);

struct Settings {
  int epochs = 100;
  double lr = 0.01;
  std::string optimizer = "adam";      // adam | sgd | adamw
  // Optimizer hyperparameters; unset: that optimizer's PyTorch default (AdamW weight
  // decay 0.01, else 0; momentum 0; betas 0.9, 0.999; eps 1e-8).
  std::optional<double> weight_decay, momentum, beta1, beta2, eps;
  std::string loss = "mse";            // mse | crossentropy (from logits)
  // crossentropy of multi-class outputs: torch's nn.CrossEntropyLoss(label_smoothing=), in [0, 1]
  double label_smoothing = 0;
  size_t batch_size = 0;               // 0: the whole training set per step
  uint64_t seed = 1;                   // initialisation, shuffling and splits
  std::string initializer = "glorot";  // glorot | he | uniform(s) | normal(s) | constant(v)
  std::string schedule = "constant";   // constant | step | exponential | cosine | linear | noam
  // noam ("Attention Is All You Need"): lr d_model^-0.5 min(step^-0.5, step warmup^-1.5) at
  // optimizer step `step`, counted from 1; d_model unset: no d_model^-0.5 factor.
  int warmup = 4000;
  std::optional<int> d_model;
  std::optional<int> step_size;        // step schedule; unset: a quarter of the epochs
  double gamma = 0.5;                  // step / exponential decay factor
  int patience = 0;                    // early stopping (0: off)
  // Minibatches (batch_size smaller than the set) are drawn in a new random order every
  // epoch unless shuffle is false; then they follow the dataset's order (PyNeuraLogic's
  // online training: batch_size 1, no shuffling).
  bool shuffle = true;
  // Gradient clipping before each optimizer step, as torch's clip_grad_value_ (every
  // entry into [-v, v]) then clip_grad_norm_ (the whole gradient's L2 norm scaled down to
  // at most n); unset: no clipping.
  std::optional<double> clip_grad_value, clip_grad_norm;
  // Mini-batches of one sample's queries (docs/big_graphs.md "Mini-batches of queries"):
  // > 0: each step takes this many training queries and runs only the part of the network
  // they depend on; 0: whole samples per step (batch_size). fanout: per hop away from the
  // queries (outermost first, as NeighborLoader's num_neighbors), at most that many ground
  // rules per (rule, head atom) in each step's part, drawn anew every step (seeded); hops
  // beyond the list take its last entry (one entry: every hop), 0 keeps all
  // (train/query_batches.hpp FanOut). Empty: no sampling.
  size_t query_batch_size = 0;
  std::vector<size_t> fanout;
  size_t max_ground_rules = kDefaultMaxGroundRules;  // per sample; beyond: a Limit error
  size_t max_atoms = kDefaultMaxAtoms;                // per sample's least model; beyond: a Limit error
  // The process's memory budget in bytes (lrnn/memory.hpp), set when a Model is built or
  // trained with these settings; 0: leave it as it is (by default 80% of the memory
  // available at start).
  uint64_t max_memory = 0;
  // Link prediction and knowledge-base completion (docs/big_graphs.md "Link prediction"):
  // the one example's queries are its true links (or triples); every epoch draws
  // `negatives` corruptions of each training link (its last argument, first, or either at
  // random: `corrupt` tail | head | both) from the entities, the constants of the links'
  // first and last arguments. margin > 0: margin ranking loss max(0, margin - s+ + s-)
  // over each link and its negatives (PyG kge's DistMult, TransE); 0: `loss` with targets
  // 1 and 0. ranking: validation and test links ranked against every corruption, filtered
  // (MRR, Hits@1/3/10), each epoch.
  bool link_prediction = false;
  size_t negatives = 1;
  std::string corrupt = "tail";
  double margin = 0;
  bool ranking = false;
  size_t link_chunk = 0;  // links per decoder pass (its plan holds this many); 0: as fit in cache
  Dtype dtype = Dtype::Float64;  // of training and evaluation passes (saved with the model)
};

// Which part of a query split a query (an output) belongs to: inside one example (one
// graph, one knowledge base) the queries themselves are split, as PyG's train/val/test
// node masks split one graph's nodes (docs/big_graphs.md "Query splits"). Only training
// queries give gradient; validation and test queries are evaluated from the same forward
// passes. A query in no split (None) is computed but neither trained nor reported.
enum class QuerySplit : uint8_t { Train = 0, Validation = 1, Test = 2, None = 3 };
const char* to_string(QuerySplit split);  // "train" | "val" | "test" | "none"

// Filtered ranking metrics of true links against their corruptions (link prediction).
struct Ranking {
  double mrr = 0;  // mean of 1 / rank, a rank counting ties half
  double hits1 = 0, hits3 = 0, hits10 = 0;
  size_t count = 0;  // ranked (link, corrupted side) pairs
};

struct Metrics {
  double loss = 0;
  double accuracy = 0;
  double auc = 0;    // NaN unless the targets are binary single values
  size_t count = 0;  // outputs with a target
  bool has_ranking = false;
  Ranking ranking;
};

struct EpochInfo {
  int epoch = 0;  // 1-based, counting earlier training of the model
  Metrics train;  // running metrics of the epoch's training passes
  bool has_test = false;
  Metrics test;  // of the test set, or of the test queries of a query split
  // Of the validation queries of a query split (from the epoch's own forward passes).
  bool has_validation = false;
  Metrics validation;
  double lr = 0;  // the scheduled learning rate of the epoch
  double seconds = 0;
  // Of which the training steps (forward, backward, optimizer), without evaluating a test
  // set or, after query batches, the held-out queries of a split.
  double step_seconds = 0;
};

struct TrainReport {
  int epochs = 0;
  // The value of every output of the training set as computed in the last epoch's forward
  // passes (before that epoch's updates), in the dataset's output order: PyNeuraLogic's
  // per-sample results of train().
  std::vector<std::vector<double>> last_epoch_outputs;
  bool stopped_early = false;
  // With validation queries (a query split): the epoch (1-based, as EpochInfo::epoch) of the
  // lowest validation loss, the first on a tie, and that epoch's report: the model a
  // selection on validation picks and its test metrics. 0 without validation queries.
  int best_epoch = 0;
  EpochInfo best;
  double build_seconds = 0;   // grounding + neuralization + plan of the datasets
  double ground_seconds = 0;  // of which grounding + neuralization of the training set
  double train_seconds = 0;
  std::vector<EpochInfo> history;
};

struct Output {
  size_t example = 0;       // sample index in the dataset
  std::string query;        // the ground query atom
  std::vector<double> target;      // empty: no target
  std::vector<double> value;       // the query neuron's output (row-major)
  std::vector<double> prediction;  // sigmoid/softmax of the value under crossentropy
  int rows = 1, cols = 1;          // the value's shape (a 2x2 matrix is rows = cols = 2)
  double importance = 1.0;         // its query line's importance (`0.25 id :- 1.0 q.`)
  // The target was written as a list (`[1.0] q`, `[[1.0]] q`), so a one-entry value is a
  // vector there, not a scalar (the engine's 1x1 shape does not tell them apart).
  bool listed_target = false;
  QuerySplit split = QuerySplit::Train;  // its query's part of a query split
  // false: no rule or fact derives the query atom in its example, so it outputs 0 and gives
  // no gradient (docs/semantics.md "Underivable queries").
  bool derived = true;
  bool operator==(const Output&) const = default;
};

// The queries of a dataset that no rule or fact derives in their example (docs/semantics.md
// "Underivable queries"): they output 0, which is rarely what a target asks for.
struct UnderivableQueries {
  size_t count = 0;                  // of the dataset's queries
  size_t total = 0;                  // the dataset's queries (outputs)
  std::vector<std::string> listed;   // the first few: `out(40) (example 3)`
};

struct Evaluation {
  Metrics metrics;  // over every output with a target, whatever its split
  // With a query split (any query not Train): the metrics of each part's outputs.
  bool has_splits = false;
  Metrics train, validation, test;
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
    bool has_fact = false;  // also has a fact value (an example or template fact)
    bool query = false;     // an output of the sample
  };
  // The neurons between atoms: one rule neuron per ground rule and one aggregation neuron
  // per (rule, head atom). `value` and `gradient` stay empty where the engine never stores
  // them (a product rule summed in place), rather than being recomputed differently.
  struct RuleNeuron {
    int rule = 0;                // template rule index
    size_t head = 0;             // index into atoms
    std::vector<size_t> inputs;  // indices into atoms, in input-literal order
    size_t aggregation = 0;      // index into aggregations
    int rows = 0, cols = 0;
    std::vector<double> value, gradient;
  };
  struct Aggregation {
    int rule = 0;
    size_t head = 0;  // index into atoms
    int rows = 0, cols = 0;
    std::vector<double> value, gradient;  // before the head weight
  };
  std::vector<Atom> atoms;
  std::vector<RuleNeuron> rule_neurons;
  std::vector<Aggregation> aggregations;
  size_t ground_rules = 0;
  size_t dropped_cycle_rules = 0;
  double loss = 0;
  std::vector<Parameter> parameter_gradients;  // same order as the model's parameters
};

// Where this process's training steps went in an MPI job, summed since it started: computing
// its own gradients, waiting for the slowest rank, and the gradient allreduce itself; and the
// plan values computed by this rank, by the busiest rank of each step and by all ranks
// (work_total / work_max is the speed-up the split of the batches allows; docs/distributed.md).
// What one rank holds of one sample partitioned over an MPI job's ranks by its constants
// (docs/distributed.md "One sample over many ranks"), reported by `lrnn train --json`.
struct PartitionShare {
  uint64_t constants = 0;        // of the whole sample
  uint64_t owned_constants = 0;  // hashing to this rank
  uint64_t query_constants = 0;  // first constants of this rank's queries
  uint64_t held_constants = 0;   // within the radius of them (query constants included)
  uint64_t facts = 0;            // of the whole sample
  uint64_t held_facts = 0;       // the facts this rank grounds
  // The facts this rank built into stores: the whole sample's as read (a file or a dataset
  // held whole by every rank) with its part's copy, or only its part's (a share of one graph
  // of arrays, graph_from_arrays_share); the ghosts' probe included.
  uint64_t built_facts = 0;
  uint64_t cut_facts = 0;        // facts whose constants have more than one owner (the edge cut)
  uint64_t queries = 0;          // of the whole sample
  uint64_t owned_queries = 0;
  uint64_t radius = 0;           // hops of the co-occurrence graph held around the queries
  uint64_t metis = 0;            // 1: METIS assigned the constants to ranks; 0: a hash of each
  uint64_t atoms = 0;            // atoms of this rank's network (after pruning to its queries' support)
  // Cut at ghost atoms (docs/distributed.md): 1, each atom computed by its owner and its
  // value sent to the ranks that read it, layer by layer; 0, each rank recomputes its halo.
  uint64_t ghost_exchange = 0;
  uint64_t ghosts = 0;           // atoms owned elsewhere that this rank reads (one copy each)
  uint64_t sent_atoms = 0;       // owned atoms this rank sends per layer pass (once per asking rank)
};

struct StepTiming {
  double compute_s = 0, wait_s = 0, allreduce_s = 0;
  size_t steps = 0;
  // Per step, summed over the steps: the plan values (the size of the value buffers) of
  // this rank's samples, the most any rank had and all ranks' sum; and the same for the
  // values the passes computed (exec::Plan::computed_values: without the data, the
  // ghosts and the sums of data alone).
  uint64_t work_mine = 0, work_max = 0, work_total = 0;
  uint64_t computed_mine = 0, computed_max = 0, computed_total = 0;
  uint64_t allreduce_bytes = 0;  // what this rank's allreduces summed (their payload, not the wire traffic)
  // A partitioned sample's ghost exchanges (values forward, gradients back): their time
  // (not in compute_s) and the bytes this rank sent to the others.
  double exchange_s = 0;
  uint64_t exchange_bytes = 0;
  uint64_t exchange_rounds = 0;  // their alltoallv calls (a big exchange goes in slices)
};

// ---- cross-validation -------------------------------------------------------------------

// Stratified k-fold assignment: fold index (0..k-1) per sample, given each sample's class.
// Each class's samples are shuffled with `seed` (std::mt19937_64, so the folds are the
// same on every platform) and dealt round-robin, continuing the deal across classes, so
// every fold holds floor or ceil(n_c / k) samples of class c and fold sizes differ by at
// most one. Refuses k < 2 or k > number of samples.
std::vector<int> stratified_folds(const std::vector<int>& sample_class, int k, uint64_t seed = 1);

struct FoldResult {
  int fold = 0;  // 0-based
  size_t train_samples = 0, test_samples = 0;
  Metrics train, test;  // after the fold's last epoch
  int epochs = 0;
  bool stopped_early = false;
  double build_seconds = 0;  // grounding + neuralization of both parts
  double train_seconds = 0;
  // With a test curve (cross_validate's test_curve): the test fold's metrics after every
  // epoch, [e] after epoch e + 1. Empty otherwise.
  std::vector<Metrics> test_by_epoch;
};

struct CrossValidationReport {
  int k = 0;
  uint64_t seed = 0;                // of the fold assignment
  std::vector<int> fold_of_sample;  // the test fold of every sample
  std::vector<FoldResult> folds;    // fewer than k only when a callback stopped the run
  // Over the folds' test accuracies: the mean and the population standard deviation
  // (numpy's np.std, as the GNN literature reports "mean ± std").
  double mean_accuracy = 0, std_accuracy = 0;
  double mean_loss = 0;
  double epoch_seconds = 0;  // training time per epoch, averaged over every fold's epochs
  // With a test curve: the mean and std over the folds of the test accuracy after every
  // epoch ([e] after epoch e + 1), and the epoch (1-based) where that mean is highest, the
  // first such epoch on a tie: the selection the GIN paper ("How Powerful are Graph Neural
  // Networks?") reports. It picks the epoch on the test folds themselves, so it is an
  // optimistic estimate; mean_accuracy (the final epoch) is not. best_epoch is 0 without a curve.
  std::vector<double> mean_accuracy_by_epoch, std_accuracy_by_epoch;
  int best_epoch = 0;
  double best_epoch_mean_accuracy = 0, best_epoch_std_accuracy = 0;
  bool complete() const { return static_cast<int>(folds.size()) == k; }
};

}  // namespace lrnn
