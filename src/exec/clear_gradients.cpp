// Gradients zeroed by the pass that used them (exec/clear_gradients.hpp).
#include "exec/clear_gradients.hpp"

#include <algorithm>

namespace lrnn::exec {

template <class T>
void zero_gradients(const Plan& plan, BasicWorkspace<T>& ws) {
  // All zero already: only a larger plan's new entries need writing (resize fills them).
  // Never shrunk then: samples' plans differ in size, and growing back to a larger one
  // would fill its entries again (the entries past this plan stay 0, untouched).
  if (!ws.grads_zero) ws.grads.assign(plan.num_values, T(0));
  else if (ws.grads.size() < plan.num_values) ws.grads.resize(plan.num_values, T(0));
  ws.grads_zero = false;  // the pass about to run writes them
}

template <class T>
void clear_step_gradients(const Plan& plan, size_t k, T* g) {
  if (plan.step_values.size() != plan.steps.size()) return;
  const auto [begin, end] = plan.step_values[k];
  std::fill(g + begin, g + end, T(0));
}

template <class T>
void finish_clearing(const Plan& plan, BasicWorkspace<T>& ws) {
  const bool listed = plan.step_values.size() == plan.steps.size() && !plan.steps.empty();
  const size_t end = std::min<size_t>(listed ? plan.step_values[0].first : plan.num_values, ws.grads.size());
  // The data facts' gradients no step writes (Plan::hot_only_facts) are still 0.
  const size_t begin = std::min<size_t>(plan.hot_only_facts, end);
  std::fill(ws.grads.begin() + begin, ws.grads.begin() + end, T(0));
  ws.grads_zero = true;
}

#define LRNN_CLEAR(T)                                                            \
  template void zero_gradients<T>(const Plan&, BasicWorkspace<T>&);              \
  template void clear_step_gradients<T>(const Plan&, size_t, T*);                \
  template void finish_clearing<T>(const Plan&, BasicWorkspace<T>&);
LRNN_CLEAR(double)
LRNN_CLEAR(float)
#undef LRNN_CLEAR

}  // namespace lrnn::exec
