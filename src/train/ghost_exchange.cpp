#include "train/ghost_exchange.hpp"

#include <algorithm>
#include <cstring>
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
  for (size_t i = 0; i < levels_.size(); ++i) {
    std::vector<std::vector<char>> counts(size);
    for (int r = 0; r < size; ++r) {
      counts[r].resize(sizeof(int));
      std::memcpy(counts[r].data(), &b.send[i].bytes_per_rank[r], sizeof(int));
    }
    const std::vector<std::vector<char>> got = dist::alltoall(counts);
    for (int r = 0; r < size; ++r) {
      int n = 0;
      std::memcpy(&n, got[r].data(), sizeof(int));
      if (n != b.recv[i].bytes_per_rank[r])
        dist::abort_job("rank " + std::to_string(r) + " sends " + std::to_string(n) + " values of level " +
                        std::to_string(levels_[i].level) + " for this rank's " + std::to_string(b.recv[i].bytes_per_rank[r]) +
                        " (the ghosts' shapes differ from their atoms')");
    }
  }
  b.checked = true;
}

template <class T>
void GhostExchange::exchange(const Bound::Side& out, const Bound::Side& in, const T* from, T* to, bool add) {
  const int size = dist::world().size;
  std::vector<int> send_bytes(size), recv_bytes(size);
  size_t send_total = 0, recv_total = 0;
  for (int r = 0; r < size; ++r) {
    send_bytes[r] = out.bytes_per_rank[r] * static_cast<int>(sizeof(T));
    recv_bytes[r] = in.bytes_per_rank[r] * static_cast<int>(sizeof(T));
    send_total += send_bytes[r];
    recv_total += recv_bytes[r];
  }
  // A side whose entries lie in one block (the ghosts', train/ghost_cut.cpp) is sent from or
  // received into its place; the other goes through the buffer (one per pass direction:
  // forward packs the owned atoms' values, backward adds the ghosts' gradients they get).
  const bool send_direct = out.contiguous && !out.off.empty(), recv_direct = in.contiguous && !in.off.empty() && !add;
  buffer_.resize((send_direct ? 0 : send_total) + (recv_direct ? 0 : recv_total));
  const char* send_at = send_direct ? reinterpret_cast<const char*>(from + out.off[0]) : buffer_.data();
  char* recv_at = recv_direct ? reinterpret_cast<char*>(to + in.off[0])
                              : buffer_.data() + (send_direct ? 0 : send_total);
  if (!send_direct) {
    T* s = reinterpret_cast<T*>(buffer_.data());
    for (size_t k = 0; k < out.off.size(); ++k) s = std::copy_n(from + out.off[k], out.size[k], s);
  }
  dist::alltoallv(send_at, send_bytes, recv_at, recv_bytes);
  if (recv_direct) return;
  const T* r = reinterpret_cast<const T*>(recv_at);
  for (size_t k = 0; k < in.off.size(); ++k) {
    T* at = to + in.off[k];
    if (add)
      for (uint32_t e = 0; e < in.size[k]; ++e) at[e] += r[e];
    else
      std::copy_n(r, in.size[k], at);
    r += in.size[k];
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
    exchange(b.send[i], b.recv[i], ws.values.data(), ws.values.data(), false);
  }
  exec::forward_steps(plan, params, ws, done, plan.steps.size());
}

std::span<const uint32_t> GhostExchange::pauses(const exec::Plan& plan) const { return bound(plan).pauses; }

template <class T>
void GhostExchange::gradients_home(const exec::Plan& plan, size_t pause, T* grads) {
  const Bound& b = bound(plan);
  const size_t i = levels_.size() - 1 - pause;  // the pauses come highest level first
  exchange(b.recv[i], b.send[i], grads, grads, true);
}

template void GhostExchange::forward<double>(const exec::Plan&, const exec::ParamView<double>&, exec::Workspace&);
template void GhostExchange::forward<float>(const exec::Plan&, const exec::ParamView<float>&, exec::Workspace32&);
template void GhostExchange::gradients_home<double>(const exec::Plan&, size_t, double*);
template void GhostExchange::gradients_home<float>(const exec::Plan&, size_t, float*);

}  // namespace lrnn::train
