// One graph as one example's text for the exec tests: `nodes` nodes with three features
// each (<[..]> x(nK)) and `degree` edges out of every node (edge(nK, nJ), the targets spread
// by fixed multipliers), and one query o(nK) per node (targets 0 and 1).
#pragma once

#include <cmath>
#include <string>

namespace lrnn::test {

inline std::string graph_text(int nodes, int degree) {
  std::string f = "g :- ";
  for (int n = 0; n < nodes; ++n)
    f += "<[" + std::to_string(std::sin(0.7 * n)) + ", " + std::to_string(std::cos(1.3 * n)) + ", " +
         std::to_string(0.001 * (n % 997) - 0.4) + "]> x(n" + std::to_string(n) + "), ";
  for (int n = 0; n < nodes; ++n)
    for (int k = 1; k <= degree; ++k)
      f += "edge(n" + std::to_string(n) + ", n" + std::to_string((n * 7919 + k * 104729) % nodes) + "), ";
  f.resize(f.size() - 2);
  return f + ".\n";
}

inline std::string node_queries(int nodes) {
  std::string q = "g :- ";
  for (int n = 0; n < nodes; ++n) q += std::string(n ? ", " : "") + (n % 3 ? "1.0" : "0.0") + " o(n" + std::to_string(n) + ")";
  return q + ".\n";
}

}  // namespace lrnn::test
