#include "train/ghost_exchange.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "exec/batch_norm.hpp"
#include "lrnn/diagnostics.hpp"
#include "train/distributed.hpp"

namespace lrnn::train {

GhostExchange::GhostExchange(const GhostCut& cut) : data_gradients_from_(cut.data_gradients_from) {
  const int size = dist::world().size;
  // Each owner is asked for its atoms level by level, in one order both sides keep.
  std::vector<const GhostCut::Ghost*> order;
  for (const GhostCut::Ghost& g : cut.ghosts) order.push_back(&g);
  std::stable_sort(order.begin(), order.end(), [](const GhostCut::Ghost* a, const GhostCut::Ghost* b) {
    return a->owner != b->owner ? a->owner < b->owner : a->level < b->level;
  });
  ghosts_ = order.size();
  std::vector<std::vector<char>> asks(size);
  std::map<uint32_t, Level> by_level;
  const auto level = [&](uint32_t l) -> Level& {
    auto [at, fresh] = by_level.try_emplace(l);
    if (fresh) at->second = Level{l, std::vector<std::vector<uint32_t>>(size), std::vector<std::vector<uint32_t>>(size)};
    return at->second;
  };
  for (const GhostCut::Ghost* g : order) {
    if (g->owner < 0 || g->owner >= size || g->owner == dist::world().rank)
      throw Error(ErrorKind::Runtime, "internal: the ghost " + g->key + " has no other owner");
    std::vector<char>& ask = asks[g->owner];
    ask.insert(ask.end(), g->key.begin(), g->key.end());
    ask.push_back('\n');
    level(g->level).recv_local[g->owner].push_back(g->local);
  }
  const std::vector<std::vector<char>> asked = dist::alltoall(asks);
  for (int r = 0; r < size; ++r) {
    const std::vector<char>& keys = asked[r];
    for (size_t at = 0; at < keys.size();) {
      const size_t end = std::find(keys.begin() + at, keys.end(), '\n') - keys.begin();
      const std::string key(keys.begin() + at, keys.begin() + end);
      at = end + 1;
      auto it = cut.owned.find(key);
      if (it == cut.owned.end())
        dist::abort_job("rank " + std::to_string(r) + " reads the atom " + key +
                        ", which this rank owns but did not derive (its part of the sample lacks facts it needs)");
      level(it->second.level).send_local[r].push_back(it->second.local);
      ++asked_;
    }
  }
  // Every rank walks the levels at which anyone exchanges, in one order.
  uint32_t mask = 0;
  for (const auto& [l, lv] : by_level) {
    if (l >= 32) throw Error(ErrorKind::Semantic, "a partitioned sample exchanges ghosts at more than 31 levels");
    mask |= uint32_t{1} << l;
  }
  uint32_t all = 0;
  for (uint32_t m : dist::allgather({mask})) all |= m;
  for (uint32_t l = 0; l < 32; ++l)
    if (all & (uint32_t{1} << l)) levels_.push_back(std::move(level(l)));
}

GhostExchange::GhostExchange(const GhostExchange& part, StepLists lists, uint32_t data_gradients_from)
    : data_gradients_from_(data_gradients_from) {
  if (lists.send.size() != part.levels_.size() || lists.recv.size() != part.levels_.size())
    throw Error(ErrorKind::Runtime, "internal: a step's ghost lists do not match the part's levels");
  for (size_t i = 0; i < part.levels_.size(); ++i) {
    levels_.push_back(Level{part.levels_[i].level, std::move(lists.send[i]), std::move(lists.recv[i])});
    for (const auto& r : levels_.back().recv_local) ghosts_ += r.size();
    for (const auto& r : levels_.back().send_local) asked_ += r.size();
  }
}

void GhostExchange::bind(const exec::Plan& plan) {
  const int size = dist::world().size;
  Bound b;
  const auto side_of = [&](const std::vector<std::vector<uint32_t>>& locals) {
    Bound::Side s;
    s.bytes_per_rank.assign(size, 0);
    for (int r = 0; r < size; ++r)
      for (uint32_t l : locals[r]) {
        const uint32_t off = plan.atom_offsets.at(0).at(l);
        if (off == exec::kNoValue) throw Error(ErrorKind::Runtime, "internal: a ghost or asked atom has no value");
        s.off.push_back(off);
        s.size.push_back(static_cast<uint32_t>(plan.atom_shapes[0][l].size()));
        s.bytes_per_rank[r] += static_cast<int>(s.size.back());
      }
    for (size_t k = 0; k + 1 < s.off.size(); ++k) s.contiguous = s.contiguous && s.off[k + 1] == s.off[k] + s.size[k];
    return s;
  };
  for (const Level& lv : levels_) {
    b.send.push_back(side_of(lv.send_local));
    b.recv.push_back(side_of(lv.recv_local));
    const size_t last = plan.depth_steps.empty() ? plan.steps.size() : plan.depth_steps.size() - 1;
    b.cut.push_back(lv.level <= last ? plan.depth_steps[lv.level] : static_cast<uint32_t>(plan.steps.size()));
  }
  b.pauses.assign(b.cut.rbegin(), b.cut.rend());
  bound_[&plan] = std::move(b);
}

const GhostExchange::Bound& GhostExchange::bound(const exec::Plan& plan) const {
  auto it = bound_.find(&plan);
  if (it == bound_.end()) throw Error(ErrorKind::Runtime, "internal: a plan of a partitioned sample without its ghosts");
  return it->second;
}

// What each pair of ranks exchanges must agree in entries: a ghost's shape (from one query's
// plan, train/ghost_cut.cpp) against its atom's on the owner. Checked once per plan.
void GhostExchange::check_counts(Bound& b) {
  if (b.checked) return;
  const int size = dist::world().size;
  std::vector<uint32_t> mine(levels_.size(), 0);
  for (size_t i = 0; i < levels_.size(); ++i)
    for (int r = 0; r < size; ++r)
      mine[i] = std::max({mine[i], static_cast<uint32_t>(b.send[i].bytes_per_rank[r]),
                          static_cast<uint32_t>(b.recv[i].bytes_per_rank[r])});
  const std::vector<uint32_t> all = dist::allgather(mine);  // rank by rank, level by level
  b.max_pair_entries.assign(levels_.size(), 0);
  for (size_t k = 0; k < all.size(); ++k)
    b.max_pair_entries[k % levels_.size()] = std::max(b.max_pair_entries[k % levels_.size()], all[k]);
  for (size_t i = 0; i < levels_.size(); ++i) {
    std::vector<std::vector<uint32_t>> counts(size);
    for (int r = 0; r < size; ++r) counts[r] = {static_cast<uint32_t>(b.send[i].bytes_per_rank[r])};
    const std::vector<std::vector<uint32_t>> got = dist::alltoall(counts);
    for (int r = 0; r < size; ++r) {
      const int n = static_cast<int>(got[r].at(0));
      if (n != b.recv[i].bytes_per_rank[r])
        dist::abort_job("rank " + std::to_string(r) + " sends " + std::to_string(n) + " values of level " +
                        std::to_string(levels_[i].level) + " for this rank's " + std::to_string(b.recv[i].bytes_per_rank[r]) +
                        " (the ghosts' shapes differ from their atoms')");
    }
  }
  b.checked = true;
}

namespace {

// An exchange's slice: at most this many bytes per pair of ranks and round, split among the
// rank's peers (LRNN_TEST_EXCHANGE_SLICE, a test hook, sets the entries per pair instead).
constexpr size_t kSliceBytes = size_t{4} << 20;

template <class T>
size_t slice_entries(int ranks) {
  static const char* test = std::getenv("LRNN_TEST_EXCHANGE_SLICE");
  if (test && std::atol(test) > 0) return static_cast<size_t>(std::atol(test));
  return std::max<size_t>(1024, kSliceBytes / sizeof(T) / static_cast<size_t>(std::max(1, ranks - 1)));
}

// The entries of one side bound for (or coming from) one rank, visited a slice at a time in
// order: its blocks (one per atom, never shared by two ranks) from where the last slice ended.
struct SideCursor {
  const std::vector<uint32_t>* off = nullptr;
  const std::vector<uint32_t>* size = nullptr;
  size_t block = 0;
  uint32_t within = 0;
  // f(offset, count) over the next n entries, block by block.
  template <class F>
  void take(size_t n, F&& f) {
    while (n > 0) {
      const uint32_t left = (*size)[block] - within;
      if (left == 0) {
        ++block;
        within = 0;
        continue;
      }
      const uint32_t k = static_cast<uint32_t>(std::min<size_t>(n, left));
      f((*off)[block] + within, k);
      within += k;
      n -= k;
    }
  }
};

// One cursor per rank, at the first block of its entries; `first` gets where they start.
template <class Side>
std::vector<SideCursor> cursors_of(const Side& side, std::vector<size_t>& first) {
  const size_t ranks = side.bytes_per_rank.size();
  std::vector<SideCursor> c(ranks);
  first.assign(ranks, 0);
  size_t block = 0, entries = 0;
  for (size_t r = 0; r < ranks; ++r) {
    c[r] = SideCursor{&side.off, &side.size, block, 0};
    first[r] = entries;
    const size_t end = entries + static_cast<size_t>(side.bytes_per_rank[r]);
    while (entries < end) entries += side.size[block++];
  }
  return c;
}

// Rank r's entries in round j: its part of the slice [j * slice, (j + 1) * slice).
size_t in_round(size_t entries, size_t j, size_t slice) {
  return entries > j * slice ? std::min(slice, entries - j * slice) : 0;
}

int checked_bytes(size_t bytes) {
  if (bytes > static_cast<size_t>(INT32_MAX))
    throw Error(ErrorKind::Limit, "a ghost exchange of more than 2 GB between two ranks in one slice");
  return static_cast<int>(bytes);
}

}  // namespace

template <class T>
void GhostExchange::exchange(const Bound::Side& out, const Bound::Side& in, uint32_t max_pair_entries, const T* from,
                             T* to, bool add) {
  const int size = dist::world().size;
  const size_t slice = slice_entries<T>(size);
  const size_t rounds = std::max<size_t>(1, (max_pair_entries + slice - 1) / slice);
  std::vector<size_t> out_first, in_first;
  std::vector<SideCursor> out_at = cursors_of(out, out_first), in_at = cursors_of(in, in_first);
  // A side whose entries lie in one block (the ghosts', train/ghost_cut.cpp) is sent from or
  // received into its place (at offsets an int can hold); the other goes through the buffer
  // (one per pass direction: forward packs the owned atoms' values, backward adds the ghosts'
  // gradients they get).
  const auto in_one_block = [](const Bound::Side& s) {
    size_t total = 0;
    for (int n : s.bytes_per_rank) total += static_cast<size_t>(n);
    return s.contiguous && !s.off.empty() && total * sizeof(T) <= static_cast<size_t>(INT32_MAX);
  };
  const bool send_direct = in_one_block(out), recv_direct = in_one_block(in) && !add;
  size_t send_room = 0, recv_room = 0;  // entries of the biggest round through the buffer
  for (int r = 0; r < size; ++r) {
    send_room += in_round(static_cast<size_t>(out.bytes_per_rank[r]), 0, slice);
    recv_room += in_round(static_cast<size_t>(in.bytes_per_rank[r]), 0, slice);
  }
  if (send_direct) send_room = 0;
  if (recv_direct) recv_room = 0;
  buffer_.resize((send_room + recv_room) * sizeof(T));
  T* const send_buffer = reinterpret_cast<T*>(buffer_.data());
  T* const recv_buffer = send_buffer + send_room;
  std::vector<int> send_bytes(size), recv_bytes(size), send_at(size), recv_at(size);
  for (size_t j = 0; j < rounds; ++j) {
    T* packed = send_buffer;
    size_t received = 0;
    for (int r = 0; r < size; ++r) {
      const size_t sent = in_round(static_cast<size_t>(out.bytes_per_rank[r]), j, slice);
      const size_t got = in_round(static_cast<size_t>(in.bytes_per_rank[r]), j, slice);
      send_bytes[r] = checked_bytes(sent * sizeof(T));
      recv_bytes[r] = checked_bytes(got * sizeof(T));
      if (send_direct) {
        send_at[r] = sent ? checked_bytes((out_first[r] + j * slice) * sizeof(T)) : 0;
      } else {
        send_at[r] = checked_bytes(static_cast<size_t>(packed - send_buffer) * sizeof(T));
        out_at[r].take(sent, [&](uint32_t off, uint32_t k) { packed = std::copy_n(from + off, k, packed); });
      }
      recv_at[r] = recv_direct ? (got ? checked_bytes((in_first[r] + j * slice) * sizeof(T)) : 0)
                               : checked_bytes(received * sizeof(T));
      received += got;
    }
    const void* send = send_direct ? static_cast<const void*>(from + out.off[0]) : send_buffer;
    void* recv = recv_direct ? static_cast<void*>(to + in.off[0]) : recv_buffer;
    dist::alltoallv(send, send_bytes, send_at, recv, recv_bytes, recv_at);
    if (recv_direct) continue;
    const T* got = recv_buffer;
    for (int r = 0; r < size; ++r)
      in_at[r].take(in_round(static_cast<size_t>(in.bytes_per_rank[r]), j, slice), [&](uint32_t off, uint32_t k) {
        T* at = to + off;
        if (add)
          for (uint32_t e = 0; e < k; ++e) at[e] += got[e];
        else
          std::copy_n(got, k, at);
        got += k;
      });
  }
}

template <class T>
void GhostExchange::forward(const exec::Plan& plan, const exec::ParamView<T>& params, exec::BasicWorkspace<T>& ws) {
  Bound& b = bound_.at(&plan);
  check_counts(b);
  size_t done = 0;
  for (size_t i = 0; i < levels_.size(); ++i) {
    exec::forward_steps(plan, params, ws, done, b.cut[i]);
    done = std::max<size_t>(done, b.cut[i]);
    exchange(b.send[i], b.recv[i], b.max_pair_entries[i], ws.values.data(), ws.values.data(), false);
  }
  exec::forward_steps(plan, params, ws, done, plan.steps.size());
}

std::span<const uint32_t> GhostExchange::pauses(const exec::Plan& plan) const { return bound(plan).pauses; }

template <class T>
void GhostExchange::gradients_home(const exec::Plan& plan, size_t pause, T* grads) {
  const Bound& b = bound(plan);
  const size_t i = levels_.size() - 1 - pause;  // the pauses come highest level first
  exchange(b.recv[i], b.send[i], b.max_pair_entries[i], grads, grads, true);
}

template void GhostExchange::forward<double>(const exec::Plan&, const exec::ParamView<double>&, exec::Workspace&);
template void GhostExchange::forward<float>(const exec::Plan&, const exec::ParamView<float>&, exec::Workspace32&);
template void GhostExchange::gradients_home<double>(const exec::Plan&, size_t, double*);
template void GhostExchange::gradients_home<float>(const exec::Plan&, size_t, float*);

}  // namespace lrnn::train
