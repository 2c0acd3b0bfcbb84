// The constants of a program: one symbol table shared by a template and every example
// grounded against it. Thread-safe: examples may be grounded concurrently and each may
// intern new constants (its own facts, results of arithmetic builtins).
//
// Numbers are canonical: `1`, `1.0` and `1e0` are one constant. Integers in
// [-2^30, 2^30 - 2] are encoded directly in the id (no table entry, no lock: arithmetic
// builtins in attention masks create them by the million); other numbers and all
// strings/identifiers are table entries.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "logic/flat_index.hpp"
#include "lrnn/ast.hpp"

namespace lrnn::logic {

class Symbols {
 public:
  static constexpr uint32_t kIntTag = 0x80000000u;
  static constexpr int64_t kIntMin = -(int64_t{1} << 30);
  static constexpr int64_t kIntMax = (int64_t{1} << 30) - 2;  // keeps 0xFFFFFFFF (kNone) free

  Symbols();
  ~Symbols();
  Symbols(const Symbols&) = delete;
  Symbols& operator=(const Symbols&) = delete;

  // An identifier or string constant (`a`, `'New York'`): both spellings of the same text
  // are one constant.
  uint32_t intern(std::string_view name);
  // A number, canonicalised.
  uint32_t intern_number(double value);
  // A constant, number or string term (not a variable). A Number term whose text does not
  // parse is an Error naming the term.
  uint32_t intern_term(const Term& term);
  // The number a Number term's text says (a leading '+' allowed), interned; nullopt when
  // the text is no number.
  std::optional<uint32_t> intern_number_text(std::string_view text);
  // The id of an existing string constant.
  std::optional<uint32_t> find(std::string_view name) const;
  // The ids intern_term gives `terms` (constants, numbers or strings; not variables) one at
  // a time in order, the same ids, with each name's slot fetched a few names ahead: a big
  // graph's query per node names a node, one cache miss per lookup when looked up alone.
  // Throws as intern_term does, at the same term.
  void intern_terms(std::span<const Term* const> terms, std::span<uint32_t> ids);

  static bool is_small_int(uint32_t id) { return (id & kIntTag) != 0; }
  static int64_t small_int(uint32_t id) { return int64_t(id & ~kIntTag) + kIntMin; }
  static uint32_t encode_int(int64_t v) { return kIntTag | uint32_t(v - kIntMin); }

  bool is_number(uint32_t id) const { return is_small_int(id) || entry(id).is_number; }
  double number(uint32_t id) const {
    return is_small_int(id) ? double(small_int(id)) : entry(id).value;
  }
  // The canonical text: numbers as the shortest text that reads back exactly
  // (`1`, `0.5`), other constants as written (unquoted).
  std::string name(uint32_t id) const;
  // A total order: numbers (numerically) before other constants (bytewise). Small
  // integers (positions, offsets) compare as their ids without a call: the encoding is
  // monotone (attention masks compare once per pair).
  int compare(uint32_t a, uint32_t b) const {
    if (is_small_int(a) && is_small_int(b)) return a < b ? -1 : (a > b ? 1 : 0);
    return compare_entries(a, b);
  }
  size_t table_size() const { return size_.load(std::memory_order_acquire); }

 private:
  struct Entry {
    std::string name;
    double value = 0;
    bool is_number = false;
  };
  static constexpr uint32_t kChunkBits = 12;
  static constexpr uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr uint32_t kMaxChunks = 1u << 17;

  const Entry& entry(uint32_t id) const {
    return chunks_[id >> kChunkBits].load(std::memory_order_acquire)[id & (kChunkSize - 1)];
  }
  uint32_t append_locked(Entry e);
  int compare_entries(uint32_t a, uint32_t b) const;  // compare() beyond two small integers

  // The names' index (logic/flat_index.hpp): each name is held once, by its entry.
  static uint64_t hash_name(std::string_view name) { return std::hash<std::string_view>{}(name); }
  // The id of `name` (hashed to `hash`), or kNoId; the caller holds mutex_ (shared or not).
  uint32_t find_locked(std::string_view name, uint64_t hash) const;
  static constexpr uint32_t kNoId = FlatIndex::kNone;
  mutable std::shared_mutex mutex_;
  FlatIndex names_;
  std::unordered_map<uint64_t, uint32_t> by_bits_;  // non-integer numbers by their bits
  std::unique_ptr<std::atomic<Entry*>[]> chunks_;
  std::atomic<uint32_t> size_{0};
};

// Canonical text of a number: integers without a fraction, others shortest round-trip.
std::string format_number(double value);

}  // namespace lrnn::logic
