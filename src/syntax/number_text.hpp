// How lrnn writes a number everywhere (templates, models, pictures, messages): the shortest
// decimal text that reads back as exactly the same double (std::to_chars).
#pragma once

#include <charconv>
#include <string>

namespace lrnn {

inline std::string shortest_number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

}  // namespace lrnn
