// Bringing a plan and its fact values into cache ahead of its pass.
//
// Training runs one small plan per sample structure (NCI1: ~4000 graphs, each its own
// plan), which together do not fit in the caches, so each pass started by waiting on main
// memory for every group's fields and indices, one dependent load after another: perf put
// over half of the GCN epoch's transform-sum, atom-sum and step-dispatch time on those
// first loads. Issuing the next sample's loads while the current one computes hides them.
#pragma once

#include <span>

#include "exec/plan.hpp"

namespace lrnn::exec {

// Prefetch hints for everything forward reads of `plan` and `data` (no values change; the
// group structs themselves are read to find their arrays).
void prefetch(const Plan& plan, std::span<const double> data);

}  // namespace lrnn::exec
