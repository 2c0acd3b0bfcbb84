// Query splits inside one example (docs/big_graphs.md "Query splits"): which queries train,
// which validate and which test, given per query or drawn at random with a seed.
#include <algorithm>
#include <cmath>
#include <string>

#include "lrnn/diagnostics.hpp"
#include "train/dataset.hpp"
#include "train/numerics.hpp"

namespace lrnn {

const char* to_string(QuerySplit split) {
  switch (split) {
    case QuerySplit::Train: return "train";
    case QuerySplit::Validation: return "val";
    case QuerySplit::Test: return "test";
    case QuerySplit::None: return "none";
  }
  return "none";
}

}  // namespace lrnn

namespace lrnn::train {

void assign_query_splits(std::span<Sample> samples, std::span<const QuerySplit> split) {
  size_t total = 0;
  for (const Sample& s : samples) total += s.queries.size();
  if (split.size() != total)
    throw Error(ErrorKind::Semantic, "a query split gives " + std::to_string(split.size()) + " parts for " +
                                         std::to_string(total) + " queries: give one per query, in dataset order");
  size_t next = 0;
  for (Sample& s : samples) {
    s.split.assign(split.begin() + static_cast<ptrdiff_t>(next),
                   split.begin() + static_cast<ptrdiff_t>(next + s.queries.size()));
    next += s.queries.size();
    // All training is the same as no split: the sample stays as small as it was.
    if (std::all_of(s.split.begin(), s.split.end(), [](QuerySplit p) { return p == QuerySplit::Train; }))
      s.split.clear();
  }
}

namespace {

void check_fraction(double f, const char* name) {
  if (!(f >= 0 && f <= 1))
    throw Error(ErrorKind::Semantic, std::string("query split: the ") + name + " fraction must be in [0, 1], got " +
                                         std::to_string(f));
}

size_t share_of(double fraction, size_t n) { return static_cast<size_t>(std::llround(fraction * double(n))); }

}  // namespace

std::vector<QuerySplit> random_query_split(size_t n, double train, double validation, double test, uint64_t seed) {
  check_fraction(train, "train");
  check_fraction(validation, "validation");
  check_fraction(test, "test");
  const double sum = train + validation + test;
  if (sum > 1 + 1e-9)
    throw Error(ErrorKind::Semantic, "query split: the fractions " + std::to_string(train) + ", " +
                                         std::to_string(validation) + ", " + std::to_string(test) + " sum to " +
                                         std::to_string(sum) + ", more than 1");
  const size_t n_val = std::min(share_of(validation, n), n);
  const size_t n_test = std::min(share_of(test, n), n - n_val);
  // Fractions summing to 1 leave no query out, whatever the rounding.
  const size_t n_train =
      sum >= 1 - 1e-9 ? n - n_val - n_test : std::min(share_of(train, n), n - n_val - n_test);
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  Rng rng(seed);
  shuffle(std::span<uint32_t>(order), rng);
  std::vector<QuerySplit> split(n, QuerySplit::None);
  size_t k = 0;
  for (; k < n_train; ++k) split[order[k]] = QuerySplit::Train;
  for (; k < n_train + n_val; ++k) split[order[k]] = QuerySplit::Validation;
  for (; k < n_train + n_val + n_test; ++k) split[order[k]] = QuerySplit::Test;
  return split;
}

}  // namespace lrnn::train
