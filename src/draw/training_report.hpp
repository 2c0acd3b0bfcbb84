// `lrnn train --report FILE`: one self-contained HTML page (inline SVG charts drawn here,
// no script, no network) with the loss and accuracy per epoch for train and test, the
// settings, the timing and the final outputs. Built from the `--json` object, so the page
// and the JSON always agree.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lrnn/training.hpp"

namespace lrnn::draw {

// [{"epoch", "train": metrics, "test": metrics (when evaluated), "lr", "epoch_s"}].
nlohmann::json history_json(const std::vector<EpochInfo>& history);
// The training settings as `lrnn train` options name them.
nlohmann::json settings_json(const Settings& settings);

// One line series of a chart: y per x, NaN for a missing point.
struct ChartSeries {
  std::string name, colour;
  std::vector<double> x, y;
};
// An SVG line chart with axes, ticks and a legend; each series is one <polyline> with
// data-series="NAME" and one point per finite y.
std::string line_chart_svg(const std::string& title, const std::vector<ChartSeries>& series, bool unit_range);

// The page for a `lrnn train --json` object that has "history" and "settings".
std::string training_report_html(const nlohmann::json& run, const std::string& title);

}  // namespace lrnn::draw
