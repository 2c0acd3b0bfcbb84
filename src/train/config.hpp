// Settings (include/lrnn/training.hpp, the one place defaults live) to the engine's
// TrainConfig and back: the only mapping of options to training, used by the public API
// and so by the CLI and the Python package.
#pragma once

#include "lrnn/training.hpp"
#include "train/engine.hpp"

namespace lrnn::train {

// Validates every setting (an lrnn::Error names the one at fault) and resolves what is
// left unset: the optimizer's own defaults, the step size (a quarter of the epochs), the
// schedule's length (counted from the epochs the model has already trained).
TrainConfig make_train_config(const Settings& settings, int epochs_trained);

// The settings a checkpoint's TrainConfig stands for (every field set).
Settings settings_of(const TrainConfig& config);

}  // namespace lrnn::train
