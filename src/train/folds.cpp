// Stratified k-fold assignment (cross-validation splits as the graph-learning field uses),
// declared in include/lrnn/training.hpp.
#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lrnn/training.hpp"
#include "lrnn/diagnostics.hpp"

namespace lrnn {

std::vector<int> stratified_folds(const std::vector<int>& sample_class, int k, uint64_t seed) {
  if (k < 2 || static_cast<size_t>(k) > sample_class.size())
    throw Error(ErrorKind::Semantic, "cross-validation needs 2 <= folds <= samples (" +
                                         std::to_string(sample_class.size()) + "), got " + std::to_string(k));
  std::map<int, std::vector<size_t>> by_class;
  for (size_t s = 0; s < sample_class.size(); ++s) by_class[sample_class[s]].push_back(s);
  std::mt19937_64 rng(seed);
  std::vector<int> fold(sample_class.size(), -1);
  int next = 0;
  for (auto& [cls, members] : by_class) {
    // Fisher-Yates with the raw engine (std::shuffle's use of the engine is not portable).
    for (size_t i = members.size(); i > 1; --i) std::swap(members[i - 1], members[rng() % i]);
    for (size_t s : members) {
      fold[s] = next;
      next = (next + 1) % k;
    }
  }
  return fold;
}

}  // namespace lrnn
