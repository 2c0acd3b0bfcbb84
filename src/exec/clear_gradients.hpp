// Value gradients zeroed by the backward pass that used them, instead of by a fill of the
// whole buffer before the next pass. Backward accumulates (+=) into every gradient slot, so
// each pass needs them all at 0; a training step used to zero a plan's whole gradient
// buffer before seeding its loss (with batch norm, the 32 held workspaces of a batch,
// ~12 MB in float, long out of cache by then: 15-20% of a GIN epoch on NCI1). A clearing
// backward zeroes each step's slots right after the step's backward has read them (they
// are in cache), and the fact values' slots at its end, leaving the buffer all zero
// (BasicWorkspace::grads_zero) for the next pass. The arithmetic is unchanged: results are
// bit-identical to a pass over a zero-filled buffer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "exec/plan.hpp"

namespace lrnn::exec {

// (GradientSlots, how a backward leaves them, is declared with backward in exec/plan.hpp.)

// Before seeding a pass's loss gradients: ws.grads at least `plan`'s size, every entry 0
// (a fill only when the last backward in `ws` did not clear it).
template <class T>
void zero_gradients(const Plan& plan, BasicWorkspace<T>& ws);

// After step k's backward in a clearing pass: zeroes the gradients of the values step k
// allocated (Plan::step_values; nothing when the plan lists none).
template <class T>
void clear_step_gradients(const Plan& plan, size_t k, T* g);

// At the end of a clearing pass (after backward_end has read the facts' gradients): zeroes
// the gradients below the first step's values (the facts'; those of Plan::hot_only_facts,
// which no step writes, are still 0), or all of them for a plan that lists no step values,
// and marks ws.grads all zero.
template <class T>
void finish_clearing(const Plan& plan, BasicWorkspace<T>& ws);

}  // namespace lrnn::exec
