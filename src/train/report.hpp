// Reporting shared by `lrnn train`, `lrnn eval` and the API: metrics and outputs as JSON,
// a progress line, and the test split.
#pragma once

#include <nlohmann/json.hpp>
#include <iosfwd>
#include <string>
#include <vector>

#include "train/engine.hpp"

namespace lrnn::train {

// {"loss", "accuracy", "auc" (if binary), "count"}; NaN values become null.
nlohmann::json metrics_json(const Metrics& m);
// [{"example", "query", "target", "output", "prediction"}] (single entries as numbers).
nlohmann::json outputs_json(const Evaluation& ev);
// The same as outputs_json(ev).dump(), written an output at a time: one big graph's 200k
// outputs as JSON objects took 0.13 GB at once (bench/README.md "big_graph").
void write_outputs_json(std::ostream& os, const Evaluation& ev);
// "epoch 12/100  loss 0.1234  acc 0.950  [test loss 0.2 acc 0.9]"
std::string epoch_line(const EpochInfo& r, int total_epochs);

// Splits samples into (train, test): a seeded shuffle, then the last round(fraction * n)
// samples are the test set (at least one of each when n >= 2).
void split_samples(std::vector<Sample>& all, double fraction, uint64_t seed, std::vector<Sample>& train,
                   std::vector<Sample>& test);
// The same split as indices of n samples, each part in ascending order.
void split_indices(size_t n, double fraction, uint64_t seed, std::vector<size_t>& train, std::vector<size_t>& test);

}  // namespace lrnn::train
