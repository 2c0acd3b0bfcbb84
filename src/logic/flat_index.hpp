// An index of ids by hash, for tables that hold their entries themselves (the symbols'
// names, the sample store's values): open addressing over 8-byte slots, each the upper half
// of an entry's hash (a tag) and its id + 1 (0: empty), at most half full, probed linearly
// from the hash's low bits. A probe rejects a different entry from the slot alone and reads
// an entry only on a likely match, so a lookup costs one cache miss where a node-based map
// cost one per node and held a copy of every key (a big graph's 2M node names: 140 MB).
// Growing rehashes the held ids through the caller's hash_of(id): the index keeps no hash
// per id (a caller that cannot recompute one cheaply keeps its own: the store does).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lrnn::logic {

class FlatIndex {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;

  // The id hashed to `hash` for which same(id) holds, or kNone.
  template <class Same>
  uint32_t find(uint64_t hash, Same same) const {
    if (slots_.empty()) return kNone;
    const size_t mask = slots_.size() - 1;
    const uint32_t tag = tag_of(hash);
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.id_plus_one == 0) return kNone;
      if (slot.tag == tag && same(slot.id_plus_one - 1)) return slot.id_plus_one - 1;
    }
  }

  // find(hash, same), or else add()'s new id indexed under `hash`; hash_of(id) gives the
  // hash of an id already held, for growing. One probe either way.
  template <class Same, class Add, class HashOf>
  uint32_t find_or_add(uint64_t hash, Same same, Add add, HashOf hash_of) {
    if (2 * (count_ + 1) > slots_.size()) grow(hash_of);
    const size_t mask = slots_.size() - 1;
    const uint32_t tag = tag_of(hash);
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.id_plus_one == 0) {
        const uint32_t id = add();
        slot = {tag, id + 1};
        ++count_;
        return id;
      }
      if (slot.tag == tag && same(slot.id_plus_one - 1)) return slot.id_plus_one - 1;
    }
  }

  // Fetches the slot a lookup of `hash` reads first into the cache (a batch of lookups
  // issues these ahead of its probes).
  void prefetch(uint64_t hash) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]);
  }

  size_t size() const { return count_; }

 private:
  struct Slot {
    uint32_t tag = 0;
    uint32_t id_plus_one = 0;
  };
  static uint32_t tag_of(uint64_t hash) { return static_cast<uint32_t>(hash >> 32); }

  template <class HashOf>
  void grow(HashOf hash_of) {
    std::vector<Slot> bigger(std::max<size_t>(1024, 2 * slots_.size()));
    const size_t mask = bigger.size() - 1;
    for (const Slot& slot : slots_) {
      if (slot.id_plus_one == 0) continue;
      size_t i = hash_of(slot.id_plus_one - 1) & mask;
      while (bigger[i].id_plus_one != 0) i = (i + 1) & mask;
      bigger[i] = slot;
    }
    slots_.swap(bigger);
  }

  std::vector<Slot> slots_;  // a power of two in size (or empty)
  size_t count_ = 0;
};

}  // namespace lrnn::logic
