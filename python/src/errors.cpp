// Every lrnn::Error thrown under a binding becomes lrnn.errors.LrnnError (a ValueError)
// whose str() is the CLI's complete diagnostic and whose attributes give its parts.
#include <string>

#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "lrnn/diagnostics.hpp"

namespace lrnn::python {

namespace {

// Diagnostics quote user input, which may hold bytes that are not UTF-8.
nb::str utf8(const std::string& s) {
  return nb::steal<nb::str>(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    nb::object cls = nb::module_::import_("lrnn.errors").attr("LrnnError");
    const Span& span = e.span();
    nb::object file = span.file ? nb::object(utf8(span.file->name)) : nb::none();
    nb::object line = span.line ? nb::object(nb::int_(span.line)) : nb::none();
    nb::object col = span.line ? nb::object(nb::int_(span.col)) : nb::none();
    nb::object err = cls(utf8(e.what()), utf8(e.message()), nb::str(to_string(e.kind())), file, line, col);
    PyErr_SetObject(cls.ptr(), err.ptr());
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  nb::register_exception_translator(translate);
  // For tests of the translation itself: raises the diagnostic of `message` at a position
  // of `text` (named `name`), exactly as a parse error there would read.
  m.def(
      "_raise_error",
      [](const std::string& text, const std::string& name, uint32_t line, uint32_t col, uint32_t length,
         const std::string& message) {
        auto file = std::make_shared<const SourceFile>(SourceFile{name, text});
        throw Error(ErrorKind::Parse, Span{file, line, col, length}, message);
      },
      nb::arg("text"), nb::arg("name"), nb::arg("line"), nb::arg("col"), nb::arg("length"), nb::arg("message"));
}

}  // namespace lrnn::python
