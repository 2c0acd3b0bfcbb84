// A rank's part of one big sample, prepared for training over MPI (train/partition.hpp,
// docs/distributed.md "One sample over many ranks").
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lrnn/diagnostics.hpp"
#include "train/distributed.hpp"
#include "train/engine.hpp"
#include "train/ghost_cut.hpp"
#include "train/ghost_exchange.hpp"
#include "train/partition.hpp"
#include "train/query_batches.hpp"

namespace lrnn::train::dist {

void refuse_sampled_fanout(const std::vector<size_t>& fanout) {
  if (FanOut{fanout, {}}.samples())
    throw Error(ErrorKind::Semantic,
                "--fanout (sampled neighbours) cannot train one sample partitioned over MPI ranks yet: train its "
                "query mini-batches without it, or in one process (docs/distributed.md \"One sample over many ranks\")");
}

PreparedSet prepare_partitioned(const Engine& engine, const SampleStore& samples, size_t max_ground_rules,
                                const PartSource* source) {
  const World& w = world();
  const Sample& head = samples.without_facts()[0];
  std::vector<std::string> predicates;
  if (source) predicates = source->query_predicates();
  for (const Literal& q : head.queries) predicates.push_back(predicate_key(q));
  const size_t radius = check_partition_template(engine.ast(), predicates);
  // Cut at ghosts where the template has a layer order (every rank decides alike: the
  // template is the same everywhere); else each rank recomputes its halo.
  const std::map<std::string, uint32_t> levels = predicate_levels(engine.ast());
  bool ghosts = !levels.empty() && engine.model().batch_norms.empty();
  // A derived predicate with example facts too: its atoms' values mix both, the halo's case.
  for (const std::string& key : source ? source->fact_predicates() : samples.fact_predicates())
    ghosts = ghosts && !levels.count(key);
  SamplePartition part = partition_sample(samples, radius, w.rank, w.size, true, ghosts, source);

  PreparedSet set;
  std::unique_ptr<GhostCut> cut;
  try {
    if (ghosts) {
      const PreparedSet probe = engine.prepare(part.probe, max_ground_rules);
      cut = std::make_unique<GhostCut>(engine.program(), levels, engine.ast(), predicates, part.owners, w.rank,
                                       ghost_shapes(engine.model(), probe.networks.at(0)));
    }
    set = part.whole ? engine.prepare(samples, std::span<const Sample>(&part.head, 1), max_ground_rules, cut.get())
                     : engine.prepare(part.store, max_ground_rules, false, cut.get());
  } catch (const std::exception& e) {
    abort_job("its part of the partitioned sample (" + std::to_string(part.stats.held_facts) + " facts, " +
              std::to_string(part.stats.owned_queries) + " queries): " + e.what());
  }
  if (cut) {
    std::unordered_map<std::string, int>().swap(part.owners);
    set.ghosts = std::make_shared<GhostExchange>(*cut);
    part.stats.ghost_exchange = 1;
    part.stats.ghosts = set.ghosts->ghosts();
    part.stats.sent_atoms = set.ghosts->asked();
  }
  // One sample per rank, the rank's own: each step's batch holds every part.
  set.shard_first = static_cast<size_t>(w.rank);
  set.global_size = static_cast<size_t>(w.size);
  set.margins = false;
  set.owned_first = 0;
  set.owned_last = set.size();
  set.partitioned = true;
  set.partition = part.stats;
  set.partition.atoms = set.networks.empty() ? 0 : set.networks[0].num_atoms();
  uint32_t targeted = 0;
  for (const OutputInfo& o : set.outputs) {
    set.partition_order.push_back(part.query_of.at(o.query));
    targeted += o.training_target().empty() ? 0 : 1;  // a split's validation and test queries give no loss
  }
  set.global_target_counts = allgather({targeted});
  return set;
}

}  // namespace lrnn::train::dist
