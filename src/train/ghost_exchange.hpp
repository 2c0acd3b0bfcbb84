// The per-layer exchange of a partitioned sample cut at its ghosts (train/ghost_cut.hpp,
// docs/distributed.md "One sample over many ranks"). For each level L at which some rank
// reads a ghost: forward runs the plan's steps up to depth L, then every rank sends the
// values of its owned level-L atoms that other ranks read as ghosts (one alltoallv) and
// writes the ghosts' values it receives; backward, once the steps above depth L are done,
// sends the ghosts' gradients back to their owners, which add them to their atoms' (slice by
// slice, in rank order within a slice: the same sums on every run) before the steps of depth
// L run. An exchange bigger than a slice (kSliceBytes) goes in several alltoallv rounds.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "exec/plan.hpp"
#include "train/ghost_cut.hpp"

namespace lrnn::train {

class GhostExchange {
 public:
  // Collective: each rank asks the owners of its ghosts for them (by key); an owner that does
  // not hold an asked atom ends the job naming it.
  explicit GhostExchange(const GhostCut& cut);

  // A step's exchange over a support of the part (train/partition_query_steps.hpp): per level
  // of `part` (levels()), per rank, the local atoms of the support network sent and received,
  // in the order both sides keep; the support's ghosts' values lie from data_gradients_from.
  struct StepLists {
    std::vector<std::vector<std::vector<uint32_t>>> send, recv;  // [level][rank]
  };
  GhostExchange(const GhostExchange& part, StepLists lists, uint32_t data_gradients_from);
  // The part's lists at level index i (of levels()): its level, and per rank the atoms of the
  // part's network it sends (they ask for) and receives (its ghosts), in the agreed order.
  uint32_t level(size_t i) const { return levels_[i].level; }
  const std::vector<std::vector<uint32_t>>& sends(size_t i) const { return levels_[i].send_local; }
  const std::vector<std::vector<uint32_t>>& receives(size_t i) const { return levels_[i].recv_local; }

  // Where the ghosts and the asked atoms of `plan` (the cut network's, with its per-atom
  // tables still there) lie: called once per plan, before its tables are dropped.
  void bind(const exec::Plan& plan);
  // Forward over `plan` (bound) with the exchanges between its layers; ws holds the pass's
  // fact values (exec::forward_prepare). Collective.
  template <class T>
  void forward(const exec::Plan& plan, const exec::ParamView<T>& params, exec::BasicWorkspace<T>& ws);
  // The steps at which backward over `plan` pauses (descending, exec::BackwardPauses) and
  // what it does at the k-th pause: the ghosts' gradients of that layer go home. Collective.
  std::span<const uint32_t> pauses(const exec::Plan& plan) const;
  template <class T>
  void gradients_home(const exec::Plan& plan, size_t pause, T* grads);

  // How the rank's plans are built: its ghosts' values lie last in the data and take their
  // gradients; a neighbour rule reading ghosts sums its inputs first (it shares no transform
  // with the self rule, which reads none), exec::PlanOptions. The owned atoms other ranks
  // ask for are read outside the plan, where self_into_sum's check that nothing else reads
  // a sum's atoms (rewrites/self_into_sum.cpp) and weight_after_readout's that nothing else
  // reads a layer's rows cannot see them: those rewrites are off.
  void plan_options(exec::PlanOptions& options) const {
    options.data_gradients_from = data_gradients_from_;
    options.transform_sum_first = true;
    options.transform_sum_first_ratio = 1;
    options.merge_shared_weight_rules = true;
    options.disabled_rewrites.set(exec::bit(exec::Rewrite::SelfIntoSum));
    options.disabled_rewrites.set(exec::bit(exec::Rewrite::WeightAfterReadout));
  }
  size_t ghosts() const { return ghosts_; }  // ghost atoms this rank reads
  size_t asked() const { return asked_; }    // owned atoms sent (per level, per asking rank)
  size_t levels() const { return levels_.size(); }

 private:
  struct Level {
    uint32_t level = 0;
    std::vector<std::vector<uint32_t>> send_local, recv_local;  // per rank: local atom ids, in order
  };
  struct Bound {  // per level, the offsets and entries of what is sent and received
    struct Side {
      std::vector<uint32_t> off, size;
      std::vector<int> bytes_per_rank;  // in entries until scaled by sizeof(T)
      bool contiguous = true;            // entry k + 1 lies right after entry k
    };
    std::vector<Side> send, recv;
    // Per level: the most entries any pair of ranks exchanges (all ranks agree on it: it
    // sets the number of slices each exchange goes in).
    std::vector<uint32_t> max_pair_entries;
    std::vector<uint32_t> cut;     // per level: the first step above depth `level`
    std::vector<uint32_t> pauses;  // the cuts, descending
    bool checked = false;          // the entries each pair of ranks exchanges agreed on
  };
  const Bound& bound(const exec::Plan& plan) const;
  template <class T>
  void exchange(const Bound::Side& out, const Bound::Side& in, uint32_t max_pair_entries, const T* from, T* to,
                bool add);
  void check_counts(Bound& b);

  std::vector<Level> levels_;
  std::map<const exec::Plan*, Bound> bound_;
  size_t ghosts_ = 0, asked_ = 0;
  uint32_t data_gradients_from_ = 0;
  // What is packed to be sent or received to be added: one slice of the exchange at a time
  // (a big graph's whole layer of ghost values was ~20 MB of each rank's peak).
  std::vector<char> buffer_;
};

}  // namespace lrnn::train
