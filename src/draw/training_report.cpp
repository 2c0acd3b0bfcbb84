// `lrnn train --report FILE` (include/lrnn/report.hpp): the HTML page, its inline SVG charts
// drawn here, and the history and settings JSON it is drawn from.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "lrnn/report.hpp"
#include "syntax/markup.hpp"

namespace lrnn {

namespace {

// One line series of a chart: y per x, NaN for a missing point.
struct ChartSeries {
  std::string name, colour;
  std::vector<double> x, y;
};

constexpr int kWidth = 560, kHeight = 300;
constexpr int kLeft = 60, kRight = 130, kTop = 34, kBottom = 40;
constexpr size_t kMaxTableRows = 500;  // the page stays small for big data sets

std::string html_escape(const std::string& s) { return xml_escape(s); }

std::string number(double v, int digits = 4) {
  if (!std::isfinite(v)) return "-";
  std::ostringstream o;
  o.precision(digits);
  o << v;
  return o.str();
}

// A JSON value as table text: numbers to 6 digits, arrays as [a, b], null as "-".
std::string cell(const nlohmann::json& v) {
  if (v.is_null()) return "-";
  if (v.is_number()) return number(v.get<double>(), 6);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + cell(v[i]);
    return out + "]";
  }
  return v.dump();
}

// A per-epoch timing list (timing.epochs_s) as a summary: one number per epoch would
// fill the page.
std::string timing_cell(const nlohmann::json& v) {
  if (!v.is_array() || v.size() <= 6) return cell(v);
  std::vector<double> xs;
  for (const auto& x : v)
    if (x.is_number()) xs.push_back(x.get<double>());
  if (xs.size() != v.size()) return cell(v);
  std::sort(xs.begin(), xs.end());
  return std::to_string(xs.size()) + " values: min " + number(xs.front(), 4) + ", median " +
         number(xs[xs.size() / 2], 4) + ", max " + number(xs.back(), 4);
}

double metric(const nlohmann::json& m, const char* key) {
  return m.contains(key) && m[key].is_number() ? m[key].get<double>() : NAN;
}

// "Nice" tick values spanning [lo, hi].
std::vector<double> ticks(double lo, double hi, int target = 5) {
  const double span = hi - lo;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

void outputs_table(std::ostringstream& html, const std::string& heading, const nlohmann::json& outputs) {
  if (!outputs.is_array() || outputs.empty()) return;
  html << "<h2>" << html_escape(heading) << "</h2>\n<table>\n<tr><th>example</th><th>query</th><th>target</th>"
       << "<th>output</th><th>prediction</th></tr>\n";
  const size_t shown = std::min(outputs.size(), kMaxTableRows);
  for (size_t i = 0; i < shown; ++i) {
    const auto& o = outputs[i];
    auto get = [&](const char* k) { return o.contains(k) ? cell(o[k]) : std::string("-"); };
    html << "<tr><td>" << html_escape(get("example")) << "</td><td>" << html_escape(get("query")) << "</td><td>"
         << html_escape(get("target")) << "</td><td>" << html_escape(get("output")) << "</td><td>"
         << html_escape(get("prediction")) << "</td></tr>\n";
  }
  html << "</table>\n";
  if (outputs.size() > shown)
    html << "<p class=\"note\">... " << outputs.size() - shown << " more outputs (all of them are in --json)</p>\n";
}

// An SVG line chart with axes, ticks and a legend; each series is one <polyline> with
// data-series="NAME" and one point per finite y.
std::string line_chart_svg(const std::string& title, const std::vector<ChartSeries>& series, bool unit_range) {
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const auto& s : series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]);
      y_hi = std::max(y_hi, s.y[i]);
    }
  if (unit_range) {
    y_lo = std::min(0.0, y_lo);
    y_hi = std::max(1.0, y_hi);
  }
  if (!std::isfinite(x_lo)) x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;  // no points: empty axes
  if (x_hi == x_lo) x_hi = x_lo + 1;
  if (y_hi == y_lo) y_hi = y_lo + 1, y_lo -= 1;
  if (!unit_range) y_lo = std::min(0.0, y_lo);  // losses are read against zero
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x_lo) / (x_hi - x_lo) * plot_w; };
  auto py = [&](double y) { return kTop + (1 - (y - y_lo) / (y_hi - y_lo)) * plot_h; };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" viewBox=\"0 0 " << kWidth << " " << kHeight << "\" font-family=\"Helvetica, Arial, sans-serif\" "
      << "font-size=\"11\" role=\"img\" aria-label=\"" << html_escape(title) << "\">\n";
  svg << "<text x=\"" << kLeft << "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << html_escape(title) << "</text>\n";
  svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << plot_w << "\" height=\"" << plot_h
      << "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (double t : ticks(y_lo, y_hi)) {
    const double y = py(t);
    svg << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + plot_w << "\" y1=\"" << y << "\" y2=\"" << y
        << "\" stroke=\"#e4e4e4\"/><text x=\"" << kLeft - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">"
        << number(t) << "</text>\n";
  }
  for (double t : ticks(x_lo, x_hi)) {
    if (t != std::floor(t)) continue;  // epochs are whole numbers
    const double x = px(t);
    svg << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << kTop + plot_h << "\" y2=\"" << kTop + plot_h + 4
        << "\" stroke=\"#888\"/><text x=\"" << x << "\" y=\"" << kTop + plot_h + 16 << "\" text-anchor=\"middle\">"
        << number(t, 6) << "</text>\n";
  }
  svg << "<text x=\"" << kLeft + plot_w / 2 << "\" y=\"" << kHeight - 6 << "\" text-anchor=\"middle\">epoch</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    svg << "<polyline data-series=\"" << html_escape(s.name) << "\" fill=\"none\" stroke=\"" << s.colour
        << "\" stroke-width=\"2\" points=\"";
    bool first = true;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      svg << (first ? "" : " ") << number(px(s.x[i]), 6) << "," << number(py(s.y[i]), 6);
      first = false;
    }
    svg << "\"/>\n";
    const double ly = kTop + 10 + 18 * static_cast<double>(k);
    svg << "<line x1=\"" << kLeft + plot_w + 12 << "\" x2=\"" << kLeft + plot_w + 32 << "\" y1=\"" << ly << "\" y2=\""
        << ly << "\" stroke=\"" << s.colour << "\" stroke-width=\"2\"/><text x=\"" << kLeft + plot_w + 38 << "\" y=\""
        << ly + 4 << "\">" << html_escape(s.name) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace

nlohmann::json history_json(const std::vector<EpochInfo>& history) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : history) {
    nlohmann::json e = {{"epoch", r.epoch}, {"train", metrics_json(r.train)}, {"lr", r.lr}, {"epoch_s", r.seconds}};  // time keys end in _s
    if (r.has_validation) e["val"] = metrics_json(r.validation);
    if (r.has_test) e["test"] = metrics_json(r.test);
    out.push_back(std::move(e));
  }
  return out;
}

nlohmann::json settings_json(const Settings& s) {
  nlohmann::json j = {{"epochs", s.epochs},
                      {"optimizer", s.optimizer},
                      {"lr", s.lr},
                      {"loss", s.loss},
                      {"batch_size", s.batch_size},
                      {"seed", s.seed},
                      {"initializer", s.initializer},
                      {"schedule", s.schedule},
                      {"patience", s.patience},
                      {"dtype", to_string(s.dtype)}};
  if (s.weight_decay) j["weight_decay"] = *s.weight_decay;
  // Shown where they change what was trained: smoothing of the loss, noam's warm-up.
  if (s.label_smoothing != 0) j["label_smoothing"] = s.label_smoothing;
  if (s.schedule == "noam") {
    j["warmup"] = s.warmup;
    if (s.d_model) j["d_model"] = *s.d_model;
  }
  return j;
}

std::string training_report_html(const nlohmann::json& run, const std::string& title) {
  const nlohmann::json history = run.value("history", nlohmann::json::array());
  ChartSeries train_loss{"train loss", "#1f77b4", {}, {}}, test_loss{"test loss", "#d62728", {}, {}};
  ChartSeries train_acc{"train accuracy", "#1f77b4", {}, {}}, test_acc{"test accuracy", "#d62728", {}, {}};
  for (const auto& e : history) {
    const double x = e.value("epoch", 0);
    train_loss.x.push_back(x);
    train_loss.y.push_back(metric(e["train"], "loss"));
    train_acc.x.push_back(x);
    train_acc.y.push_back(metric(e["train"], "accuracy"));
    if (e.contains("test")) {
      test_loss.x.push_back(x);
      test_loss.y.push_back(metric(e["test"], "loss"));
      test_acc.x.push_back(x);
      test_acc.y.push_back(metric(e["test"], "accuracy"));
    }
  }
  std::vector<ChartSeries> losses{train_loss}, accuracies{train_acc};
  if (!test_loss.x.empty()) {
    losses.push_back(test_loss);
    accuracies.push_back(test_acc);
  }

  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>lrnn training: "
       << html_escape(title) << "</title>\n<style>\n"
       << "body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#222}"
       << "table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:3px 8px;"
       << "text-align:left;font-size:13px}th{background:#f2f2f2}.charts svg{margin-right:16px}"
       << ".note{color:#666;font-size:13px}\n</style>\n</head>\n<body>\n";
  html << "<h1>lrnn training: " << html_escape(title) << "</h1>\n";
  html << "<p>" << run.value("epochs", 0) << " epochs on " << run.value("samples", 0) << " samples, "
       << run.value("parameters", 0) << " parameter values" << (run.value("stopped_early", false) ? ", stopped early" : "")
       << (run.contains("interrupted") ? ", interrupted" : "") << ".</p>\n";
  html << "<div class=\"charts\">\n" << line_chart_svg("loss per epoch", losses, false)
       << line_chart_svg("accuracy per epoch", accuracies, true) << "</div>\n";
  html << "<h2>Final metrics</h2>\n<table>\n<tr><th></th><th>loss</th><th>accuracy</th><th>AUC</th><th>targets</th></tr>\n";
  html << "<tr><td>train</td><td>" << cell(run.value("loss", nlohmann::json())) << "</td><td>"
       << cell(run.value("accuracy", nlohmann::json())) << "</td><td>" << cell(run.value("auc", nlohmann::json()))
       << "</td><td>" << cell(run.value("count", nlohmann::json())) << "</td></tr>\n";
  if (run.contains("test")) {
    const auto& t = run["test"];
    html << "<tr><td>test</td><td>" << cell(t.value("loss", nlohmann::json())) << "</td><td>"
         << cell(t.value("accuracy", nlohmann::json())) << "</td><td>" << cell(t.value("auc", nlohmann::json()))
         << "</td><td>" << cell(t.value("count", nlohmann::json())) << "</td></tr>\n";
  }
  html << "</table>\n<h2>Settings</h2>\n<table>\n";
  // (value() returns a copy: kept in a variable, not iterated as a temporary.)
  const nlohmann::json settings = run.value("settings", nlohmann::json::object());
  for (const auto& [key, value] : settings.items())
    html << "<tr><th>" << html_escape(key) << "</th><td>" << html_escape(cell(value)) << "</td></tr>\n";
  html << "</table>\n<h2>Timing</h2>\n<table>\n";
  const nlohmann::json timing = run.value("timing", nlohmann::json::object());
  for (const auto& [key, value] : timing.items())
    html << "<tr><th>" << html_escape(key) << "</th><td>" << html_escape(timing_cell(value)) << "</td></tr>\n";
  html << "</table>\n";
  outputs_table(html, "Outputs (train)", run.value("outputs", nlohmann::json::array()));
  if (run.contains("test")) outputs_table(html, "Outputs (test)", run["test"].value("outputs", nlohmann::json::array()));
  html << "</body>\n</html>\n";
  return html.str();
}

}  // namespace lrnn
