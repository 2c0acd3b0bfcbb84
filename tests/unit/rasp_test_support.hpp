// Helpers shared by the RASP test files.
#pragma once

#include <string>

#include "lrnn/diagnostics.hpp"

namespace rasp_test {

// The full diagnostic of the lrnn::Error that f() throws, or "" if it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const lrnn::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace rasp_test
