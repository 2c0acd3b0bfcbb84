#include "train/sample_store.hpp"

#include <cstring>
#include <functional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "lrnn/diagnostics.hpp"

namespace lrnn::train {

namespace {

constexpr uint32_t kNoIndex = UINT32_MAX;
constexpr size_t kMaxArgs = (size_t{1} << 24) - 1;

enum FactFlag : uint8_t { kBuiltin = 1, kHidden = 2, kNegated = 4, kSoftNegated = 8, kTransposed = 16 };

bool is_default(const Span& s) { return !s.file && s.line == 0 && s.col == 0 && s.length == 1; }

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

}  // namespace

struct SampleStore::Builder::Maps {
  std::unordered_map<std::string, uint32_t> strings;
  std::unordered_map<size_t, std::vector<uint32_t>> values;  // by hash_value
  // Most facts follow one of the same predicate and have untyped terms: those two strings
  // are found without a map lookup (the lookups were 43% of building a 2M-edge graph).
  std::string last_predicate;
  uint32_t last_predicate_id = kNoIndex;
  uint32_t empty_id = kNoIndex;
  std::vector<TermRef> interned;  // intern_term's terms
};

SampleStore::Builder::Builder() : maps_(std::make_unique<Maps>()) {}
SampleStore::Builder::~Builder() = default;

void SampleStore::Builder::add(Sample s) { close_sample(std::move(s)); }

void SampleStore::Builder::close_sample(Sample s) {
  for (const Literal& l : s.example.facts) add_fact(l);
  store_.fact_begin_.push_back(store_.facts_.size());
  store_.term_begin_.push_back(store_.terms_.size());
  std::vector<Literal>().swap(s.example.facts);
  store_.heads_.push_back(std::move(s));
}

SampleStore SampleStore::Builder::finish() && {
  store_.tables_ = std::make_shared<const Tables>(std::move(tables_));
  store_.facts_.shrink_to_fit();
  store_.terms_.shrink_to_fit();
  store_.heads_.shrink_to_fit();
  maps_.reset();
  return std::move(store_);
}

void SampleStore::Builder::add_fact(const Literal& l) {
  if (l.args.size() > kMaxArgs)
    throw Error(ErrorKind::Limit, l.span,
                "an example fact with " + std::to_string(l.args.size()) + " arguments (at most 2^24 - 1)");
  Fact f;
  f.predicate = predicate_id(l.predicate);
  if (maps_->empty_id == kNoIndex) maps_->empty_id = string_id(std::string());
  f.value = l.weight ? value_id(*l.weight) : kNoIndex;
  f.span = span_id(l.span);
  f.args = static_cast<uint32_t>(l.args.size());
  f.flags = (l.builtin ? kBuiltin : 0) | (l.hidden ? kHidden : 0) | (l.negated ? kNegated : 0) |
            (l.soft_negated ? kSoftNegated : 0) | (l.transposed ? kTransposed : 0);
  store_.facts_.push_back(f);
  for (const Term& t : l.args)
    store_.terms_.push_back(
        {string_id(t.text), t.type.empty() ? maps_->empty_id : string_id(t.type), span_id(t.span), t.kind});
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
  Fact f;
  f.predicate = predicate_id(predicate);
  f.value = value ? value_id(*value) : kNoIndex;
  f.span = kNoIndex;
  f.args = static_cast<uint32_t>(terms.size());
  store_.facts_.push_back(f);
  for (uint32_t t : terms) store_.terms_.push_back(maps_->interned[t]);
}

uint32_t SampleStore::Builder::string_id(const std::string& s) {
  auto [it, added] = maps_->strings.try_emplace(s, 0);
  if (added) {
    it->second = checked_index(tables_.strings.size(), "strings");
    tables_.strings.push_back(s);
  }
  return it->second;
}

uint32_t SampleStore::Builder::value_id(const ValueSpec& v) {
  std::vector<uint32_t>& same_hash = maps_->values[hash_value(v)];
  for (uint32_t id : same_hash)
    if (same_value(tables_.values[id], v)) return id;
  const uint32_t id = checked_index(tables_.values.size(), "values");
  tables_.values.push_back(v);
  same_hash.push_back(id);
  return id;
}

uint32_t SampleStore::Builder::span_id(const Span& s) {
  if (is_default(s)) return kNoIndex;
  const uint32_t id = checked_index(tables_.spans.size(), "source places");
  tables_.spans.push_back(s);
  return id;
}

SampleStore::SampleStore(std::vector<Sample> samples) {
  Builder builder;
  for (Sample& s : samples) builder.add(std::move(s));
  *this = std::move(builder).finish();
}

const Span& SampleStore::span_of(uint32_t index) const {
  static const Span none{};
  return index == kNoIndex ? none : tables_->spans[index];
}

Literal SampleStore::decode_fact(const Fact& f, const TermRef*& term) const {
  Literal l;
  l.predicate = tables_->strings[f.predicate];
  l.args.reserve(f.args);
  for (uint32_t a = 0; a < f.args; ++a, ++term)
    l.args.push_back(Term{term->kind, tables_->strings[term->text], tables_->strings[term->type], span_of(term->span)});
  l.builtin = f.flags & kBuiltin;
  l.hidden = f.flags & kHidden;
  l.negated = f.flags & kNegated;
  l.soft_negated = f.flags & kSoftNegated;
  l.transposed = f.flags & kTransposed;
  if (f.value != kNoIndex) l.weight = tables_->values[f.value];
  l.span = span_of(f.span);
  return l;
}

Sample SampleStore::at(size_t i) const {
  Sample s = heads_[i];
  s.example.facts.reserve(fact_count(i));
  const TermRef* term = terms_.data() + term_begin_[i];
  for (size_t f = fact_begin_[i]; f < fact_begin_[i + 1]; ++f) s.example.facts.push_back(decode_fact(facts_[f], term));
  return s;
}

std::vector<Sample> SampleStore::materialize() const {
  std::vector<Sample> out;
  out.reserve(size());
  for (size_t i = 0; i < size(); ++i) out.push_back(at(i));
  return out;
}

std::vector<std::string> SampleStore::fact_predicates() const {
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for (const Fact& f : facts_) seen.emplace(f.predicate, f.args);
  std::set<std::string> keys;
  for (const auto& [p, arity] : seen) keys.insert(tables_->strings[p] + "/" + std::to_string(arity));
  return {keys.begin(), keys.end()};
}

void SampleStore::append_from(const SampleStore& from, size_t i) {
  heads_.push_back(from.heads_[i]);
  facts_.insert(facts_.end(), from.facts_.begin() + static_cast<ptrdiff_t>(from.fact_begin_[i]),
                from.facts_.begin() + static_cast<ptrdiff_t>(from.fact_begin_[i + 1]));
  terms_.insert(terms_.end(), from.terms_.begin() + static_cast<ptrdiff_t>(from.term_begin_[i]),
                from.terms_.begin() + static_cast<ptrdiff_t>(from.term_begin_[i + 1]));
  fact_begin_.push_back(facts_.size());
  term_begin_.push_back(terms_.size());
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
  n += tables_->values.capacity() * sizeof(ValueSpec) + tables_->spans.capacity() * sizeof(Span) +
       tables_->strings.capacity() * sizeof(std::string);
  for (const ValueSpec& v : tables_->values) n += v.data.capacity() * sizeof(double);
  for (const std::string& s : tables_->strings) n += s.capacity() > 15 ? s.capacity() + 1 : 0;
  return n;
}

void check_queries_defined(const TemplateAst& tmpl, const SampleStore& samples) {
  const std::vector<std::string> keys = samples.fact_predicates();
  check_queries_defined(tmpl, std::set<std::string>(keys.begin(), keys.end()), samples.without_facts());
}

SampleStore SampleStore::with_query_splits(std::span<const QuerySplit> split) const {
  SampleStore out = *this;
  assign_query_splits(out.heads_, split);
  return out;
}

std::vector<QuerySplit> SampleStore::query_splits() const {
  std::vector<QuerySplit> out;
  for (const Sample& s : heads_)
    for (size_t q = 0; q < s.queries.size(); ++q) out.push_back(s.split_of(q));
  return out;
}

}  // namespace lrnn::train
