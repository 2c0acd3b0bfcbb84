// What a public lrnn::Dataset holds: the paired samples (an example with the queries it
// answers), compactly (train/sample_store.hpp). Internal to the api stage and the bindings
// that build datasets from samples.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "lrnn/model.hpp"
#include "train/dataset.hpp"
#include "train/sample_store.hpp"

namespace lrnn {

namespace train {
struct PreparedSet;  // train/engine.hpp
class PartSource;    // train/partition.hpp
}

struct Dataset::Impl {
  train::SampleStore samples;
  uint64_t id = 0;  // keys the models' caches of grounded networks
  // A rank's share (Dataset::load_share): `samples` are [shard_first, shard_first + held)
  // of `total` samples, of which it owns [owned_first, owned_last) (global; the rest are
  // margins: docs/distributed.md); total 0: `samples` is the whole dataset.
  size_t shard_first = 0, total = 0;
  size_t owned_first = 0, owned_last = 0;
  size_t parsed_examples = 0;
  bool is_share() const { return total != 0; }
  // total 0: the whole dataset; else a rank's share, samples [first, first + held) of total.
  static Dataset make(std::vector<train::Sample> samples, size_t parsed = 0, size_t first = 0, size_t total = 0);
  static Dataset make(train::SampleStore samples, size_t parsed = 0);
  // A share owning [owned_first, owned_last) of the samples it holds (global indices).
  static Dataset make_share(train::SampleStore samples, size_t parsed, size_t first, size_t total,
                            size_t owned_first, size_t owned_last);
  // One graph whose ranks build only their parts of its facts and queries from `source`
  // (graph_from_arrays_share): `head` is its sample's head without facts or query literals
  // (its split, when it has one, covers all of the source's queries).
  static Dataset make_part_source(train::Sample head, std::shared_ptr<const train::PartSource> source);

  // Set: the facts and query literals of the one sample are `part_source`'s, not in
  // `samples` (whose head counts them in released_queries, as a released dataset's); only a
  // model preparing the sample over the ranks of an MPI job reads them (Model::prepare).
  std::shared_ptr<const train::PartSource> part_source;
  // The queries are counted, not held (released_queries): facts released, or a part source.
  bool queries_counted() const { return facts_released || part_source != nullptr; }
  // Throws lrnn::Error when the facts are a part source's: `what` would read them.
  void refuse_part_source(const std::string& what) const;

  // with_learnable_facts(): the facts are parameters of the data, so a model's grounding
  // of it holds trained state and lives as long as the dataset (here, by model id), never
  // in a model's evictable cache.
  bool learnable_facts = false;
  // Dataset::without_facts: the samples hold their heads and queries only; only a model
  // that prepared the dataset before may use it.
  bool facts_released = false;
  // Then the queries' literals are dropped too (a big graph's query per node: ~0.3 KB each;
  // the model's grounding holds what its outputs need): per sample, how many it had. (So
  // with a part source, whose queries are built by the ranks that own them.)
  std::vector<uint32_t> released_queries;
  mutable std::mutex learnable_mutex;
  mutable std::map<uint64_t, std::shared_ptr<const train::PreparedSet>> learnable_sets;
};

}  // namespace lrnn
