// Portable random numbers, initialisers, learning-rate schedules, and the names of every
// training option (parse / to_string).
#include "train/numerics.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <numbers>
#include <string_view>
#include <utility>

#include "lrnn/diagnostics.hpp"
#include "syntax/number_text.hpp"

namespace lrnn::train {

namespace {

// Lower-case without '_', '-' and spaces: "Cross_Entropy" == "crossentropy".
std::string normalize_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '_' || c == '-' || c == ' ') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

template <typename Kind>
struct Named {
  const char* canonical;
  std::vector<const char*> aliases;  // normalized
  Kind kind;
};

template <typename Kind>
Kind lookup(const std::vector<Named<Kind>>& names, const std::string& name, const char* what) {
  const std::string n = normalize_name(name);
  for (const auto& e : names)
    for (const char* a : e.aliases)
      if (n == a) return e.kind;
  std::string expected;
  for (size_t i = 0; i < names.size(); ++i) expected += (i ? ", " : "") + std::string(names[i].canonical);
  throw Error(ErrorKind::Semantic,
              std::string("unknown ") + what + " '" + name + "'; expected one of " + expected);
}

template <typename Kind>
std::string canonical(const std::vector<Named<Kind>>& names, Kind kind) {
  for (const auto& e : names)
    if (e.kind == kind) return e.canonical;
  return "?";
}

// Function-local statics: safe to use from other static initialisers.
const std::vector<Named<InitKind>>& init_names() {
  static const std::vector<Named<InitKind>> names = {
    {"uniform", {"uniform"}, InitKind::Uniform},
    {"normal", {"normal", "gaussian"}, InitKind::Normal},
    {"glorot", {"glorot", "xavier", "glorotuniform", "xavieruniform"}, InitKind::Glorot},
    {"he", {"he", "kaiming", "henormal", "kaimingnormal"}, InitKind::He},
    {"constant", {"constant", "const"}, InitKind::Constant},
    {"torch", {"torch", "pytorch"}, InitKind::Torch},
    {"longtail", {"longtail"}, InitKind::Longtail},
  };
  return names;
}
const std::vector<Named<LossKind>>& loss_names() {
  static const std::vector<Named<LossKind>> names = {
    {"mse", {"mse", "squarederror", "meansquarederror"}, LossKind::Mse},
    {"mse_sum", {"mse_sum", "msesum", "sumsquarederror"}, LossKind::MseSum},
    {"crossentropy", {"crossentropy", "ce", "bce", "crossentropywithlogits"}, LossKind::CrossEntropy},
  };
  return names;
}
const std::vector<Named<OptimizerKind>>& optimizer_names() {
  static const std::vector<Named<OptimizerKind>> names = {
    {"sgd", {"sgd"}, OptimizerKind::Sgd},
    {"adam", {"adam"}, OptimizerKind::Adam},
    {"adamw", {"adamw"}, OptimizerKind::AdamW},
  };
  return names;
}
const std::vector<Named<ScheduleKind>>& schedule_names() {
  static const std::vector<Named<ScheduleKind>> names = {
    {"constant", {"constant", "none", "fixed"}, ScheduleKind::Constant},
    {"step", {"step", "steplr"}, ScheduleKind::Step},
    {"exponential", {"exponential", "exp", "exponentiallr"}, ScheduleKind::Exponential},
    {"cosine", {"cosine", "cos", "cosineannealing", "cosineannealinglr"}, ScheduleKind::Cosine},
    {"linear", {"linear", "arithmetic", "arithmeticlr"}, ScheduleKind::Linear},
    {"noam", {"noam"}, ScheduleKind::Noam},
  };
  return names;
}

}  // namespace

// ---- random numbers -----------------------------------------------------------------------

double uniform01(Rng& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double standard_normal(Rng& rng) {
  const double u1 = 1.0 - uniform01(rng);  // (0, 1]: log is finite
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

uint64_t uniform_below(Rng& rng, uint64_t n) {
  // Reject the draws below 2^64 mod n so that every residue is equally likely.
  const uint64_t threshold = (0 - n) % n;
  while (true) {
    const uint64_t x = rng();
    if (x >= threshold) return x % n;
  }
}

template <typename T>
static void fisher_yates(std::span<T> items, Rng& rng) {
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[uniform_below(rng, i)]);
}
void shuffle(std::span<uint32_t> items, Rng& rng) { fisher_yates(items, rng); }
void shuffle(std::span<size_t> items, Rng& rng) { fisher_yates(items, rng); }

// ---- initialisers ---------------------------------------------------------------------------

Initializer Initializer::parse(const std::string& name) {
  Initializer init;
  std::string base = name;
  const size_t open = name.find('(');
  if (open != std::string::npos) {
    const size_t close = name.rfind(')');
    std::string_view arg(name);
    if (close == std::string::npos || close < open)
      throw Error(ErrorKind::Semantic, "initializer '" + name + "' has an unclosed '('");
    arg = arg.substr(open + 1, close - open - 1);
    while (!arg.empty() && arg.front() == ' ') arg.remove_prefix(1);
    while (!arg.empty() && arg.back() == ' ') arg.remove_suffix(1);
    double v = 0;
    auto [ptr, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), v);
    if (ec != std::errc() || ptr != arg.data() + arg.size() || !std::isfinite(v))
      throw Error(ErrorKind::Semantic,
                  "initializer '" + name + "' needs a number in parentheses, e.g. uniform(0.1)");
    init.scale = v;
    base = name.substr(0, open);
  }
  init.kind = lookup(init_names(), base, "initializer");
  return init;
}

std::string to_string(const Initializer& init) {
  std::string s = canonical(init_names(), init.kind);
  if (init.scale != 1.0) {
    s += '(';
    s += shortest_number(init.scale);
    s += ')';
  }
  return s;
}

void initialize(const Initializer& init, neural::Parameters& params, Rng& rng) {
  for (uint32_t p = 0; p < params.count(); ++p) {
    const neural::ParamInfo& info = params.info(p);
    if (info.initialized) continue;
    initialize(init, info.shape.rows, info.shape.cols, std::span<double>(params.data(p), info.shape.size()), rng);
  }
}

void initialize(const Initializer& init, int rows, int cols, std::span<double> w, Rng& rng) {
  const double fan_in = std::max(cols, 1), fan_out = std::max(rows, 1);
  switch (init.kind) {
    case InitKind::Uniform:
      for (double& x : w) x = init.scale * (2.0 * uniform01(rng) - 1.0);
      return;
    case InitKind::Normal:
      for (double& x : w) x = init.scale * standard_normal(rng);
      return;
    case InitKind::Glorot: {
      const double a = std::sqrt(6.0 / (fan_in + fan_out));
      for (double& x : w) x = a * (2.0 * uniform01(rng) - 1.0);
      return;
    }
    case InitKind::He: {
      const double sd = std::sqrt(2.0 / fan_in);
      for (double& x : w) x = sd * standard_normal(rng);
      return;
    }
    case InitKind::Constant:
      std::fill(w.begin(), w.end(), init.scale);
      return;
    case InitKind::Torch: {
      const double a = 1.0 / std::sqrt(fan_in);
      for (double& x : w) x = a * (2.0 * uniform01(rng) - 1.0);
      return;
    }
    case InitKind::Longtail:
      for (double& x : w) x = 10.0 * (1.0 - std::pow(uniform01(rng), 1.0 / 51.0));
      return;
  }
}

// ---- names -----------------------------------------------------------------------------------

double loss_divisor(LossKind kind, size_t count) {
  return kind == LossKind::MseSum ? 1.0 : static_cast<double>(count);
}

LossKind parse_loss(const std::string& name) { return lookup(loss_names(), name, "loss"); }
std::string to_string(LossKind kind) { return canonical(loss_names(), kind); }

OptimizerKind OptimizerConfig::parse(const std::string& name) {
  return lookup(optimizer_names(), name, "optimizer");
}
std::string to_string(OptimizerKind kind) { return canonical(optimizer_names(), kind); }

OptimizerConfig OptimizerConfig::defaults(OptimizerKind kind) {
  OptimizerConfig c;
  c.kind = kind;
  if (kind == OptimizerKind::AdamW) c.weight_decay = 0.01;
  return c;
}

ScheduleKind Schedule::parse(const std::string& name) {
  return lookup(schedule_names(), name, "learning-rate schedule");
}
std::string to_string(ScheduleKind kind) { return canonical(schedule_names(), kind); }

// ---- schedules ---------------------------------------------------------------------------------

double Schedule::lr(double base_lr, int epoch) const {
  epoch = std::max(epoch, 0);
  switch (kind) {
    case ScheduleKind::Constant:
    case ScheduleKind::Noam:  // per step: step_lr
      return base_lr;
    case ScheduleKind::Step:  // torch.optim.lr_scheduler.StepLR
      return base_lr * std::pow(gamma, epoch / std::max(step_size, 1));
    case ScheduleKind::Exponential:  // ExponentialLR
      return base_lr * std::pow(gamma, epoch);
    case ScheduleKind::Linear:  // PyNeuraLogic's ArithmeticLR: lr0 / step_size less per epoch, down to 0
      return std::max(0.0, base_lr - base_lr * epoch / std::max(step_size, 1));
    case ScheduleKind::Cosine: {
      // CosineAnnealingLR's closed form with T_max = total_epochs; it stays at min_lr
      // after total_epochs instead of rising again.
      const int total = std::max(total_epochs, 1);
      const double progress = std::min(epoch, total) / static_cast<double>(total);
      return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
    }
  }
  return base_lr;
}

double Schedule::step_lr(double base_lr, uint64_t step) const {
  if (kind != ScheduleKind::Noam) return base_lr;
  const double s = static_cast<double>(std::max<uint64_t>(step, 1));
  const double scale = model_size > 0 ? 1.0 / std::sqrt(model_size) : 1.0;
  return base_lr * scale * std::min(1.0 / std::sqrt(s), s * std::pow(static_cast<double>(warmup), -1.5));
}

}  // namespace lrnn::train
