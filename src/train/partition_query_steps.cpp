#include "train/partition_query_steps.hpp"

#include <algorithm>
#include <memory>
#include <string>

#include "lrnn/diagnostics.hpp"
#include "train/distributed.hpp"
#include "train/ghost_cut.hpp"
#include "train/ghost_exchange.hpp"

namespace lrnn::train::dist {

PartitionQuerySteps::PartitionQuerySteps(const neural::TemplateModel& model, const PreparedSet& part)
    : part_(part), every_rule_(fan_out(model, {})) {
  if (!part.partitioned || !part.ghosts || part.networks.size() != 1)
    throw Error(ErrorKind::Runtime, "internal: query steps over a part need a partitioned sample cut at its ghosts");
  const neural::SampleNetwork& net = part.networks[0];
  heads_ = rules_by_head(net);
  // Outputs are in (query, match) order.
  first_output_.assign(net.query_atoms.size() + 1, 0);
  for (const OutputInfo& o : part.outputs) ++first_output_.at(o.query + 1);
  for (size_t q = 0; q + 1 < first_output_.size(); ++q) first_output_[q + 1] += first_output_[q];
  const GhostExchange& ex = *part.ghosts;
  ghost_level_.assign(net.num_atoms(), kNotGhost);
  ghost_owner_.assign(net.num_atoms(), 0);
  ghost_place_.assign(net.num_atoms(), 0);
  for (size_t i = 0; i < ex.levels(); ++i)
    for (size_t r = 0; r < ex.receives(i).size(); ++r)
      for (size_t k = 0; k < ex.receives(i)[r].size(); ++k) {
        const uint32_t atom = ex.receives(i)[r][k];
        ghost_level_[atom] = static_cast<uint32_t>(i);
        ghost_owner_[atom] = static_cast<uint32_t>(r);
        ghost_place_[atom] = static_cast<uint32_t>(k);
      }
}

PreparedSet PartitionQuerySteps::step(std::span<const uint32_t> outputs, std::vector<uint32_t>& origin) {
  const neural::SampleNetwork& net = part_.networks[0];
  const GhostExchange& ex = *part_.ghosts;
  const size_t ranks = static_cast<size_t>(world().size), levels = ex.levels();
  // The step's queries: those of `outputs`, in their order.
  std::vector<uint32_t> queries;
  for (uint32_t o : outputs) queries.push_back(part_.outputs.at(o).query);
  // Level by level from the highest: the ghosts the support reaches are asked of their
  // owners, whose support then takes the atoms asked of it as roots.
  std::vector<uint32_t> roots, atom_ids;
  std::vector<std::vector<std::vector<uint32_t>>> asked_of_me(levels), asked_by_me(levels);  // [level][rank]: places
  for (size_t i = levels; i-- > 0;) {
    // The ghosts of level L are read only by atoms above it: the walk stops at depth L.
    support_atoms(net, heads_, queries, roots, every_rule_, scratch_, atom_ids, ex.level(i));
    std::vector<std::vector<uint32_t>>& mine = asked_by_me[i];
    mine.assign(ranks, {});
    for (uint32_t a : atom_ids)
      if (ghost_level_[a] == i) mine[ghost_owner_[a]].push_back(ghost_place_[a]);
    for (std::vector<uint32_t>& places : mine) std::sort(places.begin(), places.end());
    asked_of_me[i] = alltoall(mine);
    for (size_t r = 0; r < ranks; ++r) {
      for (uint32_t place : asked_of_me[i][r]) {
        if (place >= ex.sends(i)[r].size())
          throw Error(ErrorKind::Runtime, "internal: rank " + std::to_string(r) + " asked for a ghost it does not read");
        roots.push_back(ex.sends(i)[r][place]);
      }
    }
  }
  neural::SampleNetwork sub =
      support_network(net, heads_, queries, every_rule_, nullptr, scratch_, nullptr, roots, &atom_ids);
  // Support atoms are the part's in its order: a part atom's local id is its rank among them.
  const auto local = [&](uint32_t atom) {
    const auto it = std::lower_bound(atom_ids.begin(), atom_ids.end(), atom);
    if (it == atom_ids.end() || *it != atom) throw Error(ErrorKind::Runtime, "internal: an exchanged atom outside the step's support");
    return static_cast<uint32_t>(it - atom_ids.begin());
  };
  GhostExchange::StepLists lists;
  lists.send.assign(levels, std::vector<std::vector<uint32_t>>(ranks));
  lists.recv.assign(levels, std::vector<std::vector<uint32_t>>(ranks));
  for (size_t i = 0; i < levels; ++i)
    for (size_t r = 0; r < ranks; ++r) {
      for (uint32_t place : asked_of_me[i][r]) lists.send[i][r].push_back(local(ex.sends(i)[r][place]));
      for (uint32_t place : asked_by_me[i][r]) lists.recv[i][r].push_back(local(ex.receives(i)[r][place]));
    }
  // The support's facts follow its atoms' order: its ghosts go last, as in the part.
  std::vector<uint32_t> ghost_facts;
  for (uint32_t l = 0; l < sub.num_atoms(); ++l)
    if (sub.atom_fact[l] != neural::kNone && ghost_level_[atom_ids[l]] != kNotGhost) ghost_facts.push_back(sub.atom_fact[l]);
  // Each ghost the support reads was asked for (the walks above reach all of them): else its
  // value would be the zeros no exchange writes over.
  size_t received = 0;
  for (const auto& level : lists.recv)
    for (const auto& from : level) received += from.size();
  if (received != ghost_facts.size())
    throw Error(ErrorKind::Runtime, "internal: a step's support reads " + std::to_string(ghost_facts.size()) +
                                        " ghosts and asked for " + std::to_string(received));
  const uint32_t ghosts_from = ghost_facts_last(sub, ghost_facts);
  PreparedSet out;
  out.id = next_prepared_set_id();
  out.num_samples = 1;
  out.shard_first = part_.shard_first;
  out.global_size = part_.global_size;
  out.owned_first = 0;
  out.owned_last = 1;
  out.partitioned = true;
  out.ghosts = std::make_shared<GhostExchange>(ex, std::move(lists), ghosts_from);
  origin.clear();
  // Every output of each step query (a query's matches are consecutive in the part's outputs).
  for (uint32_t q = 0; q < queries.size(); ++q)
    for (uint32_t o = first_output_[queries[q]]; o < first_output_[queries[q] + 1]; ++o) {
      OutputInfo info = part_.outputs[o];
      info.sample = 0;
      info.query = q;
      out.outputs.push_back(std::move(info));
      origin.push_back(o);
    }
  out.networks.push_back(std::move(sub));
  return out;
}

}  // namespace lrnn::train::dist
