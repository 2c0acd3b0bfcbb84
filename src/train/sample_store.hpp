// A dataset's samples held compactly. As Literal/Term objects an example fact costs ~220
// bytes plus ~100 per argument, whatever it says (NCI1's 4110 graphs: ~230 MB, over half of
// lrnn's peak memory, issue 13); here a fact is 16 bytes and an argument 16, with every
// string, span and value stored once in tables shared by the store and its subsets (a
// one-hot node label is one of a few dozen distinct values). Samples are decoded one at a
// time when they are grounded or inspected, and decode to exactly what was stored: every
// field, spans included, and values bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "logic/grounding.hpp"
#include "logic/symbols.hpp"
#include "lrnn/ast.hpp"
#include "lrnn/memory.hpp"
#include "train/dataset.hpp"
#include "train/flat_array.hpp"

namespace lrnn::train {

class SampleStore {
 public:
  class Builder;
  SampleStore() = default;
  // Takes the samples over: each one's facts are encoded and then freed in turn, so the
  // literals and their compact form are never both held whole.
  explicit SampleStore(std::vector<Sample> samples);

  size_t size() const { return heads_.size(); }
  // Sample i as it was given.
  Sample at(size_t i) const;
  // Sample i's facts as grounding and neuralization read them (logic::FactSource): each
  // decoded when asked for, so the example is never held whole as literals. Valid while
  // this store lives.
  class Facts;
  Facts facts(size_t i) const;
  // Every sample as given (what needs them all at once as objects).
  std::vector<Sample> materialize() const;
  // The samples without their examples' facts (ids, spans, queries, importance), for what
  // reads nothing else; their ExampleAst::facts are empty.
  const std::vector<Sample>& without_facts() const { return heads_; }
  size_t fact_count(size_t i) const { return fact_begin_[i + 1] - fact_begin_[i]; }
  // "name/arity" of every predicate the examples' facts use, sorted, each once.
  std::vector<std::string> fact_predicates() const;
  // The facts of this store's samples under new heads: sample k of the result holds the
  // facts of sample of[k] of this one, and the id, queries and importance of heads[k]
  // (examples paired with query lines after their facts were stored as they were parsed).
  SampleStore with_heads(std::vector<Sample> heads, std::span<const uint32_t> of) &&;
  // The samples at `indices` (in that order) and [first, last), sharing this store's tables.
  SampleStore subset(std::span<const size_t> indices) const;
  SampleStore slice(size_t first, size_t last) const;
  // The same samples with their queries assigned to the parts of a query split (one entry
  // per query, sample by sample: assign_query_splits), a copy of this store's facts.
  SampleStore with_query_splits(std::span<const QuerySplit> split) const&;
  // The same, taking this store's facts (a big graph's are a gigabyte; not copied).
  SampleStore with_query_splits(std::span<const QuerySplit> split) &&;
  // Every query's part, sample by sample (Train where a sample has no split).
  std::vector<QuerySplit> query_splits() const;

  // Sample i's facts' terms, fact by fact: fact f's are text[begin[f] .. begin[f + 1]) (string
  // ids: string_of) with their kinds. What partitioning one big sample over MPI ranks reads
  // (train/partition.hpp), without decoding a literal per fact.
  struct FactTerms {
    std::vector<uint64_t> begin;  // one per fact, and the end
    std::vector<uint32_t> text;
    std::vector<Term::Kind> kind;
  };
  FactTerms fact_terms(size_t i) const;
  const std::string& string_of(uint32_t id) const { return tables_->strings[id]; }
  // Sample i with only its facts `keep` (increasing indices into the sample's facts), under
  // `head` (its id, queries and importance), sharing this store's tables.
  SampleStore keep_facts(size_t i, std::span<const uint32_t> keep, Sample head) const;

  // About the bytes held by this store: its arrays and the tables it shares (the queries of
  // the samples, which it keeps as literals, only as the Sample objects that hold them).
  // What tests and docs compare with the literals it replaces.
  size_t bytes() const;

 private:
  struct Fact {
    uint32_t predicate = 0;  // into Tables::strings
    uint32_t value = 0;      // into Tables::values, or kNone: no weight
    uint32_t span = 0;       // into Tables::spans, or kNone: Span{}
    uint32_t args : 24 = 0;  // its terms are the next `args` of the sample's
    uint32_t flags : 8 = 0;  // builtin, hidden, negated, soft_negated, transposed
  };
  struct TermRef {
    uint32_t text = 0, type = 0;  // into Tables::strings
    uint32_t span = 0;            // into Tables::spans, kNone, or relative to its fact's (sample_store.cpp)
    Term::Kind kind = Term::Kind::Constant;
  };
  // A Span without its shared_ptr: the file as an index into Tables::files (16 bytes where
  // a Span takes 32; a graph's edge fact has three spans).
  struct PackedSpan {
    uint32_t file = 0, line = 0, col = 0, length = 0;
  };
  struct Tables {
    std::vector<std::string> strings;
    std::vector<ValueSpec> values;  // distinct (bit for bit, span included)
    FlatArray<PackedSpan> spans;  // every span other than Span{} (train/flat_array.hpp)
    std::vector<std::shared_ptr<const SourceFile>> files;  // of the spans, each once
  };

  void append_from(const SampleStore& from, size_t i);
  // Fact f into `out` (its strings' and terms' memory reused), `term` its first term,
  // advanced past its terms.
  void decode_fact_into(const Fact& f, const TermRef*& term, Literal& out) const;
  Span span_of(uint32_t index) const;
  // A term's span from its TermRef::span and its fact's Fact::span.
  Span term_span_of(uint32_t index, uint32_t fact_span) const;

  std::shared_ptr<const Tables> tables_;
  std::vector<Sample> heads_;
  std::vector<size_t> fact_begin_{0}, term_begin_{0};  // per sample (size + 1)
  // Grown and shrunk by realloc, never copied into fresh memory (train/flat_array.hpp).
  FlatArray<Fact> facts_;
  FlatArray<TermRef> terms_;
  MemoryReservation memory_;  // facts_ and terms_ as they grow (lrnn/memory.hpp)
};

class SampleStore::Facts final : public logic::FactSource {
 public:
  Facts(const SampleStore& store, size_t sample);
  size_t size() const override { return count_; }
  // In order of i, each fact costs its decoding; out of order, finding fact i's terms
  // walks the sample's facts from the nearest earlier read (error messages do that).
  const Literal& fact(size_t i, Literal& scratch) const override;
  const ValueSpec* value(size_t i) const override;
  // Each distinct term is interned once per symbol table where the sample holds many terms
  // per distinct string (a graph's node names); otherwise straight from the stored text.
  bool interned(size_t i, logic::Symbols& symbols, Interned& out) const override;

 private:
  // The first stored term of fact i (local), walking from the last read as fact() does.
  const TermRef* seek(size_t i) const;
  // The symbol of a stored constant, string or number term; kNone for a variable or a
  // number that does not parse.
  uint32_t symbol_of(const TermRef& t, logic::Symbols& symbols) const;
  // Hints that symbol_of's memo entry of `t` is read soon (none without a memo).
  void prefetch_memo(const TermRef& t) const;

  const SampleStore& store_;
  size_t first_fact_ = 0, count_ = 0;
  mutable size_t next_fact_ = 0, next_term_ = 0;  // the term index of fact next_fact_ (local)
  size_t first_term_ = 0, term_count_ = 0;
  // symbol_of's memo, by string id, of constants and of numbers (kNone: not yet), for
  // `memo_symbols_` only; empty when the sample is small against the store's strings.
  mutable const logic::Symbols* memo_symbols_ = nullptr;
  mutable std::vector<uint32_t> constant_symbol_, number_symbol_;
};

// A store built one sample at a time (a reader that makes each example in turn never holds
// them all as literals). Each string, value and span is looked up once while building.
class SampleStore::Builder {
 public:
  Builder();
  ~Builder();
  void add(Sample sample);
  // A sample given one fact at a time (a parser's stream, syntax::ExampleFactSink; a reader
  // of arrays, which never holds a graph's millions of facts as literals), then closed with
  // its head: end_sample takes the head without facts; close_sample adds the head's own
  // example facts, if any, after the ones given before it.
  void add_fact(const Literal& l);
  void end_sample(Sample head);
  void close_sample(Sample head);
  // A term interned once, for a reader that writes the same terms into many facts (a graph's
  // node ids, in millions of edge facts), and a plain fact over such terms: no prefixes, no
  // span, `value` (may be null) its value. The same fact as add_fact of its literal.
  // Interned terms are numbered 0, 1, 2, ... in the order they are interned.
  uint32_t intern_term(const Term& t);
  void add_fact(const std::string& predicate, std::span<const uint32_t> terms, const ValueSpec* value);
  // terms.size() / arity such facts without values, fact i over terms [i * arity, (i + 1) *
  // arity): a graph's edges, whose ends are interned terms read at random (each a cache miss
  // at millions of nodes), are loaded a few facts ahead.
  void add_facts(const std::string& predicate, std::span<const uint32_t> terms, size_t arity);
  SampleStore finish() &&;

 private:
  struct Maps;
  uint32_t string_id(const std::string& s);  // takes the pending texts' ids first
  // A term's text id looked up a few terms later (Maps::pending), and those lookups.
  void text_id_later(const std::string& text, size_t term);
  void resolve_oldest_text();
  void resolve_pending_texts();
  uint32_t predicate_id(const std::string& predicate);  // string_id, the last one remembered
  uint32_t value_id(const ValueSpec& v);
  uint32_t span_id(const Span& s);
  // A term's span: relative to its fact's where it can be (sample_store.cpp), else span_id.
  uint32_t term_span_id(const Span& term, const Span& fact);
  // Before facts_ or terms_ grow (when full): holds their next capacity against the memory
  // budget, naming the fact being added past it.
  void hold_growth(size_t more_terms, const Span& span, const std::string& predicate) {
    if (store_.facts_.size() == store_.facts_.capacity() ||
        store_.terms_.size() + more_terms > store_.terms_.capacity()) [[unlikely]]
      hold_next_capacity(more_terms, span, predicate);
  }
  void hold_next_capacity(size_t more_terms, const Span& span, const std::string& predicate);

  SampleStore store_;
  Tables tables_;
  std::unique_ptr<Maps> maps_;
};

// check_queries_defined (train/dataset.hpp) over a store.
void check_queries_defined(const TemplateAst& tmpl, const SampleStore& samples);

}  // namespace lrnn::train
