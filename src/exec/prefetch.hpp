// Bringing a plan and its fact values into cache ahead of its pass.
//
// Training runs one small plan per sample structure (NCI1: ~4000 graphs, each its own
// plan), which together do not fit in the caches, so each pass started by waiting on main
// memory for every group's fields and indices, one dependent load after another: perf put
// over half of the GCN epoch's transform-sum, atom-sum and step-dispatch time on those
// first loads. Issuing a later sample's loads while the current one computes hides them.
//
// A plan is three levels of pointers (the plan's group arrays, each group's arrays and
// input blocks, each input block's indices), and finding a level's addresses reads the
// level above. So a caller running samples s0, s1, ... prefetches, before running s_i,
// level 0 of s_{i+3}, level 1 of s_{i+2} and level 2 of s_{i+1}: each level's addresses are
// then read from lines fetched one sample earlier, and the prefetching itself never waits.
#pragma once

#include <cstddef>
#include <span>

#include "exec/plan.hpp"

namespace lrnn::exec {

inline constexpr int kPrefetchLevels = 3;

// Prefetch hints for level `level` (0, 1 or 2) of what forward reads of `plan`; level 0
// also covers the fact values `data` (double or float). No value changes.
void prefetch(const Plan& plan, std::span<const std::byte> data, int level);

}  // namespace lrnn::exec
