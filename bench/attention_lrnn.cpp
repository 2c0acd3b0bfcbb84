// lrnn side of bench/attention.py (issue 5): one forward + backward pass of single-head
// attention on q, k, v of shape [n, d] given as example facts (no projections, as the
// torch peer's scaled_dot_product_attention), in --dtype float64 (default) or float32:
//   full    w(I, J) :- d_k, k(J)^T, q(I). [combination=product, aggregation=softmax(J)]
//   window  the same with the body literals @sub(I, J, D), @geq(D, 0), @leq(D, w): masked
//           pairs are never grounded, so the cost is O(n w d) instead of O(n^2 d)
//   causal  the same with the body literal @leq(J, I) (run as dense triangular tiles)
//   out(I) :- w(I, J), v(J). [combination=product, aggregation=sum]
// Grounding and plan building happen once per n (the plan cache); the timed pass writes
// fresh values into the cached plan, runs forward and backward from a fixed output
// gradient, and reads the gradients of q, k and v. The first call on each n (build_s,
// build_cpu_s: grounding, network, plan and the first forward; ground_plan_cpu_s: the
// first three alone) is timed after the model has run 16 positions once. Prints one JSON
// object on stdout.
//
//   bench_attention_lrnn --sizes 128,512,2048 --dim 64 --window 16 --variants full,window --dtype float32
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention_template.hpp"
#include "lrnn/syntax.hpp"
#include "lrnn/zoo.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {128, 512, 2048};
  std::vector<std::string> variants = {"full", "window"};
  int d = 64, window = 16, warmup = 1, max_repeats = 20;
  double min_time = 1.0;
  lrnn::Dtype dtype = lrnn::Dtype::Float64;
  for (int a = 1; a + 1 < argc; a += 2) {
    std::string k = argv[a], v = argv[a + 1];
    if (k == "--sizes") {
      sizes.clear();
      for (const std::string& n : bench::split_commas(v)) sizes.push_back(std::atoi(n.c_str()));
    } else if (k == "--dim") d = std::atoi(v.c_str());
    else if (k == "--window") window = std::atoi(v.c_str());
    else if (k == "--min-time") min_time = std::atof(v.c_str());
    else if (k == "--max-repeats") max_repeats = std::atoi(v.c_str());
    else if (k == "--warmup") warmup = std::atoi(v.c_str());
    else if (k == "--dtype") dtype = lrnn::parse_dtype(v);
    else if (k == "--variants") variants = bench::split_commas(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  nlohmann::json report = {{"dim", d}, {"window", window}, {"dtype", lrnn::to_string(dtype)}, {"results", nlohmann::json::array()}};
  for (const std::string& variant : variants) {
    const lrnn::zoo::Mask mask = bench::attention_mask(variant, window);
    for (int n : sizes) {
      std::mt19937_64 rng(1234 + n);
      std::normal_distribution<double> g;
      std::vector<double> q(size_t(n) * d), k(q.size()), v(q.size()), gout(q.size());
      for (auto* a : {&q, &k, &v, &gout})
        for (auto& x : *a) x = g(rng);
      lrnn::zoo::SequenceModel model(lrnn::parse_template(bench::attention_template(d, mask)), "q", "out");
      model.set_dtype(dtype);
      const std::vector<lrnn::zoo::SequenceInput> inputs = {{"q", q.data(), n, d}, {"k", k.data(), n, d}, {"v", v.data(), n, d}};
      // The first call on a new length, in a model that has run another length before: what
      // a call on an unseen length costs mid-run, without the process's own start-up. The
      // other length is small (16): a larger one would leave glibc's dynamic mmap threshold
      // just below the size of the gradients each pass returns, which then maps and unmaps
      // them every pass (a window pass at n = 2048 measured 1.5 -> 3.3 ms).
      const int warm = std::min(n, 16);
      model.forward({{"q", q.data(), warm, d}, {"k", k.data(), warm, d}, {"v", v.data(), warm, d}}, warm);
      model.backward(std::vector<double>(gout.begin(), gout.begin() + size_t(warm) * d));
      auto t0 = std::chrono::steady_clock::now();
      const double cpu0 = bench::cpu_seconds();
      model.forward(inputs, n);  // grounds, neuralizes and builds the plan (cached)
      const double build_s = seconds_since(t0), build_cpu_s = bench::cpu_seconds() - cpu0;
      const size_t ground_rules = model.stats().ground_rules;
      std::vector<double> times, cpu_times;
      double checksum = 0;
      auto one_pass = [&] {
        std::vector<double> out = model.forward(inputs, n);
        auto grads = model.backward(gout);
        checksum = out[0] + grads[0][0] + grads[1][0] + grads[2][0];
      };
      for (int w = 0; w < warmup; ++w) one_pass();
      const auto start = std::chrono::steady_clock::now();
      while (int(times.size()) < max_repeats && (times.size() < 3 || seconds_since(start) < min_time)) {
        auto t = std::chrono::steady_clock::now();
        const double c = bench::cpu_seconds();
        one_pass();
        times.push_back(seconds_since(t));
        cpu_times.push_back(bench::cpu_seconds() - c);
      }
      std::vector<double> sorted = times;
      std::sort(sorted.begin(), sorted.end());
      const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                              : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
      report["results"].push_back({{"n", n},
                                   {"variant", variant},
                                   {"median_s", median},
                                   {"min_s", sorted.front()},
                                   {"repeats", times.size()},
                                   {"build_s", build_s},
                                   {"build_cpu_s", build_cpu_s},
                                   {"ground_plan_cpu_s", model.stats().build_cpu_seconds},
                                   {"min_cpu_s", *std::min_element(cpu_times.begin(), cpu_times.end())},
                                   {"ground_rules", ground_rules},
                                   {"groundings", model.stats().groundings},
                                   {"checksum", checksum}});
      std::fprintf(stderr, "n=%d %s: median %.4f s (build %.2f s, %zu ground rules)\n", n, variant.c_str(), median,
                   build_s, ground_rules);
    }
  }
  std::printf("%s\n", report.dump().c_str());
  return 0;
}
