#include "lrnn/diagnostics.hpp"

#include <algorithm>

namespace lrnn {

namespace {

// The text of 1-based line `line` in `text`, without its newline.
std::string_view line_of(const std::string& text, uint32_t line) {
  size_t start = 0;
  for (uint32_t l = 1; l < line; ++l) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) return {};
    start = nl + 1;
  }
  size_t end = text.find('\n', start);
  if (end == std::string::npos) end = text.size();
  return std::string_view(text).substr(start, end - start);
}

}  // namespace

std::string format_diagnostic(const Span& span, const std::string& message) {
  if (!span.file || span.line == 0) return "error: " + message;
  std::string out = span.file->name + ":" + std::to_string(span.line) + ":" +
                    std::to_string(span.col) + ": error: " + message;
  std::string_view line = line_of(span.file->text, span.line);
  // A huge line (minified input, a 10 MB fact list) is shown as a window around the
  // column so the caret stays readable.
  constexpr size_t kWindow = 120;
  size_t col0 = span.col > 0 ? span.col - 1 : 0;
  size_t from = 0;
  std::string prefix;
  if (line.size() > kWindow) {
    from = col0 > kWindow / 2 ? col0 - kWindow / 2 : 0;
    if (from > 0) prefix = "...";
    line = line.substr(from, kWindow);
  }
  std::string shown = prefix + std::string(line);
  // Non-printable bytes would garble the terminal; show them as '?'.
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') c = '?';
  out += "\n" + shown + "\n";
  size_t caret_col = prefix.size() + (col0 - from);
  for (size_t i = 0; i < caret_col && i < shown.size(); ++i) out += shown[i] == '\t' ? '\t' : ' ';
  out += '^';
  size_t len = std::max<uint32_t>(span.length, 1);
  for (size_t i = 1; i < len && caret_col + i < shown.size(); ++i) out += '~';
  return out;
}

Error::Error(ErrorKind kind, const Span& span, const std::string& message)
    : std::runtime_error(format_diagnostic(span, message)), kind_(kind), span_(span), message_(message) {}

Error::Error(ErrorKind kind, const std::string& message)
    : std::runtime_error("error: " + message), kind_(kind), message_(message) {}

}  // namespace lrnn
