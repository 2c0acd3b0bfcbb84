#include "logic/radix_sort.hpp"

#include <algorithm>

namespace lrnn::logic {

namespace {

// Below this many keys a comparison sort is cheaper than the radix sort's passes over its
// counters (a molecule's few dozen edges, once per sample of a dataset).
constexpr size_t kRadixSortMinKeys = 4096;
constexpr unsigned kMaxDigitBits = 16;

}  // namespace

void radix_sort_bits(std::vector<uint64_t>& keys, unsigned low, unsigned bits) {
  bits = std::min(bits, 64 - std::min(low, 64u));
  if (bits == 0 || keys.size() < 2) return;
  const uint64_t field = bits == 64 ? ~uint64_t{0} : ((uint64_t{1} << bits) - 1) << low;
  if (keys.size() < kRadixSortMinKeys)
    return std::stable_sort(keys.begin(), keys.end(), [field](uint64_t a, uint64_t b) { return (a & field) < (b & field); });
  const unsigned passes = (bits + kMaxDigitBits - 1) / kMaxDigitBits;
  const unsigned digit = (bits + passes - 1) / passes;
  std::vector<uint64_t> sorted(keys.size());
  std::vector<uint32_t> start(size_t{1} << digit);
  for (unsigned shift = low; shift < low + bits; shift += digit) {
    const uint64_t mask = (uint64_t{1} << std::min(digit, low + bits - shift)) - 1;  // the last digit may be narrower
    std::fill(start.begin(), start.end(), 0);
    for (const uint64_t k : keys) ++start[(k >> shift) & mask];
    if (start[(keys[0] >> shift) & mask] == keys.size()) continue;
    uint32_t sum = 0;
    for (uint32_t& c : start) {
      const uint32_t n = c;
      c = sum;
      sum += n;
    }
    for (const uint64_t k : keys) sorted[start[(k >> shift) & mask]++] = k;
    keys.swap(sorted);
  }
}

}  // namespace lrnn::logic
