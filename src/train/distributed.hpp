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
#include <string>
#include <vector>

#include "exec/plan.hpp"
#include "train/engine.hpp"

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

// The contiguous block of `n` examples rank `rank` of `size` holds: [first, last).
struct ShardRange {
  size_t first = 0, last = 0;
};
ShardRange shard_of(size_t n, int rank, int size);

// Exact sums of doubles: each value is rounded once to a multiple of 2^-64 (truncation) and
// added as a 128-bit integer, so the sum is independent of the order of the additions and
// of how they are split over ranks. Values of magnitude 2^40 or more (and NaN, inf) cannot
// be held: they are counted in `unrepresentable` instead.
class ExactSum {
 public:
  void reset(size_t n);
  void add(size_t i, double x);
  void allreduce();  // sums every rank's accumulators (integer addition: any order)
  double value(size_t i) const;
  int64_t unrepresentable() const { return static_cast<int64_t>(acc_.back()); }
  size_t size() const { return acc_.empty() ? 0 : acc_.size() - 1; }

 private:
  std::vector<__int128> acc_;  // n sums, then the count of unrepresentable values
};

// One minibatch step of a sharded set: the gradient of the batch loss (the loss of every
// targeted output of the GLOBAL batch, divided by their count) from this rank's samples,
// one sample at a time (each with its own plan, cached), summed exactly over the ranks.
class ShardedStep {
 public:
  // `batch`: sorted global sample indices (every rank passes the same). `grads` (parameter
  // layout) receives the summed gradient on every rank; returns the batch's loss sum (exact
  // over ranks) and targeted-output count. This rank's predictions/targets are appended,
  // and `outputs` (if given; sized to set.outputs, this rank's) receives the values of
  // this rank's samples of the batch.
  LossSum batch_gradient(const neural::TemplateModel& model, const PreparedSet& set, const std::vector<uint32_t>& batch,
                         LossKind loss, int epoch, std::vector<double>& grads,
                         std::vector<std::vector<double>>* predictions, std::vector<std::vector<double>>* targets,
                         std::vector<std::vector<double>>* outputs = nullptr, Dtype dtype = Dtype::Float64);

 private:
  SampleSteps steps_;             // per-sample plans, forward and backward (threaded)
  std::vector<uint32_t> locals_;  // this rank's samples of the batch, local indices
  ExactSum sum_;
};

// Where this rank's training steps spent their time (summed since the process started):
// forward + backward of its samples, waiting for the slowest rank (a barrier before the
// allreduce, so the two are told apart), and the allreduce of the gradient itself. Reported
// by `lrnn train --json` in timing (step_compute_s, imbalance_wait_s, allreduce_s).
struct StepTiming {
  double compute_s = 0, wait_s = 0, allreduce_s = 0;
  size_t steps = 0;
};
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

// Test hook of the fault tests: the rank named by LRNN_TEST_KILL_RANK kills itself
// (SIGKILL) when epoch LRNN_TEST_KILL_EPOCH starts, as a crashed host would.
void maybe_kill_for_test(int epoch);

}  // namespace lrnn::train::dist
