// How a training step's gradient over one batch of whole samples is computed
// (docs/architecture.md "One training path"). Engine::train draws the batches, steps the
// optimizer and reports the epoch, once, for every way of computing a batch's gradient: a
// BatchGradient computes it in this process over its own samples (local_batches) or summed
// exactly over MPI ranks that each hold a shard of the set (dist::sharded_batches,
// train/distributed.hpp). Which one trains a set depends on the set alone; the loop does not
// branch on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "train/engine.hpp"
#include "train/example_facts.hpp"

namespace lrnn::train {

// An epoch's targeted predictions and targets (for its accuracy), kept across epochs and
// overwritten in place (the count is the same every epoch): an online epoch, or a rank's
// part of one big sample, allocates nothing per output.
struct EpochPredictions {
  std::vector<std::vector<double>> preds, targets;
  size_t count = 0;
  void start() { count = 0; }
  void add(const std::vector<std::vector<double>>& p, const std::vector<std::vector<double>>& t) {
    for (size_t k = 0; k < p.size(); ++k, ++count) {
      if (count == preds.size()) {
        preds.emplace_back();
        targets.emplace_back();
      }
      preds[count] = p[k];
      targets[count] = t[k];
    }
  }
  void finish() {
    preds.resize(count);
    targets.resize(count);
  }
};

// What an epoch's training steps add up, sample by sample in batch order (whole samples
// and query batches alike): the batch gradient (a copy of its first sample's, so a batch of
// one is exactly that sample's gradient), the learnable facts' gradients (zeroed after every
// step by step_example_facts), the loss, the predictions for the accuracy, and each
// output's value in the set's output order.
struct EpochAccumulator {
  std::vector<double>& grads;
  ExampleFacts* facts;
  EpochPredictions& predictions;
  std::vector<std::vector<double>>& last_outputs;
  double loss_sum = 0;
  size_t loss_count = 0;

  // Sample at `pos` of its batch; its output o is the set's output `output_index(o)`.
  template <class OutputIndex>
  void take(size_t pos, const SampleGradient& sample, OutputIndex output_index) {
    if (pos == 0 || sample.has_gradient()) sample.add_to(grads, pos == 0);
    take_all_but_gradient(sample, output_index);
  }
  // The same for a sample whose buffers the caller reuses: the first sample's double
  // gradient is swapped in, not copied (at batch 1 a copy of every parameter's gradient per
  // sample, 2% of the NCI1 GraphSAGE epoch). The sample is left with the old buffer, which
  // its next pass overwrites.
  template <class OutputIndex>
  void take(size_t pos, SampleGradient& sample, OutputIndex output_index) {
    if (pos != 0 || sample.grads.size() != grads.size()) return take(pos, std::as_const(sample), output_index);
    grads.swap(sample.grads);
    take_all_but_gradient(sample, output_index);
  }

 private:
  template <class OutputIndex>
  void take_all_but_gradient(const SampleGradient& sample, OutputIndex output_index) {
    if (facts)
      for (size_t i = 0; i < facts->grads.size(); ++i) facts->grads[i] += sample.example_grads[i];
    loss_sum += sample.loss.sum;
    loss_count += sample.loss.count;
    predictions.add(sample.predictions, sample.targets);
    for (size_t o = 0; o < sample.values.size(); ++o) last_outputs[output_index(o)] = sample.values[o];
  }
};

class BatchGradient {
 public:
  virtual ~BatchGradient() = default;
  // Batches hold sample indices 0 .. sample_count() - 1 (under MPI global indices: every
  // rank draws the same batches).
  virtual size_t sample_count() const = 0;
  // Before epoch `epoch` (1-based, counting the model's earlier training).
  virtual void start_epoch(int epoch, EpochPredictions& predictions) = 0;
  // The gradient of the sorted `batch` summed into epoch.grads (overwritten), its loss,
  // predictions and output values added to `epoch`.
  virtual void add_batch(const std::vector<uint32_t>& batch, int epoch_number, EpochAccumulator& epoch) = 0;
  // A query mini-batch of a sample partitioned over MPI ranks: `outputs` are this rank's
  // (the first output of each of its queries of the batch, in batch order), `batch_queries`
  // the batch's queries over every rank. Its gradient is summed into epoch.grads
  // (overwritten) as add_batch's. Only sets partitioned over the ranks have it.
  virtual void add_query_batch(std::span<const uint32_t> outputs, size_t batch_queries, int epoch_number,
                               EpochAccumulator& epoch);
  // Before add_batch: the first samples of the batches after it, in the order they will run
  // (a hint; a process running them may prefetch their plans as the batch ends).
  virtual void next_up(std::span<const uint32_t>) {}
  // After the optimizer's step on that gradient.
  virtual void after_step() {}
  // The epoch's training accuracy from its predictions.
  virtual double accuracy(const EpochPredictions& predictions) const = 0;
  // Whether training goes on, given this process's answer (under MPI: every rank stops together).
  virtual bool go_on(bool mine) const { return mine; }
};

// The batches of `set` computed in this process, one sample's plan at a time (`steps`),
// each batch's loss a mean over its targeted outputs.
std::unique_ptr<BatchGradient> local_batches(neural::TemplateModel& model, const PreparedSet& set, SampleSteps& steps,
                                             const TrainConfig& config);

namespace dist {
// The batches of a set sharded over MPI ranks (`set.sharded()`), their gradients summed
// exactly over the ranks by `step` (train/distributed.hpp), each sample run on its plan in
// `steps` (the set's, which evaluation uses too: one plan and workspace for both). Refuses
// learnable example facts and batch norm, which it cannot train.
std::unique_ptr<BatchGradient> sharded_batches(const neural::TemplateModel& model, const PreparedSet& set,
                                               ShardedStep& step, SampleSteps& steps, const TrainConfig& config);
}  // namespace dist

}  // namespace lrnn::train
