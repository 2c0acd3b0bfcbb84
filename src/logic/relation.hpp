// Tuples of one predicate in one example, stored flat, with hash indexes per
// bound-argument pattern. Rows are only ever appended, which is what semi-naive
// evaluation needs: "old", "delta" and "full" are row ranges.
//
// An index maps a key (the values of the bound columns) to the newest row with that key;
// rows with equal keys are chained newest-first through `next`, so a range [lo, hi) is
// read by skipping rows >= hi and stopping at the first row < lo. Rows appended while a
// chain is being read do not disturb the reader (the chain it follows is unchanged).
//
// A key of one column whose values are dense (a graph's node ids: consecutive small
// integers, or names interned in the order they are first read) is looked up in a direct
// table, key - lo -> newest row, instead of hashed: one load, no probe. The table widens
// as keys arrive and becomes a hash table once it would be mostly empty.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "logic/grounding.hpp"
#include "lrnn/ast.hpp"

namespace lrnn::logic {

// A direct table (value of key k at table[k - lo], kNone where empty) widened to hold key
// x: at least doubled, keys kept below kNone. False, with the table unchanged, when the
// widened table would be more than three quarters empty for `used` keys: its owner then
// keeps the keys some other way (an Index in hash slots, neuralize's groups in a RowSet).
inline bool widen_direct_table(std::vector<uint32_t>& table, uint32_t& lo, uint32_t x, uint64_t used) {
  const uint64_t from = std::min(lo, x), to = std::max<uint64_t>(uint64_t(lo) + table.size(), uint64_t(x) + 1);
  if (to - from > 4 * (used + 1024)) return false;
  std::vector<uint32_t> wider(std::max<uint64_t>(to - from, 2 * table.size()), kNone);
  if (from + wider.size() > uint64_t(kNone)) wider.resize(uint64_t(kNone) - from);
  std::copy(table.begin(), table.end(), wider.begin() + (lo - from));
  table = std::move(wider);
  lo = static_cast<uint32_t>(from);
  return true;
}

inline uint64_t hash_mix(uint64_t h, uint32_t v) {
  h ^= v;
  h *= 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

// An index's column mask has a bit per argument: the template's predicates are bounded to fit.
static_assert(kMaxArity <= 64, "Index masks bound columns in a uint64_t");

class Index {
 public:
  Index(uint64_t mask, uint32_t arity) : mask_(mask) {
    for (uint32_t c = 0; c < arity; ++c)
      if (mask >> c & 1) cols_.push_back(uint8_t(c));
    inline_key_ = cols_.size() <= kInlineKey;
    direct_ = cols_.size() == 1;
    if (!direct_) slots_.assign(16, Slot{});
  }
  uint64_t mask() const { return mask_; }
  const std::vector<uint8_t>& cols() const { return cols_; }

  // Newest row whose bound columns equal key (key has cols().size() values), or kNone.
  uint32_t find(const uint32_t* key, const uint32_t* data, uint32_t arity) const {
    if (direct_) {
      const uint32_t k = key[0] - lo_;  // (wraps past the table for a key below lo_)
      return k < table_.size() ? table_[k] : kNone;
    }
    size_t s = find_slot(key, data, arity);
    return s == kNoSlot ? kNone : slots_[s].row;
  }
  uint32_t next(uint32_t row) const { return next_[row]; }
  // Hints the CPU to load the slot where a key with this tuple would start probing
  // (batched lookups hide the memory latency of large tables).
  void prefetch(const uint32_t* tuple) const {
    if (direct_) {
      const uint32_t k = tuple[cols_[0]] - lo_;
      if (k < table_.size()) __builtin_prefetch(&table_[k]);
      return;
    }
    uint32_t key[64];
    for (size_t i = 0; i < cols_.size(); ++i) key[i] = tuple[cols_[i]];
    __builtin_prefetch(&slots_[hash_key(key) & (slots_.size() - 1)]);
  }

  // Adds row (the newest) whose values are at data + row * arity.
  void insert(uint32_t row, const uint32_t* data, uint32_t arity) {
    frozen_ = false;
    ++inserted_;
    if (next_.size() <= row) next_.resize(std::max<size_t>(row + 1, next_.size() * 2), kNone);
    const uint32_t* tuple = data + size_t(row) * arity;
    if (direct_ && fits_table(tuple[cols_[0]], data, arity)) {
      uint32_t& newest = table_[tuple[cols_[0]] - lo_];
      if (newest == kNone) ++used_;
      next_[row] = newest;
      newest = row;
      return;
    }
    if ((used_ + 1) * 2 > slots_.size()) grow();
    uint32_t key[64];
    for (size_t i = 0; i < cols_.size(); ++i) key[i] = tuple[cols_[i]];
    uint32_t h = hash_key(key);
    size_t m = slots_.size() - 1;
    for (size_t s = h & m;; s = (s + 1) & m) {
      Slot& slot = slots_[s];
      if (slot.row == kNone) {
        slot.row = row;
        slot.hash = h;
        if (inline_key_) std::memcpy(slot.key, key, cols_.size() * sizeof(uint32_t));
        next_[row] = kNone;
        ++used_;
        return;
      }
      if (slot_matches(slot, h, key, data, arity)) {
        next_[row] = slot.row;
        slot.row = row;
        return;
      }
    }
  }

  // Adds rows [0, rows) to an empty index: as many inserts, but a direct table is sized
  // once from the keys' range (one pass over them) and filled in a tight loop.
  void insert_all(const uint32_t* data, uint32_t arity, uint32_t rows) {
    if (!direct_ || inserted_ != 0 || rows == 0) {
      for (uint32_t r = 0; r < rows; ++r) insert(r, data, arity);
      return;
    }
    const uint8_t col = cols_[0];
    uint32_t lo = data[col], hi = data[col];
    for (uint32_t r = 1; r < rows; ++r) {
      const uint32_t x = data[size_t(r) * arity + col];
      lo = std::min(lo, x), hi = std::max(hi, x);
    }
    if (uint64_t(hi) - lo + 1 > 4 * (uint64_t(rows) + 1024)) {  // sparse for any count of distinct keys
      for (uint32_t r = 0; r < rows; ++r) insert(r, data, arity);
      return;
    }
    lo_ = lo;
    table_.assign(size_t(hi - lo) + 1, kNone);
    next_.resize(std::max<size_t>(rows, next_.size()), kNone);
    for (uint32_t r = 0; r < rows; ++r) {
      uint32_t& newest = table_[data[size_t(r) * arity + col] - lo];
      used_ += newest == kNone;
      next_[r] = newest;
      newest = r;
    }
    inserted_ = rows;
    frozen_ = false;
    if (table_.size() > 4 * (uint64_t(used_) + 1024)) to_hash(data, arity);  // as inserting one by one would end
  }

  // A read-only CSR copy for the enumeration phase: the rows of each key stored
  // contiguously (oldest first) with their tuples, so a lookup streams memory instead of
  // chasing a chain. Invalid once rows are added.
  void freeze(const uint32_t* data, uint32_t arity, uint32_t rows) {
    if (direct_) {
      if (inserted_ == rows) return freeze_direct(data, arity, rows);
      to_hash(data, arity);  // (rows not all inserted: not a relation's index)
    }
    frozen_begin_.assign(slots_.size() + 1, 0);
    frozen_rows_.clear();
    frozen_tuples_.clear();
    frozen_rows_.reserve(rows);
    frozen_tuples_.reserve(size_t(rows) * arity);
    frozen_largest_ = 0;
    std::vector<uint32_t> chain;
    for (size_t s = 0; s < slots_.size(); ++s) {
      frozen_begin_[s] = uint32_t(frozen_rows_.size());
      if (slots_[s].row == kNone) continue;
      chain.clear();
      for (uint32_t r = slots_[s].row; r != kNone; r = next_[r]) chain.push_back(r);
      frozen_largest_ = std::max<size_t>(frozen_largest_, chain.size());
      for (size_t i = chain.size(); i-- > 0;) {
        frozen_rows_.push_back(chain[i]);
        const uint32_t* t = data + size_t(chain[i]) * arity;
        frozen_tuples_.insert(frozen_tuples_.end(), t, t + arity);
      }
    }
    frozen_begin_[slots_.size()] = uint32_t(frozen_rows_.size());
    frozen_ = true;
  }
  bool frozen() const { return frozen_; }
  // The most rows one key has (frozen indexes only).
  size_t frozen_largest_group() const { return frozen_largest_; }
  // The frozen group of key: positions [begin, end) into frozen_rows()/frozen_tuples().
  std::pair<uint32_t, uint32_t> frozen_group(const uint32_t* key, const uint32_t* data, uint32_t arity) const {
    if (direct_) {
      const uint32_t k = key[0] - lo_;
      if (k >= table_.size()) return {0, 0};
      return {frozen_begin_[k], frozen_begin_[k + 1]};
    }
    size_t s = find_slot(key, data, arity);
    if (s == kNoSlot) return {0, 0};
    return {frozen_begin_[s], frozen_begin_[s + 1]};
  }
  const uint32_t* frozen_rows() const { return frozen_rows_.data(); }
  const uint32_t* frozen_tuples() const { return frozen_tuples_.data(); }

 private:
  static constexpr size_t kInlineKey = 2;
  static constexpr size_t kNoSlot = ~size_t{0};
  // Newest row per key (kNone = empty) with the key's hash and, for keys of at most two
  // columns, the key itself: a probe then touches one cache line and never the tuples.
  struct Slot {
    uint32_t row = kNone;
    uint32_t hash = 0;
    uint32_t key[kInlineKey] = {0, 0};
  };

  // The rows [0, rows) (every one inserted, oldest first) grouped by key with a counting
  // sort: the groups are those the chains give, read in row order instead of chain order.
  void freeze_direct(const uint32_t* data, uint32_t arity, uint32_t rows) {
    const uint8_t col = cols_[0];
    frozen_begin_.assign(table_.size() + 1, 0);
    for (uint32_t r = 0; r < rows; ++r) ++frozen_begin_[data[size_t(r) * arity + col] - lo_ + 1];
    frozen_largest_ = 0;
    for (size_t k = 0; k < table_.size(); ++k) {
      frozen_largest_ = std::max<size_t>(frozen_largest_, frozen_begin_[k + 1]);
      frozen_begin_[k + 1] += frozen_begin_[k];
    }
    frozen_rows_.assign(rows, 0);
    frozen_tuples_.assign(size_t(rows) * arity, 0);
    std::vector<uint32_t> at(frozen_begin_.begin(), frozen_begin_.end() - 1);
    for (uint32_t r = 0; r < rows; ++r) {
      const uint32_t* t = data + size_t(r) * arity;
      const uint32_t pos = at[t[col] - lo_]++;
      frozen_rows_[pos] = r;
      std::memcpy(frozen_tuples_.data() + size_t(pos) * arity, t, arity * sizeof(uint32_t));
    }
    frozen_ = true;
  }

  // Whether key x has a place in the direct table, widened to it if needed; false (and
  // the index turned into a hash table) when the table would be more than three quarters
  // empty.
  bool fits_table(uint32_t x, const uint32_t* data, uint32_t arity) {
    if (table_.empty()) lo_ = x;
    if (x - lo_ < table_.size()) return true;
    if (widen_direct_table(table_, lo_, x, used_)) return true;
    to_hash(data, arity);
    return false;
  }
  // The direct table's keys moved into hash slots (their chains stay in next_).
  void to_hash(const uint32_t* data, uint32_t arity) {
    direct_ = false;
    size_t cap = 16;
    while (cap < 2 * (used_ + 1)) cap *= 2;
    slots_.assign(cap, Slot{});
    for (const uint32_t newest : table_) {
      if (newest == kNone) continue;
      const uint32_t key = data[size_t(newest) * arity + cols_[0]];
      const uint32_t h = hash_key(&key);
      size_t s = h & (cap - 1);
      while (slots_[s].row != kNone) s = (s + 1) & (cap - 1);
      slots_[s].row = newest;
      slots_[s].hash = h;
      slots_[s].key[0] = key;
    }
    table_ = {};
  }

  size_t find_slot(const uint32_t* key, const uint32_t* data, uint32_t arity) const {
    uint32_t h = hash_key(key);
    size_t m = slots_.size() - 1;
    for (size_t s = h & m;; s = (s + 1) & m) {
      const Slot& slot = slots_[s];
      if (slot.row == kNone) return kNoSlot;
      if (slot_matches(slot, h, key, data, arity)) return s;
    }
  }
  bool slot_matches(const Slot& slot, uint32_t h, const uint32_t* key, const uint32_t* data, uint32_t arity) const {
    if (slot.hash != h) return false;
    if (inline_key_) {
      for (size_t i = 0; i < cols_.size(); ++i)
        if (slot.key[i] != key[i]) return false;
      return true;
    }
    const uint32_t* tuple = data + size_t(slot.row) * arity;
    for (size_t i = 0; i < cols_.size(); ++i)
      if (key[i] != tuple[cols_[i]]) return false;
    return true;
  }
  uint32_t hash_key(const uint32_t* key) const {
    uint64_t h = 0x243F6A8885A308D3ull;
    for (size_t i = 0; i < cols_.size(); ++i) h = hash_mix(h, key[i]);
    return uint32_t(h >> 32) ^ uint32_t(h);
  }
  void grow() {
    std::vector<Slot> old_slots = std::move(slots_);
    size_t cap = old_slots.size() * 2;
    slots_.assign(cap, Slot{});
    size_t m = cap - 1;
    for (const Slot& old : old_slots) {
      if (old.row == kNone) continue;
      size_t s = old.hash & m;
      while (slots_[s].row != kNone) s = (s + 1) & m;
      slots_[s] = old;
    }
    frozen_ = false;
  }

  uint64_t mask_;
  std::vector<uint8_t> cols_;
  bool inline_key_ = true;
  bool direct_ = false;           // one key column, looked up in table_ (else hashed in slots_)
  uint32_t lo_ = 0;               // table_'s first key
  std::vector<uint32_t> table_;   // key - lo_ -> newest row, or kNone
  size_t inserted_ = 0;           // rows inserted
  std::vector<Slot> slots_;
  std::vector<uint32_t> next_;    // per row: next older row with the same key
  size_t used_ = 0;
  bool frozen_ = false;
  std::vector<uint32_t> frozen_begin_, frozen_rows_, frozen_tuples_;
  size_t frozen_largest_ = 0;
};

class Relation {
 public:
  explicit Relation(uint32_t arity = 0) : arity_(arity), unique_(full_mask(arity), arity) {}

  static uint64_t full_mask(uint32_t arity) {
    return arity >= 64 ? ~uint64_t{0} : ((uint64_t{1} << arity) - 1);
  }
  uint32_t arity() const { return arity_; }
  uint32_t rows() const { return rows_; }
  const uint32_t* data() const { return data_.data(); }
  const uint32_t* row(uint32_t r) const { return data_.data() + size_t(r) * arity_; }

  void prefetch(const uint32_t* tuple) const { unique_.prefetch(tuple); }
  // Row of the tuple, or kNone.
  uint32_t find(const uint32_t* tuple) const {
    index_appended();
    return unique_.find(tuple, data_.data(), arity_);
  }

  // Appends the tuple unless present; returns (row, inserted).
  std::pair<uint32_t, bool> insert(const uint32_t* tuple) {
    uint32_t r = find(tuple);
    if (r != kNone) return {r, false};
    r = append_distinct(tuple);
    index_appended();
    return {r, true};
  }
  // Appends a tuple the caller knows is not present (the grounder, for a rule whose
  // substitutions give distinct heads in an empty relation), without hashing it: the
  // whole-tuple index catches up on the next find, and attention's n^2 pair atoms,
  // which nothing looks up by their whole tuple, are never hashed.
  void reserve(size_t rows) { data_.reserve(rows * arity_); }
  uint32_t append_distinct(const uint32_t* tuple) {
    const uint32_t r = rows_++;
    data_.insert(data_.end(), tuple, tuple + arity_);
    for (Index& ix : indexes_) ix.insert(r, data_.data(), arity_);
    return r;
  }

  // The index for a bound-column mask (built on first use); returns its position.
  uint32_t index_for(uint64_t mask) {
    for (uint32_t i = 0; i < indexes_.size(); ++i)
      if (indexes_[i].mask() == mask) return i;
    indexes_.emplace_back(mask, arity_);
    indexes_.back().insert_all(data_.data(), arity_, rows_);
    return uint32_t(indexes_.size() - 1);
  }
  const Index& index(uint32_t i) const { return indexes_[i]; }
  // Builds the CSR view of index i (the relation must not grow afterwards).
  void freeze_index(uint32_t i) {
    if (!indexes_[i].frozen()) indexes_[i].freeze(data_.data(), arity_, rows_);
  }

  // The example fact (ExampleAst::facts index) and template fact behind a row, kNone if
  // none. Stored only up to the last row that has one: derived rows (attention's n^2
  // pairs) cost nothing here.
  uint32_t example_fact(uint32_t row) const { return row < example_fact_.size() ? example_fact_[row] : kNone; }
  uint32_t template_fact(uint32_t row) const { return row < template_fact_.size() ? template_fact_[row] : kNone; }
  void set_example_fact(uint32_t row, uint32_t fact) { set_entry(example_fact_, row, fact); }
  void set_template_fact(uint32_t row, uint32_t fact) { set_entry(template_fact_, row, fact); }

  // Semi-naive bookkeeping: rows [0, delta_begin) are old, [delta_begin, delta_end) delta.
  uint32_t delta_begin = 0, delta_end = 0;

 private:
  static void set_entry(std::vector<uint32_t>& per_row, uint32_t row, uint32_t value) {
    if (per_row.size() <= row) per_row.resize(size_t(row) + 1, kNone);
    per_row[row] = value;
  }
  // Adds the rows appended unhashed to the whole-tuple index.
  void index_appended() const {
    for (; unique_rows_ < rows_; ++unique_rows_) unique_.insert(unique_rows_, data_.data(), arity_);
  }

  uint32_t arity_;
  uint32_t rows_ = 0;
  std::vector<uint32_t> data_;
  mutable Index unique_;           // over rows [0, unique_rows_)
  mutable uint32_t unique_rows_ = 0;
  std::vector<Index> indexes_;
  std::vector<uint32_t> example_fact_, template_fact_;
};

}  // namespace lrnn::logic
