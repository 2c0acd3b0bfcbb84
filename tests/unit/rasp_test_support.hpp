// Helpers shared by the RASP test files.
#pragma once

#include <string>
#include <vector>

#include "lrnn/diagnostics.hpp"
#include "lrnn/rasp.hpp"

namespace lrnn::rasp {  // the compiler's input enumeration (compiler.cpp), not public
size_t compiled_input_count(size_t vocab, int max_len);
std::vector<Value> compiled_input(const std::vector<Value>& vocab, int max_len, size_t k);
}  // namespace lrnn::rasp

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
