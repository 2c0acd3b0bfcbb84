// Saved models (JSON checkpoints): loaded from a file, as `lrnn eval` does.
#include <unistd.h>

#include <cstdio>

#include "fuzz_support.hpp"
#include "lrnn/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/lrnn-fuzz-model-" + std::to_string(getpid()) + ".json";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  lrnn::fuzz::expect_only_lrnn_errors([&] { lrnn::Model::load(path); });
  return 0;
}
