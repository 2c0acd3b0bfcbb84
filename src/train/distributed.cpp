#include "train/distributed.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>
#include <unordered_map>

#include "lrnn/diagnostics.hpp"
#include "train/batch_gradient.hpp"
#include "train/clock.hpp"

#ifdef LRNN_WITH_MPI
#include <mpi.h>
#endif

namespace lrnn::train::dist {

namespace {

World the_world;
bool world_known = false;
StepTiming timing;

#ifdef LRNN_WITH_MPI
bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(var)) return true;
  return false;
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void start_mpi() {
  int started = 0;
  MPI_Initialized(&started);
  if (!started) {
    int provided = 0;
    // OpenMP threads compute inside a rank; only the main thread calls MPI.
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    std::atexit(finalize_at_exit);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &the_world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &the_world.size);
  the_world.active = true;
}

// Waits for a nonblocking collective by testing it and sleeping in between, rather than
// in MPI's blocking calls, which spin at 100% CPU: a rank that finished its share early
// then leaves its core to the ranks (or other jobs) still computing. The sleep adds at most
// a few tens of microseconds per collective.
void wait_sleeping(MPI_Request& request) {
  for (int spins = 0;; ++spins) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (spins > 64) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// Integer addition of 128-bit sums: exact, associative and commutative, so MPI may combine
// the ranks' buffers in any order and every rank gets the same bits.
void add_int128(void* in, void* inout, int* len, MPI_Datatype*) {
  for (int i = 0; i < *len; ++i) {
    __int128 a, b;
    std::memcpy(&a, static_cast<const char*>(in) + 16 * i, 16);
    std::memcpy(&b, static_cast<char*>(inout) + 16 * i, 16);
    b += a;
    std::memcpy(static_cast<char*>(inout) + 16 * i, &b, 16);
  }
}
#endif

void put(std::vector<char>& out, const void* p, size_t n) {
  out.insert(out.end(), static_cast<const char*>(p), static_cast<const char*>(p) + n);
}
void put_u32(std::vector<char>& out, uint32_t v) { put(out, &v, sizeof v); }
void put_doubles(std::vector<char>& out, const std::vector<double>& v) {
  put_u32(out, static_cast<uint32_t>(v.size()));
  put(out, v.data(), v.size() * sizeof(double));
}

struct Reader {
  const std::vector<char>& in;
  size_t at = 0;
  void get(void* p, size_t n) {
    std::memcpy(p, in.data() + at, n);
    at += n;
  }
  uint32_t u32() {
    uint32_t v;
    get(&v, sizeof v);
    return v;
  }
  std::vector<double> doubles() {
    std::vector<double> v(u32());
    get(v.data(), v.size() * sizeof(double));
    return v;
  }
  bool done() const { return at >= in.size(); }
};

}  // namespace

bool built_with_mpi() {
#ifdef LRNN_WITH_MPI
  return true;
#else
  return false;
#endif
}

const World& world() {
  if (!world_known) {
    world_known = true;
#ifdef LRNN_WITH_MPI
    if (launched_by_mpi()) start_mpi();
#endif
  }
  return the_world;
}

const World& init() {
#ifdef LRNN_WITH_MPI
  world_known = true;
  if (!the_world.active) start_mpi();
  return the_world;
#else
  throw Error(ErrorKind::Semantic, "this lrnn was built without MPI (CMake option LRNN_MPI): no distributed training");
#endif
}

void abort_job(const std::string& cause) {
  const World& w = the_world;
  std::fprintf(stderr, "lrnn: rank %d of %d failed: %s\n", w.rank, w.size, cause.c_str());
  std::fflush(stderr);
#ifdef LRNN_WITH_MPI
  if (w.active) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  std::_Exit(1);
}

void barrier() {
#ifdef LRNN_WITH_MPI
  if (world().active) {
    MPI_Request request;
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    wait_sleeping(request);
  }
#endif
}

bool all_agree(bool mine) {
#ifdef LRNN_WITH_MPI
  if (world().active) {
    int v = mine ? 1 : 0, all = 0;
    MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all == 1;
  }
#endif
  return mine;
}

void broadcast_from_root(double* data, size_t n) {
#ifdef LRNN_WITH_MPI
  if (world().active) MPI_Bcast(data, static_cast<int>(n), MPI_DOUBLE, 0, MPI_COMM_WORLD);
#endif
}

std::vector<uint32_t> allgather(const std::vector<uint32_t>& mine) {
#ifdef LRNN_WITH_MPI
  if (world().active) {
    const int size = the_world.size;
    int count = static_cast<int>(mine.size());
    std::vector<int> counts(size), displs(size, 0);
    MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 1; r < size; ++r) displs[r] = displs[r - 1] + counts[r - 1];
    std::vector<uint32_t> all(displs.back() + counts.back());
    MPI_Allgatherv(mine.data(), count, MPI_UINT32_T, all.data(), counts.data(), displs.data(), MPI_UINT32_T,
                   MPI_COMM_WORLD);
    return all;
  }
#endif
  return mine;
}

std::vector<char> gather_to_root(const std::vector<char>& mine) {
#ifdef LRNN_WITH_MPI
  if (world().active) {
    const int size = the_world.size;
    int count = static_cast<int>(mine.size());
    std::vector<int> counts(size), displs(size, 0);
    MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<char> all;
    if (the_world.rank == 0) {
      for (int r = 1; r < size; ++r) displs[r] = displs[r - 1] + counts[r - 1];
      all.resize(static_cast<size_t>(displs.back()) + counts.back());
    }
    MPI_Gatherv(mine.data(), count, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    return all;
  }
#endif
  return mine;
}

namespace {

// MPI_Alltoallv of bytes (back to back in rank order on both sides); outside a job of
// several processes the one rank's bytes are its own.
void alltoallv_bytes(const void* send, const std::vector<int>& send_bytes, const std::vector<int>& send_at, void* recv,
                     const std::vector<int>& recv_bytes, const std::vector<int>& recv_at) {
#ifdef LRNN_WITH_MPI
  if (world().active) {
    MPI_Alltoallv(send, send_bytes.data(), send_at.data(), MPI_BYTE, recv, recv_bytes.data(), recv_at.data(), MPI_BYTE,
                  MPI_COMM_WORLD);
    return;
  }
#endif
  if (!send_bytes.empty())
    std::memcpy(static_cast<char*>(recv) + recv_at[0], static_cast<const char*>(send) + send_at[0],
                static_cast<size_t>(send_bytes[0]));
}

// Each rank's part right after the one before.
std::vector<int> packed_offsets(const std::vector<int>& bytes) {
  std::vector<int> at(bytes.size(), 0);
  for (size_t r = 1; r < bytes.size(); ++r) at[r] = at[r - 1] + bytes[r - 1];
  return at;
}

void alltoallv_bytes(const void* send, const std::vector<int>& send_bytes, void* recv,
                     const std::vector<int>& recv_bytes) {
  alltoallv_bytes(send, send_bytes, packed_offsets(send_bytes), recv, recv_bytes, packed_offsets(recv_bytes));
}

}  // namespace

std::vector<std::vector<char>> alltoall(const std::vector<std::vector<char>>& to_each) {
  std::vector<int> send_bytes(to_each.size());
  for (size_t r = 0; r < to_each.size(); ++r) send_bytes[r] = static_cast<int>(to_each[r].size());
  std::vector<char> send;
  for (const auto& v : to_each) send.insert(send.end(), v.begin(), v.end());
  std::vector<int> recv_bytes(to_each.size(), 0);
#ifdef LRNN_WITH_MPI
  if (world().active)
    MPI_Alltoall(send_bytes.data(), 1, MPI_INT, recv_bytes.data(), 1, MPI_INT, MPI_COMM_WORLD);
  else
#endif
    recv_bytes = send_bytes;
  size_t total = 0;
  for (int b : recv_bytes) total += static_cast<size_t>(b);
  std::vector<char> recv(total);
  alltoallv_bytes(send.data(), send_bytes, recv.data(), recv_bytes);
  std::vector<std::vector<char>> from_each(to_each.size());
  size_t at = 0;
  for (size_t r = 0; r < from_each.size(); ++r) {
    from_each[r].assign(recv.begin() + at, recv.begin() + at + recv_bytes[r]);
    at += recv_bytes[r];
  }
  return from_each;
}

std::vector<std::vector<uint32_t>> alltoall(const std::vector<std::vector<uint32_t>>& to_each) {
  std::vector<std::vector<char>> bytes(to_each.size());
  for (size_t r = 0; r < to_each.size(); ++r) {
    bytes[r].resize(to_each[r].size() * sizeof(uint32_t));
    if (!bytes[r].empty()) std::memcpy(bytes[r].data(), to_each[r].data(), bytes[r].size());
  }
  std::vector<std::vector<uint32_t>> from_each(to_each.size());
  const std::vector<std::vector<char>> got = alltoall(bytes);
  for (size_t r = 0; r < got.size(); ++r) {
    from_each[r].resize(got[r].size() / sizeof(uint32_t));
    if (!from_each[r].empty()) std::memcpy(from_each[r].data(), got[r].data(), from_each[r].size() * sizeof(uint32_t));
  }
  return from_each;
}

void alltoallv(const void* send, const std::vector<int>& send_bytes, void* recv, const std::vector<int>& recv_bytes) {
  alltoallv(send, send_bytes, packed_offsets(send_bytes), recv, recv_bytes, packed_offsets(recv_bytes));
}

void alltoallv(const void* send, const std::vector<int>& send_bytes, const std::vector<int>& send_at, void* recv,
               const std::vector<int>& recv_bytes, const std::vector<int>& recv_at) {
  const auto t0 = std::chrono::steady_clock::now();
  alltoallv_bytes(send, send_bytes, send_at, recv, recv_bytes, recv_at);
  if (!world().active) return;
  timing.exchange_s += seconds_since(t0);
  ++timing.exchange_rounds;
  for (size_t r = 0; r < send_bytes.size(); ++r)
    if (static_cast<int>(r) != the_world.rank) timing.exchange_bytes += static_cast<uint64_t>(send_bytes[r]);
}

const StepTiming& step_timing() { return timing; }

ShardRange shard_of(size_t n, int rank, int size) {
  const size_t r = static_cast<size_t>(rank), s = static_cast<size_t>(size);
  return {n * r / s, n * (r + 1) / s};
}

ShardRange shard_by_cost(std::span<const uint64_t> costs, int rank, int size) {
  const size_t n = costs.size();
  std::vector<unsigned __int128> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i] + 1;
  auto start = [&](int r) -> size_t {
    if (r >= size) return n;
    const unsigned __int128 goal = prefix[n] * static_cast<unsigned>(r);
    size_t lo = 0, hi = n;  // the first i with prefix[i] * size >= goal
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (prefix[mid] * static_cast<unsigned>(size) >= goal) hi = mid;
      else lo = mid + 1;
    }
    // ... or the one before it, when that is closer to the goal.
    if (lo > 0 && goal - prefix[lo - 1] * static_cast<unsigned>(size) < prefix[lo] * static_cast<unsigned>(size) - goal)
      --lo;
    return lo;
  };
  return {start(rank), start(rank + 1)};
}

ShardPlan shard_with_margin(std::span<const uint64_t> costs, int rank, int size) {
  const size_t n = costs.size();
  const ShardRange owned = shard_by_cost(costs, rank, size);
  const size_t margin = size > 1 ? (n / static_cast<size_t>(size) + 15) / 16 : 0;
  return {owned, {owned.first > margin ? owned.first - margin : 0, std::min(n, owned.last + margin)}};
}

ShardLayout gather_layout(ShardPlan mine, size_t total, const std::vector<uint32_t>& owned_costs) {
  const std::vector<uint32_t> all =
      allgather({static_cast<uint32_t>(mine.owned.first), static_cast<uint32_t>(mine.owned.last),
                 static_cast<uint32_t>(mine.held.first), static_cast<uint32_t>(mine.held.last),
                 static_cast<uint32_t>(total)});
  ShardLayout layout;
  size_t next = 0;
  for (size_t k = 0; k + 4 < all.size(); k += 5) {
    const size_t rank = k / 5;
    if (all[k] != next || all[k + 4] != total || all[k + 2] > all[k] || all[k + 3] < all[k + 1])
      throw Error(ErrorKind::Semantic, "the ranks' shares of the dataset do not tile it: rank " +
                                           std::to_string(rank) + " owns samples " + std::to_string(all[k]) + ".." +
                                           std::to_string(all[k + 1]) + " of " + std::to_string(all[k + 4]) +
                                           ", expected from " + std::to_string(next) + " of " + std::to_string(total));
    layout.held_first.push_back(all[k + 2]);
    layout.held_last.push_back(all[k + 3]);
    next = all[k + 1];
  }
  if (next != total)
    throw Error(ErrorKind::Semantic, "the ranks' shares of the dataset cover samples 0.." + std::to_string(next) +
                                         " of " + std::to_string(total));
  layout.costs = allgather(owned_costs);
  if (layout.costs.size() != total)
    throw Error(ErrorKind::Runtime, "the ranks sent " + std::to_string(layout.costs.size()) + " sample costs for " +
                                        std::to_string(total) + " samples");
  return layout;
}

std::vector<size_t> balanced_cuts(const std::vector<uint32_t>& batch, const ShardLayout& layout) {
  const size_t ranks = layout.held_first.size(), b = batch.size();
  std::vector<uint64_t> work(b + 1, 0);  // work of batch[0, k)
  for (size_t k = 0; k < b; ++k) work[k + 1] = work[k] + layout.costs[batch[k]] + 1;
  std::vector<size_t> cuts(ranks + 1, 0);
  cuts[ranks] = b;
  for (size_t r = 1; r < ranks; ++r) {
    // Rank r's first sample must be one it holds, rank r - 1's last one it holds.
    size_t lo = std::lower_bound(batch.begin(), batch.end(), layout.held_first[r]) - batch.begin();
    const size_t hi = std::lower_bound(batch.begin(), batch.end(), layout.held_last[r - 1]) - batch.begin();
    lo = std::max(lo, cuts[r - 1]);
    const unsigned __int128 goal = static_cast<unsigned __int128>(work[b]) * r;
    size_t cut = lo;  // the first k in [lo, hi] with work[k] * ranks >= goal, or the one before
    while (cut < hi && static_cast<unsigned __int128>(work[cut]) * ranks < goal) ++cut;
    const unsigned __int128 at = static_cast<unsigned __int128>(work[cut]) * ranks;
    if (cut > lo && at >= goal && goal - static_cast<unsigned __int128>(work[cut - 1]) * ranks < at - goal) --cut;
    cuts[r] = cut;
  }
  return cuts;
}

// ---- exact sums ---------------------------------------------------------------------------
namespace {
constexpr double kScale = 0x1p64;     // resolution 2^-64
constexpr double kLimit = 0x1p40;     // |x| * 2^64 < 2^104: 2^23 such values still fit in 2^127
}  // namespace

void ExactSum::reset(size_t n) { acc_.assign(n + 1, 0); }

void ExactSum::add(size_t i, double x) {
  if (x == 0) return;
  // Most gradient entries are below 1/2: x * 2^64 then fits an int64, whose conversion is
  // one instruction (the 128-bit one a library call) and truncates alike.
  if (std::fabs(x) < 0x1p-1) {
    acc_[i] += static_cast<int64_t>(x * kScale);
    return;
  }
  if (!(std::fabs(x) < kLimit)) {
    acc_.back() += 1;
    return;
  }
  acc_[i] += static_cast<__int128>(x * kScale);  // x * 2^64 is exact; truncation drops < 2^-64
}

void ExactSum::allreduce() {
#ifdef LRNN_WITH_MPI
  if (!world().active) return;
  static MPI_Datatype int128 = MPI_DATATYPE_NULL;
  static MPI_Op sum = MPI_OP_NULL;
  if (int128 == MPI_DATATYPE_NULL) {
    MPI_Type_contiguous(16, MPI_BYTE, &int128);
    MPI_Type_commit(&int128);
    MPI_Op_create(add_int128, /*commute=*/1, &sum);
  }
  MPI_Request request;
  MPI_Iallreduce(MPI_IN_PLACE, acc_.data(), static_cast<int>(acc_.size()), int128, sum, MPI_COMM_WORLD, &request);
  wait_sleeping(request);
#endif
}

double ExactSum::value(size_t i) const { return static_cast<double>(acc_[i]) / kScale; }

// ---- the sharded step ---------------------------------------------------------------------
LossSum ShardedStep::batch_gradient(const neural::TemplateModel& model, const PreparedSet& set, SampleSteps& steps,
                                    const std::vector<uint32_t>& batch, LossKind loss_kind, int epoch,
                                    std::vector<double>& grads, EpochPredictions* predictions,
                                    std::vector<std::vector<double>>* outputs, Dtype dtype,
                                    const QueryStep* queries) {
  // The loss is over the targeted outputs of the whole global batch (their mean, or their sum
  // for mse_sum): every rank knows each sample's count (gathered when the set was prepared).
  const auto t_compute = std::chrono::steady_clock::now();
  const double exchanged_before = timing.exchange_s;
  LossSum total;
  if (queries) total.count = queries->targets;
  else
    for (uint32_t g : batch) total.count += set.global_target_counts[g];
  const size_t num_params = grads.size();
  const size_t ranks = static_cast<size_t>(world().size), rank = static_cast<size_t>(world().rank);
  // The parameters, the loss, then per rank its work (plan values, then computed values)
  // and its compute time (ns).
  const size_t work_slot = num_params + 1, time_slot = num_params + 1 + ranks, computed_slot = num_params + 1 + 2 * ranks;
  sum_.reset(num_params + 1 + 3 * ranks);
  // This rank's samples of the batch: those of its block, or with the ranks' layout known
  // (margins held), the run of the batch the work-balanced split gives it.
  const size_t first = set.shard_first, last = set.shard_first + set.size();
  auto begin = std::lower_bound(batch.begin(), batch.end(), static_cast<uint32_t>(first));
  auto end = std::lower_bound(begin, batch.end(), static_cast<uint32_t>(last));
  if (!set.layout.held_first.empty()) {
    const std::vector<size_t> cuts = balanced_cuts(batch, set.layout);
    begin = batch.begin() + cuts[rank];
    end = batch.begin() + cuts[rank + 1];
  }
  locals_.clear();
  for (auto it = begin; it != end; ++it) locals_.push_back(*it - static_cast<uint32_t>(first));
  const bool by_origin = queries && !queries->origin.empty();  // a step set's outputs, placed among the part's
  if (outputs && !by_origin) outputs->resize(set.outputs.size());
  if (queries) steps.seed_only(queries->seeded);
  steps.run(model, set, locals_, loss_kind, total.count, predictions != nullptr, outputs != nullptr,
             [&](size_t pos, const SampleGradient& sample) {
               for (size_t i = 0; i < num_params; ++i) sum_.add(i, sample.grad(i));
               sum_.add(num_params, sample.loss.sum);
               // Copied into the vectors of the epoch before (a big graph's 100k outputs: no
               // allocation per output and epoch).
               if (predictions) predictions->add(sample.predictions, sample.targets);
               if (outputs) {
                 const size_t first_output = steps.first_output(locals_[pos]);
                 for (size_t o = 0; o < sample.values.size(); ++o) {
                   if (queries && !queries->seeded.empty() && !queries->seeded[first_output + o]) continue;
                   (*outputs)[by_origin ? queries->origin[first_output + o] : first_output + o] = sample.values[o];
                 }
               }
             },
             dtype);
  uint64_t work = 0, computed = 0;
  for (uint32_t local : locals_) {
    work += steps.plan_values(local);
    computed += steps.plan_computed_values(local);
  }
  // A partitioned sample's ghost exchanges ran inside: their time is not computing.
  const double compute_s = seconds_since(t_compute) - (timing.exchange_s - exchanged_before);
  sum_.add_integer(work_slot + rank, static_cast<int64_t>(work));
  sum_.add_integer(time_slot + rank, static_cast<int64_t>(compute_s * 1e9));
  sum_.add_integer(computed_slot + rank, static_cast<int64_t>(computed));
  const auto t_allreduce = std::chrono::steady_clock::now();
  sum_.allreduce();
  const double allreduce_s = seconds_since(t_allreduce);
  int64_t slowest_ns = 0, work_max = 0, work_total = 0, computed_max = 0, computed_total = 0;
  for (size_t r = 0; r < ranks; ++r) {
    slowest_ns = std::max(slowest_ns, sum_.integer(time_slot + r));
    work_max = std::max(work_max, sum_.integer(work_slot + r));
    work_total += sum_.integer(work_slot + r);
    computed_max = std::max(computed_max, sum_.integer(computed_slot + r));
    computed_total += sum_.integer(computed_slot + r);
  }
  // Waiting for the slowest rank happens inside the allreduce: its share is the slowest
  // rank's compute time minus this rank's (at most the whole allreduce).
  const double wait_s = std::clamp(static_cast<double>(slowest_ns) * 1e-9 - compute_s, 0.0, allreduce_s);
  timing.compute_s += compute_s;
  timing.wait_s += wait_s;
  timing.allreduce_s += allreduce_s - wait_s;
  timing.work_mine += work;
  timing.work_max += static_cast<uint64_t>(work_max);
  timing.work_total += static_cast<uint64_t>(work_total);
  timing.computed_mine += computed;
  timing.computed_max += static_cast<uint64_t>(computed_max);
  timing.computed_total += static_cast<uint64_t>(computed_total);
  timing.allreduce_bytes += (sum_.size() + 1) * sizeof(__int128);
  ++timing.steps;
  if (sum_.unrepresentable() > 0)
    throw Error(ErrorKind::Runtime, "training diverged at epoch " + std::to_string(epoch) + ": " +
                                        std::to_string(sum_.unrepresentable()) +
                                        " gradient or loss values are not finite or beyond 2^40 (try a smaller --lr)");
  for (size_t i = 0; i < num_params; ++i) grads[i] = sum_.value(i);
  total.sum = sum_.value(num_params);
  return total;
}

// ---- gathered metrics ---------------------------------------------------------------------

double global_accuracy(const std::vector<std::vector<double>>& predictions,
                       const std::vector<std::vector<double>>& targets) {
  if (!world().active) return accuracy(predictions, targets);
  // Each rank counts its correct predictions under the rule every rank's targets decide
  // (integers: the same total in any order); a rank whose outputs cannot be scored fails
  // every rank alike, none left waiting.
  const bool negative = !all_agree(!has_negative_target(targets));
  size_t correct = 0;
  std::string error;
  try {
    correct = correct_predictions(predictions, targets, negative);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!all_agree(error.empty()))
    throw Error(ErrorKind::Runtime, error.empty() ? "accuracy: another rank's outputs could not be scored" : error);
  uint64_t total_correct = 0, total = 0;
  const std::vector<uint32_t> counts = allgather({static_cast<uint32_t>(correct), static_cast<uint32_t>(predictions.size())});
  for (size_t r = 0; r + 1 < counts.size(); r += 2) {
    total_correct += counts[r];
    total += counts[r + 1];
  }
  return total == 0 ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(total_correct) / static_cast<double>(total);
}

std::vector<Output> gather_outputs(const std::vector<Output>& local, const PreparedSet& set) {
  std::vector<char> mine;
  for (size_t k = 0; k < local.size(); ++k) {
    const Output& o = local[k];
    if (!set.owns(o.example)) continue;  // a sample of a margin: its owner reports it
    // A partitioned sample's outputs are put back in the order of its queries (below).
    put_u32(mine, static_cast<uint32_t>(set.partitioned ? set.partition_order.at(k) : set.shard_first + o.example));
    put_u32(mine, static_cast<uint32_t>(o.query.size()));
    put(mine, o.query.data(), o.query.size());
    put_doubles(mine, o.target);
    put_doubles(mine, o.value);
    put_doubles(mine, o.prediction);
    // Every other field of an Output travels too: a value gathered without its shape or its
    // split would print as a 1x1 training output (a silent wrong answer).
    put_doubles(mine, {o.importance, o.listed_target ? 1.0 : 0.0, o.derived ? 1.0 : 0.0, double(o.rows),
                       double(o.cols), double(static_cast<uint8_t>(o.split))});
  }
  const std::vector<char> all = gather_to_root(mine);
  std::vector<Output> outputs;
  for (Reader in{all}; !in.done();) {
    Output o;
    o.example = in.u32();
    o.query.resize(in.u32());
    in.get(o.query.data(), o.query.size());
    o.target = in.doubles();
    o.value = in.doubles();
    o.prediction = in.doubles();
    const std::vector<double> extra = in.doubles();  // importance, listed target, derived, rows, cols, split
    o.importance = extra.at(0);
    o.listed_target = extra.at(1) != 0;
    o.derived = extra.at(2) != 0;
    o.rows = static_cast<int>(extra.at(3));
    o.cols = static_cast<int>(extra.at(4));
    o.split = static_cast<QuerySplit>(static_cast<uint8_t>(extra.at(5)));
    outputs.push_back(std::move(o));
  }
  if (set.partitioned) {  // one sample: its outputs in the order of its queries, as in one process
    // Sorted in place (a big graph's outputs are not held twice): by query, then as gathered.
    std::vector<std::pair<size_t, uint32_t>> order(outputs.size());
    for (uint32_t k = 0; k < order.size(); ++k) order[k] = {outputs[k].example, k};
    std::sort(order.begin(), order.end());
    for (size_t k = 0; k < order.size(); ++k) {  // each cycle of the permutation walked once
      if (order[k].second == k) continue;
      Output held = std::move(outputs[k]);
      size_t at = k;
      while (order[at].second != k) {
        const size_t from = order[at].second;
        outputs[at] = std::move(outputs[from]);
        order[at].second = static_cast<uint32_t>(at);
        at = from;
      }
      outputs[at] = std::move(held);
      order[at].second = static_cast<uint32_t>(at);
    }
    for (Output& o : outputs) o.example = 0;
  }
  return outputs;
}

namespace {

// Metrics as four numbers, rank 0's sent to every rank.
void broadcast_metrics(Metrics& m) {
  double v[4] = {m.loss, m.accuracy, m.auc, static_cast<double>(m.count)};
  broadcast_from_root(v, 4);
  m.loss = v[0];
  m.accuracy = v[1];
  m.auc = v[2];
  m.count = static_cast<size_t>(v[3]);
}

}  // namespace

PartitionTrainingQueries partition_training_queries(const PreparedSet& set) {
  std::vector<uint32_t> mine;
  std::unordered_map<uint32_t, uint32_t> output_of;
  for (size_t k = 0; k < set.outputs.size(); ++k) {
    if (set.outputs[k].training_target().empty()) continue;
    // A query's first output stands for it (its matches are the outputs after it).
    if (k > 0 && set.outputs[k - 1].query == set.outputs[k].query) continue;
    mine.push_back(set.partition_order.at(k));
    output_of.emplace(mine.back(), static_cast<uint32_t>(k));
  }
  PartitionTrainingQueries out;
  out.queries = allgather(mine);
  std::sort(out.queries.begin(), out.queries.end());
  out.output.reserve(out.queries.size());
  for (uint32_t q : out.queries) {
    const auto it = output_of.find(q);
    out.output.push_back(it == output_of.end() ? PartitionTrainingQueries::kNotMine : it->second);
  }
  return out;
}

std::pair<Metrics, Metrics> split_metrics(const PreparedSet& set, const std::vector<std::vector<double>>& values,
                                          LossKind loss_kind) {
  std::vector<char> mine;
  for (size_t k = 0; k < set.outputs.size(); ++k) {
    const OutputInfo& o = set.outputs[k];
    if (o.split == QuerySplit::Train) continue;
    put_u32(mine, set.partition_order.at(k));
    put_u32(mine, static_cast<uint32_t>(o.split));
    put_doubles(mine, o.target);
    put_doubles(mine, values.at(k));
    put_doubles(mine, {o.importance, o.listed_target ? 1.0 : 0.0});
  }
  const std::vector<char> all = gather_to_root(mine);
  std::pair<Metrics, Metrics> out;
  if (is_root()) {
    struct Gathered {
      uint32_t query = 0, arrival = 0;
      OutputInfo info;
      std::vector<double> value;
    };
    std::vector<Gathered> got;
    for (Reader in{all}; !in.done();) {
      Gathered g;
      g.query = in.u32();
      g.arrival = static_cast<uint32_t>(got.size());
      g.info.split = static_cast<QuerySplit>(in.u32());
      g.info.target = in.doubles();
      g.value = in.doubles();
      const std::vector<double> extra = in.doubles();  // importance, listed target
      g.info.importance = extra.at(0);
      g.info.listed_target = extra.at(1) != 0;
      got.push_back(std::move(g));
    }
    // In the queries' order (as one process sums them), a query's matches as they came.
    std::sort(got.begin(), got.end(), [](const Gathered& a, const Gathered& b) {
      return a.query != b.query ? a.query < b.query : a.arrival < b.arrival;
    });
    std::vector<OutputInfo> infos;
    std::vector<std::vector<double>> vals;
    for (Gathered& g : got) {
      infos.push_back(std::move(g.info));
      vals.push_back(std::move(g.value));
    }
    out = {metrics_of_split(loss_kind, infos, vals, QuerySplit::Validation),
           metrics_of_split(loss_kind, infos, vals, QuerySplit::Test)};
  }
  broadcast_metrics(out.first);
  broadcast_metrics(out.second);
  return out;
}

Evaluation gather_evaluation(const Evaluation& local, const PreparedSet& set, LossKind loss_kind) {
  Evaluation ev;
  ev.outputs = gather_outputs(local.outputs, set);
  ev.has_splits = local.has_splits;
  if (is_root()) {
    // The outputs' texts, targets and values lent to the metrics and given back (a big
    // graph's are not held twice).
    std::vector<OutputInfo> infos;
    std::vector<std::vector<double>> values, predictions;
    infos.reserve(ev.outputs.size());
    values.reserve(ev.outputs.size());
    for (Output& o : ev.outputs) {
      infos.push_back({static_cast<uint32_t>(o.example), 0, std::move(o.query), std::move(o.target), o.importance,
                       o.listed_target, o.split});
      values.push_back(std::move(o.value));
    }
    ev.metrics = metrics_of(loss_kind, infos, values, &predictions);
    if (ev.has_splits) {  // as one process computes them (Engine::evaluate)
      ev.train = metrics_of_split(loss_kind, infos, values, QuerySplit::Train);
      ev.validation = metrics_of_split(loss_kind, infos, values, QuerySplit::Validation);
      ev.test = metrics_of_split(loss_kind, infos, values, QuerySplit::Test);
    }
    for (size_t o = 0; o < ev.outputs.size(); ++o) {
      ev.outputs[o].query = std::move(infos[o].text);
      ev.outputs[o].target = std::move(infos[o].target);
      ev.outputs[o].value = std::move(values[o]);
      ev.outputs[o].prediction = std::move(predictions[o]);
    }
  }
  broadcast_metrics(ev.metrics);
  if (ev.has_splits) {
    broadcast_metrics(ev.train);
    broadcast_metrics(ev.validation);
    broadcast_metrics(ev.test);
  }
  return ev;
}

void maybe_kill_for_test(int epoch) {
  static const char* rank = std::getenv("LRNN_TEST_KILL_RANK");
  static const char* at = std::getenv("LRNN_TEST_KILL_EPOCH");
  if (!rank || !at || !world().active) return;
  if (std::atoi(rank) == the_world.rank && std::atoi(at) == epoch) {
    std::fprintf(stderr, "lrnn: rank %d kills itself at epoch %d (LRNN_TEST_KILL_RANK test hook)\n", the_world.rank,
                 epoch);
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
}

}  // namespace lrnn::train::dist
