// Examples and queries files: the same input is parsed as both.
#include "fuzz_support.hpp"
#include "lrnn/syntax.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = lrnn::fuzz::as_text(data, size);
  lrnn::fuzz::expect_only_lrnn_errors([&] { lrnn::parse_examples(text, "<fuzz examples>"); });
  lrnn::fuzz::expect_only_lrnn_errors([&] { lrnn::parse_queries(text, "<fuzz queries>"); });
  return 0;
}
