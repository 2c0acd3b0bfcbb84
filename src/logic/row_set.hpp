// Open-addressing set of fixed-width rows of ids, numbering rows in order of first
// insertion (dedup of ground rules in the grounder; softmax groups in the neural stage).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "logic/grounding.hpp"
#include "logic/relation.hpp"

namespace lrnn::logic {

class RowSet {
 public:
  explicit RowSet(uint32_t width) : width_(width), slots_(64, kNone) {}
  // True if the row was not present (and is now).
  bool insert(const uint32_t* row) { return number(row).second; }
  // The row's number (rows are numbered 0, 1, ... as first inserted) and whether it is new.
  std::pair<uint32_t, bool> number(const uint32_t* row) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    uint32_t h = hash(row);
    size_t m = slots_.size() - 1;
    for (size_t s = h & m;; s = (s + 1) & m) {
      if (slots_[s] == kNone) {
        slots_[s] = count_++;
        data_.insert(data_.end(), row, row + width_);
        return {slots_[s], true};
      }
      if (std::equal(row, row + width_, data_.data() + size_t(slots_[s]) * width_)) return {slots_[s], false};
    }
  }
  uint32_t size() const { return count_; }

 private:
  uint32_t hash(const uint32_t* row) const {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < width_; ++i) h = hash_mix(h, row[i]);
    return uint32_t(h >> 32) ^ uint32_t(h);
  }
  void grow() {
    std::vector<uint32_t> slots(slots_.size() * 2, kNone);
    size_t m = slots.size() - 1;
    for (uint32_t i = 0; i < count_; ++i) {
      size_t s = hash(data_.data() + size_t(i) * width_) & m;
      while (slots[s] != kNone) s = (s + 1) & m;
      slots[s] = i;
    }
    slots_ = std::move(slots);
  }
  uint32_t width_;
  std::vector<uint32_t> slots_;
  std::vector<uint32_t> data_;
  uint32_t count_ = 0;
};

}  // namespace lrnn::logic
