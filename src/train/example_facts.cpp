#include "train/example_facts.hpp"

#include <algorithm>

#include "lrnn/diagnostics.hpp"

namespace lrnn::train {

namespace {

std::string sample_name(size_t i) { return "sample " + std::to_string(i); }

// The parameter a valued fact writes into: its weight name's (created by the first fact
// that writes it) or a new one named by its literal.
uint32_t parameter_of_fact(ExampleFacts& facts, const ValueSpec& v, const std::string& literal, size_t sample,
                           std::vector<size_t>& first_sample) {
  const neural::Shape shape = neural::shape_of(v);
  const bool has_values = v.kind != ValueSpec::Kind::Dims;
  const std::string key = v.name.empty() ? literal : "$" + v.name;
  const uint32_t existing = facts.params.find(key);
  if (existing == neural::kNoParam) {
    neural::ParamInfo info;
    info.name = key;
    info.shape = shape;
    info.span = v.span;
    const uint32_t p = facts.params.add(std::move(info), has_values ? v.data : std::vector<double>{});
    facts.literals.emplace_back();
    first_sample.push_back(sample);
    return p;
  }
  const std::string where = "learnable example fact " + literal + " (" + sample_name(sample) + ")";
  if (v.name.empty())
    throw Error(ErrorKind::Semantic, v.span,
                where + " is also learnable in " + sample_name(first_sample[existing]) +
                    ": a learnable fact is one parameter keyed by its literal, so write it in one sample, or "
                    "name its weight ($name=...) to share one parameter between the samples");
  neural::ParamInfo& info = facts.params.mutable_info(existing);
  if (!(info.shape == shape))
    throw Error(ErrorKind::Shape, v.span,
                where + " writes weight $" + v.name + " as " + std::to_string(shape.rows) + "x" +
                    std::to_string(shape.cols) + ", " + sample_name(first_sample[existing]) + " as " +
                    std::to_string(info.shape.rows) + "x" + std::to_string(info.shape.cols));
  if (has_values) {
    double* values = facts.params.data(existing);
    if (!info.initialized) {
      std::copy(v.data.begin(), v.data.end(), values);
      info.initialized = true;
    } else if (!std::equal(v.data.begin(), v.data.end(), values)) {
      throw Error(ErrorKind::Semantic, v.span,
                  where + " gives weight $" + v.name + " other values than " + sample_name(first_sample[existing]) +
                      " does: one shared parameter has one initial value");
    }
  }
  return existing;
}

}  // namespace

std::shared_ptr<ExampleFacts> make_example_facts(std::span<const Sample> samples,
                                                 std::vector<neural::SampleNetwork>& networks,
                                                 const std::vector<std::vector<LearnableFactSite>>& sites,
                                                 const Initializer& init, uint64_t seed, uint64_t first_index) {
  auto facts = std::make_shared<ExampleFacts>();
  facts->first_index = first_index;
  std::vector<size_t> first_sample;  // per parameter: the sample that created it
  for (size_t i = 0; i < networks.size(); ++i) {
    neural::SampleNetwork& net = networks[i];
    if (sites[i].empty()) continue;
    net.fact_example_param.assign(net.num_facts(), neural::kNone);
    for (const LearnableFactSite& site : sites[i]) {
      const ValueSpec& v = *samples[i].example.facts[site.example_fact].weight;
      const uint32_t p = parameter_of_fact(*facts, v, site.literal, i, first_sample);
      net.fact_example_param[site.fact] = p;
      facts->literals[p].push_back(site.literal);
    }
    net.structure_hash = neural::structure_hash(net);
  }
  Rng rng(seed ^ (0xA5A5A5A5ULL + first_index));
  initialize(init, facts->params, rng);
  facts->grads.assign(facts->params.size(), 0.0);
  return facts;
}

void step_example_facts(ExampleFacts& facts, const OptimizerConfig& config, double lr) {
  if (!facts.optimizer || facts.optimizer->config().kind != config.kind) {
    // The state of a new optimizer (Adam: 2 values per entry, SGD: 1), asked of the budget.
    const uint64_t bytes = 8 * uint64_t(facts.params.size()) * (config.kind == OptimizerKind::Sgd ? 1 : 2);
    facts.optimizer.reset();
    facts.optimizer_memory.resize(bytes, "training the learnable example facts (" + std::to_string(facts.params.size()) +
                                             " values: " + to_string(config.kind) + "'s state)");
    facts.optimizer = std::make_unique<Optimizer>(config, facts.params.size());
  } else if (!(facts.optimizer->config().lr == config.lr)) {
    const std::vector<double> state = facts.optimizer->state();
    facts.optimizer = std::make_unique<Optimizer>(config, facts.params.size());
    facts.optimizer->set_state(state);
  }
  facts.optimizer->step(facts.params.values, facts.grads, lr);
  std::fill(facts.grads.begin(), facts.grads.end(), 0.0);
}

}  // namespace lrnn::train
