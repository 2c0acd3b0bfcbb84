#include "train/engine.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <numeric>

#include "exec/clear_gradients.hpp"
#include "exec/prefetch.hpp"
#include "logic/grounder.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "train/batch_gradient.hpp"
#include "train/clock.hpp"
#include "train/distributed.hpp"
#include "train/early_stopping.hpp"
#include "train/example_facts.hpp"
#include "train/ghost_exchange.hpp"
#include "train/partition.hpp"
#include "train/query_batches.hpp"
#include "train/sample_store.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

namespace lrnn::train {

namespace {

std::atomic<uint64_t> next_set_id{1};

std::vector<std::vector<std::string>> rule_variables(const logic::Program& program) {
  std::vector<std::vector<std::string>> vars(program.num_rules());
  for (uint32_t r = 0; r < program.num_rules(); ++r) vars[r] = program.rule_variables(r);
  return vars;
}

std::string query_text(const Literal& q) {
  Literal bare = q;
  bare.weight.reset();
  return print_literal(bare);
}

}  // namespace

uint64_t next_prepared_set_id() { return next_set_id++; }

bool PreparedSet::has_query_split() const {
  for (const OutputInfo& o : outputs)
    if (o.split != QuerySplit::Train) return true;
  return false;
}

template <class T>
LossSum seed_loss_gradients(const exec::Plan& plan, exec::BasicWorkspace<T>& ws, LossKind loss_kind,
                            const std::function<const std::vector<double>&(size_t)>& target_of_output,
                            std::vector<std::vector<double>>* predictions, std::vector<std::vector<double>>* targets,
                            size_t mean_over, const std::function<double(size_t)>& importance_of_output) {
  LossSum total;
  for (size_t o = 0; o < plan.outputs.size(); ++o)
    if (!target_of_output(o).empty()) ++total.count;
  const double divisor = loss_divisor(loss_kind, mean_over ? mean_over : total.count);
  if (predictions) predictions->resize(total.count);
  if (targets) targets->resize(total.count);
  // Per-thread scratch (this runs once per sample step, on the batch's threads): the
  // vectors keep their capacity, so a step allocates nothing here.
  thread_local std::vector<double> y, loss_grad;
  size_t targeted = 0;
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    const std::vector<double>& target = target_of_output(o);
    if (target.empty()) continue;
    exec::copy_output_value(plan, ws, o, y);
    loss_grad.assign(y.size(), 0.0);
    const double importance = importance_of_output ? importance_of_output(o) : 1.0;
    total.sum += importance * loss(loss_kind, y, target, loss_grad);
    if (predictions) {
      std::vector<double>& p = (*predictions)[targeted];
      p.resize(y.size());
      predict(loss_kind, y, p);
    }
    if (targets) (*targets)[targeted] = target;
    ++targeted;
    const exec::OutputRef& ref = plan.outputs[o];
    if (ref.offset == exec::kNoValue) continue;
    for (size_t k = 0; k < y.size(); ++k) ws.grads[ref.offset + k] += importance * loss_grad[k] / divisor;
  }
  return total;
}

template LossSum seed_loss_gradients<double>(const exec::Plan&, exec::Workspace&, LossKind,
                                             const std::function<const std::vector<double>&(size_t)>&,
                                             std::vector<std::vector<double>>*, std::vector<std::vector<double>>*, size_t,
                                             const std::function<double(size_t)>&);
template LossSum seed_loss_gradients<float>(const exec::Plan&, exec::Workspace32&, LossKind,
                                            const std::function<const std::vector<double>&(size_t)>&,
                                            std::vector<std::vector<double>>*, std::vector<std::vector<double>>*, size_t,
                                            const std::function<double(size_t)>&);

void clip_gradients(std::vector<double>& grads, double clip_value, double clip_norm, std::span<double> more) {
  if (clip_value > 0) {
    for (double& g : grads) g = std::clamp(g, -clip_value, clip_value);
    for (double& g : more) g = std::clamp(g, -clip_value, clip_value);
  }
  if (clip_norm > 0) {
    double squares = 0;
    for (double g : grads) squares += g * g;
    for (double g : more) squares += g * g;
    const double norm = std::sqrt(squares);
    if (norm > clip_norm) {
      const double scale = clip_norm / (norm + 1e-6);
      for (double& g : grads) g *= scale;
      for (double& g : more) g *= scale;
    }
  }
}

Engine::Engine(const TemplateAst& ast, const Initializer& init, uint64_t seed)
    : ast_(ast), initializer_(init), seed_(seed) {
  program_ = std::make_unique<logic::Program>(ast_);
  model_ = neural::TemplateModel::compile(ast_, rule_variables(*program_));
  pair_blocks_ = neural::pair_block_rules(model_, *program_);
  next_example_index_ = model_.params.count();
  Rng rng(seed);
  initialize(init, model_.params, rng);
  const std::vector<uint8_t> learnable = model_.params.learnable_mask();
  for (uint32_t i = 0; i < learnable.size(); ++i)
    if (!learnable[i]) fixed_.push_back(i);
  optimizer_config_ = OptimizerConfig::defaults(OptimizerKind::Adam);
}

Engine::~Engine() = default;

namespace {

// The valued example facts of a network that are neuron inputs (written with a value or
// dimensions, not inside <...>): what learnable_facts makes parameters.
std::vector<LearnableFactSite> learnable_fact_sites(const logic::Program& program, const ExampleAst& example,
                                                    const logic::GroundSample& ground, const neural::SampleNetwork& net) {
  std::vector<LearnableFactSite> sites;
  for (uint32_t l = 0; l < net.num_atoms(); ++l) {
    const uint32_t f = net.atom_fact[l];
    if (f == neural::kNone || net.fact_template[f] != neural::kNone) continue;
    const uint32_t a = net.atom_ground_id[l];
    const uint32_t ef = a < ground.atom_example_fact.size() ? ground.atom_example_fact[a] : neural::kNone;
    if (ef == neural::kNone) continue;
    const Literal& fact = example.facts[ef];
    if (!fact.weight || fact.weight->fixed) continue;
    if (fact.weight->kind == ValueSpec::Kind::Reference)
      throw Error(ErrorKind::Semantic, fact.weight->span,
                  "learnable example fact " + program.atom_text(ground, a) + " names weight $" + fact.weight->name +
                      " without a value or dimensions: write them ($" + fact.weight->name + "={2} or =[...])");
    sites.push_back({f, ef, program.atom_text(ground, a)});
  }
  return sites;
}

}  // namespace

PreparedSet Engine::prepare(std::span<const Sample> samples, size_t max_ground_rules, bool learnable_facts) const {
  const auto t0 = std::chrono::steady_clock::now();
  check_queries_defined(ast_, samples);
  PreparedSet set = prepare_each(
      samples, [&](size_t i) { return std::make_unique<logic::ExampleFacts>(samples[i].example); },
      max_ground_rules, learnable_facts);
  set.seconds = seconds_since(t0);
  return set;
}

PreparedSet Engine::prepare(const SampleStore& samples, size_t max_ground_rules, bool learnable_facts,
                            GroundRewrite* rewrite) const {
  if (learnable_facts) {  // the facts' parameters are made from every sample's literals at once
    if (rewrite) throw Error(ErrorKind::Runtime, "internal: a ground rewrite of learnable example facts");
    const std::vector<Sample> all = samples.materialize();
    return prepare(std::span<const Sample>(all), max_ground_rules, true);
  }
  return prepare(samples, samples.without_facts(), max_ground_rules, rewrite);
}

PreparedSet Engine::prepare(const SampleStore& facts, std::span<const Sample> heads, size_t max_ground_rules,
                            GroundRewrite* rewrite) const {
  if (heads.size() != facts.size()) throw Error(ErrorKind::Runtime, "internal: heads for another store's samples");
  const auto t0 = std::chrono::steady_clock::now();
  check_queries_defined(ast_, facts);
  PreparedSet set = prepare_each(
      heads, [&](size_t i) { return std::make_unique<SampleStore::Facts>(facts.facts(i)); }, max_ground_rules, false,
      rewrite);
#if defined(__GLIBC__)
  // Grounding frees more than the networks keep (relations, indexes, ground rules), in the
  // middle of the heap where free() does not return it: the plans and workspaces that come
  // next would otherwise sit on top of it (200k nodes: ~0.2 GB of peak RSS).
  malloc_trim(0);
#endif
  set.seconds = seconds_since(t0);
  return set;
}

PreparedSet Engine::prepare_each(std::span<const Sample> samples,
                                 const std::function<std::unique_ptr<logic::FactSource>(size_t)>& facts_of,
                                 size_t max_ground_rules, bool learnable_facts, GroundRewrite* rewrite) const {
  PreparedSet set;
  set.id = next_set_id++;
  // The set keeps no copy of the samples (on NCI1 their literals are ~230 MB): what it needs
  // of them (outputs, their texts and targets) is taken here.
  const size_t n = samples.size();
  set.num_samples = n;
  set.networks.resize(n);
  // The texts of each sample's query atoms (per query, per match), until the outputs take them.
  std::vector<std::vector<std::vector<std::string>>> atom_texts(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::vector<LearnableFactSite>> sites(learnable_facts ? n : 0);
  // Each sample's network is held against the memory budget (lrnn/memory.hpp) by its own
  // reservation (the threads grow distinct ones), gathered into the set's after the loop.
  std::vector<MemoryReservation> network_memory(n);
  // neuralize reads a ground rule's bindings for its softmax group only.
  std::vector<uint8_t> rules_with_softmax(model_.rules.size());
  for (size_t r = 0; r < rules_with_softmax.size(); ++r) rules_with_softmax[r] = model_.rules[r].softmax;
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < n; ++i) {
    try {
      const Sample& s = samples[i];
      std::unique_ptr<logic::FactSource> facts = facts_of(i);
      logic::GroundingOptions options;
      options.max_ground_rules = max_ground_rules;
      options.pair_blocks = pair_blocks_;
      options.max_atoms = max_atoms_;
      options.rule_keeps_bindings = rules_with_softmax;
      logic::GroundSample ground = logic::ground(*program_, *facts, s.queries, options);
      // Neuralizing takes about the ground sample's bytes again: asked before, held after
      // (the message is written only past the budget).
      const auto network_of = [i] { return "the network of sample " + std::to_string(i); };
      if (!network_memory[i].try_grow(ground.bytes())) MemoryReservation::refuse(ground.bytes(), network_of());
      if (rewrite) rewrite->before_neuralize(ground, facts);
      set.networks[i] = neural::neuralize(model_, *facts, ground, learnable_facts);
      if (rewrite) rewrite->after_neuralize(ground, set.networks[i]);
      const uint64_t held = network_memory[i].bytes(), net_bytes = set.networks[i].bytes();
      if (net_bytes <= held) network_memory[i].resize(net_bytes, "");
      else if (!network_memory[i].try_grow(net_bytes - held)) MemoryReservation::refuse(net_bytes - held, network_of());
      if (learnable_facts) sites[i] = learnable_fact_sites(*program_, s.example, ground, set.networks[i]);
      auto& texts = atom_texts[i];
      texts.resize(ground.query_atoms.size());
      for (size_t q = 0; q < ground.query_atoms.size(); ++q)
        for (uint32_t a : ground.query_atoms[q]) texts[q].push_back(program_->atom_text(ground, a));
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);  // the first failing sample, whatever the schedule
  for (MemoryReservation& r : network_memory) set.memory.absorb(r);
  if (learnable_facts) {
    const uint64_t first = next_example_index_.load();
    set.example_facts = make_example_facts(samples, set.networks, sites, initializer_, seed_, first);
    next_example_index_ += set.example_facts->params.count();
  }
  for (uint32_t i = 0; i < n; ++i) {
    const Sample& s = samples[i];
    for (uint32_t q = 0; q < s.queries.size(); ++q) {
      std::vector<double> target = target_of(s.queries[q]);
      const double importance = s.importance_of(q);
      const bool listed = s.queries[q].weight && s.queries[q].weight->kind != ValueSpec::Kind::Scalar;
      const QuerySplit split = s.split_of(q);
      auto& matches = atom_texts[i][q];
      if (matches.empty()) {
        set.outputs.push_back({i, q, query_text(s.queries[q]), target, importance, listed, split, false});
      } else {
        for (std::string& t : matches) set.outputs.push_back({i, q, std::move(t), target, importance, listed, split});
      }
    }
    std::vector<std::vector<std::string>>().swap(atom_texts[i]);
  }
  return set;
}

// ---- minibatch steps, one sample at a time --------------------------------------------

namespace {

// A batch's per-sample gradients are held at once (so they can be summed in batch order)
// up to this many doubles; a bigger batch of a bigger model runs in waves of samples.
constexpr size_t kMaxHeldGradients = size_t{1} << 22;

int thread_count() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

int thread_id() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

// The first `count` samples to run after the batch ending at position `end` of the epoch's
// `order`, in the order they run (each batch sorted, as the training loop runs it), into
// `next` (its room reused: at batch 1 this runs once per sample).
void samples_after(const std::vector<uint32_t>& order, size_t end, size_t batch_size, size_t count,
                   std::vector<uint32_t>& next) {
  next.clear();
  for (size_t b0 = end; b0 < order.size() && next.size() < count; b0 += batch_size) {
    const size_t first = next.size();
    next.insert(next.end(), order.begin() + b0, order.begin() + std::min(order.size(), b0 + batch_size));
    std::sort(next.begin() + first, next.end());
  }
  next.resize(std::min(next.size(), count));
}

}  // namespace

void SampleSteps::bind(const PreparedSet& set) {
  if (set_id_ == set.id) return;
  set_id_ = set.id;
  plans_.clear();
  plan_by_structure_.clear();
  plan_of_.assign(set.size(), neural::kNone);
  facts32_ = {};
  facts32_begin_ = {};
  sparse_positions_ = {};
  sparse_values_ = {};
  sparse_begin_ = {};
  facts32_memory_.reset();
  exact_floats_ = ExactFloats::kUnknown;
  first_output_.assign(set.size() + 1, 0);
  for (const OutputInfo& o : set.outputs) ++first_output_[o.sample + 1];
  for (size_t i = 0; i < set.size(); ++i) first_output_[i + 1] += first_output_[i];
}

namespace {

// A set's plans live as long as it is trained: grown by push_back, their arrays held up to
// twice their entries, and the fact values and per-atom tables a training plan drops kept
// their capacity when cleared (on NCI1 over half of the plans' memory).
template <class... Vectors>
void shrink_each(Vectors&... v) {
  (v.shrink_to_fit(), ...);
}

void shrink_to_fit(exec::Plan& plan) {
  for (exec::RuleGroup& g : plan.rule_groups) {
    for (exec::InputBlock& in : g.inputs) in.src.shrink_to_fit();
    shrink_each(g.inputs, g.direct.scalars, g.direct.scalar_off, g.direct.band_begin, g.direct.band_first,
                g.direct.tile_begin, g.transform.sources, g.transform.row_of, g.transform.row_begin,
                g.transform.row_heads, g.softmax_perm, g.softmax_segments, g.head_segments, g.readout_scale,
                g.readout_scale2);
  }
  for (exec::AtomGroup& g : plan.atom_groups) shrink_each(g.src, g.segments);
  shrink_each(plan.data, plan.param_fact_off, plan.param_fact_param, plan.example_fact_off, plan.example_fact_param,
              plan.rule_groups, plan.atom_groups, plan.steps, plan.outputs, plan.atom_offsets, plan.atom_shapes);
}

}  // namespace

// The plans of the batch's samples that have none yet, one per new structure, built in
// parallel. A plan keeps what forward and backward read: its fact values come from each
// sample's network (the plan copies none), and the per-atom tables for inspection are dropped.
void SampleSteps::plan_ahead(const neural::TemplateModel& model, const PreparedSet& set,
                             std::span<const uint32_t> locals) {
  bind(set);
  std::vector<uint32_t> missing;  // one sample per new structure
  for (uint32_t local : locals) {
    if (plan_of_[local] != neural::kNone) continue;
    const uint64_t hash = set.networks[local].structure_hash;
    auto it = plan_by_structure_.find(hash);
    if (it != plan_by_structure_.end()) {
      plan_of_[local] = it->second;
      continue;
    }
    plan_by_structure_.emplace(hash, static_cast<uint32_t>(plans_.size() + missing.size()));
    plan_of_[local] = static_cast<uint32_t>(plans_.size() + missing.size());
    missing.push_back(local);
  }
  if (missing.empty()) return;
  std::vector<std::unique_ptr<exec::Plan>> built(missing.size());
  std::vector<std::exception_ptr> errors(missing.size());
#pragma omp parallel for schedule(dynamic, 1) if (missing.size() > 1)
  for (size_t k = 0; k < missing.size(); ++k) {
    try {
      exec::PlanOptions options = kTrainingPlan;
      options.transform_sum_first = sum_first_transforms;
      options.fact_values = false;  // each pass reads its network's own
      if (set.ghosts) set.ghosts->plan_options(options);
      auto plan = std::make_unique<exec::Plan>(exec::build_plan(model, {&set.networks[missing[k]]}, options));
      if (set.ghosts) set.ghosts->bind(*plan);
      plan->atom_offsets.clear();
      plan->atom_shapes.clear();
      shrink_to_fit(*plan);  // frees those three too (assigning {} kept their capacity)
      built[k] = std::move(plan);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  }
  for (size_t k = 0; k < missing.size(); ++k)
    if (errors[k]) {
      // Forget this batch's new structures, so a later call does not find them planless.
      for (size_t j = 0; j < missing.size(); ++j) plan_by_structure_.erase(set.networks[missing[j]].structure_hash);
      for (uint32_t local : locals)
        if (plan_of_[local] != neural::kNone && plan_of_[local] >= plans_.size()) plan_of_[local] = neural::kNone;
      std::rethrow_exception(errors[k]);
    }
  size_t built_values = 0;
  for (auto& plan : built) {
    built_values += plan->num_values;
    plans_.push_back(std::move(plan));
  }
#if defined(__GLIBC__)
  // A big plan's build frees more than the plan keeps (its buckets and scans), in the middle
  // of the heap: given back before the workspaces come (a big graph's: ~0.15 GB).
  if (built_values >= (size_t{1} << 24)) malloc_trim(0);
#endif
}

// Forward of sample `local` on its plan.
template <class T>
void SampleSteps::forward_pass(const exec::Plan& plan, const PreparedSet& set, uint32_t local,
                               const exec::ParamView<T>& params, exec::BasicWorkspace<T>& ws,
                               const neural::Parameters* example_params) const {
  prepare_pass(plan, set, local, params, ws, example_params);
  if (set.ghosts) return set.ghosts->forward(plan, params, ws);
  exec::forward_steps(plan, params, ws, 0, plan.steps.size());
}

template <class T>
void SampleSteps::forward_sample(const exec::ParamView<T>& params, const PreparedSet& set, uint32_t local,
                                 exec::BasicWorkspace<T>& ws, std::vector<std::vector<double>>& values,
                                 std::vector<neural::Shape>& shapes) const {
  const exec::Plan& plan = *plans_[plan_of_[local]];
  const neural::Parameters* example_params = set.example_facts ? &set.example_facts->params : nullptr;
  forward_pass(plan, set, local, params, ws, example_params);
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    values[first_output_[local] + o] = exec::output_value(plan, ws, o);
    shapes[first_output_[local] + o] = plan.outputs[o].shape;
  }
}

// After sample `local`'s forward in `ws`: its output values and (as asked) predictions and
// targets into `out`, its loss into out.loss, and the loss gradients seeded into ws.grads
// (zeroed first, backward accumulates: nothing to write when the last pass in `ws` cleared
// them, exec/clear_gradients.hpp).
template <class T>
void SampleSteps::take_outputs(const exec::Plan& plan, const PreparedSet& set, uint32_t local, LossKind loss_kind,
                               size_t mean_over, bool with_metrics, bool with_values, exec::BasicWorkspace<T>& ws,
                               SampleGradient& out) const {
  out.values.resize(with_values ? plan.outputs.size() : 0);
  for (size_t o = 0; o < out.values.size(); ++o) exec::copy_output_value(plan, ws, o, out.values[o]);
  if (!with_metrics) {
    out.predictions.clear();
    out.targets.clear();
  }
  exec::zero_gradients(plan, ws);
  // The callbacks capture one reference each: std::function keeps a callable of up to two
  // pointers in place, and a bigger one cost a heap allocation per sample.
  static const std::vector<double> kNoTarget;
  const struct {
    const std::vector<uint8_t>& seeded;
    const PreparedSet& set;
    size_t first;
  } sample{seeded_, set, first_output_[local]};
  out.loss = seed_loss_gradients(
      plan, ws, loss_kind,
      [&sample](size_t o) -> const std::vector<double>& {
        const size_t at = sample.first + o;
        return sample.seeded.empty() || sample.seeded[at] ? sample.set.outputs[at].training_target() : kNoTarget;
      },
      with_metrics ? &out.predictions : nullptr, with_metrics ? &out.targets : nullptr, mean_over,
      [&sample](size_t o) { return sample.set.outputs[sample.first + o].importance; });
}
template void SampleSteps::take_outputs<double>(const exec::Plan&, const PreparedSet&, uint32_t, LossKind, size_t,
                                                bool, bool, exec::Workspace&, SampleGradient&) const;
template void SampleSteps::take_outputs<float>(const exec::Plan&, const PreparedSet&, uint32_t, LossKind, size_t,
                                               bool, bool, exec::Workspace32&, SampleGradient&) const;

// Forward + backward of one sample in `ws`, into `out`.
template <class T>
void SampleSteps::run_sample(const exec::ParamView<T>& params, const PreparedSet& set, uint32_t local,
                             LossKind loss_kind, size_t mean_over, bool with_metrics, bool with_values,
                             exec::BasicWorkspace<T>& ws, SampleGradient& out) const {
  const exec::Plan& plan = *plans_[plan_of_[local]];
  // The set's learnable example facts (if any), read and differentiated like weights.
  const neural::Parameters* example_params = set.example_facts ? &set.example_facts->params : nullptr;
  forward_pass(plan, set, local, params, ws, example_params);
  take_outputs(plan, set, local, loss_kind, mean_over, with_metrics, with_values, ws, out);
  out.example_grads.assign(example_params ? example_params->size() : 0, 0.0);
  std::vector<double>* example_grads = example_params ? &out.example_grads : nullptr;
  // A partitioned sample's ghosts send their gradients home between the layers. (Made only
  // for them: the callable is bigger than std::function keeps in place, so it allocates.)
  size_t pause = 0;
  std::function<void(uint32_t)> ghosts_home;
  if (set.ghosts) ghosts_home = [&](uint32_t) { set.ghosts->gradients_home(plan, pause++, ws.grads.data()); };
  const exec::BackwardPauses pauses =
      set.ghosts ? exec::BackwardPauses{set.ghosts->pauses(plan), &ghosts_home} : exec::BackwardPauses{};
  if constexpr (std::is_same_v<T, double>) {
    out.grads32.clear();
    out.grads.assign(params.size(), 0.0);
    exec::backward(plan, params, ws, out.grads, example_params, example_grads, exec::FloatGradients::Add,
                   exec::GradientSlots::Clear, pauses);
  } else {
    out.grads.clear();
    exec::backward(plan, params, ws, out.grads, example_params, example_grads, exec::FloatGradients::KeepFloat,
                   exec::GradientSlots::Clear, pauses);
    std::swap(out.grads32, ws.param_grads);  // the next pass refills the vector swapped in
  }
}

namespace {

template <class U>
void add_or_assign(const std::vector<U>& src, std::vector<double>& dst, bool assign) {
  if (assign) std::copy(src.begin(), src.end(), dst.begin());
  else
    for (size_t i = 0; i < dst.size(); ++i) dst[i] += src[i];
}

}  // namespace

void SampleGradient::add_to(std::vector<double>& dst, bool assign) const {
  if (!grads32.empty()) add_or_assign(grads32, dst, assign);
  else add_or_assign(grads, dst, assign);
}

void SampleSteps::run(const neural::TemplateModel& model, const PreparedSet& set, std::span<const uint32_t> locals,
                      LossKind loss_kind, size_t mean_over, bool with_metrics, bool with_values,
                      const std::function<void(size_t, SampleGradient&)>& take, Dtype dtype) {
  struct UseUp {  // set_next_up's and set_output_sink's hints and seed_only's outputs are for this run only
    std::vector<uint32_t>& next_up;
    std::vector<uint8_t>& seeded;
    const std::vector<std::vector<double>>*& output_sink;
    ~UseUp() {
      next_up.clear();
      seeded.clear();
      output_sink = nullptr;
    }
  } use_up{next_up_, seeded_, output_sink_};
  if (!seeded_.empty() && seeded_.size() != set.outputs.size())
    throw Error(ErrorKind::Runtime, "seed_only: " + std::to_string(seeded_.size()) + " flags for " +
                                        std::to_string(set.outputs.size()) + " outputs");
  plan_ahead(model, set, locals);
  const bool f32 = dtype == Dtype::Float32;
  build_fact_copies(set, dtype);
  const exec::ParamView<double> params = exec::view_of(model.params);
  const exec::ParamView<float> params32 = f32 ? mirror_.refresh(model.params) : exec::ParamView<float>{};
  if (!model.batch_norms.empty()) {
    if (f32)
      run_normalized(model, params32, set, locals, loss_kind, mean_over, with_metrics, with_values,
                     norm_workspaces32_, take);
    else
      run_normalized(model, params, set, locals, loss_kind, mean_over, with_metrics, with_values, norm_workspaces_,
                     take);
    return;
  }
  auto run_one = [&](uint32_t local, size_t thread, SampleGradient& out) {
    if (f32) run_sample(params32, set, local, loss_kind, mean_over, with_metrics, with_values, workspaces32_[thread], out);
    else run_sample(params, set, local, loss_kind, mean_over, with_metrics, with_values, workspaces_[thread], out);
  };
  const size_t num_params = model.params.size();
  const size_t threads = static_cast<size_t>(std::max(1, thread_count()));
  const size_t wave = std::min(locals.size(), std::max(threads, kMaxHeldGradients / std::max<size_t>(num_params, 1)));
  if (workspaces_.size() < threads) workspaces_.resize(threads);
  if (f32 && workspaces32_.size() < threads) workspaces32_.resize(threads);
  if (slots_.size() < std::max<size_t>(wave, 1)) slots_.resize(std::max<size_t>(wave, 1));
  for (size_t w0 = 0; w0 < locals.size(); w0 += wave) {
    const size_t w1 = std::min(locals.size(), w0 + wave);
    size_t wave_values = 0;
    for (size_t pos = w0; pos < w1; ++pos) wave_values += plans_[plan_of_[locals[pos]]]->num_values;
    if (threads == 1 || w1 - w0 == 1 || wave_values < min_parallel_values) {
      // One thread: each sample is handed over as soon as it is done (the same additions
      // in the same order as the parallel wave, with one gradient buffer kept in cache).
      for (size_t pos = w0; pos < w1; ++pos) {
        prefetch_ahead(locals, pos, &set);
        run_one(locals[pos], 0, slots_[0]);
        take(pos, slots_[0]);
      }
      continue;
    }
    std::vector<std::exception_ptr> errors(w1 - w0);
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t pos = w0; pos < w1; ++pos) {
      try {
        prefetch_ahead(locals, pos);  // the samples after pos run next on some thread
        run_one(locals[pos], thread_id(), slots_[pos - w0]);
      } catch (...) {
        errors[pos - w0] = std::current_exception();
      }
    }
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
    for (size_t pos = w0; pos < w1; ++pos) take(pos, slots_[pos - w0]);
  }
}

void SampleSteps::prefetch_ahead(std::span<const uint32_t> locals, size_t pos, const PreparedSet* set) const {
  for (int level = 0; level < exec::kPrefetchLevels; ++level) {
    const size_t ahead = pos + exec::kPrefetchLevels - level;
    const size_t after = ahead - std::min(ahead, locals.size());  // into next_up_ past the batch
    if (ahead >= locals.size() && after >= next_up_.size()) continue;
    const uint32_t local = ahead < locals.size() ? locals[ahead] : next_up_[after];
    if (local >= plan_of_.size() || plan_of_[local] >= plans_.size()) continue;  // not planned (yet)
    exec::prefetch(*plans_[plan_of_[local]], level);
    if (level < exec::kPrefetchLevels - 2) continue;  // the rest: two samples ahead and one
    const bool outputs = set && local + 1 < first_output_.size();
    const size_t first = outputs ? first_output_[local] : 0;
    const size_t last = outputs ? std::min<size_t>(first_output_[local + 1], set->outputs.size()) : 0;
    const bool sink = output_sink_ && output_sink_->size() >= last;
    // One sample ahead, the outputs' targets and sink entries: their records (below) were
    // hinted the sample before, so their addresses are read from cache.
    if (level == exec::kPrefetchLevels - 1) {
      for (size_t o = first; o < last; ++o) {
        const std::vector<double>& target = set->outputs[o].target;
        exec::prefetch_bytes_to_l2(target.data(), target.size() * sizeof(double));
        if (sink) exec::prefetch_bytes_to_l2((*output_sink_)[o].data(), (*output_sink_)[o].size() * sizeof(double));
      }
      continue;
    }
    // Two samples ahead, a sparse fact copy's entries and the outputs' and sink's records (a
    // few lines per sample, where each sample of the order lies: their first reads were
    // misses).
    for (size_t o = first; o < last; ++o) {
      exec::prefetch_bytes_to_l2(&set->outputs[o], sizeof(OutputInfo));
      if (sink) exec::prefetch_bytes_to_l2(&(*output_sink_)[o], sizeof(std::vector<double>));
    }
    if (local + 1 < sparse_begin_.size()) {
      const size_t begin = sparse_begin_[local], count = sparse_begin_[local + 1] - begin;
      exec::prefetch_bytes_to_l2(sparse_positions_.data() + begin, count * sizeof(uint32_t));
      exec::prefetch_bytes_to_l2(sparse_values_.data() + begin, count * sizeof(float));
    }
  }
}

void SampleSteps::release_gradients(size_t min_values) {
  const auto release = [&](auto& workspaces) {
    for (auto& ws : workspaces)
      if (ws.grads.size() >= min_values) {
        std::remove_reference_t<decltype(ws.grads)>().swap(ws.grads);
        ws.grads_zero = false;
      }
  };
  release(workspaces_);
  release(workspaces32_);
}

SampleSteps& Engine::steps_for(const PreparedSet& set) const {
  auto it = sample_steps_.find(set.id);
  if (it != sample_steps_.end()) return *it->second;
  if (sample_steps_.size() >= 8) sample_steps_.clear();
  return *sample_steps_.emplace(set.id, std::make_unique<SampleSteps>()).first->second;
}

void Engine::plan_ahead(const PreparedSet& set) const {
  std::vector<uint32_t> all(set.size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  steps_for(set).plan_ahead(model_, set, all);
}

size_t Engine::cached_batch_plans() const {
  size_t plans = 0;
  for (const auto& [id, steps] : sample_steps_) plans += steps->cached_plans();
  return plans;
}

// Evaluation runs each sample on its cached per-sample plan (the plans training uses), so
// a set costs no merged plan and no workspace of its whole size (on NCI1 that was 600 MB),
// and evaluation and training compute every output the same way.
std::vector<std::vector<double>> Engine::output_values(const PreparedSet& set, Dtype dtype,
                                                       std::vector<neural::Shape>* shapes_out) const {
  SampleSteps& steps = steps_for(set);
  std::vector<uint32_t> all(set.size());
  std::iota(all.begin(), all.end(), 0u);
  steps.plan_ahead(model_, set, all);
  std::vector<std::vector<double>> values(set.outputs.size());
  std::vector<neural::Shape> shapes(set.outputs.size());
  auto forward_all = [&](const auto& params, auto& ws) {
    for (uint32_t i = 0; i < set.size(); ++i) {
      steps.prefetch_ahead(all, i);
      steps.forward_sample(params, set, i, ws, values, shapes);
    }
  };
  steps.build_fact_copies(set, dtype);
  if (dtype == Dtype::Float32) forward_all(mirror_.refresh(model_.params), steps.evaluation_workspace<float>());
  else forward_all(exec::view_of(model_.params), steps.evaluation_workspace<double>());
  if (shapes_out) *shapes_out = std::move(shapes);
  return values;
}

Evaluation Engine::evaluate(const PreparedSet& set, LossKind loss_kind, Dtype dtype) const {
  std::vector<neural::Shape> shapes;
  std::vector<std::vector<double>> values = output_values(set, dtype, &shapes), predictions;
  Evaluation ev;
  ev.metrics = metrics_of(loss_kind, set.outputs, values, &predictions);
  ev.has_splits = set.has_query_split();
  if (ev.has_splits && !set.sharded()) {  // a sharded set's: of every rank's outputs (gather_evaluation)
    ev.train = metrics_of_split(loss_kind, set.outputs, values, QuerySplit::Train);
    ev.validation = metrics_of_split(loss_kind, set.outputs, values, QuerySplit::Validation);
    ev.test = metrics_of_split(loss_kind, set.outputs, values, QuerySplit::Test);
  }
  ev.outputs.reserve(values.size());
  for (size_t o = 0; o < values.size(); ++o) {
    const OutputInfo& info = set.outputs[o];
    ev.outputs.push_back({info.sample, info.text, info.target, std::move(values[o]), std::move(predictions[o]),
                          shapes[o].rows, shapes[o].cols, info.importance, info.listed_target, info.split,
                          info.derived});
  }
  if (set.sharded()) return dist::gather_evaluation(ev, set, loss_kind);
  return ev;
}

// A fresh optimizer unless this engine already trained (or was loaded) with the same kind.
// Holds, parameter by parameter, the bytes training adds to each weight (the optimizer's
// state and the gradient sum), so that past the budget the weight whose state does not fit
// is named with its rule's place in the template.
void Engine::reserve_training_state(OptimizerKind kind) {
  const uint64_t per_value = 8 * (kind == OptimizerKind::Sgd ? 2 : 3);
  optimizer_memory_.reset();
  for (uint32_t p = 0; p < model_.params.count(); ++p) {
    const neural::ParamInfo& info = model_.params.info(p);
    const uint64_t bytes = per_value * uint64_t(info.shape.size());
    if (!optimizer_memory_.try_grow(bytes))
      MemoryReservation::refuse(bytes, "training the weight " + info.name + " (" + neural::to_string(info.shape) +
                                           ": its gradient and " + to_string(kind) + "'s state)",
                                info.span);
  }
}

void Engine::prepare_optimizer(const OptimizerConfig& wanted) {
  const bool keep = optimizer_ && optimizer_->config().kind == wanted.kind;
  if (!keep) {
    reserve_training_state(wanted.kind);
    optimizer_ = std::make_unique<Optimizer>(wanted, model_.params.size());
    if (!optimizer_state_.empty() && optimizer_config_.kind == wanted.kind) optimizer_->set_state(optimizer_state_);
  } else if (!(optimizer_->config().lr == wanted.lr)) {
    std::vector<double> state = optimizer_->state();
    optimizer_ = std::make_unique<Optimizer>(wanted, model_.params.size());
    optimizer_->set_state(state);
  }
  optimizer_config_ = wanted;
  optimizer_state_.clear();
}

// One optimizer step on the learnable parameters: fixed ones get no gradient and keep their
// values whatever the optimizer does (weight decay, momentum); gradients are clipped first.
void Engine::step_learnable(std::vector<double>& grads, double lr, const TrainConfig& config,
                            std::vector<double>& fixed_values, ExampleFacts* facts) {
  // The fixed parameters' indices (usually none): three passes over every parameter per
  // step cost as much as the step itself at batch 1.
  fixed_values.clear();
  for (uint32_t i : fixed_) {
    grads[i] = 0.0;
    fixed_values.push_back(model_.params.values[i]);
  }
  clip_gradients(grads, config.clip_grad_value, config.clip_grad_norm,
                 facts ? std::span<double>(facts->grads) : std::span<double>());
  // A per-step schedule (noam) sets this step's rate from the steps taken so far.
  if (config.schedule.per_step()) lr = config.schedule.step_lr(config.optimizer.lr, optimizer_->steps() + 1);
  last_step_lr_ = lr;
  if (facts) step_example_facts(*facts, config.optimizer, lr);
  optimizer_->step(model_.params.values, grads, lr);
  for (size_t k = 0; k < fixed_.size(); ++k) model_.params.values[fixed_[k]] = fixed_values[k];
}

namespace {

// A query split reports its own test queries: a separate test set as well would give two
// test metrics under one name. Over MPI ranks a split is trained on one partitioned sample
// (dist::split_metrics); samples sharded by sample are not (yet).
void refuse_split_with(const PreparedSet& train_set, const PreparedSet* test) {
  if (test)
    throw Error(ErrorKind::Semantic, "the training data has a query split (its own validation and test queries): "
                                     "give no separate test set as well");
  if (train_set.sharded() && !train_set.partitioned && dist::world().size > 1)
    throw Error(ErrorKind::Semantic, "a query split of several samples cannot be trained sharded over MPI ranks yet: "
                                     "train it in one process (one sample, a graph, is partitioned over the ranks)");
}

// An epoch's report of a query split's validation and test queries (a part without
// targeted queries is not reported).
void report_split(EpochInfo& report, const Metrics& validation, const Metrics& test) {
  report.validation = validation;
  report.has_validation = validation.count > 0;
  if (test.count > 0) {
    report.has_test = true;
    report.test = test;
  }
}

// A query split's validation and test metrics from every output's value (this rank's part's
// for a partitioned sample: gathered by dist::split_metrics).
std::pair<Metrics, Metrics> split_metrics(const PreparedSet& set, const std::vector<std::vector<double>>& values,
                                          LossKind loss) {
  if (set.partitioned) return dist::split_metrics(set, values, loss);
  return {metrics_of_split(loss, set.outputs, values, QuerySplit::Validation),
          metrics_of_split(loss, set.outputs, values, QuerySplit::Test)};
}

// The outputs that query batches do not train (validation, test, no target) take their
// values `from` a whole forward pass over the set.
void fill_untrained_outputs(const PreparedSet& set, std::vector<std::vector<double>>&& from,
                            std::vector<std::vector<double>>& values) {
  for (size_t o = 0; o < from.size(); ++o)
    if (set.outputs[o].training_target().empty()) values[o] = std::move(from[o]);
}

}  // namespace

TrainResult Engine::train(const PreparedSet& train_set, const PreparedSet* test, const TrainConfig& config,
                          const std::function<bool(const EpochInfo&)>& on_epoch) {
  TrainResult result;
  const auto t_train = std::chrono::steady_clock::now();
  prepare_optimizer(config.optimizer);
  ExampleFacts* facts = train_set.example_facts.get();  // the data's parameters, if learnable
  // How a batch's gradient is computed: in this process, or over MPI ranks for a sharded set
  // (train/batch_gradient.hpp); the loop below is the same for both.
  if (train_set.sharded() && !sharded_step_) sharded_step_ = std::make_unique<dist::ShardedStep>();
  const std::unique_ptr<BatchGradient> batches =
      train_set.sharded() ? dist::sharded_batches(model_, train_set, *sharded_step_, steps_for(train_set), config)
                          : local_batches(model_, train_set, steps_for(train_set), config);

  // A query split's validation and test queries are reported from the epoch's own forward
  // passes (docs/big_graphs.md "Query splits").
  const bool query_split = train_set.has_query_split();
  if (query_split) refuse_split_with(train_set, test);
  std::vector<double> epoch_start_params;
  // Mini-batches of queries: each step runs its queries' support (train/query_batches.hpp);
  // a split's other queries are then evaluated after the epoch, by a whole forward pass.
  // Over a partitioned sample the same batches, each rank running its share of a step
  // (partitioned_query_epoch).
  const bool query_steps = config.query_batch_size > 0;
  if (train_set.partitioned && query_steps) dist::refuse_sampled_fanout(config.fanout);
  std::unique_ptr<QueryBatches> query_batches;
  std::unique_ptr<dist::PartitionTrainingQueries> partition_queries;
  if (query_steps && train_set.partitioned) {
    partition_queries =
        std::make_unique<dist::PartitionTrainingQueries>(dist::partition_training_queries(train_set));
    result.setup_seconds = seconds_since(t_train);
  } else if (query_steps) {
    query_batches =
        std::make_unique<QueryBatches>(model_, train_set, config.fanout, config.dtype == Dtype::Float32);
    result.setup_seconds = seconds_since(t_train);
  }
  const bool split_from_passes = query_split && !query_steps;

  // Shuffling continues (rather than repeats) when training resumes from a checkpoint.
  Rng rng(config.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(epochs_trained_));
  std::vector<uint32_t> order(batches->sample_count());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  // A partitioned sample's parts are one sample: every step runs them all.
  const size_t batch_size = config.batch_size == 0 || train_set.partitioned ? order.size() : config.batch_size;
  std::vector<double> grads(model_.params.size());
  std::vector<double> fixed_values;
  EarlyStopping stopping(config.patience);
  std::vector<uint32_t> batch, next_up;
  EpochPredictions epoch_preds;

  for (int e = 0; e < config.epochs; ++e) {
    const auto t_epoch = std::chrono::steady_clock::now();
    if (batch_size < order.size() && config.shuffle) shuffle(std::span<uint32_t>(order), rng);
    const double lr = config.schedule.lr(config.optimizer.lr, epochs_trained_);
    // The parameters the epoch's validation queries are computed with (exactly, in a
    // full-batch epoch): what selecting the best validation epoch restores.
    if (split_from_passes && config.patience > 0) epoch_start_params = model_.params.values;
    batches->start_epoch(epochs_trained_ + 1, epoch_preds);
    result.last_epoch_outputs.resize(train_set.outputs.size());
    EpochAccumulator epoch{grads, facts, epoch_preds, result.last_epoch_outputs};
    if (query_batches) query_batch_epoch(*query_batches, train_set, config, lr, rng, fixed_values, epoch);
    if (partition_queries)
      partitioned_query_epoch(*batches, *partition_queries, config, lr, rng, epochs_trained_ + 1, fixed_values, epoch);
    for (size_t b0 = 0; !query_steps && b0 < order.size(); b0 += batch_size) {
      batch.assign(order.begin() + b0, order.begin() + std::min(order.size(), b0 + batch_size));
      if (batch_size < order.size()) std::sort(batch.begin(), batch.end());  // canonical plan key
      samples_after(order, b0 + batch_size, batch_size, exec::kPrefetchLevels, next_up);
      batches->next_up(next_up);
      batches->add_batch(batch, epochs_trained_ + 1, epoch);
      step_learnable(grads, lr, config, fixed_values, facts);
      batches->after_step();
    }
    epoch_preds.finish();
    const double step_seconds = seconds_since(t_epoch);
    ++epochs_trained_;
    EpochInfo report;
    report.epoch = epochs_trained_;
    report.lr = config.schedule.per_step() ? last_step_lr_ : lr;  // per step: the epoch's last rate
    report.train.count = epoch.loss_count;
    report.train.loss = epoch.loss_count ? epoch.loss_sum / loss_divisor(config.loss, epoch.loss_count)
                                         : std::numeric_limits<double>::quiet_NaN();
    report.train.accuracy =
        epoch.loss_count ? batches->accuracy(epoch_preds) : std::numeric_limits<double>::quiet_NaN();
    report.train.auc = std::numeric_limits<double>::quiet_NaN();
    if (test) {
      report.has_test = true;
      report.test = evaluate(*test, config.loss, config.dtype).metrics;
    }
    if (split_from_passes) {  // the epoch's passes computed every output (a partitioned sample's: its part's)
      const auto [validation, test_part] = split_metrics(train_set, result.last_epoch_outputs, config.loss);
      report_split(report, validation, test_part);
    } else if (query_split) {  // query batches computed the training queries only: a whole pass
      std::vector<std::vector<double>> values = output_values(train_set, config.dtype);
      const auto [validation, test_part] = split_metrics(train_set, values, config.loss);
      report_split(report, validation, test_part);
      fill_untrained_outputs(train_set, std::move(values), result.last_epoch_outputs);
    }
    report.seconds = seconds_since(t_epoch);
    report.step_seconds = step_seconds;
    result.record(report);
    bool go_on = batches->go_on(on_epoch ? on_epoch(report) : true);
    if (stopping.active()) {
      // Validation queries watch first, then a test set, then the training loss.
      const double watched = report.has_validation ? report.validation.loss
                             : report.has_test     ? report.test.loss
                                                   : report.train.loss;
      // A split's metrics are of the epoch's forward passes: the parameters before its steps.
      if (!stopping.keep_going(watched, split_from_passes ? epoch_start_params : model_.params.values,
                               facts ? &facts->params.values : nullptr)) {
        result.stopped_early = true;
        go_on = false;
      }
    }
    if (!go_on) break;
  }
  // Query batches compute only training queries: the others' last values from a whole pass
  // (with a split, every epoch's evaluation gave them).
  const bool untrained = std::any_of(train_set.outputs.begin(), train_set.outputs.end(),
                                     [](const OutputInfo& o) { return o.training_target().empty(); });
  // (Over a partitioned sample every rank's pass takes part in the exchanges.)
  if (query_steps && !query_split && result.epochs > 0 &&
      (train_set.partitioned ? !dist::all_agree(!untrained) : untrained))
    fill_untrained_outputs(train_set, output_values(train_set, config.dtype), result.last_epoch_outputs);
  if (result.stopped_early) stopping.restore(model_.params.values, facts ? &facts->params.values : nullptr);
  steps_for(train_set).release_gradients(release_gradients_from);
  result.train_seconds = seconds_since(t_train);
  return result;
}

}  // namespace lrnn::train
