#include "logic/symbols.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "lrnn/diagnostics.hpp"

namespace lrnn::logic {

std::string format_number(double value) {
  if (value == 0) return "0";  // also folds -0
  if (std::isfinite(value) && std::nearbyint(value) == value && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<long long>(value));
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, res.ptr);
}

Symbols::Symbols() : chunks_(new std::atomic<Entry*>[kMaxChunks]) {
  for (uint32_t i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
}

Symbols::~Symbols() {
  for (uint32_t i = 0; i < kMaxChunks; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
}

uint32_t Symbols::append_locked(Entry e) {
  uint32_t id = size_.load(std::memory_order_relaxed);
  uint32_t chunk = id >> kChunkBits;
  if (chunk >= kMaxChunks) throw Error(ErrorKind::Limit, "too many distinct constants");
  Entry* block = chunks_[chunk].load(std::memory_order_relaxed);
  if (!block) {
    block = new Entry[kChunkSize];
    chunks_[chunk].store(block, std::memory_order_release);
  }
  block[id & (kChunkSize - 1)] = std::move(e);
  size_.store(id + 1, std::memory_order_release);
  return id;
}

uint32_t Symbols::find_locked(std::string_view name, uint64_t hash) const {
  return names_.find(hash, [&](uint32_t id) { return entry(id).name == name; });
}

uint32_t Symbols::intern(std::string_view name) {
  const uint64_t hash = hash_name(name);
  {
    std::shared_lock lock(mutex_);
    if (const uint32_t id = find_locked(name, hash); id != kNoId) return id;
  }
  std::unique_lock lock(mutex_);
  return names_.find_or_add(  // found: added meanwhile
      hash, [&](uint32_t id) { return entry(id).name == name; },
      [&] { return append_locked(Entry{std::string(name), 0, false}); },
      [&](uint32_t id) { return hash_name(entry(id).name); });
}

std::optional<uint32_t> Symbols::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  const uint32_t id = find_locked(name, hash_name(name));
  if (id == kNoId) return std::nullopt;
  return id;
}

void Symbols::intern_terms(std::span<const Term* const> terms, std::span<uint32_t> ids) {
  if (ids.size() != terms.size()) throw Error(ErrorKind::Runtime, "internal: intern_terms given unequal counts");
  // The names already held are found first, under one shared lock, each slot fetched
  // kAhead names before it is probed; the rest (numbers, new names) then go through
  // intern_term in order, so new entries get the ids one call per term would give them.
  constexpr size_t kAhead = 16;
  std::vector<uint64_t> hashes(terms.size());
  for (size_t i = 0; i < terms.size(); ++i)
    if (terms[i]->kind != Term::Kind::Number) hashes[i] = hash_name(terms[i]->text);
  {
    std::shared_lock lock(mutex_);
    for (size_t i = 0; i < terms.size(); ++i) {
      if (i + kAhead < terms.size() && terms[i + kAhead]->kind != Term::Kind::Number) names_.prefetch(hashes[i + kAhead]);
      ids[i] = terms[i]->kind == Term::Kind::Number ? kNoId : find_locked(terms[i]->text, hashes[i]);
    }
  }
  for (size_t i = 0; i < terms.size(); ++i)
    if (ids[i] == kNoId) ids[i] = intern_term(*terms[i]);
}

uint32_t Symbols::intern_number(double value) {
  if (value == 0) value = 0;  // -0 -> 0
  if (std::nearbyint(value) == value && value >= double(kIntMin) && value <= double(kIntMax)) {
    return encode_int(static_cast<int64_t>(value));
  }
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  {
    std::shared_lock lock(mutex_);
    auto it = by_bits_.find(bits);
    if (it != by_bits_.end()) return it->second;
  }
  std::unique_lock lock(mutex_);
  auto [it, inserted] = by_bits_.try_emplace(bits, 0);
  if (inserted) it->second = append_locked(Entry{format_number(value), value, true});
  return it->second;
}

std::optional<uint32_t> Symbols::intern_number_text(std::string_view text) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (!text.empty() && text[0] == '+') ++begin;
  double v = 0;
  auto res = std::from_chars(begin, end, v);
  if (res.ec != std::errc() || res.ptr != end) return std::nullopt;
  return intern_number(v);
}

uint32_t Symbols::intern_term(const Term& term) {
  if (term.kind == Term::Kind::Number) {
    const std::optional<uint32_t> id = intern_number_text(term.text);
    if (!id) throw Error(ErrorKind::Semantic, term.span, "'" + term.text + "' is not a number");
    return *id;
  }
  return intern(term.text);
}

std::string Symbols::name(uint32_t id) const {
  if (is_small_int(id)) return std::to_string(small_int(id));
  return entry(id).name;
}

int Symbols::compare_entries(uint32_t a, uint32_t b) const {
  if (a == b) return 0;
  bool na = is_number(a), nb = is_number(b);
  if (na != nb) return na ? -1 : 1;
  if (na) {
    double x = number(a), y = number(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  int c = entry(a).name.compare(entry(b).name);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

}  // namespace lrnn::logic
