// Accuracy and AUC over a whole set of outputs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <string>
#include <vector>

#include "logic/radix_sort.hpp"
#include "lrnn/diagnostics.hpp"
#include "train/numerics.hpp"

namespace lrnn::train {

namespace {

// Targets in {-1, 1} (any negative target) are classified by sign; otherwise at 0.5.
double binary_threshold(const std::vector<std::vector<double>>& targets) {
  for (const auto& t : targets)
    if (t.size() == 1 && t[0] < 0) return 0.0;
  return 0.5;
}

size_t argmax(const std::vector<double>& v) {
  return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());  // first on ties
}

}  // namespace

bool has_negative_target(const std::vector<std::vector<double>>& targets) { return binary_threshold(targets) == 0.0; }

double accuracy(const std::vector<std::vector<double>>& predictions,
                const std::vector<std::vector<double>>& targets) {
  if (predictions.size() != targets.size())
    throw Error(ErrorKind::Runtime, "accuracy of " + std::to_string(predictions.size()) +
                                        " predictions against " + std::to_string(targets.size()) + " targets");
  if (predictions.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t correct = correct_predictions(predictions, targets, has_negative_target(targets));
  return static_cast<double>(correct) / static_cast<double>(predictions.size());
}

size_t correct_predictions(const std::vector<std::vector<double>>& predictions,
                           const std::vector<std::vector<double>>& targets, bool negative_targets) {
  if (predictions.size() != targets.size())
    throw Error(ErrorKind::Runtime, "accuracy of " + std::to_string(predictions.size()) +
                                        " predictions against " + std::to_string(targets.size()) + " targets");
  const double threshold = negative_targets ? 0.0 : 0.5;
  size_t correct = 0;
  for (size_t i = 0; i < predictions.size(); ++i) {
    const auto& p = predictions[i];
    const auto& t = targets[i];
    if (p.empty() || t.empty())
      throw Error(ErrorKind::Runtime, "accuracy: empty prediction or target at output " + std::to_string(i));
    if (p.size() == 1) {
      // A prediction exactly at the threshold counts as the negative class.
      if (t.size() != 1)
        throw Error(ErrorKind::Shape, "accuracy: a single-entry prediction against a target of " +
                                          std::to_string(t.size()) + " entries");
      correct += (p[0] > threshold) == (t[0] > threshold);
      continue;
    }
    size_t cls;
    if (t.size() == 1) {
      cls = static_cast<size_t>(std::llround(t[0]));
    } else if (t.size() == p.size()) {
      cls = argmax(t);
    } else {
      throw Error(ErrorKind::Shape, "accuracy: a prediction of " + std::to_string(p.size()) +
                                        " entries against a target of " + std::to_string(t.size()));
    }
    correct += argmax(p) == cls;
  }
  return correct;
}

double accuracy_of_scalars(const std::vector<double>& predictions, const std::vector<double>& targets) {
  if (predictions.size() != targets.size())
    throw Error(ErrorKind::Runtime, "accuracy of " + std::to_string(predictions.size()) +
                                        " predictions against " + std::to_string(targets.size()) + " targets");
  if (predictions.empty()) return std::numeric_limits<double>::quiet_NaN();
  const bool signed_targets = std::any_of(targets.begin(), targets.end(), [](double t) { return t < 0; });
  const double threshold = signed_targets ? 0.0 : 0.5;  // as binary_threshold
  size_t correct = 0;
  for (size_t i = 0; i < predictions.size(); ++i) correct += (predictions[i] > threshold) == (targets[i] > threshold);
  return static_cast<double>(correct) / static_cast<double>(predictions.size());
}

namespace {

// A 64-bit key of a number that is not NaN, ordered as the numbers are: equal numbers (-0
// and 0 among them) give equal keys.
uint64_t order_key(double x) {
  x += 0.0;  // -0 becomes 0
  uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  return bits >> 63 ? ~bits : bits | (uint64_t{1} << 63);
}

}  // namespace

double auc(const std::vector<double>& scores, const std::vector<double>& targets) {
  if (scores.size() != targets.size())
    throw Error(ErrorKind::Runtime, "AUC of " + std::to_string(scores.size()) + " scores against " +
                                        std::to_string(targets.size()) + " targets");
  // Mann-Whitney U: the probability that a random positive scores above a random negative,
  // ties counted half, from the mid-ranks of the sorted scores.
  // A NaN score has no rank (and would break the sort's ordering).
  if (std::any_of(scores.begin(), scores.end(), [](double s) { return std::isnan(s); }))
    return std::numeric_limits<double>::quiet_NaN();
  const bool signed_targets = std::any_of(targets.begin(), targets.end(), [](double t) { return t < 0; });
  const double threshold = signed_targets ? 0.0 : 0.5;
  // The scores as integer keys in the same order, radix-sorted (a 2M-node graph's queries:
  // a comparison sort of (score, positive) pairs was a third of its evaluation), all of
  // them and the positives' apart; each run of equal scores then gets its mid-rank once
  // per positive in it, as a walk over sorted pairs gave.
  std::vector<uint64_t> all(scores.size()), positive;
  for (size_t i = 0; i < scores.size(); ++i) {
    all[i] = order_key(scores[i]);
    if (targets[i] > threshold) positive.push_back(all[i]);
  }
  logic::radix_sort(all);
  logic::radix_sort(positive);
  double positive_rank_sum = 0;
  const size_t positives = positive.size();
  for (size_t i = 0, p = 0; i < all.size();) {
    size_t j = i, tied_positives = 0;
    while (j < all.size() && all[j] == all[i]) ++j;
    for (; p < positive.size() && positive[p] == all[i]; ++p) ++tied_positives;
    const double mid_rank = 0.5 * static_cast<double>(i + 1 + j);  // ranks i+1 .. j
    for (size_t k = 0; k < tied_positives; ++k) positive_rank_sum += mid_rank;
    i = j;
  }
  const size_t negatives = scores.size() - positives;
  if (positives == 0 || negatives == 0) return std::numeric_limits<double>::quiet_NaN();
  const double p = static_cast<double>(positives), q = static_cast<double>(negatives);
  return (positive_rank_sum - p * (p + 1) / 2) / (p * q);
}

}  // namespace lrnn::train
