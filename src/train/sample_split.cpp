#include "train/sample_split.hpp"

#include <algorithm>
#include <cmath>

#include "lrnn/diagnostics.hpp"

namespace lrnn::train {

void split_indices(size_t n, double fraction, uint64_t seed, std::vector<size_t>& train, std::vector<size_t>& test) {
  if (!(fraction > 0 && fraction < 1))
    throw Error(ErrorKind::Semantic, "--test-fraction must be between 0 and 1 (exclusive)");
  if (n < 2)
    throw Error(ErrorKind::Semantic, "--test-fraction needs at least two samples, the data has " + std::to_string(n));
  size_t n_test = static_cast<size_t>(std::llround(fraction * static_cast<double>(n)));
  n_test = std::min(std::max<size_t>(n_test, 1), n - 1);
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  Rng rng(seed);
  shuffle(std::span<uint32_t>(order), rng);
  test.assign(order.end() - static_cast<ptrdiff_t>(n_test), order.end());
  train.assign(order.begin(), order.end() - static_cast<ptrdiff_t>(n_test));
  std::sort(test.begin(), test.end());  // keep file order inside each part
  std::sort(train.begin(), train.end());
}

void split_samples(std::vector<Sample>& all, double fraction, uint64_t seed, std::vector<Sample>& train,
                   std::vector<Sample>& test) {
  std::vector<size_t> train_idx, test_idx;
  split_indices(all.size(), fraction, seed, train_idx, test_idx);
  for (size_t i : train_idx) train.push_back(std::move(all[i]));
  for (size_t i : test_idx) test.push_back(std::move(all[i]));
  all.clear();
}

}  // namespace lrnn::train
