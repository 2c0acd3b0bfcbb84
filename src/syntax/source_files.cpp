// Source files: a file's text read whole into a SourceFile (refused by the memory budget
// before its bytes are allocated), or a string given a name. The parser (parser.cpp) and
// the statement index (statements.cpp) read from these; nothing here parses.
#include <filesystem>
#include <fstream>

#include "lrnn/memory.hpp"
#include "syntax/statements.hpp"

namespace lrnn::syntax {

bool read_whole_file(const std::string& path, std::string& out) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) return false;
  // A file bigger than the memory budget (lrnn/memory.hpp) is refused naming it, before
  // its bytes are allocated.
  check_memory(static_cast<uint64_t>(size), "reading the file " + path);
  out.resize(static_cast<size_t>(size));
  in.seekg(0, std::ios::beg);
  in.read(out.data(), size);
  return static_cast<std::streamoff>(in.gcount()) == size;
}

std::shared_ptr<const SourceFile> read_source_file(const std::string& path) {
  auto file = std::make_shared<SourceFile>();
  file->name = path;
  if (!read_whole_file(path, file->text)) throw Error(ErrorKind::Io, "cannot read '" + path + "'");
  return file;
}

void let_go_of_text(const std::shared_ptr<const SourceFile>& read) {
  if (read->text.size() < kLetGoOfTextBytes) return;
  // read_source_file made the file non-const; nothing views its text once it is parsed.
  SourceFile& file = const_cast<SourceFile&>(*read);
  std::string().swap(file.text);
  file.text_on_disk = true;
}

std::shared_ptr<const SourceFile> make_source(std::string_view text, const std::string& name) {
  return std::make_shared<const SourceFile>(SourceFile{name, std::string(text)});
}

}  // namespace lrnn::syntax
