// Losses of one output against its target, with exact gradients, and the prediction
// reported for an output. Cross-entropy takes logits and is written in its stable forms
// (softplus, log-sum-exp).
#include <algorithm>
#include <cmath>
#include <string>

#include "lrnn/diagnostics.hpp"
#include "train/numerics.hpp"

namespace lrnn::train {

namespace {

inline double sigmoid(double z) {
  if (z >= 0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

// log(1 + exp(z)) without overflow.
inline double softplus(double z) { return std::max(z, 0.0) + std::log1p(std::exp(-std::abs(z))); }

std::string entries(size_t n) { return std::to_string(n) + (n == 1 ? " entry" : " entries"); }

}  // namespace

double loss(LossKind kind, std::span<const double> y, std::span<const double> target,
            std::span<double> grad) {
  const size_t n = y.size();
  if (grad.size() != n)
    throw Error(ErrorKind::Runtime, "loss gradient buffer has " + entries(grad.size()) +
                                        " for an output of " + entries(n));
  if (n == 0) throw Error(ErrorKind::Shape, "loss of an empty output");
  switch (kind) {
    case LossKind::Mse: {
      if (target.size() != n)
        throw Error(ErrorKind::Shape, "mse loss: the output has " + entries(n) + " but the target has " +
                                          entries(target.size()));
      double sum = 0;
      const double scale = 2.0 / static_cast<double>(n);
      for (size_t i = 0; i < n; ++i) {
        const double d = y[i] - target[i];
        sum += d * d;
        grad[i] = scale * d;
      }
      return sum / static_cast<double>(n);
    }
    case LossKind::MseSum: {
      if (target.size() != n)
        throw Error(ErrorKind::Shape, "mse loss: the output has " + entries(n) + " but the target has " +
                                          entries(target.size()));
      double sum = 0;
      for (size_t i = 0; i < n; ++i) {
        const double d = y[i] - target[i];
        sum += d * d;
        grad[i] = 2.0 * d;
      }
      return sum;
    }
    case LossKind::CrossEntropy: {
      if (n == 1) {
        // Binary from a logit z with target t in [0, 1]: -t log s(z) - (1-t) log(1 - s(z))
        // = softplus(z) - t z; dL/dz = s(z) - t.
        if (target.size() != 1)
          throw Error(ErrorKind::Shape, "cross-entropy loss: a single-entry output needs a single-entry "
                                        "target, got " + entries(target.size()));
        // torch's label smoothing belongs to the multi-class loss (nn.CrossEntropyLoss);
        // its binary loss has none, and smoothing one class would mean nothing.
        if (kind.label_smoothing != 0)
          throw Error(ErrorKind::Semantic, "label smoothing needs a multi-class output (more than one entry, "
                                           "a softmax over classes); this output has one entry");
        const double z = y[0], t = target[0];
        // A probability: a class index or a +-1 label here would train toward a value the
        // sigmoid cannot reach, with a loss that looks like any other.
        if (!(t >= 0 && t <= 1))
          throw Error(ErrorKind::Shape, "cross-entropy loss: a single-entry output (a sigmoid of its logit) needs "
                                        "a target in [0, 1], got " + std::to_string(t));
        grad[0] = sigmoid(z) - t;
        return softplus(z) - t * z;
      }
      // Multi-class from logits: log-softmax with log-sum-exp.
      const double m = *std::max_element(y.begin(), y.end());
      double sum = 0;
      for (size_t i = 0; i < n; ++i) sum += std::exp(y[i] - m);
      const double lse = m + std::log(sum);
      if (target.size() == 1) {
        const double c = target[0];
        if (!(c >= 0 && c < static_cast<double>(n) && c == std::floor(c)))
          throw Error(ErrorKind::Shape, "cross-entropy loss: class index target " + std::to_string(c) +
                                            " is not an integer in [0, " + std::to_string(n) + ")");
        const size_t k = static_cast<size_t>(c);
        // Smoothed one-hot t_i = (1 - e) [i == k] + e / n: L = lse - sum_i t_i y_i.
        const double e = kind.label_smoothing, spread = e / static_cast<double>(n);
        double mean_y = 0;
        for (size_t i = 0; i < n; ++i) {
          grad[i] = std::exp(y[i] - lse) - spread - (i == k ? 1.0 - e : 0.0);
          mean_y += y[i];
        }
        mean_y /= static_cast<double>(n);
        return e == 0 ? lse - y[k] : (1.0 - e) * (lse - y[k]) + e * (lse - mean_y);
      }
      if (target.size() != n)
        throw Error(ErrorKind::Shape, "cross-entropy loss: the output has " + entries(n) +
                                          " but the target has " + entries(target.size()) +
                                          " (expected a one-hot/probability vector or a class index)");
      // L = -sum_i t_i (y_i - lse); dL/dy_i = (sum t) p_i - t_i (p - t for a distribution).
      // Smoothed as torch smooths a probability target: t_i -> (1 - e) t_i + e / n (whatever
      // sum(t) is), then the same loss of the smoothed target.
      const double e = kind.label_smoothing, spread = e / static_cast<double>(n);
      double total = 0, value = 0;
      for (size_t i = 0; i < n; ++i) {
        const double t = (1.0 - e) * target[i] + spread;
        total += t;
        value -= t * (y[i] - lse);
      }
      for (size_t i = 0; i < n; ++i) grad[i] = total * std::exp(y[i] - lse) - ((1.0 - e) * target[i] + spread);
      return value;
    }
  }
  return 0;
}

void predict(LossKind kind, std::span<const double> y, std::span<double> prediction) {
  const size_t n = y.size();
  if (prediction.size() != n)
    throw Error(ErrorKind::Runtime, "prediction buffer has " + entries(prediction.size()) +
                                        " for an output of " + entries(n));
  if (kind == LossKind::Mse || kind == LossKind::MseSum || n == 0) {
    std::copy(y.begin(), y.end(), prediction.begin());
    return;
  }
  if (n == 1) {
    prediction[0] = sigmoid(y[0]);
    return;
  }
  const double m = *std::max_element(y.begin(), y.end());
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += (prediction[i] = std::exp(y[i] - m));
  for (size_t i = 0; i < n; ++i) prediction[i] /= sum;
}

}  // namespace lrnn::train
