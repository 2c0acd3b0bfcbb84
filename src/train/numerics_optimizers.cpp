// SGD (momentum, L2), Adam and AdamW with PyTorch's update rules (torch.optim, the
// single-tensor, non-capturable code path), so parity runs against PyTorch agree.
#include <cmath>
#include <limits>
#include <string>

#include "exec/multiply_add.hpp"
#include "lrnn/diagnostics.hpp"
#include "train/numerics.hpp"

namespace lrnn::train {

namespace {

// This file is compiled without contraction (CMakeLists.txt: -ffp-contract=off), and every
// multiply-add that the compiler used to fuse is written out with exec::multiply_add:
// left to the compiler, the choice of which products to fuse differed between the
// vectorised loop and its scalar remainder whenever the loop changed shape (AdamW's
// `p (1 - lr wd) - step m / d` fused either product), so the same parameter came out of the
// two with different bits. They are the fusions GCC made in the vector loops before (the
// same bits as then).
using exec::multiply_add;

// torch.lerp: start + w (end - start), computed from the nearer end as PyTorch does.
// `from_start` is w < 0.5, decided once per step (w is the same for every parameter).
template <bool from_start>
inline double lerp(double start, double end, double w) {
  return from_start ? multiply_add(w, end - start, start) : multiply_add(-(end - start), 1.0 - w, end);
}

// A moment that has decayed below the smallest normal double is 0. Without a gradient a
// moment shrinks by its beta each step until it is a few subnormal units, where the
// rounding of `m - 0.1 m` gives m back: it stays there for good, and x86 processors take
// ~100 times longer for every operation on it. The MUTAG GCN at batch 1 (a parameter per
// node label, most labels absent from most graphs) reached that after ~5000 steps and its
// float32 epochs took 2.4 ms instead of 1.8 ms from then on. PyTorch keeps the subnormal;
// the update it makes, lr m / (sqrt(v) + eps) <= 1e-300, changes no parameter above 1e-280,
// so the parameters stay those of PyTorch.
inline double flush_subnormal(double x) { return std::abs(x) < std::numeric_limits<double>::min() ? 0.0 : x; }

// One Adam / AdamW step over n parameters. Every choice that is the same for all of them
// (the kind, whether there is weight decay, the lerp's end) is a template argument, so the
// loop has no branch and the compiler vectorises it (this file is compiled with
// -fno-math-errno, so sqrt is one instruction: it is correctly rounded either way, and
// every parameter goes through the same expressions, so the values are the same bits as a
// scalar loop's). At batch 1 the step runs once per sample over every parameter: on the
// MUTAG GCN (2.4k parameters, ~17 atoms per graph) the scalar loop was a quarter of the
// epoch.
struct AdamConstants {
  double lr, wd, b1, b2, eps, step_size, bias_correction2_sqrt;
};

// x / c for a c that is the same for every parameter of a step, without the divider: the
// loop below is bound by its dividers (two divisions and a square root per parameter), and
// this takes one of the divisions to the multiply-add units. With y = RN(1 / c) and
// q = RN(x y), the remainder r = x - c q is exact in one fused multiply-add, and
// RN(q + r y) is RN(x / c) (Markstein's theorem: y within half an ulp of 1 / c, q within
// one ulp of x / c; no overflow or underflow, which holds for the square root of a second
// moment, a normal number or 0, over c = sqrt(1 - beta2^t) in (0, 1]). Where x is 0,
// infinite or NaN, x / c is x itself for such a c, and x is returned: the remainder would
// be NaN for an infinite x, and +0 for -0. (Not x / c: the loop is vectorised, and both
// sides of the choice are computed.) The same bits as the division
// (NumericsOptimizer.DivisionByTheBiasCorrectionIsTheDivisions tests it on random and edge
// values). Without FMA instructions (a portable build) it is the division.
inline double divide_by_constant(double x, double c, double inv_c) {
#ifdef __FMA__
  const double q = x * inv_c;
  const double r = std::fma(-q, c, x);
  const double corrected = std::fma(r, inv_c, q);
  return std::isfinite(x) && x != 0.0 ? corrected : x;
#else
  (void)inv_c;
  return x / c;
#endif
}
template <bool decoupled, bool l2, bool from_start>
void adam_loop(size_t n, double* __restrict params, const double* __restrict grads, double* __restrict m,
               double* __restrict v, const AdamConstants& c) {
  const double lr = c.lr, wd = c.wd, b1 = c.b1, b2 = c.b2, eps = c.eps;
  const double step_size = c.step_size, bias_correction2_sqrt = c.bias_correction2_sqrt;
  const double inv_bias_correction2_sqrt = 1.0 / bias_correction2_sqrt;
  const double decay = multiply_add(-lr, wd, 1.0);
  // The moments are flushed as they are stored, after the step has read them. (Once a loop
  // of its own, which read and wrote both moments again: when GCC still chose which
  // products to fuse, folding it in had changed them; the multiply-adds are explicit now.)
  for (size_t i = 0; i < n; ++i) {
    double g = grads[i];
    if constexpr (l2) g = multiply_add(wd, params[i], g);  // Adam: L2 term in the gradient
    const double mi = lerp<from_start>(m[i], g, 1.0 - b1);
    const double vi = multiply_add(v[i], b2, (1.0 - b2) * g * g);
    const double denom = divide_by_constant(std::sqrt(vi), bias_correction2_sqrt, inv_bias_correction2_sqrt) + eps;
    if constexpr (decoupled)  // AdamW: the weight itself decayed, then stepped
      params[i] = multiply_add(params[i], decay, -(step_size * (mi / denom)));
    else
      params[i] = multiply_add(-step_size, mi / denom, params[i]);
    m[i] = flush_subnormal(mi);
    v[i] = flush_subnormal(vi);
  }
}

template <bool decoupled, bool l2>
void adam_loop(size_t n, double* params, const double* grads, double* m, double* v, const AdamConstants& c) {
  if (1.0 - c.b1 < 0.5) adam_loop<decoupled, l2, true>(n, params, grads, m, v, c);
  else adam_loop<decoupled, l2, false>(n, params, grads, m, v, c);
}

}  // namespace

double quotient_by_bias_correction(double x, double c) { return divide_by_constant(x, c, 1.0 / c); }

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
        if (wd != 0) g = multiply_add(wd, params[i], g);
        if (mu != 0) {
          m_[i] = flush_subnormal(t_ == 1 ? g : multiply_add(mu, m_[i], g));
          g = m_[i];
        }
        params[i] = multiply_add(-lr, g, params[i]);
      }
      return;
    }
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: {
      const double b1 = config_.beta1, b2 = config_.beta2;
      const double t = static_cast<double>(t_);
      const double bias_correction1 = 1.0 - std::pow(b1, t);
      const AdamConstants c{lr, wd, b1, b2, config_.eps, lr / bias_correction1, std::sqrt(1.0 - std::pow(b2, t))};
      if (config_.kind == OptimizerKind::AdamW) adam_loop<true, false>(n, params.data(), grads.data(), m_.data(), v_.data(), c);
      else if (wd != 0) adam_loop<false, true>(n, params.data(), grads.data(), m_.data(), v_.data(), c);
      else adam_loop<false, false>(n, params.data(), grads.data(), m_.data(), v_.data(), c);
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
