// Data-parallel training over MPI (docs/distributed.md). Started by an MPI launcher
// (`mpirun -np N lrnn train ...`), every rank holds a contiguous shard of each dataset (by
// example index), and per step computes the gradient contributions of its samples of the
// global minibatch; the contributions are summed EXACTLY (fixed point, integer addition) and
// allreduced once, so every rank takes the same optimizer step and the trained weights are
// bit-identical whatever the number of ranks. Without MPI (or without a launcher) the world
// is one process and nothing here is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "exec/plan.hpp"
#include "lrnn/training.hpp"
#include "train/engine.hpp"

namespace lrnn::train {
struct EpochPredictions;  // train/batch_gradient.hpp
}  // namespace lrnn::train

namespace lrnn::train::dist {

// The processes of the job. `active` when MPI is built in and the process was started by an
// MPI launcher (or init() was called): then even one rank trains through the exact path.
struct World {
  int rank = 0;
  int size = 1;
  bool active = false;
};
// Initialises MPI on first use when started by a launcher (and finalises it at exit).
const World& world();
// Initialises MPI even without a launcher (a singleton world of one rank). Throws when lrnn
// was built without MPI.
const World& init();
bool built_with_mpi();
inline bool is_root() { return world().rank == 0; }

// Prints "lrnn: rank R of N failed: CAUSE" and ends every rank of the job (MPI_Abort), so no
// rank waits forever in a collective. Outside a job: only prints and exits with status 1.
[[noreturn]] void abort_job(const std::string& cause);

void barrier();
bool all_agree(bool mine);                           // true iff every rank passes true
void broadcast_from_root(double* data, size_t n);    // rank 0's values to every rank
std::vector<uint32_t> allgather(const std::vector<uint32_t>& mine);  // in rank order
std::vector<char> gather_to_root(const std::vector<char>& mine);     // rank 0: in rank order
// Each rank's bytes for each rank (to_each[r] goes to rank r); returns what each rank sent
// this one (from_each[r] came from rank r). For setting up (not counted as an exchange).
std::vector<std::vector<char>> alltoall(const std::vector<std::vector<char>>& to_each);
// The same for lists of 32-bit integers (counts, indices).
std::vector<std::vector<uint32_t>> alltoall(const std::vector<std::vector<uint32_t>>& to_each);
// MPI_Alltoallv of bytes: send_bytes[r] bytes of `send` (back to back in rank order) to rank
// r, recv_bytes[r] from rank r into `recv` (likewise). Counted in step_timing()'s exchange.
void alltoallv(const void* send, const std::vector<int>& send_bytes, void* recv, const std::vector<int>& recv_bytes);
// The same with each rank's part at its own byte offset (send_at[r] in send, recv_at[r] in
// recv) rather than one after the other.
void alltoallv(const void* send, const std::vector<int>& send_bytes, const std::vector<int>& send_at, void* recv,
               const std::vector<int>& recv_bytes, const std::vector<int>& recv_at);

// The contiguous block of `n` examples rank `rank` of `size` holds: [first, last).
struct ShardRange {
  size_t first = 0, last = 0;
};
ShardRange shard_of(size_t n, int rank, int size);
// The block of rank `rank` when the examples cost `costs` (any measure of their work: bytes
// of text, nodes, facts): the blocks are contiguous and their costs as equal as whole
// examples allow (block r starts at the first example whose preceding costs reach r/size of
// the total, or at the one before when that is closer; each example counts one more than
// its cost, so empty ones still split). Every rank computes every block alike. Contiguous
// blocks by count alone are unequal when the examples grow along the file (NCI1's second
// half costs 25% more than its first).
ShardRange shard_by_cost(std::span<const uint64_t> costs, int rank, int size);
// What rank `rank` holds: its block of `costs` (shard_by_cost), which it evaluates and
// reports, and that block widened by a margin of 1/16 of a block on each side (into its
// neighbours' blocks), whose samples it can also compute. Each training step then splits
// its global batch at points inside the margins where the work is even (ShardedStep), not
// at the blocks' ends: a random batch draws unequally from the blocks.
struct ShardPlan {
  ShardRange owned, held;
};
ShardPlan shard_with_margin(std::span<const uint64_t> costs, int rank, int size);

// The ranks' layout of a sharded set (train/shard_layout.hpp), gathered from every rank:
// the blocks they own must tile [0, total) in rank order (throws lrnn::Error naming the
// first that does not).
ShardLayout gather_layout(ShardPlan mine, size_t total, const std::vector<uint32_t>& owned_costs);

// The split of a sorted global batch over the ranks: rank r computes batch[cuts[r],
// cuts[r + 1]). Each cut lies where both ranks beside it hold the samples and the work
// before it is closest to its share of the batch's (costs + 1 per sample).
std::vector<size_t> balanced_cuts(const std::vector<uint32_t>& batch, const ShardLayout& layout);

// Exact sums of doubles: each value is rounded once to a multiple of 2^-64 (truncation) and
// added as a 128-bit integer, so the sum is independent of the order of the additions and
// of how they are split over ranks. Values of magnitude 2^40 or more (and NaN, inf) cannot
// be held: they are counted in `unrepresentable` instead.
class ExactSum {
 public:
  void reset(size_t n);
  void add(size_t i, double x);
  void add_integer(size_t i, int64_t n) { acc_[i] += n; }  // counts, not scaled
  int64_t integer(size_t i) const { return static_cast<int64_t>(acc_[i]); }
  void allreduce();  // sums every rank's accumulators (integer addition: any order)
  double value(size_t i) const;
  int64_t unrepresentable() const { return static_cast<int64_t>(acc_.back()); }
  size_t size() const { return acc_.empty() ? 0 : acc_.size() - 1; }

 private:
  std::vector<__int128> acc_;  // n sums, then the count of unrepresentable values
};

// One step of a partitioned sample's query mini-batch (BatchGradient::add_query_batch):
// the outputs of this rank the step seeds (per set output, 1 or 0; empty: every one), the
// batch's targeted queries over every rank (the loss's divisor), and where the step set's
// outputs go among the epoch's (origin[o]: empty, at o).
struct QueryStep {
  std::span<const uint8_t> seeded;
  size_t targets = 0;
  std::span<const uint32_t> origin;
};

// One minibatch step of a sharded set: the gradient of the batch loss (the loss of every
// targeted output of the GLOBAL batch, divided by their count) from this rank's samples,
// one sample at a time (each with its own plan, cached), summed exactly over the ranks.
class ShardedStep {
 public:
  // `batch`: sorted global sample indices (every rank passes the same), each run on its
  // plan in `steps` (the set's). `grads` (parameter
  // layout) receives the summed gradient on every rank; returns the batch's loss sum (exact
  // over ranks) and targeted-output count. This rank's predictions/targets are added to
  // `predictions` (if given; its vectors reused from epoch to epoch, as one process's are),
  // and `outputs` (if given; sized to set.outputs, this rank's) receives the values of
  // this rank's samples of the batch. With `queries`, only its seeded outputs give a loss
  // (and values to `outputs`), a mean over queries->targets.
  LossSum batch_gradient(const neural::TemplateModel& model, const PreparedSet& set, SampleSteps& steps,
                         const std::vector<uint32_t>& batch,
                         LossKind loss, int epoch, std::vector<double>& grads, EpochPredictions* predictions,
                         std::vector<std::vector<double>>* outputs = nullptr, Dtype dtype = Dtype::Float64,
                         const QueryStep* queries = nullptr);

 private:
  std::vector<uint32_t> locals_;  // this rank's samples of the batch, local indices
  ExactSum sum_;
};

// Where this rank's training steps spent their time (summed since the process started):
// forward + backward of its samples, waiting for the slowest rank, and the allreduce of the
// gradient itself. The allreduce also carries every rank's compute time of the step, so the
// wait is told apart from the transfer without a barrier of its own: wait = the slowest
// rank's compute minus this rank's. Reported by `lrnn train --json` in timing
// (step_compute_s, imbalance_wait_s, allreduce_s).
//
// The work of a step is counted in plan values (forward + backward of a sample costs about
// its plan's values times the width of its values): `work_max` sums each step's largest
// rank's work, `work_total` all ranks' work, so work_total / work_max is the speed-up over
// one rank the split of the batches allows on idle cores (N when perfectly balanced), a
// number the machine's load does not change.
using StepTiming = lrnn::StepTiming;  // lrnn/training.hpp
const StepTiming& step_timing();

// The accuracy of every rank's (prediction, target) pairs, computed on rank 0 and sent to
// every rank.
double global_accuracy(const std::vector<std::vector<double>>& predictions,
                       const std::vector<std::vector<double>>& targets);

// An evaluation of a sharded set: each rank's outputs (sample indices local to its shard)
// gathered to rank 0 in global order, which computes the metrics and sends them to every
// rank. Rank 0 returns every output; the other ranks the metrics only.
Evaluation gather_evaluation(const Evaluation& local, const PreparedSet& set, LossKind loss);
// Each rank's outputs (sample indices local to its shard) on rank 0, in global order, with
// global sample indices; the other ranks get none.
std::vector<Output> gather_outputs(const std::vector<Output>& local, const PreparedSet& set);

// The validation and test metrics of a partitioned sample's query split from one pass:
// `values` are this rank's outputs' (set.outputs order); the outputs of both parts are
// gathered to rank 0 in the queries' order, which computes the metrics as one process
// does and sends them to every rank.
std::pair<Metrics, Metrics> split_metrics(const PreparedSet& set, const std::vector<std::vector<double>>& values,
                                          LossKind loss);

// The training queries of a partitioned sample over every rank: `queries` their indices
// among the sample's queries, ascending (the order in which one process lists its training
// queries, QueryBatches::training_queries), `output` per entry this rank's output of it
// (set.outputs index), or kNotMine when another rank owns it. Collective.
struct PartitionTrainingQueries {
  static constexpr uint32_t kNotMine = 0xFFFFFFFFu;
  std::vector<uint32_t> queries, output;
};
PartitionTrainingQueries partition_training_queries(const PreparedSet& set);

// Test hook of the fault tests: the rank named by LRNN_TEST_KILL_RANK kills itself
// (SIGKILL) when epoch LRNN_TEST_KILL_EPOCH starts, as a crashed host would.
void maybe_kill_for_test(int epoch);

}  // namespace lrnn::train::dist
