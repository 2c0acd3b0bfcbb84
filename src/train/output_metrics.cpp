// Loss, accuracy and AUC of a prepared set's outputs (train/engine.hpp metrics_of,
// metrics_of_split): each output's prediction and loss from the numerics functions.
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "train/engine.hpp"
#include "train/numerics.hpp"

namespace lrnn::train {

namespace {

// metrics_over where every output and target is one number (a graph's nodes, a knowledge
// base's triples): the same loss, accuracy and AUC from flat arrays, with no vector per
// output (their allocations and copies were about 5% of a 200k-node GCN epoch with a split).
template <class Counts>
Metrics scalar_metrics_over(LossKind loss_kind, const std::vector<OutputInfo>& infos,
                            const std::vector<std::vector<double>>& outputs,
                            std::vector<std::vector<double>>* predictions_out, const Counts& counts) {
  Metrics m;
  std::vector<double> scores, targets;
  bool all_binary = true;
  double total = 0;
  for (size_t o = 0; o < infos.size(); ++o) {
    const bool counted = !infos[o].target.empty() && counts(o);
    if (!predictions_out && !counted) continue;
    double p = 0, grad = 0;
    predict(loss_kind, outputs[o], std::span<double>(&p, 1));
    if (predictions_out) predictions_out->push_back({p});
    if (!counted) continue;
    const double t = infos[o].target[0];
    total += infos[o].importance * loss(loss_kind, outputs[o], infos[o].target, std::span<double>(&grad, 1));
    ++m.count;
    scores.push_back(p);
    targets.push_back(t);
    if (t != 0 && t != 1) all_binary = false;
  }
  m.loss = m.count ? total / loss_divisor(loss_kind, m.count) : std::numeric_limits<double>::quiet_NaN();
  m.accuracy = m.count ? accuracy_of_scalars(scores, targets) : std::numeric_limits<double>::quiet_NaN();
  m.auc = all_binary && m.count ? auc(scores, targets) : std::numeric_limits<double>::quiet_NaN();
  return m;
}

// Loss, accuracy and AUC over the targeted outputs `counts(o)` admits; every output's
// prediction into `predictions_out` if given.
template <class Counts>
Metrics metrics_over(LossKind loss_kind, const std::vector<OutputInfo>& infos,
                     const std::vector<std::vector<double>>& outputs,
                     std::vector<std::vector<double>>* predictions_out, const Counts& counts) {
  bool all_scalar = true;  // every output read (and target counted) is one number
  for (size_t o = 0; o < infos.size() && all_scalar; ++o) {
    const bool counted = !infos[o].target.empty() && counts(o);
    if ((counted || predictions_out) && outputs[o].size() != 1) all_scalar = false;
    if (counted && infos[o].target.size() != 1) all_scalar = false;
  }
  if (all_scalar) return scalar_metrics_over(loss_kind, infos, outputs, predictions_out, counts);
  Metrics m;
  std::vector<std::vector<double>> preds, targets;
  std::vector<double> scores, binary;
  bool all_binary = true;
  double total = 0;
  std::vector<double> grad;
  for (size_t o = 0; o < infos.size(); ++o) {
    if (!predictions_out && (infos[o].target.empty() || !counts(o))) continue;
    const std::vector<double>& y = outputs[o];
    std::vector<double> p(y.size());
    predict(loss_kind, y, p);
    if (predictions_out) predictions_out->push_back(p);
    if (infos[o].target.empty() || !counts(o)) continue;
    grad.assign(y.size(), 0.0);
    total += infos[o].importance * loss(loss_kind, y, infos[o].target, grad);
    ++m.count;
    if (p.size() == 1 && infos[o].target.size() == 1) {
      scores.push_back(p[0]);
      const double t = infos[o].target[0];
      if (t != 0 && t != 1) all_binary = false;
      binary.push_back(t);
    } else {
      all_binary = false;
    }
    preds.push_back(std::move(p));
    targets.push_back(infos[o].target);
  }
  m.loss = m.count ? total / loss_divisor(loss_kind, m.count) : std::numeric_limits<double>::quiet_NaN();
  m.accuracy = m.count ? accuracy(preds, targets) : std::numeric_limits<double>::quiet_NaN();
  m.auc = all_binary && m.count ? auc(scores, binary) : std::numeric_limits<double>::quiet_NaN();
  return m;
}

}  // namespace

Metrics metrics_of(LossKind loss_kind, const std::vector<OutputInfo>& infos,
                   const std::vector<std::vector<double>>& outputs,
                   std::vector<std::vector<double>>* predictions_out) {
  return metrics_over(loss_kind, infos, outputs, predictions_out, [](size_t) { return true; });
}

Metrics metrics_of_split(LossKind loss_kind, const std::vector<OutputInfo>& infos,
                         const std::vector<std::vector<double>>& outputs, QuerySplit split) {
  return metrics_over(loss_kind, infos, outputs, nullptr, [&](size_t o) { return infos[o].split == split; });
}

}  // namespace lrnn::train
