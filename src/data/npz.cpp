// .npz files (numpy.savez, savez_compressed): a zip archive (read with libzip) of .npy
// arrays, whose small header is parsed here. The .npy format:
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
//   "\x93NUMPY", major, minor, header length (2 bytes little-endian in version 1, 4 in 2
//   and 3), then a Python dict literal {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
//   padded with spaces and a newline, then the elements in C order.
#include <zip.h>

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "data/array_share.hpp"
#include "lrnn/datasets.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/memory.hpp"

namespace lrnn {
namespace {

// An error in the file at `path` (bad input: exit 2 from the CLI).
[[noreturn]] void fail(const std::string& path, const std::string& message) {
  throw Error(ErrorKind::Parse, path + ": " + message);
}

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct EntryCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

// One zip entry read in order: exactly `n` bytes at a time, or an error naming the array.
class EntryReader {
 public:
  EntryReader(zip_t* archive, zip_uint64_t index, const std::string& path, const std::string& array)
      : path_(path), array_(array) {
    file_.reset(zip_fopen_index(archive, index, 0));
    if (!file_) fail(path_, "array '" + array_ + "': cannot read its zip entry (" + zip_strerror(archive) + ")");
  }
  void read(void* into, size_t n) {
    auto* out = static_cast<char*>(into);
    while (n > 0) {
      const zip_int64_t got = zip_fread(file_.get(), out, n);
      if (got < 0) fail(path_, "array '" + array_ + "': " + zip_file_strerror(file_.get()));
      if (got == 0) fail(path_, "array '" + array_ + "': the entry ends early (truncated .npy data)");
      out += got;
      n -= static_cast<size_t>(got);
    }
  }
  bool at_end() {
    char extra = 0;
    return zip_fread(file_.get(), &extra, 1) == 0;
  }

 private:
  std::unique_ptr<zip_file_t, EntryCloser> file_;
  const std::string& path_;
  std::string array_;
};

// The value of `key` in the header dict: the text after "'key':" up to its end
// (a quoted string, a word, or a parenthesised tuple).
std::string_view header_value(std::string_view header, std::string_view key) {
  const std::string quoted = "'" + std::string(key) + "'";
  size_t at = header.find(quoted);
  if (at == std::string_view::npos) return {};
  at = header.find(':', at + quoted.size());
  if (at == std::string_view::npos) return {};
  at = header.find_first_not_of(' ', at + 1);
  if (at == std::string_view::npos) return {};
  const char open = header[at];
  const size_t end = open == '\'' ? header.find('\'', at + 1) + 1
                     : open == '(' ? header.find(')', at) + 1
                                   : header.find_first_of(",}", at);
  if (end == 0 || end == std::string_view::npos || end > header.size()) return {};
  return header.substr(at, end - at);
}

// 'descr' -> type and element size; other dtypes are refused by name.
std::pair<ArrayView::Type, size_t> element_type(std::string_view descr, const std::string& path,
                                                const std::string& array) {
  if (descr == "'<f8'") return {ArrayView::Type::Float64, 8};
  if (descr == "'<f4'") return {ArrayView::Type::Float32, 4};
  if (descr == "'<i8'") return {ArrayView::Type::Int64, 8};
  if (descr == "'<i4'") return {ArrayView::Type::Int32, 4};
  if (descr == "'|b1'") return {ArrayView::Type::Bool, 1};
  fail(path, "array '" + array + "' has dtype " + std::string(descr) +
                 ": supported are float32, float64, int32, int64 and bool, little-endian ('<f4', '<f8', '<i4', "
                 "'<i8', '|b1')");
}

std::vector<size_t> parse_shape(std::string_view tuple, const std::string& path, const std::string& array) {
  if (tuple.size() < 2 || tuple.front() != '(' || tuple.back() != ')')
    fail(path, "array '" + array + "': the .npy header has no shape tuple");
  std::vector<size_t> shape;
  size_t i = 1;
  while (i + 1 < tuple.size()) {
    while (i < tuple.size() && (tuple[i] == ' ' || tuple[i] == ',')) ++i;
    if (i + 1 >= tuple.size()) break;
    size_t value = 0, digits = 0;
    while (i < tuple.size() && tuple[i] >= '0' && tuple[i] <= '9') {
      if (value > (SIZE_MAX - 9) / 10) fail(path, "array '" + array + "': a dimension too large");
      value = value * 10 + static_cast<size_t>(tuple[i++] - '0');
      ++digits;
    }
    if (digits == 0) fail(path, "array '" + array + "': malformed shape " + std::string(tuple));
    shape.push_back(value);
  }
  return shape;
}

NpyArray read_npy(zip_t* archive, zip_uint64_t index, const std::string& path, const std::string& name) {
  EntryReader in(archive, index, path, name);
  unsigned char prefix[8];
  in.read(prefix, 8);
  if (std::memcmp(prefix, "\x93NUMPY", 6) != 0) fail(path, "array '" + name + "' is not a .npy entry (no \\x93NUMPY magic)");
  const int major = prefix[6];
  if (major < 1 || major > 3)
    fail(path, "array '" + name + "': .npy format version " + std::to_string(major) + " (1 to 3 are read)");
  size_t header_length = 0;
  unsigned char length[4] = {0, 0, 0, 0};
  in.read(length, major == 1 ? 2 : 4);
  header_length = length[0] | (length[1] << 8) | (size_t{length[2]} << 16) | (size_t{length[3]} << 24);
  if (header_length > (size_t{1} << 20)) fail(path, "array '" + name + "': a .npy header of " + std::to_string(header_length) + " bytes");
  std::string header(header_length, '\0');
  in.read(header.data(), header_length);

  NpyArray a;
  a.name = name;
  const std::string_view order = header_value(header, "fortran_order");
  if (order == "True")
    fail(path, "array '" + name + "' is in Fortran order: save it in C order (numpy.ascontiguousarray)");
  if (order != "False") fail(path, "array '" + name + "': the .npy header has no fortran_order");
  const std::string_view descr = header_value(header, "descr");
  if (descr.empty()) fail(path, "array '" + name + "': the .npy header has no descr");
  const auto [type, element_size] = element_type(descr, path, name);
  a.type = type;
  a.shape = parse_shape(header_value(header, "shape"), path, name);
  size_t count = 1;
  for (size_t d : a.shape) {
    if (d != 0 && count > SIZE_MAX / 16 / d) fail(path, "array '" + name + "': shape too large");
    count *= d;
  }
  const size_t bytes = count * element_size;
  // Asked of the memory budget (lrnn/memory.hpp) before the array is allocated: a header
  // claiming a huge shape is refused naming the file and the array.
  check_memory(bytes, path + ": array '" + name + "' of " + std::to_string(count) + " entries");
  a.storage.resize((bytes + 7) / 8);
  in.read(a.storage.data(), bytes);
  if (!in.at_end()) fail(path, "array '" + name + "': the entry holds more bytes than its shape " + std::string(header_value(header, "shape")));
  return a;
}

}  // namespace

std::vector<NpyArray> read_npz(const std::string& path) {
  int code = 0;
  std::unique_ptr<zip_t, ZipCloser> archive(zip_open(path.c_str(), ZIP_RDONLY, &code));
  if (!archive) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    const std::string why = zip_error_strerror(&error);
    zip_error_fini(&error);
    if (code == ZIP_ER_NOENT || code == ZIP_ER_OPEN || code == ZIP_ER_READ)
      throw Error(ErrorKind::Io, path + ": cannot read the file (" + why + ")");
    fail(path, "not an .npz file (a zip archive of .npy arrays): " + why);
  }
  std::vector<NpyArray> arrays;
  std::set<std::string> seen;
  const zip_int64_t entries = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    const char* entry = zip_get_name(archive.get(), static_cast<zip_uint64_t>(i), 0);
    std::string name = entry ? entry : "";
    if (name.size() < 5 || name.compare(name.size() - 4, 4, ".npy") != 0)
      fail(path, "entry '" + name + "' is not a .npy array (an .npz holds name.npy entries only)");
    name.resize(name.size() - 4);
    if (!seen.insert(name).second) fail(path, "array '" + name + "' is stored twice");
    arrays.push_back(read_npy(archive.get(), static_cast<zip_uint64_t>(i), path, name));
  }
  return arrays;
}

namespace {

// The graph arrays of an .npz file's `arrays` (views into them).
GraphArrays graph_arrays_of(const std::vector<NpyArray>& arrays, const std::string& path) {
  GraphArrays g;
  bool have_x = false, have_edges = false;
  for (const NpyArray& a : arrays) {
    if (a.name == "x") g.x = a.view(), have_x = true;
    else if (a.name == "edge_index") g.edge_index = a.view(), have_edges = true;
    else if (a.name == "y") g.y = a.view();
    else if (a.name == "train_mask") g.train_mask = a.view();
    else if (a.name == "val_mask") g.val_mask = a.view();
    else if (a.name == "test_mask") g.test_mask = a.view();
    else
      fail(path, "array '" + a.name + "' is not a graph array: an .npz graph holds x, edge_index and optionally y, "
                 "train_mask, val_mask, test_mask");
  }
  if (!have_x) fail(path, "no array 'x' (the node features, nodes x features)");
  if (!have_edges) fail(path, "no array 'edge_index' (2 x edges node ids)");
  return g;
}

}  // namespace

ArrayGraph load_npz_graph(const std::string& path, const GraphNames& names) {
  const std::vector<NpyArray> arrays = read_npz(path);
  return graph_from_arrays(graph_arrays_of(arrays, path), names, path);
}

ArrayGraph load_npz_graph_share(const std::string& path, const GraphNames& names) {
  std::vector<NpyArray> arrays = read_npz(path);
  const GraphArrays g = graph_arrays_of(arrays, path);  // views into the arrays' storage, which moves with them
  return data::share_of_arrays(g, names, path, std::move(arrays));
}

}  // namespace lrnn
