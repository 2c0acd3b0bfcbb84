#include "logic/symbols.hpp"

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

uint32_t Symbols::intern(std::string_view name) {
  {
    std::shared_lock lock(mutex_);
    auto it = by_name_.find(name);
    if (it != by_name_.end()) return it->second;
  }
  std::unique_lock lock(mutex_);
  auto [it, inserted] = by_name_.try_emplace(std::string(name), 0);
  if (inserted) it->second = append_locked(Entry{std::string(name), 0, false});
  return it->second;
}

std::optional<uint32_t> Symbols::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
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
