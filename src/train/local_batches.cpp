// The batch gradient of a set held by this process (train/batch_gradient.hpp): each sample's
// plan run forward and backward (SampleSteps), the batch's loss a mean over its targeted
// outputs.
#include <memory>
#include <vector>

#include "lrnn/diagnostics.hpp"
#include "train/batch_gradient.hpp"

namespace lrnn::train {

void BatchGradient::add_query_batch(std::span<const uint32_t>, size_t, int, EpochAccumulator&) {
  throw Error(ErrorKind::Runtime, "a query mini-batch over every rank's part is for a sample partitioned over MPI ranks");
}

namespace {

class LocalBatches final : public BatchGradient {
 public:
  LocalBatches(neural::TemplateModel& model, const PreparedSet& set, SampleSteps& steps, const TrainConfig& config)
      : model_(model), set_(set), steps_(steps), config_(config), target_count_(set.size(), 0) {
    // Targeted outputs per sample: a batch's mean loss divides by their sum.
    for (const OutputInfo& o : set.outputs)
      if (!o.training_target().empty()) ++target_count_[o.sample];
  }

  size_t sample_count() const override { return set_.size(); }

  void start_epoch(int, EpochPredictions& predictions) override { predictions.start(); }

  void next_up(std::span<const uint32_t> samples) override { steps_.set_next_up(samples); }

  void add_batch(const std::vector<uint32_t>& batch, int, EpochAccumulator& epoch) override {
    size_t mean_over = 0;
    for (uint32_t i : batch) mean_over += target_count_[i];
    // The callback captures one reference: std::function keeps it in place (three were a
    // heap allocation per batch, i.e. per sample at batch 1).
    const struct {
      const SampleSteps& steps;
      const std::vector<uint32_t>& batch;
      EpochAccumulator& epoch;
    } batch_run{steps_, batch, epoch};
    steps_.set_output_sink(&epoch.last_outputs);
    steps_.run(
        model_, set_, batch, config_.loss, mean_over, true, true,
        [&batch_run](size_t pos, SampleGradient& sample) {
          const size_t first = batch_run.steps.first_output(batch_run.batch[pos]);
          batch_run.epoch.take(pos, sample, [&](size_t o) { return first + o; });
        },
        config_.dtype);
  }

  // Batch norm's running statistics follow the step, which keeps fixed parameters as they were.
  void after_step() override {
    if (!model_.batch_norms.empty()) steps_.update_running_stats(model_, model_.params);
  }

  double accuracy(const EpochPredictions& p) const override { return train::accuracy(p.preds, p.targets); }

 private:
  neural::TemplateModel& model_;
  const PreparedSet& set_;
  SampleSteps& steps_;
  const TrainConfig& config_;
  std::vector<uint32_t> target_count_;
};

}  // namespace

std::unique_ptr<BatchGradient> local_batches(neural::TemplateModel& model, const PreparedSet& set, SampleSteps& steps,
                                             const TrainConfig& config) {
  return std::make_unique<LocalBatches>(model, set, steps, config);
}

}  // namespace lrnn::train
