// Wall-clock seconds for the training loops' timings (epochs, setup, compute vs exchange).
#pragma once

#include <chrono>

namespace lrnn::train {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace lrnn::train
