// The whole pipeline: a template and labelled examples separated by a line "%%", grounded,
// neuralized and trained for one epoch. Finds what parsing alone cannot: shapes, limits,
// grounding blow-ups, numerics.
#include "fuzz_support.hpp"
#include "lrnn/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = lrnn::fuzz::as_text(data, size);
  const size_t cut = text.find("\n%%\n");
  if (cut == std::string_view::npos) return 0;
  lrnn::fuzz::expect_only_lrnn_errors([&] {
    lrnn::Template tmpl = lrnn::Template::from_string(std::string(text.substr(0, cut)), "<fuzz template>");
    lrnn::Dataset data = lrnn::Dataset::from_text(std::string(text.substr(cut + 4)));
    lrnn::Settings settings;
    settings.epochs = 1;
    lrnn::Model model(tmpl, settings);
    model.train(data);
  });
  return 0;
}
