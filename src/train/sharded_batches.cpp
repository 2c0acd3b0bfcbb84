// The batch gradient of a set sharded over MPI ranks (train/batch_gradient.hpp,
// docs/distributed.md): every rank draws the same batches of global sample indices, computes
// its own samples' part and the parts are summed exactly (dist::ShardedStep), so every rank
// takes the same step whatever the number of ranks.
#include <memory>
#include <numeric>
#include <vector>

#include "lrnn/diagnostics.hpp"
#include "train/batch_gradient.hpp"
#include "train/distributed.hpp"

namespace lrnn::train::dist {

namespace {

class ShardedBatches final : public BatchGradient {
 public:
  ShardedBatches(const neural::TemplateModel& model, const PreparedSet& set, ShardedStep& step, SampleSteps& steps,
                 const TrainConfig& config)
      : model_(model), set_(set), step_(step), steps_(steps), config_(config) {}

  size_t sample_count() const override { return set_.global_size; }

  // The fault tests' hook (a rank killing itself as a crashed host would) runs here, where
  // an epoch of a job starts; the step adds this rank's predictions itself.
  void start_epoch(int epoch, EpochPredictions& predictions) override {
    maybe_kill_for_test(epoch);
    predictions.start();
  }

  void add_batch(const std::vector<uint32_t>& batch, int epoch_number, EpochAccumulator& epoch) override {
    const LossSum loss = step_.batch_gradient(model_, set_, steps_, batch, config_.loss, epoch_number, epoch.grads,
                                              &epoch.predictions, &epoch.last_outputs, config_.dtype);
    epoch.loss_sum += loss.sum;
    epoch.loss_count += loss.count;
  }

  void add_query_batch(const QueryStep& queries, int epoch_number, EpochAccumulator& epoch) override {
    std::vector<uint32_t> every_part(set_.global_size);  // each rank's part of the one sample
    std::iota(every_part.begin(), every_part.end(), 0u);
    const LossSum loss = step_.batch_gradient(model_, set_, steps_, every_part, config_.loss, epoch_number,
                                              epoch.grads, &epoch.predictions, &epoch.last_outputs, config_.dtype,
                                              &queries);
    epoch.loss_sum += loss.sum;
    epoch.loss_count += loss.count;
  }

  double accuracy(const EpochPredictions& p) const override { return global_accuracy(p.preds, p.targets); }

  bool go_on(bool mine) const override { return all_agree(mine); }

 private:
  const neural::TemplateModel& model_;
  const PreparedSet& set_;
  ShardedStep& step_;
  SampleSteps& steps_;
  const TrainConfig& config_;
};

}  // namespace

std::unique_ptr<BatchGradient> sharded_batches(const neural::TemplateModel& model, const PreparedSet& set,
                                               ShardedStep& step, SampleSteps& steps, const TrainConfig& config) {
  // What a sharded set cannot train: learnable example facts, and batch norm (its statistics
  // would be each rank's share of the batch).
  if (set.example_facts)
    throw Error(ErrorKind::Semantic, "learnable example facts cannot be trained sharded over MPI ranks");
  if (!model.batch_norms.empty())
    throw Error(ErrorKind::Semantic, "normalization=batch cannot be trained sharded over MPI ranks yet (its batch "
                                     "statistics would be each rank's share of the batch)");
  return std::make_unique<ShardedBatches>(model, set, step, steps, config);
}

}  // namespace lrnn::train::dist
