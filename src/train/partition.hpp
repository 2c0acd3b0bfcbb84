// One big sample (one example, many queries) split over the ranks of an MPI job
// (docs/distributed.md "One sample over many ranks"). Every rank owns the queries whose first
// constant hashes to it, holds the facts within a radius of those constants in the
// constants' co-occurrence graph (constants sharing a fact are adjacent) and grounds, plans
// and trains only that part; the parameter gradients are summed exactly over the ranks
// (train/distributed.hpp), as for a set of samples sharded over them.
//
// Exactness: a template passes check_partition_template only when every grounding of a rule
// for a head h(a, ...) reads atoms within a bounded distance of `a`; the radius it returns
// bounds how far from a query's first constant the facts its value and existence depend on
// can lie. A rank holding every fact with a constant within that radius of its queries'
// constants computes those queries' values and gradients exactly as one process does (atoms
// farther out are computed from partial neighbourhoods, but no owned query reads them, and
// the network keeps only what its queries read).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "lrnn/ast.hpp"
#include "train/partition_stats.hpp"
#include "train/sample_store.hpp"

namespace lrnn::train {

// The hops (in the co-occurrence graph of the constants) within which the facts that the
// atoms of `query_predicates` ("name/arity") depend on lie. Throws lrnn::Error naming the rule
// (file:line) of a template it cannot bound: a rule with a constant, a head whose first
// argument is not a variable, a variable that shares no (non-builtin) body literal with the
// head's first variable X, a rule whose head has no variable but whose body has one (a global
// readout), or recursion through which the radius grows.
size_t check_partition_template(const TemplateAst& tmpl, const std::vector<std::string>& query_predicates);

// The constants of one sample as the partition reads them: dense ids 0..count-1 in the order
// of their first occurrence (the facts' terms, in the facts' order, then the queries' first
// arguments), each fact's constants (fact f's: fact_constants[fact_begin[f] .. fact_begin[f + 1])),
// each query's first constant, and each constant's key (constant_key).
struct SampleConstants {
  std::vector<uint64_t> fact_begin;
  std::vector<uint32_t> fact_constants;
  std::vector<uint32_t> query_constant;
  std::vector<std::string> keys;
  size_t num_facts() const { return fact_begin.empty() ? 0 : fact_begin.size() - 1; }
};

// One big sample whose facts and queries a rank builds only in part: a graph from arrays in
// an MPI job (graph_from_arrays_share, src/data/graph_arrays.cpp). Its dataset's store holds
// the sample's head without facts and without its queries' literals (their split, if any,
// and their count: Dataset::Impl::released_queries); the source gives what the partition
// reads of them, the queries a rank owns and a store of the facts it keeps.
class PartSource {
 public:
  virtual ~PartSource() = default;
  virtual SampleConstants constants() const = 0;
  virtual size_t num_queries() const = 0;
  // The queries `which` (indices among the sample's), their targets as the whole sample's.
  virtual std::vector<Literal> queries(std::span<const uint32_t> which) const = 0;
  // The queries' predicates ("name/arity"), once each.
  virtual std::vector<std::string> query_predicates() const = 0;
  // The facts `keep` (ascending indices among the sample's facts, in the order constants()
  // lists them) as a store of one sample with `head`, the same store as keep_facts of the
  // whole sample's would be.
  virtual SampleStore keep_facts(std::span<const uint32_t> keep, Sample head) const = 0;
  // SampleStore::fact_predicates of the whole sample.
  virtual std::vector<std::string> fact_predicates() const = 0;
};

// Rank `rank` of `size`'s part of sample 0 of `samples` (one sample): its queries (those whose
// first argument it owns) with the facts within `radius` of their first constants. The
// constants' owners come from METIS when `use_metis` and lrnn has it (metis_owners), else
// from a hash (owner_of_constant).
struct SamplePartition {
  SampleStore store;                // one sample: the held facts and the owned queries
  std::vector<uint32_t> query_of;   // per owned query: its index among the sample's queries
  PartitionStats stats;
  std::unordered_map<std::string, int> owners;  // `ghosts`: every constant's rank, by constant_key
  // `ghosts`: the ball of the sample's first query alone (what ghost shapes are read from),
  // and, when the rank holds most of the sample (`whole`), no copy in `store`: the sample's
  // own facts are grounded for the owned queries in `head`.
  SampleStore probe;
  bool whole = false;
  Sample head;
};
// Throws lrnn::Error naming a query that cannot be assigned (no argument, or a variable first:
// check_query_argument).
// `ghosts` (train/ghost_cut.hpp): the radius is taken around every owned constant, not only
// the queries' (any owned atom may be read elsewhere), and `owners` is filled.
// With `source`, the facts are its (the store of `samples` holds the sample's head only) and
// the part is always a store of the kept facts.
SamplePartition partition_sample(const SampleStore& samples, size_t radius, int rank, int size, bool use_metis = true,
                                 bool ghosts = false, const PartSource* source = nullptr);

void check_query_argument(const Literal& query);

// A constant's key: constants and strings intern by their text (the same symbol), numbers
// by their value (1 and 1.0 are one symbol).
std::string constant_key(Term::Kind kind, const std::string& text);

// The rank owning a constant (its text, numbers written canonically) without a partitioner:
// a hash, the same on every rank and every run.
int owner_of_constant(const std::string& key, int size);

// Whether lrnn was built with METIS (CMake option LRNN_METIS, Debian's libmetis-dev).
bool metis_available();
// The owner of each of `num_constants` constants from METIS_PartGraphKway (fixed seed: every
// rank computes the same) over their co-occurrence graph, given each fact's constants
// (fact f's are fact_constants[fact_begin[f] .. fact_begin[f + 1])); empty without METIS
// or when there are fewer constants than ranks.
std::vector<int> metis_owners(size_t num_constants, std::span<const uint64_t> fact_begin,
                              std::span<const uint32_t> fact_constants, int size);

class Engine;
struct PreparedSet;
namespace dist {
// This rank's part of the one sample of `samples`, grounded and neuralized by `engine`: the
// template checked (check_partition_template), the sample partitioned (partition_sample),
// and the ranks' counts of targeted outputs gathered (a collective: every rank calls it).
// Throws lrnn::Error, the same on every rank, for what it refuses (a template or query it
// cannot partition); a failure while grounding this rank's part ends the job naming the rank.
// With `source` (not null), the sample's facts are built from it, only those of this rank's part.
PreparedSet prepare_partitioned(const Engine& engine, const SampleStore& samples, size_t max_ground_rules,
                                const PartSource* source = nullptr);
// Neighbour sampling (`fanout` with an entry above 0) draws each step's ground rules in one
// process's walk over its queries' supports; the ranks of a partitioned sample run their
// whole parts and draw nothing: refused (lrnn::Error), before anything is grounded.
void refuse_sampled_fanout(const std::vector<size_t>& fanout);
}  // namespace dist

}  // namespace lrnn::train
