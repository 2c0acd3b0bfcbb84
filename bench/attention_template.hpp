// The single-head attention template of bench/attention (attention_lrnn.cpp times its
// passes, attention_stages.cpp its first call by stage), the comma lists of their command
// lines, and the process CPU clock both report.
#pragma once

#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "lrnn/zoo.hpp"

namespace bench {

// CPU seconds of the process (all threads): on a loaded machine, with one thread, the
// work itself, where wall time also counts other jobs' turns.
inline double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

inline std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size()) {
    size_t q = s.find(',', p);
    if (q == std::string::npos) q = s.size();
    out.push_back(s.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

// The mask of a variant: full (none), window (0 <= i - j <= window) or causal (j <= i).
inline lrnn::zoo::Mask attention_mask(const std::string& variant, int window) {
  return variant == "window"   ? lrnn::zoo::Mask::sliding_window(window)
         : variant == "causal" ? lrnn::zoo::Mask::causal()
                               : lrnn::zoo::Mask::none();
}

//   w(I, J) :- d_k, k(J)^T, q(I)[, mask]. [combination=product, aggregation=softmax(J[, D])]
//   out(I) :- w(I, J), v(J). [combination=product, aggregation=sum]
inline std::string attention_template(int d, const lrnn::zoo::Mask& mask) {
  std::string m, over = "J";
  for (const auto& l : mask.literals) m += ", " + l;
  if (m.find('D') != std::string::npos) over = "J, D";  // the window's offset variable
  char scale[64];
  std::snprintf(scale, sizeof scale, "%.17g", 1.0 / std::sqrt(double(d)));
  return std::string("<") + scale + "> d_k.\n" + "w(I, J) :- d_k, k(J)^T, q(I)" + m +
         ". [combination=product, aggregation=softmax(" + over + ")]\n" +
         "out(I) :- w(I, J), v(J). [combination=product, aggregation=sum]\n";
}

}  // namespace bench
