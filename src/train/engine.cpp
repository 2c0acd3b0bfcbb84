#include "train/engine.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>

#include "logic/grounder.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "train/distributed.hpp"
#include "train/example_facts.hpp"

namespace lrnn::train {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

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

Metrics metrics_of(LossKind loss_kind, const std::vector<OutputInfo>& infos,
                   const std::vector<std::vector<double>>& outputs,
                   std::vector<std::vector<double>>* predictions_out) {
  Metrics m;
  std::vector<std::vector<double>> preds, targets;
  std::vector<double> scores, binary;
  bool all_binary = true;
  double total = 0;
  std::vector<double> grad;
  for (size_t o = 0; o < infos.size(); ++o) {
    const std::vector<double>& y = outputs[o];
    std::vector<double> p(y.size());
    predict(loss_kind, y, p);
    if (predictions_out) predictions_out->push_back(p);
    if (infos[o].target.empty()) continue;
    grad.assign(y.size(), 0.0);
    total += loss(loss_kind, y, infos[o].target, grad);
    ++m.count;
    if (p.size() == 1 && infos[o].target.size() == 1) {
      scores.push_back(p[0]);
      const double t = infos[o].target[0];
      if (t != 0 && t != 1) all_binary = false;
      binary.push_back(t);
    } else {
      all_binary = false;
    }
    preds.push_back(std::move(p));
    targets.push_back(infos[o].target);
  }
  m.loss = m.count ? total / loss_divisor(loss_kind, m.count) : std::numeric_limits<double>::quiet_NaN();
  m.accuracy = m.count ? accuracy(preds, targets) : std::numeric_limits<double>::quiet_NaN();
  m.auc = all_binary && m.count ? auc(scores, binary) : std::numeric_limits<double>::quiet_NaN();
  return m;
}

LossSum seed_loss_gradients(const exec::Plan& plan, exec::Workspace& ws, LossKind loss_kind,
                            const std::function<const std::vector<double>&(size_t)>& target_of_output,
                            std::vector<std::vector<double>>* predictions, std::vector<std::vector<double>>* targets,
                            size_t mean_over) {
  LossSum total;
  for (size_t o = 0; o < plan.outputs.size(); ++o)
    if (!target_of_output(o).empty()) ++total.count;
  const double divisor = loss_divisor(loss_kind, mean_over ? mean_over : total.count);
  std::vector<double> loss_grad;
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    const std::vector<double>& target = target_of_output(o);
    if (target.empty()) continue;
    std::vector<double> y = exec::output_value(plan, ws, o);
    loss_grad.assign(y.size(), 0.0);
    total.sum += loss(loss_kind, y, target, loss_grad);
    if (predictions) {
      std::vector<double> p(y.size());
      predict(loss_kind, y, p);
      predictions->push_back(std::move(p));
    }
    if (targets) targets->push_back(target);
    const exec::OutputRef& ref = plan.outputs[o];
    if (ref.offset == exec::kNoValue) continue;
    for (size_t k = 0; k < y.size(); ++k) ws.grads[ref.offset + k] += loss_grad[k] / divisor;
  }
  return total;
}

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
  next_example_index_ = model_.params.count();
  Rng rng(seed);
  initialize(init, model_.params, rng);
  learnable_ = model_.params.learnable_mask();
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

PreparedSet Engine::prepare(std::vector<Sample> samples, size_t max_ground_rules, bool learnable_facts) const {
  const auto t0 = std::chrono::steady_clock::now();
  PreparedSet set;
  set.id = next_set_id++;
  check_queries_defined(ast_, samples);
  set.samples = std::move(samples);
  const size_t n = set.samples.size();
  set.networks.resize(n);
  set.atom_texts.resize(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::vector<LearnableFactSite>> sites(learnable_facts ? n : 0);
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < n; ++i) {
    try {
      const Sample& s = set.samples[i];
      logic::GroundingOptions options;
      options.max_ground_rules = max_ground_rules;
      logic::GroundSample ground = logic::ground(*program_, s.example, s.queries, options);
      set.networks[i] = neural::neuralize(model_, s.example, ground, learnable_facts);
      if (learnable_facts) sites[i] = learnable_fact_sites(*program_, s.example, ground, set.networks[i]);
      auto& texts = set.atom_texts[i];
      texts.resize(ground.query_atoms.size());
      for (size_t q = 0; q < ground.query_atoms.size(); ++q)
        for (uint32_t a : ground.query_atoms[q]) texts[q].push_back(program_->atom_text(ground, a));
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);  // the first failing sample, whatever the schedule
  if (learnable_facts) {
    const uint64_t first = next_example_index_.load();
    set.example_facts = make_example_facts(set.samples, set.networks, sites, initializer_, seed_, first);
    next_example_index_ += set.example_facts->params.count();
  }
  for (uint32_t i = 0; i < n; ++i) {
    const Sample& s = set.samples[i];
    for (uint32_t q = 0; q < s.queries.size(); ++q) {
      std::vector<double> target = target_of(s.queries[q]);
      const auto& matches = set.atom_texts[i][q];
      if (matches.empty()) {
        set.outputs.push_back({i, q, query_text(s.queries[q]), target});
      } else {
        for (const std::string& t : matches) set.outputs.push_back({i, q, t, target});
      }
    }
  }
  set.seconds = seconds_since(t0);
  return set;
}

const exec::Plan& Engine::plan_for(const PreparedSet& set) const {
  auto it = set_plans_.find(set.id);
  if (it != set_plans_.end()) return *it->second;
  std::vector<const neural::SampleNetwork*> nets;
  for (const auto& n : set.networks) nets.push_back(&n);
  auto plan = std::make_unique<exec::Plan>(exec::build_plan(model_, nets));
  if (set_plans_.size() >= 8) set_plans_.clear();
  return *set_plans_.emplace(set.id, std::move(plan)).first->second;
}

const exec::Plan& Engine::plan_for_batch(const PreparedSet& set, const std::vector<uint32_t>& batch) {
  if (batch.size() == set.size()) {
    bool identity = true;
    for (uint32_t i = 0; i < batch.size() && identity; ++i) identity = batch[i] == i;
    if (identity) return plan_for(set);
  }
  if (batch_plans_set_ != set.id) {
    batch_plans_.clear();
    batch_plans_set_ = set.id;
  }
  std::vector<uint64_t> key;
  key.reserve(batch.size());
  for (uint32_t i : batch) key.push_back(set.networks[i].structure_hash);
  auto it = batch_plans_.find(key);
  if (it == batch_plans_.end()) {
    std::vector<const neural::SampleNetwork*> nets;
    for (uint32_t i : batch) nets.push_back(&set.networks[i]);
    auto plan = std::make_unique<exec::Plan>(exec::build_plan(model_, nets));
    if (batch_plans_.size() >= 256) batch_plans_.clear();
    return *batch_plans_.emplace(std::move(key), std::move(plan)).first->second;
  }
  // Same structures: the plan's example-fact values are laid out sample by sample, fact
  // by fact (build_plan), so this batch's values replace them in that order.
  exec::Plan& plan = *it->second;
  plan.data.clear();
  for (uint32_t i : batch) {
    const neural::SampleNetwork& net = set.networks[i];
    for (size_t f = 0; f < net.num_facts(); ++f)
      if (net.fact_template[f] == neural::kNone)
        plan.data.insert(plan.data.end(), net.fact_data.begin() + net.fact_data_begin[f],
                         net.fact_data.begin() + net.fact_data_begin[f + 1]);
  }
  return plan;
}

Evaluation Engine::evaluate(const PreparedSet& set, LossKind loss_kind) const {
  const exec::Plan& plan = plan_for(set);
  exec::forward(plan, model_.params, ws_, set.example_facts ? &set.example_facts->params : nullptr);
  std::vector<std::vector<double>> values, predictions;
  values.reserve(plan.outputs.size());
  for (size_t o = 0; o < plan.outputs.size(); ++o) values.push_back(exec::output_value(plan, ws_, o));
  Evaluation ev;
  ev.metrics = metrics_of(loss_kind, set.outputs, values, &predictions);
  ev.outputs.reserve(values.size());
  for (size_t o = 0; o < values.size(); ++o) {
    const OutputInfo& info = set.outputs[o];
    const neural::Shape shape = plan.outputs[o].shape;
    ev.outputs.push_back({info.sample, info.text, info.target, std::move(values[o]), std::move(predictions[o]),
                          shape.rows, shape.cols});
  }
  if (set.sharded()) return dist::gather_evaluation(ev, set, loss_kind);
  return ev;
}

// A fresh optimizer unless this engine already trained (or was loaded) with the same kind.
void Engine::prepare_optimizer(const OptimizerConfig& wanted) {
  const bool keep = optimizer_ && optimizer_->config().kind == wanted.kind;
  if (!keep) {
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
  for (size_t i = 0; i < grads.size(); ++i)
    if (!learnable_[i]) grads[i] = 0.0;
  clip_gradients(grads, config.clip_grad_value, config.clip_grad_norm,
                 facts ? std::span<double>(facts->grads) : std::span<double>());
  if (facts) step_example_facts(*facts, config.optimizer, lr);
  fixed_values.clear();
  for (size_t i = 0; i < learnable_.size(); ++i)
    if (!learnable_[i]) fixed_values.push_back(model_.params.values[i]);
  optimizer_->step(model_.params.values, grads, lr);
  for (size_t i = 0, k = 0; i < learnable_.size(); ++i)
    if (!learnable_[i]) model_.params.values[i] = fixed_values[k++];
}

TrainResult Engine::train(const PreparedSet& train_set, const PreparedSet* test, const TrainConfig& config,
                          const std::function<bool(const EpochInfo&)>& on_epoch) {
  TrainResult result;
  const auto t_train = std::chrono::steady_clock::now();
  prepare_optimizer(config.optimizer);
  ExampleFacts* facts = train_set.example_facts.get();  // the data's parameters, if learnable
  if (facts && train_set.sharded())
    throw Error(ErrorKind::Semantic, "learnable example facts cannot be trained sharded over MPI ranks");
  const neural::Parameters* fact_params = facts ? &facts->params : nullptr;

  // Outputs of each sample in the set's output order, for targets per batch output.
  std::vector<uint32_t> sample_first_output(train_set.size() + 1, 0);
  for (const OutputInfo& o : train_set.outputs) ++sample_first_output[o.sample + 1];
  for (size_t i = 0; i < train_set.size(); ++i) sample_first_output[i + 1] += sample_first_output[i];

  // Shuffling continues (rather than repeats) when training resumes from a checkpoint.
  Rng rng(config.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(epochs_trained_));
  // A sharded set (MPI) is batched over its global indices: every rank draws the same batches.
  if (train_set.sharded() && !sharded_step_) sharded_step_ = std::make_unique<dist::ShardedStep>();
  std::vector<uint32_t> order(train_set.sharded() ? train_set.global_size : train_set.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  const size_t batch_size = config.batch_size == 0 ? order.size() : config.batch_size;
  std::vector<double> grads(model_.params.size());
  std::vector<double> fixed_values;
  std::vector<double> best_params, best_fact_values;
  double best = std::numeric_limits<double>::infinity();
  int since_best = 0;

  for (int e = 0; e < config.epochs; ++e) {
    const auto t_epoch = std::chrono::steady_clock::now();
    if (train_set.sharded()) dist::maybe_kill_for_test(epochs_trained_ + 1);
    if (batch_size < order.size() && config.shuffle) shuffle(std::span<uint32_t>(order), rng);
    const double lr = config.schedule.lr(config.optimizer.lr, epochs_trained_);
    double loss_sum = 0;
    size_t loss_count = 0;
    std::vector<std::vector<double>> preds, targets;
    for (size_t b0 = 0; b0 < order.size(); b0 += batch_size) {
      std::vector<uint32_t> batch(order.begin() + b0, order.begin() + std::min(order.size(), b0 + batch_size));
      if (batch_size < order.size()) std::sort(batch.begin(), batch.end());  // canonical plan key
      if (train_set.sharded()) {
        const LossSum batch_loss = sharded_step_->batch_gradient(model_, train_set, batch, config.loss,
                                                                 epochs_trained_ + 1, grads, &preds, &targets);
        loss_sum += batch_loss.sum;
        loss_count += batch_loss.count;
      } else {
        const exec::Plan& plan = plan_for_batch(train_set, batch);
        exec::forward(plan, model_.params, ws_, fact_params);
        result.last_epoch_outputs.resize(train_set.outputs.size());
        ws_.grads.assign(plan.num_values, 0.0);  // backward accumulates
        // Map plan outputs to set outputs: plan outputs are ordered (sample in batch, query,
        // match), exactly the set's order restricted to the batch's samples.
        std::vector<uint32_t> set_index(plan.outputs.size());
        {
          size_t k = 0;
          for (uint32_t pos = 0; pos < batch.size(); ++pos)
            for (uint32_t o = sample_first_output[batch[pos]]; o < sample_first_output[batch[pos] + 1]; ++o)
              set_index[k++] = o;
        }
        for (size_t o = 0; o < plan.outputs.size(); ++o)
          result.last_epoch_outputs[set_index[o]] = exec::output_value(plan, ws_, o);
        const LossSum batch_loss = seed_loss_gradients(
            plan, ws_, config.loss, [&](size_t o) -> const std::vector<double>& { return train_set.outputs[set_index[o]].target; },
            &preds, &targets);
        loss_sum += batch_loss.sum;
        loss_count += batch_loss.count;
        std::fill(grads.begin(), grads.end(), 0.0);
        exec::backward(plan, model_.params, ws_, grads, fact_params, facts ? &facts->grads : nullptr);
      }
      step_learnable(grads, lr, config, fixed_values, facts);
    }
    ++epochs_trained_;
    EpochInfo report;
    report.epoch = epochs_trained_;
    report.lr = lr;
    report.train.count = loss_count;
    report.train.loss =
        loss_count ? loss_sum / loss_divisor(config.loss, loss_count) : std::numeric_limits<double>::quiet_NaN();
    report.train.accuracy = !loss_count             ? std::numeric_limits<double>::quiet_NaN()
                            : train_set.sharded() ? dist::global_accuracy(preds, targets)
                                                  : accuracy(preds, targets);
    report.train.auc = std::numeric_limits<double>::quiet_NaN();
    if (test) {
      report.has_test = true;
      report.test = evaluate(*test, config.loss).metrics;
    }
    report.seconds = seconds_since(t_epoch);
    result.history.push_back(report);
    ++result.epochs;
    bool go_on = on_epoch ? on_epoch(report) : true;
    if (train_set.sharded()) go_on = dist::all_agree(go_on);  // every rank stops together
    if (config.patience > 0) {
      const double watched = test ? report.test.loss : report.train.loss;
      if (watched < best) {
        best = watched;
        since_best = 0;
        best_params = model_.params.values;
        if (facts) best_fact_values = facts->params.values;
      } else if (++since_best >= config.patience) {
        result.stopped_early = true;
        go_on = false;
      }
    }
    if (!go_on) break;
  }
  if (result.stopped_early && !best_params.empty()) model_.params.values = best_params;
  if (result.stopped_early && facts && !best_fact_values.empty()) facts->params.values = best_fact_values;
  result.train_seconds = seconds_since(t_train);
  return result;
}

}  // namespace lrnn::train
