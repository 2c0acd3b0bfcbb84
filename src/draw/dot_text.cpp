#include "draw/dot_text.hpp"

#include <sstream>

#include "lrnn/diagnostics.hpp"

namespace lrnn::draw {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + "\"";
}

std::string value_text(const std::vector<double>& v, int rows, int cols, int digits, size_t max_entries) {
  std::ostringstream out;
  out.precision(digits);
  if (v.size() == 1) {
    out << v[0];
    return out.str();
  }
  out << '[';
  for (size_t i = 0; i < v.size() && i < max_entries; ++i) out << (i ? ", " : "") << v[i];
  if (v.size() > max_entries) out << ", ... " << v.size() - max_entries << " more";
  out << ']';
  if (rows > 1 && cols > 1) out << ' ' << rows << 'x' << cols;
  return out.str();
}

int detail_digits(int value_detail) {
  switch (value_detail) {
    case 0: return 3;
    case 1: return 6;
    case 2: return 12;
    default:
      throw Error(ErrorKind::Semantic,
                  "value_detail " + std::to_string(value_detail) + " is not 0, 1 or 2 (3, 6 or 12 digits)");
  }
}

}  // namespace lrnn::draw
