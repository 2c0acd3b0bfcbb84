// Training numerics that know nothing of networks: parameter initialisers, losses,
// optimizers, learning-rate schedules, metrics. They work on flat double arrays; the
// trainer (src/train/trainer.*) owns the parameters and calls these once per step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "neural/template_model.hpp"

namespace lrnn::train {

using Rng = std::mt19937_64;  // the one generator: a seed reproduces everything

// Portable draws from Rng. std::uniform_real_distribution, normal_distribution and
// std::shuffle are implementation-defined, so the same seed could give different numbers
// under another standard library; these are defined here bit for bit (the normal uses
// std::log/std::cos/std::sqrt, which glibc rounds correctly).
double uniform01(Rng& rng);                    // [0, 1): the top 53 bits of one draw
double standard_normal(Rng& rng);              // Box-Muller (cosine branch), two draws
uint64_t uniform_below(Rng& rng, uint64_t n);  // unbiased integer in [0, n), n > 0
void shuffle(std::span<uint32_t> items, Rng& rng);  // Fisher-Yates with uniform_below
void shuffle(std::span<size_t> items, Rng& rng);

// ---- initialisers ----------------------------------------------------------------------
enum class InitKind : uint8_t { Uniform, Normal, Glorot, He, Constant, Torch, Longtail };
struct Initializer {
  InitKind kind = InitKind::Glorot;
  double scale = 1.0;  // Uniform: U(-scale, scale); Normal: N(0, scale^2); Constant: value
  // "glorot" (alias "xavier"), "he" ("kaiming"), "uniform", "normal" ("gaussian"),
  // "constant"; an optional "(x)" sets scale: "uniform(0.1)", "constant(0.5)".
  static Initializer parse(const std::string& name);  // throws lrnn::Error on unknown name
};
std::string to_string(const Initializer& init);  // parses back to the same initializer
// Fills `w` (a rows x cols weight; fan_in = cols, fan_out = rows; scalars use 1, 1).
// Glorot: U(-a, a), a = sqrt(6 / (fan_in + fan_out)); He: N(0, 2 / fan_in); Torch:
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (torch.nn.Linear's); Longtail: PyNeuraLogic's power-law
// draw 10 (1 - u^(1/51)) on [0, 10], u ~ U(0, 1).
void initialize(const Initializer& init, int rows, int cols, std::span<double> w, Rng& rng);
// Fills every parameter written as dimensions only (not given values), in parameter order.
void initialize(const Initializer& init, neural::Parameters& params, Rng& rng);

// ---- losses ------------------------------------------------------------------------------
// A loss: its kind and, for multi-class cross-entropy, torch's label smoothing
// (nn.CrossEntropyLoss(label_smoothing=e): the target becomes (1 - e) t + e / n). It
// converts to its kind, so code asking only which kind it is (switch, ==) reads as it would
// with a plain enum, while the smoothing travels with it through every training pass.
struct LossKind {
  enum Kind : uint8_t {
    Mse,                 // mean over entries of (y - t)^2
    CrossEntropy,        // from logits: binary (sigmoid) for 1-entry outputs, softmax otherwise
    MseSum,              // sum over entries of (y - t)^2, summed (not averaged) over outputs
  };
  Kind kind = Mse;
  double label_smoothing = 0;  // in [0, 1]; only multi-class cross-entropy accepts > 0
  constexpr LossKind(Kind k = Mse, double smoothing = 0) : kind(k), label_smoothing(smoothing) {}
  constexpr operator Kind() const { return kind; }
};
// What a batch's summed loss is divided by: the number of targeted outputs, or 1 for a
// summed loss (torch's reduction="sum").
double loss_divisor(LossKind kind, size_t count);
LossKind parse_loss(const std::string& name);  // "mse", "crossentropy" / "cross_entropy"
std::string to_string(LossKind kind);
// Loss of one output (n entries) against its target (n entries; for multi-class
// cross-entropy a one-hot or probability vector, or n == 1 target holding the class
// index when the output has more than one entry). Writes dL/dy into `grad` (n entries;
// overwritten, not accumulated). Binary cross-entropy is softplus(z) - t z (stable for
// any logit); multi-class uses log-sum-exp, and a probability target t gives
// dL/dy = sum(t) softmax(y) - t. With label smoothing e the multi-class target t is
// replaced by (1 - e) t + e / n, as torch does (a class index k is the one-hot t).
// Throws lrnn::Error (Shape) on a target of the wrong size or a class index that is not an
// integer in [0, n), and (Semantic) on label smoothing of a single-entry output.
double loss(LossKind kind, std::span<const double> y, std::span<const double> target,
            std::span<double> grad);
// What the model predicts from an output for reporting: sigmoid/softmax for
// cross-entropy, identity for MSE.
void predict(LossKind kind, std::span<const double> y, std::span<double> prediction);

// ---- optimizers ------------------------------------------------------------------------------
enum class OptimizerKind : uint8_t { Sgd, Adam, AdamW };
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Adam;
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0.0;  // SGD/Adam: L2 added to the gradient; AdamW: decoupled (default 0.01)
  double momentum = 0.0;      // SGD
  static OptimizerKind parse(const std::string& name);  // "sgd", "adam", "adamw"
  // The defaults PyTorch uses for that optimizer: the fields above, except that AdamW's
  // weight_decay is 0.01 (torch.optim.AdamW). Callers start from this and override what
  // the user gave.
  static OptimizerConfig defaults(OptimizerKind kind);
};
std::string to_string(OptimizerKind kind);
// x / c as Adam's step computes sqrt(v) / sqrt(1 - beta2^t) (c in (0, 1], the same for
// every parameter of a step): without a division where the processor has FMA instructions,
// the same bits as x / c (numerics_optimizers.cpp). For tests.
double quotient_by_bias_correction(double x, double c);
// Keeps its own state (moments) for a parameter vector of fixed size.
class Optimizer {
 public:
  Optimizer(const OptimizerConfig& config, size_t num_params);
  // params -= update(grads); lr is the scheduled rate for this step.
  void step(std::span<double> params, std::span<const double> grads, double lr);
  const OptimizerConfig& config() const { return config_; }
  // SGD: g = grad + wd p; buf = momentum buf + g (buf = g on the first step); p -= lr buf.
  // Adam: g = grad + wd p; AdamW: p *= 1 - lr wd first. Then m, v, bias-corrected step
  // with eps added to sqrt(v) / sqrt(1 - beta2^t), as torch.optim does.
  // State for checkpoints, flat: [step count, m (SGD: momentum buffer)..., v (Adam/AdamW)...];
  // set_state throws lrnn::Error (Io) on a state of the wrong size.
  std::vector<double> state() const;
  void set_state(const std::vector<double>& s);
  uint64_t steps() const { return t_; }  // optimizer steps taken (the model's whole training)

 private:
  OptimizerConfig config_;
  std::vector<double> m_, v_;
  uint64_t t_ = 0;
};

// ---- learning-rate schedules ----------------------------------------------------------------
enum class ScheduleKind : uint8_t { Constant, Step, Exponential, Cosine, Linear, Noam };
struct Schedule {
  ScheduleKind kind = ScheduleKind::Constant;
  int step_size = 10;    // Step: multiply by gamma every step_size epochs
  double gamma = 0.5;    // Step / Exponential (lr * gamma^epoch)
  int total_epochs = 1;  // Cosine: anneal to min_lr over total_epochs
  double min_lr = 0.0;
  int warmup = 4000;        // Noam: optimizer steps of linear warm-up
  double model_size = 0;    // Noam: d_model of the d_model^-0.5 factor; 0: no such factor (1)
  static ScheduleKind parse(const std::string& name);  // "constant", "step", "exponential", "cosine", "linear", "noam"
  // epoch is 0-based. Step: base gamma^floor(epoch / step_size); Exponential:
  // base gamma^epoch; Cosine: min + (base - min)(1 + cos(pi epoch / total))/2, held at
  // min_lr after total_epochs (PyTorch's CosineAnnealingLR would rise again); Linear:
  // max(0, base - base * epoch / step_size). Noam (a per-step schedule): base here; its
  // rate changes every optimizer step, see step_lr.
  double lr(double base_lr, int epoch) const;
  // Noam changes the rate every optimizer step, not every epoch.
  bool per_step() const { return kind == ScheduleKind::Noam; }
  // The rate of optimizer step `step` (1-based, counted over the model's whole training):
  // "Attention Is All You Need"'s base d_model^-0.5 min(step^-0.5, step warmup^-1.5),
  // torch's LambdaLR(opt, lambda s: d^-0.5 * min((s+1)^-0.5, (s+1) * w^-1.5)) with
  // scheduler.step() after every optimizer.step(). Other kinds: base.
  double step_lr(double base_lr, uint64_t step) const;
};
std::string to_string(ScheduleKind kind);

// ---- metrics --------------------------------------------------------------------------------
// Accuracy of predictions against targets: for single-entry outputs, prediction rounded
// at `threshold` (0.5; for MSE targets in {-1, 1} the threshold is 0 and the sign counts);
// for multi-entry outputs, argmax against the target's argmax (or the class index).
// A single-entry prediction exactly at the threshold counts as the negative class; any
// negative single-entry target switches the whole set to the sign rule. NaN when empty.
double accuracy(const std::vector<std::vector<double>>& predictions,
                const std::vector<std::vector<double>>& targets);
// accuracy()'s parts, for sets split over processes: whether some single-entry target is
// negative (the sign rule, for the whole set), and how many predictions are correct under
// that rule.
bool has_negative_target(const std::vector<std::vector<double>>& targets);
size_t correct_predictions(const std::vector<std::vector<double>>& predictions,
                           const std::vector<std::vector<double>>& targets, bool negative_targets);
// The same for single-entry predictions and targets given as plain numbers.
double accuracy_of_scalars(const std::vector<double>& predictions, const std::vector<double>& targets);
// Area under the ROC curve of single-entry scores against binary targets (ties counted
// half); NaN if only one class is present or a score is NaN. Positive means target > 0.5
// (> 0 when some target is negative, i.e. {-1, 1} targets).
double auc(const std::vector<double>& scores, const std::vector<double>& targets);

}  // namespace lrnn::train
