// Tuples of one predicate in one example, stored flat, with hash indexes per
// bound-argument pattern. Rows are only ever appended, which is what semi-naive
// evaluation needs: "old", "delta" and "full" are row ranges.
//
// An index maps a key (the values of the bound columns) to the newest row with that key;
// rows with equal keys are chained newest-first through `next`, so a range [lo, hi) is
// read by skipping rows >= hi and stopping at the first row < lo. Rows appended while a
// chain is being read do not disturb the reader (the chain it follows is unchanged).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "logic/grounding.hpp"

namespace lrnn::logic {

inline uint64_t hash_mix(uint64_t h, uint32_t v) {
  h ^= v;
  h *= 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

class Index {
 public:
  Index(uint64_t mask, uint32_t arity) : mask_(mask) {
    for (uint32_t c = 0; c < arity; ++c)
      if (mask >> c & 1) cols_.push_back(uint8_t(c));
    slots_.assign(16, kNone);
  }
  uint64_t mask() const { return mask_; }
  const std::vector<uint8_t>& cols() const { return cols_; }

  // Newest row whose bound columns equal key (key has cols().size() values), or kNone.
  uint32_t find(const uint32_t* key, const uint32_t* data, uint32_t arity) const {
    uint32_t h = hash_key(key);
    size_t m = slots_.size() - 1;
    for (size_t s = h & m;; s = (s + 1) & m) {
      uint32_t row = slots_[s];
      if (row == kNone) return kNone;
      if (hashes_[s] == h && equal(key, data + size_t(row) * arity)) return row;
    }
  }
  uint32_t next(uint32_t row) const { return next_[row]; }

  // Adds row (the newest) whose values are at data + row * arity.
  void insert(uint32_t row, const uint32_t* data, uint32_t arity) {
    if ((used_ + 1) * 2 > slots_.size()) grow(data, arity);
    if (next_.size() <= row) next_.resize(std::max<size_t>(row + 1, next_.size() * 2), kNone);
    const uint32_t* tuple = data + size_t(row) * arity;
    uint32_t key[64];
    for (size_t i = 0; i < cols_.size(); ++i) key[i] = tuple[cols_[i]];
    uint32_t h = hash_key(key);
    size_t m = slots_.size() - 1;
    for (size_t s = h & m;; s = (s + 1) & m) {
      uint32_t head = slots_[s];
      if (head == kNone) {
        slots_[s] = row;
        hashes_[s] = h;
        next_[row] = kNone;
        ++used_;
        return;
      }
      if (hashes_[s] == h && equal(key, data + size_t(head) * arity)) {
        next_[row] = head;
        slots_[s] = row;
        return;
      }
    }
  }

 private:
  uint32_t hash_key(const uint32_t* key) const {
    uint64_t h = 0x243F6A8885A308D3ull;
    for (size_t i = 0; i < cols_.size(); ++i) h = hash_mix(h, key[i]);
    return uint32_t(h >> 32) ^ uint32_t(h);
  }
  bool equal(const uint32_t* key, const uint32_t* tuple) const {
    for (size_t i = 0; i < cols_.size(); ++i)
      if (key[i] != tuple[cols_[i]]) return false;
    return true;
  }
  void grow(const uint32_t* data, uint32_t arity) {
    std::vector<uint32_t> old_slots = std::move(slots_), old_hashes = std::move(hashes_);
    size_t cap = old_slots.size() * 2;
    slots_.assign(cap, kNone);
    hashes_.assign(cap, 0);
    size_t m = cap - 1;
    for (size_t i = 0; i < old_slots.size(); ++i) {
      if (old_slots[i] == kNone) continue;
      size_t s = old_hashes[i] & m;
      while (slots_[s] != kNone) s = (s + 1) & m;
      slots_[s] = old_slots[i];
      hashes_[s] = old_hashes[i];
    }
  }

  uint64_t mask_;
  std::vector<uint8_t> cols_;
  std::vector<uint32_t> slots_;   // head row per key, kNone = empty
  std::vector<uint32_t> hashes_ = std::vector<uint32_t>(16, 0);
  std::vector<uint32_t> next_;    // per row: next older row with the same key
  size_t used_ = 0;
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

  // Row of the tuple, or kNone.
  uint32_t find(const uint32_t* tuple) const { return unique_.find(tuple, data_.data(), arity_); }

  // Appends the tuple unless present; returns (row, inserted).
  std::pair<uint32_t, bool> insert(const uint32_t* tuple) {
    uint32_t r = find(tuple);
    if (r != kNone) return {r, false};
    r = rows_++;
    data_.insert(data_.end(), tuple, tuple + arity_);
    unique_.insert(r, data_.data(), arity_);
    for (Index& ix : indexes_) ix.insert(r, data_.data(), arity_);
    example_fact_.push_back(kNone);
    template_fact_.push_back(kNone);
    return {r, true};
  }

  // The index for a bound-column mask (built on first use); returns its position.
  uint32_t index_for(uint64_t mask) {
    for (uint32_t i = 0; i < indexes_.size(); ++i)
      if (indexes_[i].mask() == mask) return i;
    indexes_.emplace_back(mask, arity_);
    Index& ix = indexes_.back();
    for (uint32_t r = 0; r < rows_; ++r) ix.insert(r, data_.data(), arity_);
    return uint32_t(indexes_.size() - 1);
  }
  const Index& index(uint32_t i) const { return indexes_[i]; }

  std::vector<uint32_t>& example_fact() { return example_fact_; }
  std::vector<uint32_t>& template_fact() { return template_fact_; }

  // Semi-naive bookkeeping: rows [0, delta_begin) are old, [delta_begin, delta_end) delta.
  uint32_t delta_begin = 0, delta_end = 0;

 private:
  uint32_t arity_;
  uint32_t rows_ = 0;
  std::vector<uint32_t> data_;
  Index unique_;
  std::vector<Index> indexes_;
  std::vector<uint32_t> example_fact_, template_fact_;
};

}  // namespace lrnn::logic
