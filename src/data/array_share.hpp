// A rank's share of one graph of arrays (graph_from_arrays_share, load_npz_graph_share): the
// dataset holds the graph's head and the checked arrays; each rank builds only its part of
// the facts when a model prepares it (train/partition.hpp PartSource).
#pragma once

#include <string>
#include <vector>

#include "lrnn/datasets.hpp"

namespace lrnn::data {

// Outside an MPI job of more than one rank: graph_from_arrays. Else the share, holding the
// arrays `a` views; `owned` is the storage they point into (the arrays of an .npz file), or
// empty: then `a` is copied.
ArrayGraph share_of_arrays(const GraphArrays& a, const GraphNames& names, const std::string& source,
                           std::vector<NpyArray> owned);
// The share whatever the job (what share_of_arrays makes with ranks).
ArrayGraph array_graph_share(const GraphArrays& a, const GraphNames& names, const std::string& source,
                             std::vector<NpyArray> owned);

}  // namespace lrnn::data
