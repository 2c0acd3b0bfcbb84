// What `lrnn train` and `lrnn eval` report, for any program over the public API: metrics,
// outputs and the training history as JSON (the `--json` objects, docs/cli.md), the progress
// line, and the self-contained HTML page of `lrnn train --report` drawn from such a JSON
// object. JSON values are nlohmann::json (a public dependency of this header only).
#pragma once

#include <nlohmann/json.hpp>
#include <iosfwd>
#include <string>
#include <vector>

#include "lrnn/training.hpp"

namespace lrnn {

// {"loss", "accuracy", "auc" (if binary), "count", "ranking" (with ranking metrics)}; NaN
// values become null.
nlohmann::json metrics_json(const Metrics& m);
// [{"example", "query", "target", "output", "prediction", "split" (with query splits),
// "derived": false (a query nothing derives)}] (single entries as numbers).
nlohmann::json outputs_json(const Evaluation& ev);
// The same as outputs_json(ev).dump(), written an output at a time: one big graph's 200k
// outputs as JSON objects took 0.13 GB at once (bench/README.md "big_graph"); and without
// a JSON object per output, which took ~5x the time (bench/report_json.cpp).
void write_outputs_json(std::ostream& os, const Evaluation& ev);
// "epoch 12/100  loss 0.1234  acc 0.950  [val loss ... acc ...]  [test loss 0.2 acc 0.9]"
std::string epoch_line(const EpochInfo& r, int total_epochs);

// [{"epoch", "train": metrics, "val" / "test": metrics (when evaluated), "lr", "epoch_s"}].
nlohmann::json history_json(const std::vector<EpochInfo>& history);
// The training settings as `lrnn train` options name them.
nlohmann::json settings_json(const Settings& settings);
// `lrnn train --report FILE`: one HTML page (inline SVG charts, no script, no network) with
// the loss and accuracy per epoch for train and test, the settings, the timing and the final
// outputs of a `lrnn train --json` object that has "history" and "settings", so the page and
// the JSON always agree.
std::string training_report_html(const nlohmann::json& run, const std::string& title);

}  // namespace lrnn
