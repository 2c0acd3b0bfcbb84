#include "train/sample_store.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "exec/plan.hpp"
#include "logic/flat_index.hpp"
#include "lrnn/diagnostics.hpp"

namespace lrnn::train {

namespace {

constexpr uint32_t kNoIndex = UINT32_MAX;
constexpr size_t kMaxArgs = (size_t{1} << 24) - 1;

enum FactFlag : uint8_t { kBuiltin = 1, kHidden = 2, kNegated = 4, kSoftNegated = 8, kTransposed = 16 };

bool is_default(const Span& s) { return !s.file && s.line == 0 && s.col == 0 && s.length == 1; }

// A term written on its fact's line keeps its place as a code instead of a row of the span
// table: the top bit set, its column's offset from the fact's (20 bits) and its length (11
// bits). A graph's edge fact has two terms: two thirds of its spans, ~70 MB of a
// 2M-edge store, now held in the term itself; any other term's span is a table index
// (below 2^31, checked as the table grows).
constexpr uint32_t kRelativeSpan = uint32_t{1} << 31;
constexpr uint32_t kRelativeLengthBits = 11;
constexpr uint32_t kRelativeOffsetBits = 20;

uint32_t relative_span(const Span& term, const Span& fact) {
  if (!term.file || term.file != fact.file || term.line != fact.line || term.col < fact.col) return kNoIndex;
  const uint32_t offset = term.col - fact.col;
  if (offset >= (uint32_t{1} << kRelativeOffsetBits) || term.length >= (uint32_t{1} << kRelativeLengthBits))
    return kNoIndex;
  return kRelativeSpan | (offset << kRelativeLengthBits) | term.length;
}

// Span::operator== holds for any two spans (the AST compares statements, not places);
// the store keeps each value's own span, so it compares them field by field.
bool same_span(const Span& a, const Span& b) {
  return a.file == b.file && a.line == b.line && a.col == b.col && a.length == b.length;
}

// Equal as stored: every field, the data bit for bit (0.0 and -0.0 differ, a NaN equals itself).
bool same_value(const ValueSpec& a, const ValueSpec& b) {
  return a.kind == b.kind && a.rows == b.rows && a.cols == b.cols && a.fixed == b.fixed && a.name == b.name &&
         a.sparse == b.sparse && a.dims_is_vector == b.dims_is_vector && same_span(a.span, b.span) &&
         a.data.size() == b.data.size() &&
         (a.data.empty() || std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(double)) == 0);
}

size_t hash_value(const ValueSpec& v) {
  const std::string_view bytes(reinterpret_cast<const char*>(v.data.data()), v.data.size() * sizeof(double));
  size_t h = std::hash<std::string_view>{}(bytes);
  for (size_t x : {static_cast<size_t>(v.kind), static_cast<size_t>(v.rows), static_cast<size_t>(v.cols),
                   std::hash<std::string>{}(v.name), static_cast<size_t>(v.span.line), static_cast<size_t>(v.span.col)})
    h = h * 1000003 ^ x;
  return h;
}

uint32_t checked_index(size_t n, const char* what) {
  if (n >= kNoIndex)
    throw Error(ErrorKind::Limit, std::string("a dataset with more than 2^32 - 2 distinct ") + what +
                                      " cannot be held (the sample store indexes them with 32 bits)");
  return static_cast<uint32_t>(n);
}

// Distinct strings to their ids, for the strings table. A string of at most 16 bytes (a
// graph's node names, predicates, numbers as written) is held in its slot itself, so a
// lookup compares it there: one cache miss per lookup where a logic::FlatIndex over the table took
// two (the slot, then the table's string), and those two were a fifth of parsing a graph
// into the store. A longer string's slot holds its hash, and a match reads the table.
class StringIds {
 public:
  static constexpr size_t kInline = 16;
  struct Slot {
    uint64_t w0 = 0, w1 = 0;  // the bytes, zero-padded (at most kInline); else w0 the hash
    uint32_t id = 0;          // id + 1, 0 empty
    uint32_t length = 0;      // the string's length (saturated)
    // An inline string's text (length <= kInline).
    std::string text() const {
      char bytes[kInline];
      std::memcpy(bytes, &w0, 8);
      std::memcpy(bytes + 8, &w1, 8);
      return std::string(bytes, length);
    }
  };

  // The id of s in `table`, or add()'s new id.
  template <class Add>
  uint32_t find_or_add(std::string_view s, const std::vector<std::string>& table, Add add) {
    const Slot key = key_of(s);
    return find_or_add(key, hash_of(key), s, table, add);
  }
  // The same with s's key and hash computed (and its slot prefetched) earlier.
  template <class Add>
  uint32_t find_or_add(const Slot& key, uint64_t hash, std::string_view s, const std::vector<std::string>& table,
                       Add add) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.id == 0) {
        const uint32_t id = add();
        slot = key;
        slot.id = id + 1;
        ++count_;
        return id;
      }
      if (slot.w0 == key.w0 && slot.w1 == key.w1 && slot.length == key.length &&
          (key.length <= kInline || table[slot.id - 1] == s))
        return slot.id - 1;
    }
  }
  // The slot a lookup of `hash` reads first, fetched into the cache ahead of the lookup.
  void prefetch(uint64_t hash) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]);
  }

  static Slot key_of(std::string_view s) {
    Slot k;
    k.length = static_cast<uint32_t>(std::min<size_t>(s.size(), UINT32_MAX));
    if (s.size() <= kInline) {
      char bytes[kInline] = {};
      std::memcpy(bytes, s.data(), s.size());
      std::memcpy(&k.w0, bytes, 8);
      std::memcpy(&k.w1, bytes + 8, 8);
    } else {
      k.w0 = std::hash<std::string_view>{}(s);
    }
    return k;
  }
  static uint64_t hash_of(const Slot& k) {
    if (k.length > kInline) return k.w0;
    uint64_t h = (k.w0 * 0x9E3779B97F4A7C15ull) ^ ((k.w1 + k.length) * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ull;
    return h ^ (h >> 32);
  }
 private:
  void grow() {
    Slots bigger(std::max<size_t>(64, slots_.size() * 2));
    const size_t mask = bigger.size() - 1;
    for (const Slot& slot : slots_) {
      if (slot.id == 0) continue;
      size_t i = hash_of(slot) & mask;
      while (bigger[i].id != 0) i = (i + 1) & mask;
      bigger[i] = slot;
    }
    slots_.swap(bigger);
  }
  // Megabytes for a big graph's node names, read at random: on huge pages (where the
  // system gives them), a lookup's prefetch seldom misses the TLB as well.
  using Slots = std::vector<Slot, exec::CacheAlignedAllocator<Slot>>;
  Slots slots_;
  size_t count_ = 0;
};

}  // namespace

struct SampleStore::Builder::Maps {
  StringIds strings;  // into Tables::strings
  logic::FlatIndex values;  // into Tables::values
  // Each value's hash, by id: the index grows from these (rehashing the values themselves,
  // a big graph's 200k feature vectors read at random, added 0.1 s to reading it).
  std::vector<uint64_t> value_hashes;
  std::unordered_map<const SourceFile*, uint32_t> files;     // into Tables::files
  const SourceFile* last_file = nullptr;
  uint32_t last_file_index = 0;
  // Most facts follow one of the same predicate and have untyped terms: those two strings
  // are found without a lookup (the lookups were 43% of building a 2M-edge graph).
  std::string last_predicate;
  uint32_t last_predicate_id = kNoIndex;
  uint32_t empty_id = kNoIndex;
  std::vector<TermRef> interned;  // intern_term's terms
  // Term texts of inline length whose ids are looked up kLookahead terms later, their slots
  // prefetched meanwhile: a big graph's node names are random lookups into a table of
  // megabytes, a cache miss each (a tenth of building a 2M-edge graph). Looked up in the
  // order they came (ids are given in that order); any other lookup takes the pending
  // ones first, so the ids are those of looking each string up at once.
  static constexpr size_t kLookahead = 16;
  struct PendingText {
    StringIds::Slot key;
    uint64_t hash = 0;
    size_t term = 0;  // its TermRef in the store
  };
  std::array<PendingText, kLookahead> pending;
  size_t pending_first = 0, pending_count = 0;
};

SampleStore::Builder::Builder() : maps_(std::make_unique<Maps>()) {}
SampleStore::Builder::~Builder() = default;

void SampleStore::Builder::add(Sample s) { close_sample(std::move(s)); }

void SampleStore::Builder::close_sample(Sample s) {
  for (const Literal& l : s.example.facts) add_fact(l);
  std::vector<Literal>().swap(s.example.facts);
  end_sample(std::move(s));
}

void SampleStore::Builder::end_sample(Sample head) {
  store_.fact_begin_.push_back(store_.facts_.size());
  store_.term_begin_.push_back(store_.terms_.size());
  store_.heads_.push_back(std::move(head));
}

SampleStore SampleStore::Builder::finish() && {
  resolve_pending_texts();
  store_.tables_ = std::make_shared<const Tables>(std::move(tables_));
  // By realloc: the blocks' tails given back, nothing copied (a std::vector's shrink_to_fit
  // copied a big graph's facts and terms once more, into fresh pages).
  store_.facts_.shrink_to_fit();
  store_.terms_.shrink_to_fit();
  store_.heads_.shrink_to_fit();
  // Less than was held while growing: keep holding only what the arrays now take.
  store_.memory_.resize(store_.facts_.capacity() * sizeof(Fact) + store_.terms_.capacity() * sizeof(TermRef), "");
  maps_.reset();
  return std::move(store_);
}

void SampleStore::Builder::add_fact(const Literal& l) {
  if (l.args.size() > kMaxArgs)
    throw Error(ErrorKind::Limit, l.span,
                "an example fact with " + std::to_string(l.args.size()) + " arguments (at most 2^24 - 1)");
  hold_growth(l.args.size(), l.span, l.predicate);
  Fact f;
  f.predicate = predicate_id(l.predicate);
  if (maps_->empty_id == kNoIndex) maps_->empty_id = string_id(std::string());
  f.value = l.weight ? value_id(*l.weight) : kNoIndex;
  f.span = span_id(l.span);
  f.args = static_cast<uint32_t>(l.args.size());
  f.flags = (l.builtin ? kBuiltin : 0) | (l.hidden ? kHidden : 0) | (l.negated ? kNegated : 0) |
            (l.soft_negated ? kSoftNegated : 0) | (l.transposed ? kTransposed : 0);
  store_.facts_.push_back(f);
  for (const Term& t : l.args) {
    if (!t.type.empty() || t.text.size() > StringIds::kInline) {  // looked up now, text first
      const uint32_t text = string_id(t.text);
      store_.terms_.push_back({text, t.type.empty() ? maps_->empty_id : string_id(t.type), term_span_id(t.span, l.span),
                               t.kind});
      continue;
    }
    store_.terms_.push_back({0, maps_->empty_id, term_span_id(t.span, l.span), t.kind});
    text_id_later(t.text, store_.terms_.size() - 1);
  }
}

void SampleStore::Builder::text_id_later(const std::string& text, size_t term) {
  Maps& m = *maps_;
  if (m.pending_count == Maps::kLookahead) resolve_oldest_text();
  Maps::PendingText& p = m.pending[(m.pending_first + m.pending_count++) % Maps::kLookahead];
  p.key = StringIds::key_of(text);
  p.hash = StringIds::hash_of(p.key);
  p.term = term;
  m.strings.prefetch(p.hash);
}

void SampleStore::Builder::resolve_oldest_text() {
  Maps& m = *maps_;
  const Maps::PendingText& p = m.pending[m.pending_first];
  m.pending_first = (m.pending_first + 1) % Maps::kLookahead;
  --m.pending_count;
  // A string added is taken from the key's bytes (an inline string's whole text).
  store_.terms_[p.term].text = m.strings.find_or_add(p.key, p.hash, std::string_view(), tables_.strings, [&] {
    const uint32_t id = checked_index(tables_.strings.size(), "strings");
    tables_.strings.push_back(p.key.text());
    return id;
  });
}

void SampleStore::Builder::resolve_pending_texts() {
  while (maps_->pending_count > 0) resolve_oldest_text();
}

void SampleStore::Builder::hold_next_capacity(size_t more_terms, const Span& span, const std::string& predicate) {
  // The arrays double (as std::vector did): their next capacities are what is held. realloc
  // moves a big (mmap'ed) block's pages rather than copying them (train/flat_array.hpp), so
  // the old and the new array of a big graph are no longer both alive while they grow.
  const uint64_t facts = std::max<uint64_t>(2 * store_.facts_.capacity(), 1024);
  const uint64_t terms = std::max<uint64_t>(2 * store_.terms_.capacity(), store_.terms_.size() + more_terms + 1024);
  const uint64_t total = facts * sizeof(Fact) + terms * sizeof(TermRef);
  if (total > store_.memory_.bytes())
    store_.memory_.resize(total,
                          "the dataset's facts (" + std::to_string(store_.facts_.size()) + " stored in " +
                              std::to_string(store_.heads_.size() + 1) + " samples; the next: " + predicate + ")",
                          span);
  store_.facts_.reserve(facts);
  store_.terms_.reserve(terms);
}

uint32_t SampleStore::Builder::predicate_id(const std::string& predicate) {
  if (maps_->last_predicate_id == kNoIndex || predicate != maps_->last_predicate) {
    maps_->last_predicate = predicate;
    maps_->last_predicate_id = string_id(predicate);
  }
  return maps_->last_predicate_id;
}

uint32_t SampleStore::Builder::intern_term(const Term& t) {
  maps_->interned.push_back({string_id(t.text), string_id(t.type), span_id(t.span), t.kind});
  return checked_index(maps_->interned.size() - 1, "interned terms");
}

void SampleStore::Builder::add_fact(const std::string& predicate, std::span<const uint32_t> terms,
                                    const ValueSpec* value) {
  hold_growth(terms.size(), Span{}, predicate);
  Fact f;
  f.predicate = predicate_id(predicate);
  f.value = value ? value_id(*value) : kNoIndex;
  f.span = kNoIndex;
  f.args = static_cast<uint32_t>(terms.size());
  store_.facts_.push_back(f);
  for (uint32_t t : terms) store_.terms_.push_back(maps_->interned[t]);
}

void SampleStore::Builder::add_facts(const std::string& predicate, std::span<const uint32_t> terms, size_t arity) {
  if (arity == 0 || terms.size() % arity != 0)
    throw Error(ErrorKind::Runtime, "add_facts: " + std::to_string(terms.size()) + " terms are not facts of arity " +
                                         std::to_string(arity));
  constexpr size_t kAhead = 16;  // facts: enough loads in flight to hide a miss
  const std::vector<TermRef>& interned = maps_->interned;
  const size_t facts = terms.size() / arity;
  for (size_t i = 0; i < facts; ++i) {
    if (i + kAhead < facts)
      for (size_t k = 0; k < arity; ++k) __builtin_prefetch(&interned[terms[(i + kAhead) * arity + k]]);
    add_fact(predicate, terms.subspan(i * arity, arity), nullptr);
  }
}

uint32_t SampleStore::Builder::string_id(const std::string& s) {
  resolve_pending_texts();
  return maps_->strings.find_or_add(s, tables_.strings, [&] {
    const uint32_t id = checked_index(tables_.strings.size(), "strings");
    tables_.strings.push_back(s);
    return id;
  });
}

uint32_t SampleStore::Builder::value_id(const ValueSpec& v) {
  const uint64_t hash = hash_value(v);
  std::vector<uint64_t>& hashes = maps_->value_hashes;
  return maps_->values.find_or_add(
      hash, [&](uint32_t id) { return same_value(tables_.values[id], v); },
      [&] {
        const uint32_t id = checked_index(tables_.values.size(), "values");
        tables_.values.push_back(v);
        hashes.push_back(hash);
        return id;
      },
      [&](uint32_t id) { return hashes[id]; });
}

uint32_t SampleStore::Builder::term_span_id(const Span& term, const Span& fact) {
  const uint32_t code = relative_span(term, fact);
  return code != kNoIndex ? code : span_id(term);
}

uint32_t SampleStore::Builder::span_id(const Span& s) {
  if (is_default(s)) return kNoIndex;
  // Below 2^31: the top bit marks a term's span relative to its fact's (relative_span).
  const uint32_t id = checked_index(tables_.spans.size(), "source places");
  if (id >= kRelativeSpan)
    throw Error(ErrorKind::Limit, s, "a dataset with more than 2^31 source places cannot be held (the sample store "
                                     "indexes them with 31 bits)");
  // Spans come file by file: the last one's file is almost always this one's.
  if (maps_->files.empty() || maps_->last_file != s.file.get()) {
    auto [it, added] = maps_->files.try_emplace(s.file.get(), uint32_t(tables_.files.size()));
    if (added) tables_.files.push_back(s.file);
    maps_->last_file = s.file.get();
    maps_->last_file_index = it->second;
  }
  tables_.spans.push_back({maps_->last_file_index, s.line, s.col, s.length});
  return id;
}

SampleStore::SampleStore(std::vector<Sample> samples) {
  Builder builder;
  for (Sample& s : samples) builder.add(std::move(s));
  *this = std::move(builder).finish();
}

Span SampleStore::span_of(uint32_t index) const {
  if (index == kNoIndex) return Span{};
  const PackedSpan& p = tables_->spans[index];
  return Span{tables_->files[p.file], p.line, p.col, p.length};
}

Span SampleStore::term_span_of(uint32_t index, uint32_t fact_span) const {
  if (index == kNoIndex || !(index & kRelativeSpan)) return span_of(index);
  const PackedSpan& p = tables_->spans[fact_span];  // a relative code is only made beside a fact's span
  const uint32_t offset = (index & ~kRelativeSpan) >> kRelativeLengthBits;
  return Span{tables_->files[p.file], p.line, p.col + offset, index & ((uint32_t{1} << kRelativeLengthBits) - 1)};
}

void SampleStore::decode_fact_into(const Fact& f, const TermRef*& term, Literal& out) const {
  out.predicate = tables_->strings[f.predicate];
  out.args.resize(f.args);
  for (Term& t : out.args) {
    t.kind = term->kind;
    t.text = tables_->strings[term->text];
    t.type = tables_->strings[term->type];
    t.span = term_span_of(term->span, f.span);
    ++term;
  }
  out.builtin = f.flags & kBuiltin;
  out.hidden = f.flags & kHidden;
  out.negated = f.flags & kNegated;
  out.soft_negated = f.flags & kSoftNegated;
  out.transposed = f.flags & kTransposed;
  if (f.value != kNoIndex) out.weight = tables_->values[f.value];
  else out.weight.reset();
  out.span = span_of(f.span);
}

Sample SampleStore::at(size_t i) const {
  Sample s = heads_[i];
  s.example.facts.reserve(fact_count(i));
  const TermRef* term = terms_.data() + term_begin_[i];
  for (size_t f = fact_begin_[i]; f < fact_begin_[i + 1]; ++f) decode_fact_into(facts_[f], term, s.example.facts.emplace_back());
  return s;
}

SampleStore::Facts SampleStore::facts(size_t i) const { return Facts(*this, i); }

SampleStore::Facts::Facts(const SampleStore& store, size_t sample)
    : store_(store), first_fact_(store.fact_begin_[sample]), count_(store.fact_count(sample)),
      first_term_(store.term_begin_[sample]), term_count_(store.term_begin_[sample + 1] - first_term_) {}

const SampleStore::TermRef* SampleStore::Facts::seek(size_t i) const {
  if (i < next_fact_) next_fact_ = next_term_ = 0;
  for (; next_fact_ < i; ++next_fact_) next_term_ += store_.facts_[first_fact_ + next_fact_].args;
  return store_.terms_.data() + first_term_ + next_term_;
}

const Literal& SampleStore::Facts::fact(size_t i, Literal& scratch) const {
  const TermRef* term = seek(i);
  store_.decode_fact_into(store_.facts_[first_fact_ + i], term, scratch);
  next_fact_ = i + 1;
  next_term_ = static_cast<size_t>(term - (store_.terms_.data() + first_term_));
  return scratch;
}

uint32_t SampleStore::Facts::symbol_of(const TermRef& t, logic::Symbols& symbols) const {
  if (t.kind == Term::Kind::Variable) return kNoIndex;
  const bool number = t.kind == Term::Kind::Number;
  const auto intern = [&] {  // reads the string only on a miss: at millions of names, each read misses the cache
    const std::string& text = store_.tables_->strings[t.text];
    return number ? symbols.intern_number_text(text).value_or(kNoIndex) : symbols.intern(text);
  };
  if (memo_symbols_ != &symbols) {
    memo_symbols_ = &symbols;
    constant_symbol_.clear();
    number_symbol_.clear();
    // A memo as long as the store's strings pays where the sample reads each string
    // several times (a graph's node names); a small sample of a big store interns directly.
    const size_t strings = store_.tables_->strings.size();
    if (strings <= 2 * count_ + 256) {
      constant_symbol_.assign(strings, kNoIndex);
      number_symbol_.assign(strings, kNoIndex);
    }
  }
  if (constant_symbol_.empty()) return intern();
  uint32_t& memo = (number ? number_symbol_ : constant_symbol_)[t.text];
  if (memo == kNoIndex) memo = intern();
  return memo;
}

void SampleStore::Facts::prefetch_memo(const TermRef& t) const {
  if (constant_symbol_.empty() || t.kind == Term::Kind::Variable) return;
  __builtin_prefetch(&(t.kind == Term::Kind::Number ? number_symbol_ : constant_symbol_)[t.text]);
}

bool SampleStore::Facts::interned(size_t i, logic::Symbols& symbols, Interned& out) const {
  // A graph's edges name their ends in no order: at millions of nodes each end's memo entry
  // (8 MB of them) is a cache miss, which the hint for the term this many later hides.
  constexpr size_t kTermsAhead = 32;
  const TermRef* term = seek(i);
  const TermRef* terms_end = store_.terms_.data() + first_term_ + term_count_;
  const Fact& f = store_.facts_[first_fact_ + i];
  out.predicate = store_.tables_->strings[f.predicate];
  out.builtin = f.flags & kBuiltin;
  out.args.resize(f.args);
  for (uint32_t& a : out.args) {
    if (static_cast<size_t>(terms_end - term) > kTermsAhead) prefetch_memo(term[kTermsAhead]);
    a = symbol_of(*term++, symbols);
    if (a == kNoIndex) return false;  // fact() gives the literal whose error names the term
  }
  next_fact_ = i + 1;
  next_term_ += f.args;
  return true;
}

const ValueSpec* SampleStore::Facts::value(size_t i) const {
  const uint32_t v = store_.facts_[first_fact_ + i].value;
  return v == kNoIndex ? nullptr : &store_.tables_->values[v];
}

std::vector<Sample> SampleStore::materialize() const {
  std::vector<Sample> out;
  out.reserve(size());
  for (size_t i = 0; i < size(); ++i) out.push_back(at(i));
  return out;
}

std::vector<std::string> SampleStore::fact_predicates() const {
  std::set<std::pair<uint32_t, uint32_t>> seen;
  // Facts come in runs of one predicate (a graph's millions of edges): a run is looked up once.
  const Fact* last = nullptr;
  for (const Fact& f : facts_) {
    if (last && last->predicate == f.predicate && last->args == f.args) continue;
    seen.emplace(f.predicate, f.args);
    last = &f;
  }
  std::set<std::string> keys;
  for (const auto& [p, arity] : seen) keys.insert(tables_->strings[p] + "/" + std::to_string(arity));
  return {keys.begin(), keys.end()};
}

void SampleStore::append_from(const SampleStore& from, size_t i) {
  heads_.push_back(from.heads_[i]);
  facts_.append(from.facts_.data() + from.fact_begin_[i], from.facts_.data() + from.fact_begin_[i + 1]);
  terms_.append(from.terms_.data() + from.term_begin_[i], from.terms_.data() + from.term_begin_[i + 1]);
  fact_begin_.push_back(facts_.size());
  term_begin_.push_back(terms_.size());
}

SampleStore SampleStore::with_heads(std::vector<Sample> heads, std::span<const uint32_t> of) && {
  if (heads.size() != of.size()) throw Error(ErrorKind::Runtime, "internal: with_heads given unequal counts");
  bool same_order = of.size() == size();
  for (size_t k = 0; k < of.size() && same_order; ++k) same_order = of[k] == k;
  SampleStore out;
  if (same_order) {  // one sample per stored sample, in order: the facts stay where they are
    out = std::move(*this);
  } else {
    out.tables_ = tables_;
    for (uint32_t i : of) out.append_from(*this, i);
  }
  out.heads_ = std::move(heads);
  for (Sample& h : out.heads_) std::vector<Literal>().swap(h.example.facts);
  return out;
}

SampleStore::FactTerms SampleStore::fact_terms(size_t i) const {
  FactTerms out;
  const size_t facts = fact_count(i), first_term = term_begin_[i], terms = term_begin_[i + 1] - first_term;
  out.begin.reserve(facts + 1);
  out.text.reserve(terms);
  out.kind.reserve(terms);
  out.begin.push_back(0);
  for (size_t f = fact_begin_[i], t = first_term; f < fact_begin_[i + 1]; ++f) {
    for (size_t end = t + facts_[f].args; t < end; ++t) {
      out.text.push_back(terms_[t].text);
      out.kind.push_back(terms_[t].kind);
    }
    out.begin.push_back(out.text.size());
  }
  return out;
}

SampleStore SampleStore::keep_facts(size_t i, std::span<const uint32_t> keep, Sample head) const {
  SampleStore out;
  out.tables_ = tables_;
  out.facts_.reserve(keep.size());
  size_t next = 0;
  for (size_t f = fact_begin_[i], t = term_begin_[i]; f < fact_begin_[i + 1] && next < keep.size(); ++f) {
    const size_t args = facts_[f].args;
    if (keep[next] == f - fact_begin_[i]) {
      out.facts_.push_back(facts_[f]);
      out.terms_.append(terms_.data() + t, terms_.data() + t + args);
      ++next;
    }
    t += args;
  }
  if (next != keep.size()) throw Error(ErrorKind::Runtime, "internal: keep_facts given indices out of order or range");
  std::vector<Literal>().swap(head.example.facts);
  out.heads_.push_back(std::move(head));
  out.fact_begin_.push_back(out.facts_.size());
  out.term_begin_.push_back(out.terms_.size());
  return out;
}

SampleStore SampleStore::subset(std::span<const size_t> indices) const {
  SampleStore out;
  out.tables_ = tables_;
  out.heads_.reserve(indices.size());
  for (size_t i : indices) out.append_from(*this, i);
  return out;
}

SampleStore SampleStore::slice(size_t first, size_t last) const {
  SampleStore out;
  out.tables_ = tables_;
  out.heads_.reserve(last - first);
  for (size_t i = first; i < last; ++i) out.append_from(*this, i);
  return out;
}

size_t SampleStore::bytes() const {
  size_t n = heads_.capacity() * sizeof(Sample) + facts_.capacity() * sizeof(Fact) +
             terms_.capacity() * sizeof(TermRef) + (fact_begin_.capacity() + term_begin_.capacity()) * sizeof(size_t);
  if (!tables_) return n;
  n += tables_->values.capacity() * sizeof(ValueSpec) + tables_->spans.capacity() * sizeof(PackedSpan) +
       tables_->strings.capacity() * sizeof(std::string);
  for (const ValueSpec& v : tables_->values) n += v.data.capacity() * sizeof(double);
  for (const std::string& s : tables_->strings) n += s.capacity() > 15 ? s.capacity() + 1 : 0;
  return n;
}

void check_queries_defined(const TemplateAst& tmpl, const SampleStore& samples) {
  const std::vector<std::string> keys = samples.fact_predicates();
  check_queries_defined(tmpl, std::set<std::string>(keys.begin(), keys.end()), samples.without_facts());
}

SampleStore SampleStore::with_query_splits(std::span<const QuerySplit> split) const& {
  return SampleStore(*this).with_query_splits(split);
}

SampleStore SampleStore::with_query_splits(std::span<const QuerySplit> split) && {
  assign_query_splits(heads_, split);
  return std::move(*this);
}

std::vector<QuerySplit> SampleStore::query_splits() const {
  std::vector<QuerySplit> out;
  for (const Sample& s : heads_)
    for (size_t q = 0; q < s.queries.size(); ++q) out.push_back(s.split_of(q));
  return out;
}

}  // namespace lrnn::train
