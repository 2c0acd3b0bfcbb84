#include "train/config.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "lrnn/diagnostics.hpp"
#include "lrnn/suggest.hpp"

namespace lrnn::train {

namespace {

void require(bool ok, const std::string& setting, const std::string& expected, double got) {
  if (!ok)
    throw Error(ErrorKind::Semantic, "setting '" + setting + "' must be " + expected + ", got " + std::to_string(got));
}

double checked_rate(double v, const char* setting) {
  require(std::isfinite(v) && v >= 0, setting, "a finite number >= 0", v);
  return v;
}

}  // namespace

TrainConfig make_train_config(const Settings& s, int epochs_trained) {
  TrainConfig c;
  require(s.epochs >= 0, "epochs", "an integer >= 0", s.epochs);
  c.epochs = s.epochs;
  c.optimizer = OptimizerConfig::defaults(OptimizerConfig::parse(s.optimizer));
  c.optimizer.lr = checked_rate(s.lr, "lr");
  if (s.weight_decay) c.optimizer.weight_decay = checked_rate(*s.weight_decay, "weight_decay");
  if (s.momentum) {
    require(std::isfinite(*s.momentum) && *s.momentum >= 0 && *s.momentum < 1, "momentum", "in [0, 1)", *s.momentum);
    c.optimizer.momentum = *s.momentum;
  }
  if (s.beta1) {
    require(*s.beta1 >= 0 && *s.beta1 < 1, "beta1", "in [0, 1)", *s.beta1);
    c.optimizer.beta1 = *s.beta1;
  }
  if (s.beta2) {
    require(*s.beta2 >= 0 && *s.beta2 < 1, "beta2", "in [0, 1)", *s.beta2);
    c.optimizer.beta2 = *s.beta2;
  }
  if (s.eps) {
    require(std::isfinite(*s.eps) && *s.eps > 0, "eps", "a finite number > 0", *s.eps);
    c.optimizer.eps = *s.eps;
  }
  c.loss = parse_loss(s.loss);
  require(std::isfinite(s.label_smoothing) && s.label_smoothing >= 0 && s.label_smoothing <= 1, "label_smoothing",
          "in [0, 1]", s.label_smoothing);
  if (s.label_smoothing != 0 && c.loss != LossKind::CrossEntropy)
    throw Error(ErrorKind::Semantic, "setting 'label_smoothing' applies to the crossentropy loss only, not '" +
                                         to_string(c.loss) + "'");
  c.loss.label_smoothing = s.label_smoothing;
  c.batch_size = s.batch_size;
  c.seed = s.seed;
  c.initializer = Initializer::parse(s.initializer);
  c.schedule.kind = Schedule::parse(s.schedule);
  c.schedule.total_epochs = epochs_trained + s.epochs;
  if (s.step_size) require(*s.step_size >= 1, "step_size", "an integer >= 1", *s.step_size);
  c.schedule.step_size = s.step_size ? *s.step_size : std::max(1, s.epochs / 4);
  require(s.gamma > 0 && s.gamma <= 1, "gamma", "in (0, 1]", s.gamma);
  c.schedule.gamma = s.gamma;
  require(s.warmup >= 1, "warmup", "an integer >= 1", s.warmup);
  c.schedule.warmup = s.warmup;
  if (s.d_model) {
    require(*s.d_model >= 1, "d_model", "an integer >= 1", *s.d_model);
    c.schedule.model_size = *s.d_model;
  }
  require(s.patience >= 0, "patience", "an integer >= 0", s.patience);
  c.patience = s.patience;
  c.shuffle = s.shuffle;
  c.dtype = s.dtype;
  c.query_batch_size = s.query_batch_size;
  // All zeros keep every ground rule: the same as no fan-out (`--fanout 0`, the old default).
  if (std::any_of(s.fanout.begin(), s.fanout.end(), [](size_t f) { return f > 0; })) c.fanout = s.fanout;
  if (s.query_batch_size > 0 && s.batch_size > 0)
    throw Error(ErrorKind::Semantic, "settings 'batch_size' (samples per step) and 'query_batch_size' (queries of a "
                                     "sample per step) exclude each other: give one");
  if (!c.fanout.empty() && s.query_batch_size == 0)
    throw Error(ErrorKind::Semantic, "setting 'fanout' samples the supports of query batches: set 'query_batch_size' "
                                     "too (a fan-out of whole samples would drop ground rules of every pass)");
  if (s.clip_grad_value) {
    require(std::isfinite(*s.clip_grad_value) && *s.clip_grad_value > 0, "clip_grad_value", "a finite number > 0",
            *s.clip_grad_value);
    c.clip_grad_value = *s.clip_grad_value;
  }
  if (s.clip_grad_norm) {
    require(std::isfinite(*s.clip_grad_norm) && *s.clip_grad_norm > 0, "clip_grad_norm", "a finite number > 0",
            *s.clip_grad_norm);
    c.clip_grad_norm = *s.clip_grad_norm;
  }
  return c;
}

Settings settings_of(const TrainConfig& c) {
  Settings s;
  s.dtype = c.dtype;
  s.epochs = c.epochs;
  s.lr = c.optimizer.lr;
  s.optimizer = to_string(c.optimizer.kind);
  s.weight_decay = c.optimizer.weight_decay;
  s.momentum = c.optimizer.momentum;
  s.beta1 = c.optimizer.beta1;
  s.beta2 = c.optimizer.beta2;
  s.eps = c.optimizer.eps;
  s.loss = to_string(c.loss);
  s.batch_size = c.batch_size;
  s.seed = c.seed;
  s.initializer = to_string(c.initializer);
  s.schedule = to_string(c.schedule.kind);
  s.step_size = c.schedule.step_size;
  s.gamma = c.schedule.gamma;
  s.warmup = c.schedule.warmup;
  if (c.schedule.model_size > 0) s.d_model = static_cast<int>(c.schedule.model_size);
  s.label_smoothing = c.loss.label_smoothing;
  s.patience = c.patience;
  s.shuffle = c.shuffle;
  s.query_batch_size = c.query_batch_size;
  s.fanout = c.fanout;
  if (c.clip_grad_value > 0) s.clip_grad_value = c.clip_grad_value;
  if (c.clip_grad_norm > 0) s.clip_grad_norm = c.clip_grad_norm;
  return s;
}

}  // namespace lrnn::train

namespace lrnn {

Dtype parse_dtype(const std::string& name) {
  if (name == "float64") return Dtype::Float64;
  if (name == "float32") return Dtype::Float32;
  // Two candidates: name the nearer one whatever the distance (a misspelling of either).
  const char* valid[] = {"float32", "float64"};
  const std::string closest = edit_distance(name, valid[0]) <= edit_distance(name, valid[1]) ? valid[0] : valid[1];
  throw Error(ErrorKind::Semantic, "unknown dtype '" + name + "'; did you mean '" + closest + "'? (valid: float32, float64)");
}

const char* to_string(Dtype dtype) { return dtype == Dtype::Float32 ? "float32" : "float64"; }

}  // namespace lrnn
