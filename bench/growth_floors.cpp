// bench_growth_floors: the two floors under the growth line of bench/big_graph.py (issue
// 28: build, epoch and peak memory ~ n^b with b <= 1.1, for 20k, 200k and 2M nodes), each
// measured outside any engine, as tightly as a loop can be written, for the same sizes:
//
// - aggregation: a GCN layer's sum over edges. For n nodes, each head sums its own row and
//   `degree` rows of nodes drawn uniformly at random (a planted-partition graph's edges
//   reach their sources in no order a cache can use), rows of 32 floats (the hidden layer
//   of examples/big_graphs/gcn.lrnn at --dtype float32). Forward: out[h] = the sum of
//   in[s] over h's sources, in order; backward: g_in[s] += g_out[h] for each. Each pass
//   runs plain and with every source row prefetched 16 edges ahead; the faster counts. The
//   rows lie on 2 MB pages where the kernel gives them (as lrnn's workspaces ask: a random
//   row costs no page walk). Best of 5 timings per pass.
// - first touch: writing `touch_bytes_per_node` x n bytes of memory the process has never
//   touched (a fresh anonymous mapping, the system's default pages), once: what a build
//   pays the kernel for each byte of its peak before it computes anything. The default
//   2800 bytes per node is lrnn's peak RSS per node on the 2M-node graph (5.6 GB).
//
// One thread. Prints each size and the exponent b of a least-squares fit t ~ a n^b, and
// writes bench/results/growth_floors.json (or the file after --out). Usage:
// bench_growth_floors [--nodes 20000,200000,2000000] [--degree 10]
// [--touch-bytes-per-node 2800] [--out FILE].
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <sys/mman.h>
#include <vector>

namespace {

constexpr int kWidth = 32;
constexpr uint32_t kAhead = 16;

struct Graph {
  uint32_t n = 0;
  std::vector<uint32_t> begin;    // head h's sources are sources[begin[h], begin[h + 1])
  std::vector<uint32_t> sources;  // its own row first, then `degree` random nodes
};

Graph random_graph(uint32_t n, uint32_t degree, uint64_t seed) {
  Graph g;
  g.n = n;
  g.begin.resize(size_t(n) + 1);
  g.sources.reserve(size_t(n) * (degree + 1));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint32_t> node(0, n - 1);
  for (uint32_t h = 0; h < n; ++h) {
    g.begin[h] = uint32_t(g.sources.size());
    g.sources.push_back(h);
    for (uint32_t k = 0; k < degree; ++k) g.sources.push_back(node(rng));
  }
  g.begin[n] = uint32_t(g.sources.size());
  return g;
}

// n rows of kWidth floats, each entry `value`, on 2 MB pages where the kernel allows.
struct Rows {
  float* data = nullptr;
  size_t bytes = 0;
  Rows(uint32_t n, float value) : bytes((size_t(n) * kWidth * sizeof(float) + (2u << 20) - 1) / (2u << 20) * (2u << 20)) {
    data = static_cast<float*>(std::aligned_alloc(2u << 20, bytes));
    if (!data) {
      std::fprintf(stderr, "bench_growth_floors: out of memory for %u rows\n", n);
      std::exit(1);
    }
    madvise(data, bytes, MADV_HUGEPAGE);
    std::fill(data, data + size_t(n) * kWidth, value);
  }
  Rows(const Rows&) = delete;
  Rows& operator=(const Rows&) = delete;
  ~Rows() { std::free(data); }
};

template <bool Prefetch>
void forward(const Graph& g, const float* in, float* out) {
  const uint32_t total = g.begin[g.n];
  for (uint32_t h = 0; h < g.n; ++h) {
    float acc[kWidth] = {};
    for (uint32_t k = g.begin[h]; k < g.begin[h + 1]; ++k) {
      if (Prefetch && k + kAhead < total) {
        const char* p = reinterpret_cast<const char*>(in + size_t(g.sources[k + kAhead]) * kWidth);
        __builtin_prefetch(p);
        __builtin_prefetch(p + 64);
      }
      const float* row = in + size_t(g.sources[k]) * kWidth;
      for (int e = 0; e < kWidth; ++e) acc[e] += row[e];
    }
    std::memcpy(out + size_t(h) * kWidth, acc, sizeof acc);
  }
}

template <bool Prefetch>
void backward(const Graph& g, const float* g_out, float* g_in) {
  const uint32_t total = g.begin[g.n];
  for (uint32_t h = 0; h < g.n; ++h) {
    const float* gy = g_out + size_t(h) * kWidth;
    for (uint32_t k = g.begin[h]; k < g.begin[h + 1]; ++k) {
      if (Prefetch && k + kAhead < total) {
        char* p = reinterpret_cast<char*>(g_in + size_t(g.sources[k + kAhead]) * kWidth);
        __builtin_prefetch(p, 1);
        __builtin_prefetch(p + 64, 1);
      }
      float* row = g_in + size_t(g.sources[k]) * kWidth;
      for (int e = 0; e < kWidth; ++e) row[e] += gy[e];
    }
  }
}

template <class F>
double best_seconds(F f) {
  double best = 1e300;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// b of the least-squares line log t = log a + b log n.
double fitted_exponent(const std::vector<double>& n, const std::vector<double>& t) {
  double mx = 0, my = 0;
  for (size_t i = 0; i < n.size(); ++i) {
    mx += std::log(n[i]) / n.size();
    my += std::log(t[i]) / n.size();
  }
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n.size(); ++i) {
    sxy += (std::log(n[i]) - mx) * (std::log(t[i]) - my);
    sxx += (std::log(n[i]) - mx) * (std::log(n[i]) - mx);
  }
  return sxx > 0 ? sxy / sxx : NAN;
}

std::vector<uint32_t> parse_sizes(const std::string& text) {
  std::vector<uint32_t> sizes;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const long n = std::strtol(text.substr(at, comma - at).c_str(), nullptr, 10);
    if (n < 2 || n > 100000000) {
      std::fprintf(stderr, "bench_growth_floors: --nodes expects sizes from 2 to 1e8, got '%s'\n", text.c_str());
      std::exit(2);
    }
    sizes.push_back(uint32_t(n));
    at = comma + 1;
  }
  return sizes;
}

nlohmann::json aggregation(uint32_t n, uint32_t degree) {
  const Graph g = random_graph(n, degree, 1);
  const Rows in(n, 0.5f), g_out(n, 0.25f);
  Rows out(n, 0.0f), g_in(n, 0.0f);
  const double edges = double(g.sources.size());
  const double fwd = std::min(best_seconds([&] { forward<false>(g, in.data, out.data); }),
                              best_seconds([&] { forward<true>(g, in.data, out.data); }));
  const double bwd = std::min(best_seconds([&] { backward<false>(g, g_out.data, g_in.data); }),
                              best_seconds([&] { backward<true>(g, g_out.data, g_in.data); }));
  const double row_mb = double(n) * kWidth * sizeof(float) / 1e6;
  std::printf("aggregation  n %9u  edges %10.0f  rows %8.1f MB | forward %8.2f ms (%5.2f ns/edge)  backward %8.2f ms (%5.2f ns/edge)\n",
              n, edges, row_mb, fwd * 1e3, fwd * 1e9 / edges, bwd * 1e3, bwd * 1e9 / edges);
  return {{"nodes", n}, {"edges", edges}, {"row_mb", row_mb}, {"forward_s", fwd}, {"backward_s", bwd},
          {"forward_ns_per_edge", fwd * 1e9 / edges}, {"backward_ns_per_edge", bwd * 1e9 / edges}};
}

// Seconds to write `bytes` of a fresh anonymous mapping once, page by page as a program
// filling new memory does.
double first_touch_seconds(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "bench_growth_floors: cannot map %zu bytes for the first-touch floor\n", bytes);
    std::exit(1);
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::memset(p, 1, bytes);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  munmap(p, bytes);
  return seconds;
}

nlohmann::json first_touch(uint32_t n, size_t bytes_per_node) {
  const size_t bytes = size_t(n) * bytes_per_node;
  const double seconds = first_touch_seconds(bytes);
  std::printf("first touch  n %9u  %9.1f MB | %8.3f s (%7.0f MB/s)\n", n, bytes / 1e6, seconds, bytes / 1e6 / seconds);
  return {{"nodes", n}, {"bytes", bytes}, {"seconds", seconds}, {"mb_per_s", bytes / 1e6 / seconds}};
}

nlohmann::json fit(const std::vector<uint32_t>& sizes, const std::vector<double>& seconds, const char* what) {
  if (sizes.size() < 2) return nullptr;
  const double b = fitted_exponent(std::vector<double>(sizes.begin(), sizes.end()), seconds);
  std::printf("%s: fitted exponent (t ~ a n^b) b = %.3f\n", what, b);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint32_t> sizes = {20000, 200000, 2000000};
  uint32_t degree = 10;
  size_t touch_bytes_per_node = 2800;
  std::string out = "bench/results/growth_floors.json";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 < argc && arg == "--nodes") sizes = parse_sizes(argv[++i]);
    else if (i + 1 < argc && arg == "--degree") degree = uint32_t(std::clamp(std::atol(argv[++i]), 1L, 1000L));
    else if (i + 1 < argc && arg == "--touch-bytes-per-node")
      touch_bytes_per_node = size_t(std::clamp(std::atol(argv[++i]), 1L, 1L << 20));
    else if (i + 1 < argc && arg == "--out") out = argv[++i];
    else {
      std::fprintf(stderr,
                   "bench_growth_floors: unknown argument '%s' (expected --nodes, --degree, --touch-bytes-per-node, "
                   "--out)\n",
                   arg.c_str());
      return 2;
    }
  }
  nlohmann::json rows = nlohmann::json::array(), touches = nlohmann::json::array();
  std::vector<double> passes, touched;
  for (uint32_t n : sizes) {
    rows.push_back(aggregation(n, degree));
    passes.push_back(rows.back()["forward_s"].get<double>() + rows.back()["backward_s"].get<double>());
  }
  for (uint32_t n : sizes) {
    touches.push_back(first_touch(n, touch_bytes_per_node));
    touched.push_back(touches.back()["seconds"].get<double>());
  }
  const nlohmann::json result = {
      {"benchmark", "growth_floors"},
      {"aggregation", {{"width", kWidth}, {"dtype", "float32"}, {"degree", degree}, {"rows", rows},
                       {"exponent_forward_plus_backward", fit(sizes, passes, "aggregation, forward + backward")}}},
      {"first_touch", {{"bytes_per_node", touch_bytes_per_node}, {"rows", touches},
                       {"exponent", fit(sizes, touched, "first touch")}}}};
  std::filesystem::path path(out);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  const std::filesystem::path tmp = path.string() + ".tmp";
  std::ofstream(tmp) << result.dump(2) << "\n";
  std::filesystem::rename(tmp, path);  // atomic: a reader never sees half a file
  return 0;
}
