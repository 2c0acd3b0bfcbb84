// The grounder's start (grounder_impl.hpp): the predicates the queries need, and the
// example's facts loaded into their relations, each fact once.
#include <algorithm>
#include <string>

#include "logic/grounder_impl.hpp"
#include "logic/radix_sort.hpp"

namespace lrnn::logic::detail {

void Grounder::select_relevant(const std::vector<Literal>& queries) {
  const size_t n = prog_.num_predicates();
  std::vector<uint32_t> roots;
  for (const Literal& q : queries) {
    uint32_t p = q.builtin ? kNone : prog_.predicate_id(q.predicate, q.arity());
    if (p != kNone) roots.push_back(p);
  }
  has_queries_ = !queries.empty();
  if (!has_queries_) {
    logic_relevant_.assign(n, 1);
    neural_relevant_.assign(n, 1);
    return;
  }
  auto closure = [&](const std::vector<std::vector<uint32_t>>& deps) {
    std::vector<char> seen(n, 0);
    std::vector<uint32_t> stack = roots;
    for (uint32_t p : roots) seen[p] = 1;
    while (!stack.empty()) {
      uint32_t p = stack.back();
      stack.pop_back();
      for (uint32_t d : deps[p])
        if (!seen[d]) seen[d] = 1, stack.push_back(d);
    }
    return seen;
  };
  logic_relevant_ = closure(prog_.logic_deps());
  neural_relevant_ = closure(prog_.input_deps());
}

// Fact f as the grounder reads it (FactSource::interned, else from its literal).
void Grounder::read_fact(const FactSource& facts, uint32_t f, FactSource::Interned& out, Literal& scratch) {
  if (facts.interned(f, syms_, out)) return;
  const Literal& l = facts.fact(f, scratch);
  out.predicate = l.predicate;
  out.builtin = l.builtin;
  out.args.clear();
  for (const Term& t : l.args) {
    if (t.is_variable()) {
      throw Error(ErrorKind::Semantic, t.span, "an example fact must be ground, found variable " + t.text);
    }
    out.args.push_back(syms_.intern_term(t));
  }
}

// Facts are inserted in batches whose hash slots are prefetched first (as fire's heads
// are): a big graph's edge relation hashes 2M tuples into a table far larger than the
// caches, so each insert was a cache and TLB miss waited for in turn.
void Grounder::load_facts(const FactSource& facts) {
  FactSource::Interned fact;
  Literal scratch;
  std::string last_predicate;  // facts come in runs of one predicate: one lookup per run
  int last_arity = -1;
  uint32_t last_id = kNone;
  constexpr uint32_t kBatch = 32;
  struct Pending {
    uint32_t pred, fact, begin;  // begin: into tuples
  };
  std::vector<Pending> pending;
  std::vector<uint32_t> tuples;
  pending.reserve(kBatch);
  // Binary relations are appended unhashed and checked for repeated facts afterwards
  // (remove_repeated_facts): a graph's edges would otherwise fill a whole-tuple hash
  // table of ~64 MB at 2M edges, which nothing probes after loading.
  std::vector<char> unchecked(rels_.size(), 0);
  for (uint32_t p = 0; p < rels_.size(); ++p) unchecked[p] = rels_[p].arity() == 2 && rels_[p].rows() == 0;
  auto flush = [&]() {
    for (const Pending& q : pending) rels_[q.pred].prefetch(tuples.data() + q.begin);
    for (const Pending& q : pending) {
      Relation& rel = rels_[q.pred];
      auto [row, inserted] = rel.insert(tuples.data() + q.begin);
      if (inserted) ++total_atoms_;
      if (rel.example_fact(row) == kNone) rel.set_example_fact(row, q.fact);
    }
    pending.clear();
    tuples.clear();
  };
  for (uint32_t f = 0; f < facts.size(); ++f) {
    read_fact(facts, f, fact, scratch);
    const std::vector<uint32_t>& tuple = fact.args;
    const int arity = static_cast<int>(tuple.size());
    if (!fact.builtin && (arity != last_arity || fact.predicate != last_predicate)) {
      last_predicate = fact.predicate;
      last_arity = arity;
      last_id = prog_.predicate_id(last_predicate, arity);
    }
    const uint32_t p = fact.builtin ? kNone : last_id;
    if (prog_.uses_domain()) domain_.insert(domain_.end(), tuple.begin(), tuple.end());
    if (p == kNone) continue;  // no rule reads it and no query can name it
    if (unchecked[p]) {
      const uint32_t row = rels_[p].append_distinct(tuple.data());
      rels_[p].set_example_fact(row, f);
      ++total_atoms_;
      continue;
    }
    pending.push_back({p, f, uint32_t(tuples.size())});
    tuples.insert(tuples.end(), tuple.begin(), tuple.end());
    if (pending.size() == kBatch) flush();
  }
  flush();
  for (uint32_t p = 0; p < rels_.size(); ++p)
    if (unchecked[p]) remove_repeated_facts(rels_[p]);
  for (Relation& r : rels_) r.delta_begin = r.delta_end = r.rows();
  if (prog_.uses_domain()) {
    domain_.insert(domain_.end(), prog_.template_constants().begin(),
                   prog_.template_constants().end());
    std::sort(domain_.begin(), domain_.end());
    domain_.erase(std::unique(domain_.begin(), domain_.end()), domain_.end());
  }
}

// A binary relation loaded unhashed made distinct: when a fact repeats (found by
// sorting the packed pairs), the relation is rebuilt in load order with each tuple's
// first fact, the relation hashed loading would have built.
void Grounder::remove_repeated_facts(Relation& rel) {
  std::vector<uint64_t> pairs(rel.rows());
  for (uint32_t r = 0; r < rel.rows(); ++r) pairs[r] = uint64_t(rel.row(r)[0]) << 32 | rel.row(r)[1];
  radix_sort(pairs);
  if (std::adjacent_find(pairs.begin(), pairs.end()) == pairs.end()) return;
  Relation distinct(2);
  for (uint32_t r = 0; r < rel.rows(); ++r) {
    const auto [row, inserted] = distinct.insert(rel.row(r));
    if (inserted) distinct.set_example_fact(row, rel.example_fact(r));
    else --total_atoms_;
  }
  rel = std::move(distinct);
}

}  // namespace lrnn::logic::detail
