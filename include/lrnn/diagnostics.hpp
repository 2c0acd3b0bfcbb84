// Source text, spans and the one error type every user-facing failure uses.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace lrnn {

// A file (or in-memory string) that was read; kept so that any later stage can point
// back at the exact text a construct came from.
struct SourceFile {
  std::string name;  // path as given by the user, or "<string>"
  std::string text;
  // The text was let go once parsed (a big graph's examples file, while its facts are
  // grounded): a diagnostic reads its line back from the file `name`.
  bool text_on_disk = false;
};

// All sources behind one template / dataset. Shared (not copied) by everything parsed
// from them.
using Sources = std::vector<std::shared_ptr<const SourceFile>>;

// Where a construct was written. Spans are provenance, not content: two ASTs that differ
// only in spans compare equal (that is what makes parse(print(t)) == t meaningful).
struct Span {
  std::shared_ptr<const SourceFile> file;  // null for constructs built in code
  uint32_t line = 0;                       // 1-based; 0 = unknown
  uint32_t col = 0;                        // 1-based, in bytes
  uint32_t length = 1;                     // bytes underlined by the caret line
  bool operator==(const Span&) const { return true; }
};

enum class ErrorKind { Parse, Semantic, Limit, Shape, Io, Runtime };

// Every user-facing error. what() is the complete diagnostic:
//   file:line:col: error: message
//   <the source line>
//       ^~~~
// (without the position and caret lines when the span is unknown).
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const Span& span, const std::string& message);
  Error(ErrorKind kind, const std::string& message);  // no position
  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }  // without position/caret
  const Span& span() const { return span_; }

 private:
  ErrorKind kind_;
  Span span_;
  std::string message_;
};

// "parse", "semantic", "limit", "shape", "io", "runtime": the kind as the CLI's --json and
// Python's LrnnError.kind name it.
const char* to_string(ErrorKind kind);

// "file:line:col: error: message\n<line>\n<caret>" (the text of Error::what()).
std::string format_diagnostic(const Span& span, const std::string& message);

}  // namespace lrnn
