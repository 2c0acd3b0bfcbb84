// The epochs of mini-batches of one sample's queries (docs/big_graphs.md "Mini-batches of
// queries"): in this process, each step the batch's supports (train/query_batches.hpp); over
// MPI ranks of a partitioned sample, the same batches, each rank computing its share
// (BatchGradient::add_query_batch, docs/distributed.md "One sample over many ranks").
#include <algorithm>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "train/batch_gradient.hpp"
#include "train/distributed.hpp"
#include "train/engine.hpp"
#include "train/query_batches.hpp"

namespace lrnn::train {

namespace {

// The order of an epoch's n training queries, shuffled (config.shuffle) by the draws both
// epochs make alike: a partitioned sample's ranks then cut one process's batches.
std::vector<uint32_t> query_order(size_t n, const TrainConfig& config, Rng& rng) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  if (config.shuffle) shuffle(std::span<uint32_t>(order), rng);
  return order;
}

// A batch's outputs with a training target: the mean of its loss divides by their count.
size_t training_targets(const PreparedSet& batch) {
  size_t n = 0;
  for (const OutputInfo& o : batch.outputs) n += !o.training_target().empty();
  return n;
}

}  // namespace

void Engine::query_batch_epoch(QueryBatches& batches, const PreparedSet& set, const TrainConfig& config, double lr,
                               Rng& rng, std::vector<double>& fixed_values, EpochAccumulator& epoch) {
  const std::vector<QueryRef>& queries = batches.training_queries();
  const std::vector<uint32_t> order = query_order(queries.size(), config, rng);
  if (!query_steps_) {
    query_steps_ = std::make_unique<SampleSteps>();
    query_steps_->sum_first_transforms = true;
  }
  std::vector<QueryRef> refs;
  std::vector<uint32_t> origin;  // per output of a batch: its index in the set's outputs
  for (size_t b0 = 0; b0 < order.size(); b0 += config.query_batch_size) {
    refs.clear();
    for (size_t k = b0; k < std::min(order.size(), b0 + config.query_batch_size); ++k) refs.push_back(queries[order[k]]);
    // A float pass gathers the batch's feature rows from the index's float copy of the graph's.
    PreparedSet batch = batches.batch(refs, rng, origin, config.dtype == Dtype::Float32);
    std::vector<uint32_t> locals(batch.size());
    std::iota(locals.begin(), locals.end(), 0u);
    query_steps_->run(
        model_, batch, locals, config.loss, training_targets(batch), true, true,
        [&](size_t pos, const SampleGradient& sample) {
          const size_t first = query_steps_->first_output(locals[pos]);
          epoch.take(pos, sample, [&](size_t o) { return origin[first + o]; });
        },
        config.dtype);
    step_learnable(epoch.grads, lr, config, fixed_values, epoch.facts);
    batches.recycle(std::move(batch));  // the next batch fills its arrays again
  }
}

void Engine::partitioned_query_epoch(BatchGradient& batches, const dist::PartitionTrainingQueries& queries,
                                     const TrainConfig& config, double lr, Rng& rng, int epoch_number,
                                     std::vector<double>& fixed_values, EpochAccumulator& epoch) {
  // The same batches as one process's query_batch_epoch: its training queries (in the
  // sample's order) shuffled by the same draws, cut every query_batch_size.
  const std::vector<uint32_t> order = query_order(queries.queries.size(), config, rng);
  std::vector<uint32_t> mine;
  for (size_t b0 = 0; b0 < order.size(); b0 += config.query_batch_size) {
    const size_t b1 = std::min(order.size(), b0 + config.query_batch_size);
    mine.clear();
    for (size_t k = b0; k < b1; ++k)
      if (const uint32_t o = queries.output[order[k]]; o != dist::PartitionTrainingQueries::kNotMine) mine.push_back(o);
    batches.add_query_batch(mine, b1 - b0, epoch_number, epoch);
    step_learnable(epoch.grads, lr, config, fixed_values, epoch.facts);
    batches.after_step();
  }
}

}  // namespace lrnn::train
