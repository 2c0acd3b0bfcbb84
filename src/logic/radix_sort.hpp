#pragma once
// Stable least-significant-digit radix sorts of 64-bit keys: the grounder's packed edges
// (logic/grounder_facts.cpp) and the network's ground rules by head (neural/network.cpp).
// At a graph's millions of keys a counting sort over one big key range scatters into
// random cache lines and pages; digits of at most 16 bits keep each pass's counters in
// cache and its writes in a few thousand sequential streams.
#include <cstdint>
#include <vector>

namespace lrnn::logic {

// Sorts keys by their bits [low, low + bits) only, stably (keys equal there keep their
// order): the digits are as few as 16-bit digits need, of equal width, and a digit all
// keys share is skipped. Below a few thousand keys a comparison sort does it.
void radix_sort_bits(std::vector<uint64_t>& keys, unsigned low, unsigned bits);

// Sorts keys by their whole value.
inline void radix_sort(std::vector<uint64_t>& keys) { radix_sort_bits(keys, 0, 64); }

}  // namespace lrnn::logic
