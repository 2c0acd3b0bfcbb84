// bench_report_json: write_outputs_json (src/draw/report_json.cpp), the "outputs" of
// `lrnn train --json`, for an Evaluation of 200k outputs: written to /dev/null, and to
// std::cout as `lrnn train --json` writes it (synchronised with stdio, fd 1 on /dev/null
// while timed); best of 5 timings, ms per call. Two shapes: the big graph's
// (bench/big_graph.py with a query split: `out(n017345)`, a scalar target, output and
// prediction (the output itself under MSE), a split per output) and 10 classes (a 10-entry
// output and prediction). Writes bench/results/report_json.json.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <fcntl.h>
#include <unistd.h>
#include <iostream>

#include "lrnn/report.hpp"

namespace {

constexpr size_t kOutputs = 200000;

lrnn::Evaluation evaluation(int classes) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const lrnn::QuerySplit splits[] = {lrnn::QuerySplit::Train, lrnn::QuerySplit::Validation,
                                     lrnn::QuerySplit::Test};
  lrnn::Evaluation ev;
  ev.has_splits = true;
  ev.outputs.resize(kOutputs);
  for (size_t i = 0; i < kOutputs; ++i) {
    lrnn::Output& o = ev.outputs[i];
    char name[32];
    std::snprintf(name, sizeof name, "out(n%06zu)", i);
    o.query = name;
    o.target = {static_cast<double>(rng() % 2)};
    for (int c = 0; c < classes; ++c) o.value.push_back(unit(rng));
    o.prediction = o.value;
    o.split = splits[i % 3];
  }
  return ev;
}

// Best of 5 timings of write_outputs_json(ev) into `sink`, ms.
double best_ms(const lrnn::Evaluation& ev, std::ostream& sink) {
  double best = 1e300;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    lrnn::write_outputs_json(sink, ev);
    sink.flush();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

// The same into std::cout, with fd 1 on /dev/null while it runs.
double best_ms_cout(const lrnn::Evaluation& ev) {
  std::fflush(stdout);
  const int saved = dup(1);
  const int null = open("/dev/null", O_WRONLY);
  dup2(null, 1);
  const double ms = best_ms(ev, std::cout);
  std::fflush(stdout);
  dup2(saved, 1);
  close(null);
  close(saved);
  return ms;
}

}  // namespace

int main() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, classes] : {std::pair<const char*, int>{"big_graph", 1}, {"classes_10", 10}}) {
    const lrnn::Evaluation ev = evaluation(classes);
    std::ostringstream sized;
    lrnn::write_outputs_json(sized, ev);
    const size_t bytes = sized.str().size();
    std::ofstream null("/dev/null", std::ios::binary);
    const double ms = best_ms(ev, null);
    const double cout_ms = best_ms_cout(ev);
    std::printf("%-10s %zu outputs, %zu bytes: write_outputs_json %.1f ms (%.0f ns per output), to std::cout %.1f ms\n",
                name, kOutputs, bytes, ms, ms * 1e6 / kOutputs, cout_ms);
    out.push_back({{"shape", name}, {"outputs", kOutputs}, {"bytes", bytes}, {"ms", ms}, {"cout_ms", cout_ms}});
  }
  std::filesystem::create_directories("bench/results");
  std::ofstream("bench/results/report_json.json") << out.dump(2) << "\n";
}
