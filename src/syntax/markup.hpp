// Text placed inside SVG/HTML markup (pictures, reports): the characters XML gives
// meaning to, escaped. One helper for every stage that writes markup.
#pragma once

#include <string>
#include <string_view>

namespace lrnn {

inline std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace lrnn
