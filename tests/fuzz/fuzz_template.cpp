// Templates: parse; what parses prints and parses back, and compiles into a model.
#include "fuzz_support.hpp"
#include "lrnn/model.hpp"
#include "lrnn/syntax.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lrnn::fuzz::expect_only_lrnn_errors([&] {
    lrnn::TemplateAst ast = lrnn::parse_template(lrnn::fuzz::as_text(data, size), "<fuzz>");
    lrnn::parse_template(lrnn::print_template(ast), "<printed>");
    lrnn::Model model(lrnn::Template::from_ast(std::move(ast)));
  });
  return 0;
}
