// Bringing a plan and its fact values into cache ahead of its pass.
//
// Training runs one small plan per sample structure (NCI1: ~4000 graphs, each its own
// plan), which together do not fit in the caches, so each pass started by waiting on main
// memory for every group's fields and indices, one dependent load after another: perf put
// over half of the GCN epoch's transform-sum, atom-sum and step-dispatch time on those
// first loads. Issuing a later sample's loads while the current one computes hides them.
//
// A plan is four levels of pointers (the Plan object, its group arrays, each group's
// arrays and input blocks, each input block's indices), and finding a level's addresses
// reads the level above. So a caller running samples s0, s1, ... prefetches, before running
// s_i, level 0 of s_{i+4}, level 1 of s_{i+3}, level 2 of s_{i+2} and level 3 of s_{i+1}:
// each level's addresses are then read from lines fetched one sample earlier, and the
// prefetching itself never waits. (With three levels, the Plan object's own first line was
// a miss each level-0 call waited on: a quarter of prefetch()'s time, 3-5% of the NCI1
// epochs at batch 1.)
//
// The hints bring the lines into the level-2 cache, not the level-1: a plan's levels ask
// for ~100 lines at once (NCI1's GraphSAGE: its six rule groups alone are 54), and as
// prefetcht0 every line that missed held one of the level-1 cache's few miss buffers until
// it came, so the pass's own loads queued behind the burst. With prefetcht1 the NCI1
// GraphSAGE epoch at batch 1 took ~8% less; the kernels' first reads of the lines are then
// level-2 hits.
//
// The samples' dense fact values are not hinted: their copy into the workspace reads them
// in order, which the hardware prefetcher follows, and a hint per line of them (NCI1: 140
// per graph in float64) filled the queue of outstanding misses, stalling the hints after
// them: without them the NCI1 GCN epoch at batch 1 took 4-5% less (float64 and float32).
// A sparse copy's few lines per sample are hinted (SampleSteps::prefetch_ahead, two
// samples ahead): each sample's first read of them was a miss (NCI1 GCN at batch 1: 5%
// less time per epoch).
#pragma once

#include <cstddef>

#include "exec/plan.hpp"

namespace lrnn::exec {

inline constexpr int kPrefetchLevels = 4;

// One hint for the cache line at p. On x86-64 an asm statement the compiler must keep:
// GCC takes __builtin_prefetch for an instruction without effects, so a function that does
// nothing else is "pure" to it, and a call of a pure function that returns nothing is
// dropped. That removed every hint of level 1 below (the rule groups' arrays) for as long as
// it was a function of its own, and perf put a tenth of the NCI1 GraphSAGE epoch at batch 1
// on the misses that followed.
inline void prefetch_line(const char* p, bool for_write) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#if defined(__PRFCHW__)
  if (for_write) {
    asm volatile("prefetchw %0" : : "m"(*p));
    return;
  }
#endif
  asm volatile("prefetcht0 %0" : : "m"(*p));
#else
  if (for_write) __builtin_prefetch(p, 1);
  else __builtin_prefetch(p);
#endif
}

// The same hint for the level-2 cache only (prefetcht1 on x86-64): for a line wanted a
// sample or more ahead (a plan's levels, below), not by the next few instructions.
inline void prefetch_line_to_l2(const char* p) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  asm volatile("prefetcht1 %0" : : "m"(*p));
#else
  __builtin_prefetch(p, 0, 2);
#endif
}

// Hints that `bytes` bytes from `data` are read (written: for_write) soon: every cache line
// of them. Inline, for the kernels that fetch rows ahead in their hot loops
// (exec/transform_sum.cpp). Hints only: no value changes.
inline void prefetch_bytes(const void* data, size_t bytes, bool for_write = false) {
  const char* p = static_cast<const char*>(data);
  for (size_t offset = 0; offset < bytes; offset += 64) prefetch_line(p + offset, for_write);
}

// prefetch_bytes for the level-2 cache only (prefetch_line_to_l2).
inline void prefetch_bytes_to_l2(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  for (size_t offset = 0; offset < bytes; offset += 64) prefetch_line_to_l2(p + offset);
}

// Prefetch hints for level `level` (0 to 3) of what forward reads of `plan`. No value
// changes.
void prefetch(const Plan& plan, int level);

// Hints that the slots steps [first, last] of `plan` allocated (Plan::step_values; the
// buffer is allocated in step order) are written soon, in a workspace's `values` and, when
// not null, its `grads` (entries of `value_size` bytes): what one phase of a sample reads
// and writes, fetched while the sample before it computes (train/batch_norm_steps.cpp,
// whose batch of workspaces overflows L2). Nothing for a plan that lists no step values.
void prefetch_steps(const Plan& plan, size_t first, size_t last, const void* values, const void* grads,
                    size_t value_size);

}  // namespace lrnn::exec
