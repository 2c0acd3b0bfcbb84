// Minibatch steps of a model with batch-normalised predicates (`P/n [normalization=batch]`):
// every sample of the batch runs its own plan, but in phases that meet at each normalised
// predicate, where its batch statistics are taken over all the samples' atoms of it
// (exec/batch_norm.hpp); backward meets at the same places in reverse.
#include <algorithm>
#include <numeric>
#include <type_traits>
#include <string>

#include "exec/clear_gradients.hpp"
#include "exec/prefetch.hpp"
#include "lrnn/diagnostics.hpp"
#include "train/engine.hpp"
#include "train/example_facts.hpp"

namespace lrnn::train {

namespace {

std::string predicate_name(const neural::TemplateModel& model, uint32_t norm) {
  return model.predicates[model.batch_norms[norm].predicate].key();
}

uint32_t norm_at(const exec::Plan& plan, size_t k) {
  return plan.atom_groups[plan.steps[plan.norm_steps[k]].index].norm;
}

// The batch's workspaces are all held at once, so each is kept near its current plan's size:
// grown only as needed, they would each keep the largest plan any batch gave them (on NCI1
// 32 x ~8 MB of its largest graphs, a 240 MB high-water mark). Reallocating one that is
// more than twice too big costs less than the page faults the oversized buffers cost anyway.
template <class T>
void fit_workspace(exec::BasicWorkspace<T>& ws, size_t values) {
  for (exec::AlignedBuffer<T>* buf : {&ws.values, &ws.grads})
    if (buf->capacity() > 2 * values + 4096) {
      exec::AlignedBuffer<T> fitted;
      fitted.reserve(values);
      buf->swap(fitted);
      if (buf == &ws.values) ws.data_key = {};  // the values it named are gone
    }
}

}  // namespace

// The order in which the batch's normalised predicates meet: one that every sample's plan
// agrees with (each plan lists its normalised groups in step order). A predicate whose
// atoms lie at two depths of one network, or predicates whose orders in the networks no
// one sequence agrees with, have no such order: refused, naming them.
std::vector<uint32_t> SampleSteps::norm_order(const neural::TemplateModel& model,
                                              std::span<const uint32_t> locals) const {
  const size_t k = model.batch_norms.size();
  std::vector<std::vector<uint8_t>> before(k, std::vector<uint8_t>(k, 0));
  std::vector<uint8_t> present(k, 0);
  std::vector<uint8_t> seen_plan(plans_.size(), 0);
  for (uint32_t local : locals) {
    const uint32_t p = plan_of_[local];
    if (seen_plan[p]) continue;
    seen_plan[p] = 1;
    const exec::Plan& plan = *plans_[p];
    std::vector<uint8_t> in_plan(k, 0);
    for (size_t i = 0; i < plan.norm_steps.size(); ++i) {
      const uint32_t t = norm_at(plan, i);
      if (in_plan[t])
        throw Error(ErrorKind::Semantic,
                    "normalization=batch of " + predicate_name(model, t) +
                        ": its atoms lie at more than one depth of a sample's network (the predicate is recursive "
                        "or derived at several depths); batch statistics need all of them in one layer");
      in_plan[t] = present[t] = 1;
      for (size_t j = 0; j < i; ++j) before[norm_at(plan, j)][t] = 1;
    }
  }
  std::vector<uint32_t> order;
  std::vector<uint8_t> placed(k, 0);
  for (size_t round = 0; round < k; ++round) {
    for (uint32_t t = 0; t < k; ++t) {
      if (placed[t] || !present[t]) continue;
      bool ready = true;
      for (uint32_t u = 0; u < k && ready; ++u) ready = placed[u] || !before[u][t];
      if (!ready) continue;
      placed[t] = 1;
      order.push_back(t);
      break;
    }
  }
  // Left over: each waits for another left-over one (a cycle of any length through the
  // plans' orders). Running on would pass their groups with the running statistics.
  for (uint32_t t = 0; t < k; ++t)
    if (present[t] && !placed[t])
      for (uint32_t u = 0; u < k; ++u)
        if (present[u] && !placed[u] && before[u][t])
          throw Error(ErrorKind::Semantic, "normalization=batch of " + predicate_name(model, t) + " and " +
                                               predicate_name(model, u) +
                                               ": they come in different orders in the batch's networks, so no "
                                               "training step can take their batch statistics in one order");
  return order;
}

template <class T>
void SampleSteps::run_normalized(const neural::TemplateModel& model, const exec::ParamView<T>& params,
                                 const PreparedSet& set, std::span<const uint32_t> locals, LossKind loss_kind,
                                 size_t mean_over, bool with_metrics, bool with_values,
                                 std::vector<exec::BasicWorkspace<T>>& workspaces,
                                 const std::function<void(size_t, SampleGradient&)>& take) {
  const size_t n = locals.size();
  if (workspaces.size() < n) workspaces.resize(n);
  if (slots_.size() < n) slots_.resize(n);
  const neural::Parameters* example_params = set.example_facts ? &set.example_facts->params : nullptr;
  auto plan_of = [&](size_t s) -> const exec::Plan& { return *plans_[plan_of_[locals[s]]]; };
  const std::vector<uint32_t> order = norm_order(model, locals);
  batch_stats_.resize(model.batch_norms.size());
  batch_stats_set_.assign(model.batch_norms.size(), 0);

  // Sample s runs in the workspace of its rank by plan size (the largest in workspace 0):
  // shuffled batches then hand each workspace similar sizes every step, where by position
  // the NCI1 graphs (3 to 111 nodes) had them refitted, reallocated and faulted in anew.
  std::vector<uint32_t> rank(n);
  std::iota(rank.begin(), rank.end(), 0u);
  std::stable_sort(rank.begin(), rank.end(),
                   [&](uint32_t a, uint32_t b) { return plan_of(a).num_values > plan_of(b).num_values; });
  std::vector<uint32_t> workspace_of(n);
  for (size_t r = 0; r < n; ++r) workspace_of[rank[r]] = static_cast<uint32_t>(r);
  auto ws = [&](size_t s) -> exec::BasicWorkspace<T>& { return workspaces[workspace_of[s]]; };

  // Forward: each sample up to its next normalised group, the batch's statistics, on.
  std::vector<size_t> next(n, 0), cursor(n, 0);
  for (size_t s = 0; s < n; ++s) {
    // Every plan of the batch is read from here on: fetched a few samples ahead, as the
    // unnormalised loop does (exec/prefetch.hpp), so the first phase finds them in cache.
    prefetch_ahead(locals, s);
    fit_workspace(ws(s), plan_of(s).num_values);
    prepare_pass(plan_of(s), set, locals[s], params, ws(s), example_params);
  }
  // Every phase below visits each sample again after all the others, whose workspaces
  // (NCI1 at batch 32: ~0.4 MB each) have pushed it out of L2: its plan (as in the first
  // loop) and its slots for the phase (exec::prefetch_steps) are fetched one sample ahead.
  // What each visit does is taken while the sample's rows are in cache: its share of the
  // batch mean right after the steps that computed x, and the normalisation of the phase
  // before (x^, scale, shift, activation) right before the steps that read it. Each sample
  // then waits between phases with its normalised group half done (`pending`).
  std::vector<exec::NormSite<T>> sites, pending(n);
  const exec::BatchStats* pending_stats = nullptr;  // the phase before's, which every pending site awaits
  auto finish_pending = [&](size_t s) {
    if (!pending[s].group) return;
    exec::normalize(pending[s], *pending_stats);
    exec::norm_finish_forward(plan_of(s), cursor[s] - 1, params, ws(s));
    pending[s].group = nullptr;
  };
  for (uint32_t t : order) {
    sites.clear();
    exec::BatchStats& stats = batch_stats_[t];
    exec::batch_norm_begin(stats);
    for (size_t s = 0; s < n; ++s) {
      prefetch_ahead(locals, s);
      if (s + 1 < n && next[s + 1] < plan_of(s + 1).norm_steps.size())
        exec::prefetch_steps(plan_of(s + 1), cursor[s + 1] ? cursor[s + 1] - 1 : 0,
                             plan_of(s + 1).norm_steps[next[s + 1]], ws(s + 1).values.data(), nullptr, sizeof(T));
      finish_pending(s);
      const exec::Plan& plan = plan_of(s);
      if (next[s] == plan.norm_steps.size() || norm_at(plan, next[s]) != t) continue;
      const size_t step = plan.norm_steps[next[s]++];
      exec::forward_steps(plan, params, ws(s), cursor[s], step);
      const exec::AtomGroup& group = plan.atom_groups[plan.steps[step].index];
      const uint32_t x_off = exec::norm_input_off(group);
      if (x_off == group.red_off) exec::norm_reduce_forward(plan, step, ws(s));
      pending[s] = {&group, &ws(s), x_off};
      exec::add_to_mean(pending[s], stats);
      sites.push_back(pending[s]);
      cursor[s] = step + 1;
    }
    exec::batch_norm_statistics<T>(sites, predicate_name(model, t), stats);
    batch_stats_set_[t] = 1;
    pending_stats = &stats;
  }

  // Each sample's loss, then backward in the same phases in reverse. The parameter
  // gradients of the whole batch accumulate in one buffer, handed over with the first
  // sample (SampleGradient: double, or a float pass's float sums): n buffers of every
  // parameter, zeroed and summed per step, cost more than the passes themselves.
  T* pg;
  if constexpr (std::is_same_v<T, double>) {
    slots_[0].grads.assign(params.size(), 0.0);
    pg = slots_[0].grads.data();
  } else {
    batch_grads32_.assign(params.size(), T(0));
    pg = batch_grads32_.data();
  }
  for (size_t s = 0; s < n; ++s) {
    const exec::Plan& plan = plan_of(s);
    exec::BasicWorkspace<T>& work = ws(s);
    SampleGradient& out = slots_[s];
    finish_pending(s);
    exec::forward_steps(plan, params, work, cursor[s], plan.steps.size());
    take_outputs(plan, set, locals[s], loss_kind, mean_over, with_metrics, with_values, work, out);
    out.grads32.clear();
    if (s > 0 || !std::is_same_v<T, double>) out.grads.clear();  // the batch's sum goes with the first
    out.example_grads.assign(example_params ? example_params->size() : 0, 0.0);
    cursor[s] = plan.steps.size();
  }
  // Each step's value gradients are zeroed once its backward is done, while they are in
  // cache (exec/clear_gradients.hpp): the next batch's take_outputs then zeroes nothing.
  constexpr exec::GradientSlots kClear = exec::GradientSlots::Clear;
  // As forward: each sample's share of the gradient means right after the steps that left
  // dL/dx^, and its dL/dx (then the clearing of the group's slots) right before the steps
  // that read it. The parameter gradients add in the order of the phases and, within one,
  // of the samples, as when each phase ran whole.
  auto finish_pending_backward = [&](size_t s) {
    if (!pending[s].group) return;
    exec::normalize_backward(pending[s], *pending_stats);
    exec::norm_reduce_backward(plan_of(s), cursor[s], ws(s), kClear, pending[s].x_off == pending[s].group->red_off);
    pending[s].group = nullptr;
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    exec::BatchStats& stats = batch_stats_[*it];
    exec::begin_gradient_means(stats);
    for (size_t s = 0; s < n; ++s) {
      prefetch_ahead(locals, s);
      if (s + 1 < n && next[s + 1] > 0)
        exec::prefetch_steps(plan_of(s + 1), plan_of(s + 1).norm_steps[next[s + 1] - 1], cursor[s + 1],
                             ws(s + 1).values.data(), ws(s + 1).grads.data(), sizeof(T));
      finish_pending_backward(s);
      const exec::Plan& plan = plan_of(s);
      if (next[s] == 0 || norm_at(plan, next[s] - 1) != *it) continue;
      const size_t step = plan.norm_steps[--next[s]];
      exec::backward_steps(plan, params, ws(s), pg, step + 1, cursor[s], kClear);
      exec::norm_finish_backward(plan, step, params, ws(s), pg);
      const exec::AtomGroup& group = plan.atom_groups[plan.steps[step].index];
      pending[s] = {&group, &ws(s), exec::norm_input_off(group)};
      exec::add_to_gradient_means(pending[s], stats);
      cursor[s] = step;
    }
    exec::finish_gradient_means(stats);
    pending_stats = &stats;
  }
  for (size_t s = 0; s < n; ++s) {
    const exec::Plan& plan = plan_of(s);
    finish_pending_backward(s);
    exec::backward_steps(plan, params, ws(s), pg, 0, cursor[s], kClear);
    exec::backward_end(plan, params, ws(s), pg, example_params,
                       example_params ? &slots_[s].example_grads : nullptr);
    exec::finish_clearing(plan, ws(s));
  }
  if constexpr (!std::is_same_v<T, double>) std::swap(slots_[0].grads32, batch_grads32_);  // refilled next step
  for (size_t s = 0; s < n; ++s) take(s, slots_[s]);
}

void SampleSteps::update_running_stats(const neural::TemplateModel& model, neural::Parameters& params) const {
  const double m = neural::kBatchNormMomentum;
  for (size_t t = 0; t < batch_stats_set_.size(); ++t) {
    if (!batch_stats_set_[t]) continue;
    const exec::BatchStats& b = batch_stats_[t];
    double* mean = params.data(model.batch_norms[t].mean);
    double* var = params.data(model.batch_norms[t].var);
    // The running variance is the unbiased one (torch's), the normalisation's the biased.
    const double unbias = static_cast<double>(b.rows) / static_cast<double>(b.rows - 1);
    for (size_t i = 0; i < b.mean.size(); ++i) {
      mean[i] = (1 - m) * mean[i] + m * b.mean[i];
      var[i] = (1 - m) * var[i] + m * b.var[i] * unbias;
    }
  }
}

template void SampleSteps::run_normalized<double>(const neural::TemplateModel&, const exec::ParamView<double>&,
                                                  const PreparedSet&, std::span<const uint32_t>, LossKind, size_t,
                                                  bool, bool, std::vector<exec::Workspace>&,
                                                  const std::function<void(size_t, SampleGradient&)>&);
template void SampleSteps::run_normalized<float>(const neural::TemplateModel&, const exec::ParamView<float>&,
                                                 const PreparedSet&, std::span<const uint32_t>, LossKind, size_t,
                                                 bool, bool, std::vector<exec::Workspace32>&,
                                                 const std::function<void(size_t, SampleGradient&)>&);

}  // namespace lrnn::train
