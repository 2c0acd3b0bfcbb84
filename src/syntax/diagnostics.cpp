#include "lrnn/diagnostics.hpp"

#include <algorithm>

#include "syntax/statements.hpp"

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
  if (end > start && text[end - 1] == '\r') --end;  // CRLF files
  return std::string_view(text).substr(start, end - start);
}

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The line as it can be shown on a terminal: control characters and bytes that are not
// valid UTF-8 (the byte an "invalid UTF-8" error points at, or a character cut by the
// window) become '?', one byte for one byte so columns stay aligned.
std::string sanitize(std::string_view line) {
  std::string out(line);
  size_t i = 0;
  while (i < out.size()) {
    unsigned char c = static_cast<unsigned char>(out[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t') || c == 0x7F) out[i] = '?';
      ++i;
      continue;
    }
    size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool ok = len != 0 && i + len <= out.size();
    for (size_t k = 1; ok && k < len; ++k) ok = is_continuation(out[i + k]);
    if (!ok) {
      out[i] = '?';
      ++i;
    } else {
      i += len;
    }
  }
  return out;
}

}  // namespace

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Parse: return "parse";
    case ErrorKind::Semantic: return "semantic";
    case ErrorKind::Limit: return "limit";
    case ErrorKind::Shape: return "shape";
    case ErrorKind::Io: return "io";
    case ErrorKind::Runtime: return "runtime";
  }
  return "runtime";
}

std::string format_diagnostic(const Span& span, const std::string& message) {
  if (!span.file || span.line == 0) return "error: " + message;
  std::string out = span.file->name + ":" + std::to_string(span.line) + ":" +
                    std::to_string(span.col) + ": error: " + message;
  std::string read_back;  // the file's text again, when it was let go after parsing
  if (span.file->text_on_disk && !syntax::read_whole_file(span.file->name, read_back)) read_back.clear();
  std::string_view line = line_of(span.file->text_on_disk ? read_back : span.file->text, span.line);
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
  std::string shown = prefix + sanitize(line);
  out += "\n" + shown + "\n";
  // The caret goes under the span's first character: one space per displayed character
  // before it (a multi-byte UTF-8 character is one column on the terminal).
  size_t caret_byte = prefix.size() + (col0 - from);
  for (size_t i = 0; i < caret_byte && i < shown.size(); ++i) {
    if (is_continuation(shown[i])) continue;
    out += shown[i] == '\t' ? '\t' : ' ';
  }
  out += '^';
  size_t len = std::max<uint32_t>(span.length, 1);
  size_t end = std::min(shown.size(), caret_byte + len);
  for (size_t i = caret_byte + 1; i < end; ++i)
    if (!is_continuation(shown[i])) out += '~';
  return out;
}

Error::Error(ErrorKind kind, const Span& span, const std::string& message)
    : std::runtime_error(format_diagnostic(span, message)), kind_(kind), span_(span), message_(message) {}

Error::Error(ErrorKind kind, const std::string& message)
    : std::runtime_error("error: " + message), kind_(kind), message_(message) {}

}  // namespace lrnn
