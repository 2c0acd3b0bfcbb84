// SGD (momentum, L2), Adam and AdamW with PyTorch's update rules (torch.optim, the
// single-tensor, non-capturable code path), so parity runs against PyTorch agree.
#include <cmath>
#include <string>

#include "lrnn/diagnostics.hpp"
#include "train/numerics.hpp"

namespace lrnn::train {

namespace {

// torch.lerp: start + w (end - start), computed from the nearer end as PyTorch does.
inline double lerp(double start, double end, double w) {
  return w < 0.5 ? start + w * (end - start) : end - (end - start) * (1.0 - w);
}

}  // namespace

Optimizer::Optimizer(const OptimizerConfig& config, size_t num_params)
    : config_(config),
      m_(num_params, 0.0),
      v_(config.kind == OptimizerKind::Sgd ? 0 : num_params, 0.0) {}

void Optimizer::step(std::span<double> params, std::span<const double> grads, double lr) {
  const size_t n = m_.size();
  if (params.size() != n || grads.size() != n)
    throw Error(ErrorKind::Runtime, "optimizer built for " + std::to_string(n) + " parameters got " +
                                        std::to_string(params.size()) + " parameters and " +
                                        std::to_string(grads.size()) + " gradients");
  ++t_;
  const double wd = config_.weight_decay;
  switch (config_.kind) {
    case OptimizerKind::Sgd: {
      // g = grad + wd p; buf = momentum buf + g (buf = g on the first step); p -= lr buf.
      const double mu = config_.momentum;
      for (size_t i = 0; i < n; ++i) {
        double g = grads[i];
        if (wd != 0) g += wd * params[i];
        if (mu != 0) {
          m_[i] = t_ == 1 ? g : mu * m_[i] + g;
          g = m_[i];
        }
        params[i] -= lr * g;
      }
      return;
    }
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: {
      const bool decoupled = config_.kind == OptimizerKind::AdamW;
      const double b1 = config_.beta1, b2 = config_.beta2, eps = config_.eps;
      const double t = static_cast<double>(t_);
      const double bias_correction1 = 1.0 - std::pow(b1, t);
      const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(b2, t));
      const double step_size = lr / bias_correction1;
      for (size_t i = 0; i < n; ++i) {
        double g = grads[i];
        if (decoupled)
          params[i] *= 1.0 - lr * wd;  // AdamW: decay the weight itself
        else if (wd != 0)
          g += wd * params[i];  // Adam: L2 term in the gradient
        m_[i] = lerp(m_[i], g, 1.0 - b1);
        v_[i] = v_[i] * b2 + (1.0 - b2) * g * g;
        const double denom = std::sqrt(v_[i]) / bias_correction2_sqrt + eps;
        params[i] -= step_size * (m_[i] / denom);
      }
      return;
    }
  }
}

std::vector<double> Optimizer::state() const {
  // [step count, first moments (SGD: momentum buffer)..., second moments (Adam)...]
  std::vector<double> s;
  s.reserve(1 + m_.size() + v_.size());
  s.push_back(static_cast<double>(t_));
  s.insert(s.end(), m_.begin(), m_.end());
  s.insert(s.end(), v_.begin(), v_.end());
  return s;
}

void Optimizer::set_state(const std::vector<double>& s) {
  const size_t expected = 1 + m_.size() + v_.size();
  if (s.size() != expected)
    throw Error(ErrorKind::Io, "optimizer state has " + std::to_string(s.size()) + " numbers, expected " +
                                   std::to_string(expected) + " for " + to_string(config_.kind) +
                                   " with " + std::to_string(m_.size()) + " parameters");
  if (!(s[0] >= 0 && s[0] == std::floor(s[0]) && s[0] < 0x1.0p53))
    throw Error(ErrorKind::Io, "optimizer state has an invalid step count " + std::to_string(s[0]));
  t_ = static_cast<uint64_t>(s[0]);
  std::copy(s.begin() + 1, s.begin() + 1 + m_.size(), m_.begin());
  std::copy(s.begin() + 1 + m_.size(), s.end(), v_.begin());
}

}  // namespace lrnn::train
