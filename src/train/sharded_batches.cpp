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
#include "train/partition_query_steps.hpp"

namespace lrnn::train::dist {

namespace {

class ShardedBatches final : public BatchGradient {
 public:
  ShardedBatches(const neural::TemplateModel& model, const PreparedSet& set, ShardedStep& step, SampleSteps& steps,
                 const TrainConfig& config)
      : model_(model), set_(set), step_(step), steps_(steps), config_(config) {
    // A part cut at its ghosts runs its share of each query batch's support; its index of
    // ground rules by head is part of training's setup.
    if (config.query_batch_size > 0 && set.partitioned && set.ghosts) {
      supports_ = std::make_unique<PartitionQuerySteps>(model, set);
      support_steps_.sum_first_transforms = true;
    }
  }

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

  void add_query_batch(std::span<const uint32_t> outputs, size_t batch_queries, int epoch_number,
                       EpochAccumulator& epoch) override {
    if (!set_.partitioned) throw Error(ErrorKind::Runtime, "internal: query batches of a set split by sample");
    std::vector<uint32_t> every_part(set_.global_size);  // each rank's part of the one sample
    std::iota(every_part.begin(), every_part.end(), 0u);
    LossSum loss;
    if (supports_) {  // this rank's share of the batch's support
      const PreparedSet step = supports_->step(outputs, origin_);
      const QueryStep every_output{{}, batch_queries, origin_};
      loss = step_.batch_gradient(model_, step, support_steps_, every_part, config_.loss, epoch_number, epoch.grads,
                                  &epoch.predictions, &epoch.last_outputs, config_.dtype, &every_output);
    } else {  // a halo's part: whole, the batch's queries seeded (each with its matches, the outputs after it)
      seeded_.resize(set_.outputs.size(), 0);
      const auto mark = [&](uint8_t flag) {
        for (uint32_t o : outputs)
          for (uint32_t m = o; m < set_.outputs.size() && set_.outputs[m].query == set_.outputs[o].query; ++m)
            seeded_[m] = flag;
      };
      mark(1);
      const QueryStep seeded{seeded_, batch_queries, {}};
      loss = step_.batch_gradient(model_, set_, steps_, every_part, config_.loss, epoch_number, epoch.grads,
                                  &epoch.predictions, &epoch.last_outputs, config_.dtype, &seeded);
      mark(0);
    }
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
  std::unique_ptr<PartitionQuerySteps> supports_;  // query batches of a part cut at its ghosts
  SampleSteps support_steps_;                      // their steps (a plan per step)
  std::vector<uint32_t> origin_;                   // a step's outputs among the part's
  std::vector<uint8_t> seeded_;                    // query batches of a halo's part: per output
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
