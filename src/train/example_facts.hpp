// Learnable example facts (PyNeuraLogic's build_dataset(learnable_facts=True)): the values
// written on a dataset's example facts become parameters of the *data*. They train with the
// model's weights but are not the model's: a dataset holds them, saves and restores them
// keyed by ground literal (nothing else survives a rebuild), and a template fact stays the
// model's own parameter.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lrnn/memory.hpp"
#include "neural/network.hpp"
#include "neural/template_model.hpp"
#include "train/dataset.hpp"
#include "train/numerics.hpp"

namespace lrnn::train {

struct ExampleFacts {
  // One parameter per unnamed valued fact (named by its ground literal) and one per weight
  // name written in the examples (`$name`, shared by every fact that writes it).
  neural::Parameters params;
  // Per parameter: the ground literals whose value it is (several for a shared name).
  std::vector<std::vector<std::string>> literals;
  // Parameter p's running index is first_index + p: indices continue across the datasets
  // one engine builds (PyNeuraLogic's weight counter), so they are not a stable key.
  uint64_t first_index = 0;
  // This block's own optimizer state (Adam's moments are per entry, so stepping the model's
  // and the data's parameters apart is the same as stepping them together).
  std::unique_ptr<Optimizer> optimizer;
  MemoryReservation optimizer_memory;  // its state, held against the budget (lrnn/memory.hpp)
  std::vector<double> grads;
};

// A valued example fact that is a neuron input of a sample's network.
struct LearnableFactSite {
  uint32_t fact = 0;          // index into the network's facts
  uint32_t example_fact = 0;  // index into the sample's ExampleAst::facts
  std::string literal;        // the ground atom as the engine prints it
};

// Gives every site (per sample) its parameter: a fact written with a weight name shares
// that name's parameter, any other is its own parameter named by its literal. Fills each
// network's fact_example_param and refreshes its structure hash; values written as
// dimensions only are drawn by `init` from `seed`. Throws lrnn::Error naming the fact when
// an unnamed literal is learnable in two samples (its key would be ambiguous) or one name
// is written with two shapes or two values.
std::shared_ptr<ExampleFacts> make_example_facts(std::span<const Sample> samples,
                                                 std::vector<neural::SampleNetwork>& networks,
                                                 const std::vector<std::vector<LearnableFactSite>>& sites,
                                                 const Initializer& init, uint64_t seed, uint64_t first_index);

// One optimizer step of the block with the gradients in facts.grads (then zeroed); a new
// optimizer when the kind changed, the state kept when only the rate did.
void step_example_facts(ExampleFacts& facts, const OptimizerConfig& config, double lr);

}  // namespace lrnn::train
