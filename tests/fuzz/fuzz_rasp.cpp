// `.rasp` programs: parse, and run what parses on a short input.
#include "fuzz_support.hpp"
#include "lrnn/rasp.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lrnn::fuzz::expect_only_lrnn_errors([&] {
    lrnn::rasp::Program program = lrnn::rasp::parse_rasp(std::string(lrnn::fuzz::as_text(data, size)), "<fuzz>");
    lrnn::rasp::run(program, lrnn::rasp::parse_input("abc"));
  });
  return 0;
}
