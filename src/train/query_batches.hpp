// Mini-batches over the queries of one sample (docs/big_graphs.md "Mini-batches of
// queries"): one big graph or knowledge base is one sample, so a training step takes some
// of its queries and runs only the part of its network they depend on (their support),
// with at most F ground rules per (rule, head atom) drawn for each step, F per hop away
// from the queries, as GraphSAGE and PyG's NeighborLoader sample neighbours.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "exec/plan.hpp"
#include "neural/network.hpp"
#include "train/engine.hpp"
#include "train/numerics.hpp"

namespace lrnn::train {

// A query of a prepared set: sample and query index (OutputInfo::sample, ::query).
struct QueryRef {
  uint32_t sample = 0, query = 0;
};

// The fan-out of a step: per hop, the most ground rules kept per (rule, head atom).
// A hop is a step through a rule with a body variable that is not in its head (a rule
// that can have many groundings per head: a neighbour rule `h(X) :- h(Y), *edge(X, Y)`);
// a rule whose body only reads the head's variables (`h2(X) :- h1(X)`, `out(X) :- h2(X)`)
// stays at the hop of its head. So a query's atoms are at hop 0, the atoms its neighbour
// rules read at hop 1, and so on, each atom at the least hop it is reached at: a head at
// hop k keeps at most per_hop[k] ground rules of each rule (the last entry for the hops
// beyond the list; 0: all), which for a 2-layer GCN and per_hop = {10, 5} is PyG's
// NeighborLoader(num_neighbors=[10, 5]): 10 neighbours of each query's node, 5 of each
// of theirs. (NeighborLoader draws a node's neighbours once for both layers; here each
// rule draws its own.)
struct FanOut {
  std::vector<size_t> per_hop;   // empty: every ground rule
  std::vector<uint8_t> hop_rule;  // per template rule: 1 when a step through it is a hop
  size_t at(size_t hop) const { return per_hop.empty() ? 0 : per_hop[std::min(hop, per_hop.size() - 1)]; }
  bool samples() const;  // some hop keeps fewer than all
};
// The FanOut of `per_hop` for `model`'s rules.
FanOut fan_out(const neural::TemplateModel& model, std::vector<size_t> per_hop);

// The support of `queries` (indices into net.query_atoms) in `net`: the atoms those
// queries' atoms depend on and the ground rules between them, as a network of its own
// whose query q is queries[q]. `fan` keeps at most fan.at(hop) ground rules of each
// (rule, head atom), drawn from `rng` without replacement; the kept ones stay in the
// network's order, so the support is a network as neuralize makes them.
// `heads` indexes net's ground rules by head atom (rules_by_head).
struct RulesByHead {
  // A copy of the network's ground rules laid out head by head (the support walk's own
  // index; docs/big_graphs.md "Mini-batches of queries"). A step reads a few percent of a
  // big graph's heads at random places: from the network's arrays that is a cache and TLB
  // miss in each of five (the head's rule range, its ground rules' ids, their template
  // rules, their input ranges, their inputs); here a head's ground rules are one run of
  // records and their inputs another, and the big arrays sit on huge pages
  // (exec::AlignedBuffer), so a TLB miss costs one walk per 2 MB rather than per 4 KB.
  struct Ground {
    uint32_t rule, softmax_group, inputs_begin;  // inputs_begin: into `inputs`
  };
  exec::AlignedBuffer<uint32_t> begin;  // per atom + 1, into grounds
  exec::AlignedBuffer<Ground> grounds;  // in network order within a head; + 1 end record
  exec::AlignedBuffer<uint32_t> inputs;  // the grounds' input atoms, in their order
  // Per atom, a bit: whether it heads a ground rule. A support reaches ~10x more leaves
  // (a graph's feature facts) than heads, and this table (1 bit per atom) stays in cache
  // where `begin` (4 bytes) would be a cache miss per leaf.
  std::vector<uint64_t> has_rules;
  // What a support copies of each atom and its fact, one 32-byte record (half a cache
  // line) instead of eight arrays read at the same random place (the kept atoms are
  // ascending but sparse). fact: kNone for a derived atom with no fact. Depth and
  // predicate take 16 bits each (rules_by_head refuses a network past them).
  struct Atom {
    uint16_t depth16, predicate16;  // kNone16: no predicate
    uint32_t fact, ground_id;
    uint32_t fact_template;             // the fact's template fact, or kNone
    uint32_t values_begin, values_end;  // the fact's values, into the network's fact_data
    neural::Shape fact_shape;
    static constexpr uint16_t kNone16 = 0xFFFF;
    uint32_t depth() const { return depth16; }
    uint32_t predicate() const { return predicate16 == kNone16 ? neural::kNone : predicate16; }
  };
  static_assert(sizeof(Atom) == 32, "two records a cache line");
  exec::AlignedBuffer<Atom> atoms;
  // With float_values: the network's fact values as floats, at the same offsets, on huge
  // pages. A float pass gathers a step's feature rows from here: one cache line for a row
  // of 16 values, where the doubles take two.
  exec::AlignedBuffer<float> values32;
};
// Throws lrnn::Error when the network has depths or predicates past 16 bits.
RulesByHead rules_by_head(const neural::SampleNetwork& net, bool float_values = false);
// Per-atom and per-fact scratch of support_network for one network, kept between batches
// (support_network leaves the tables as it found them: kNone, zero bits), so that a batch
// costs its support, not the network.
struct SupportScratch {
  std::vector<uint32_t> local, fact_local;
  std::vector<uint64_t> reached;  // per atom, a bit
  std::vector<uint32_t> rank;     // per word of `reached`: the set bits before it
  // The walk's kept ground rules (indices into RulesByHead::grounds) with what the
  // support copies of each, recorded while the walk has them in cache: template rule,
  // softmax group, head atom and input atoms (kept_inputs from kept_inputs_begin[k]).
  std::vector<uint32_t> kept, kept_rule, kept_softmax, kept_head, kept_inputs_begin, kept_inputs;
  std::vector<uint32_t> expanded, pick, order;
  std::vector<uint32_t> facts;  // the network's facts a support took (to reset fact_local, fact_seen)
  // Per fact, a bit: whether the support has it yet. In cache, where fact_local (4 bytes a
  // fact) is read only for a fact two atoms share.
  std::vector<uint64_t> fact_seen;
  std::vector<std::vector<uint32_t>> todo;  // per hop, the heads to expand
  // A support network of an earlier step (QueryBatches::recycle): its arrays are filled
  // again, so a step writes into memory it has written before (no page faults, warm lines)
  // instead of fresh allocations.
  neural::SampleNetwork spare;
};
// The support in scratch's spare network (its arrays' capacity reused); value_rows as
// fill_support_network's.
// `roots`: atoms the support depends on besides the queries' (their values computed, no
// outputs of their own); `atom_ids` (if given) receives each support atom's id in `net`
// (ascending: the support's atoms keep net's order). A fact whose values lie past
// net.fact_data (a partitioned sample's ghosts, which hold none) gets zeros.
neural::SampleNetwork support_network(const neural::SampleNetwork& net, const RulesByHead& heads,
                                      std::span<const uint32_t> queries, const FanOut& fan, Rng* rng,
                                      SupportScratch& scratch, std::vector<uint32_t>* value_rows = nullptr,
                                      std::span<const uint32_t> roots = {}, std::vector<uint32_t>* atom_ids = nullptr);
neural::SampleNetwork support_network(const neural::SampleNetwork& net, const RulesByHead& heads,
                                      std::span<const uint32_t> queries, const FanOut& fan, Rng* rng);
// The atoms of that support alone (ids in `net`, ascending) into `atom_ids`: the walk
// without the network built from it. `fan` keeps every ground rule (it draws nothing).
// Atoms of depth `leaves_to_depth` or less are reached but not expanded (kNone: all are).
void support_atoms(const neural::SampleNetwork& net, const RulesByHead& heads, std::span<const uint32_t> queries,
                   std::span<const uint32_t> roots, const FanOut& fan, SupportScratch& scratch,
                   std::vector<uint32_t>& atom_ids, uint32_t leaves_to_depth = neural::kNone);
// support_network into `sub`, whose arrays are empty (their capacity is reused). With
// `value_rows`, sub's facts get no values (fact_data stays empty; fact_data_begin still
// sizes them) and value_rows receives each one's range of values in `net` (begin, end),
// where a float pass reads them (PreparedSet::value_tables).
void fill_support_network(const neural::SampleNetwork& net, const RulesByHead& heads,
                          std::span<const uint32_t> queries, const FanOut& fan, Rng* rng, SupportScratch& scratch,
                          neural::SampleNetwork& sub, std::vector<uint32_t>* value_rows = nullptr,
                          std::span<const uint32_t> roots = {}, std::vector<uint32_t>* atom_ids = nullptr);

// The training steps over one set's queries: each batch a prepared set of its samples'
// support networks, with the set's outputs of the batch's queries (in batch order).
class QueryBatches {
 public:
  // Throws lrnn::Error for what cannot be trained this way (attention blocks, batch norm).
  // float_values: the batches are run as float passes (batch(..., true)).
  QueryBatches(const neural::TemplateModel& model, const PreparedSet& set, std::vector<size_t> fanout,
               bool float_values = false);
  // The training queries of the set (those with a training target), in set order.
  const std::vector<QueryRef>& training_queries() const { return training_; }
  // A prepared set of `queries`' supports; origin[o] is the index in the whole set's
  // outputs of the batch set's output o. `values_by_reference` (float passes of batches
  // made with float_values only): the supports' values stay in the index's float copy of
  // them (PreparedSet::value_tables).
  PreparedSet batch(std::span<const QueryRef> queries, Rng& rng, std::vector<uint32_t>& origin,
                    bool values_by_reference = false);
  // Takes back the last batch once its step is done: its networks' arrays are reused.
  void recycle(PreparedSet&& batch);

 private:
  const PreparedSet& set_;
  FanOut fan_;
  std::vector<QueryRef> training_;
  std::vector<std::vector<uint32_t>> first_output_;  // per sample, per query + 1, into set.outputs
  std::vector<RulesByHead> heads_;  // per sample, built on first use
  std::vector<SupportScratch> scratch_;  // per sample
  std::vector<uint32_t> last_samples_;    // the samples of the last batch's networks
  bool float_values_ = false;              // the index keeps float copies of the values
};

}  // namespace lrnn::train
