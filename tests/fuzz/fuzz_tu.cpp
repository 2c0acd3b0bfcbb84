// TU dataset folders (read_tu). One input holds the files of one folder, each section
// starting with a line `#<suffix>` (`#_A.txt`, `#_graph_indicator.txt`, ...); a section
// that is absent is a file that is absent. The files go to a per-process folder, since
// read_tu reads a directory as users give it.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_support.hpp"
#include "lrnn/datasets.hpp"

namespace {

namespace fs = std::filesystem;

const char* const kSuffixes[] = {"_A.txt",          "_graph_indicator.txt",  "_graph_labels.txt",
                                 "_node_labels.txt", "_node_attributes.txt", "_edge_labels.txt",
                                 "_edge_attributes.txt"};

fs::path folder() {
  static const fs::path dir = fs::temp_directory_path() / ("lrnn_fuzz_tu_" + std::to_string(::getpid())) / "DS";
  return dir;
}

// Writes the sections of `text` as DS<suffix> files of a fresh folder.
void write_sections(std::string_view text) {
  fs::remove_all(folder());
  fs::create_directories(folder());
  std::ofstream* out = nullptr;
  std::ofstream file;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    bool header = false;
    for (const char* suffix : kSuffixes)
      if (line.size() > 1 && line[0] == '#' && line.substr(1) == suffix) {
        file = std::ofstream(folder() / (std::string("DS") + suffix), std::ios::binary);
        out = &file;
        header = true;
      }
    if (!header && out) *out << line << (end < text.size() ? "\n" : "");
    pos = end + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_sections(lrnn::fuzz::as_text(data, size));
  lrnn::fuzz::expect_only_lrnn_errors([] { lrnn::load_tu(folder().string()); });
  return 0;
}
