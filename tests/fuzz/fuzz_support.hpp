// Shared by the libFuzzer targets: what counts as a finding.
//
// An input may be rejected only with lrnn::Error (a message naming file:line:col, a limit,
// a shape): any other exception (std::bad_alloc, std::out_of_range, json's type_error...)
// escapes the target and libFuzzer reports it as a crash, like a signal or a sanitizer
// report. That is the rule "library text instead of messages is a bug" made checkable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lrnn/diagnostics.hpp"

namespace lrnn::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `body`; lrnn::Error is an accepted answer to bad input, anything else propagates.
template <class F>
void expect_only_lrnn_errors(F&& body) {
  try {
    body();
  } catch (const lrnn::Error&) {
  }
}

}  // namespace lrnn::fuzz
