// Grounding throughput: transitive closure on random cyclic graphs and the mutagenesis
// molecules with a 3-layer message-passing template. One line per configuration with
// ground rules per second; results in bench/results/grounding.json.
//
//   build/bench/bench_grounding [--quick] [--out PATH]
//   build/bench/bench_grounding --tc NODES EDGES [--count]   (one ad-hoc graph)
//
// The 2,000-node / 500,000-edge graph has about 10^9 groundings of the recursive rule, so
// it runs in counting mode (every ground rule is enumerated and counted, none stored);
// the other configurations store every ground rule in the flat arrays the neural stage
// reads. Each line says which mode ran.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>

#include "logic/grounder.hpp"
#include "logic/program.hpp"
#include "lrnn/logic.hpp"
#include "lrnn/syntax.hpp"

namespace {

using namespace lrnn;
using namespace lrnn::logic;
using Clock = std::chrono::steady_clock;

std::string source_dir() {
  // LRNN_DATASETS_DIR is "<source>/../shared/datasets".
  std::string d = LRNN_DATASETS_DIR;
  const std::string suffix = "/../shared/datasets";
  if (d.size() > suffix.size() && d.compare(d.size() - suffix.size(), suffix.size(), suffix) == 0)
    return d.substr(0, d.size() - suffix.size());
  return ".";
}

// A random graph that is cyclic for sure: a ring through every node plus random edges.
ExampleAst random_cyclic_graph(int nodes, int edges, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::pair<int, int>> e;
  e.reserve(edges);
  for (int i = 0; i < nodes && int(e.size()) < edges; ++i) e.push_back({i, (i + 1) % nodes});
  std::vector<uint64_t> seen;
  for (auto [a, b] : e) seen.push_back(uint64_t(a) * nodes + b);
  std::sort(seen.begin(), seen.end());
  while (int(e.size()) < edges) {
    int a = int(rng() % nodes), b = int(rng() % nodes);
    uint64_t key = uint64_t(a) * nodes + b;
    auto it = std::lower_bound(seen.begin(), seen.end(), key);
    if (it != seen.end() && *it == key) continue;
    seen.insert(it, key);
    e.push_back({a, b});
  }
  ExampleAst ex;
  ex.facts.reserve(e.size());
  for (auto [a, b] : e) {
    Literal l;
    l.predicate = "edge";
    l.args = {Term::constant("v" + std::to_string(a)), Term::constant("v" + std::to_string(b))};
    ex.facts.push_back(std::move(l));
  }
  return ex;
}

struct Result {
  std::string name, mode;
  size_t ground_rules = 0, atoms = 0;
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // process CPU time (all threads): the machine is shared
  int threads = 1;
  double rate() const { return seconds > 0 ? double(ground_rules) / seconds : 0; }
  double cpu_rate() const { return cpu_seconds > 0 ? double(ground_rules) / cpu_seconds : 0; }
};

void print(const Result& r) {
  std::printf("%-44s %-8s %d thr %11zu ground rules %8.3f s %6.2fM ground rules/s (CPU %7.3f s, %6.2fM/s per core)\n",
              r.name.c_str(), r.mode.c_str(), r.threads, r.ground_rules, r.seconds, r.rate() / 1e6, r.cpu_seconds,
              r.cpu_rate() / 1e6);
  std::fflush(stdout);
}

Result transitive_closure(int nodes, int edges, bool store) {
  TemplateAst t = parse_template(
      "path(X, Y) :- edge(X, Y).\n"
      "path(X, Y) :- edge(X, Z), path(Z, Y).\n",
      "tc.lrnn");
  Program program(t);
  ExampleAst ex = random_cyclic_graph(nodes, edges, 42);
  GroundingOptions o;
  o.store_ground_rules = store;
  o.max_ground_rules = size_t(1) << 40;
  auto t0 = Clock::now();
  std::clock_t c0 = std::clock();
  GroundSample s = ground(program, ex, {}, o);
  Result r;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.cpu_seconds = double(std::clock() - c0) / CLOCKS_PER_SEC;
  r.name = "transitive closure " + std::to_string(nodes) + " nodes / " + std::to_string(edges) + " edges";
  r.mode = store ? "stored" : "counted";
  r.ground_rules = s.stats.ground_rules;
  r.atoms = s.stats.facts + s.stats.derived;
  return r;
}

Result mutagenesis(int threads, int repeats) {
  const std::string dir = std::string(LRNN_DATASETS_DIR) + "/neuralogic/molecules/mutagenesis";
  Program program(load_template(source_dir() + "/bench/templates/mutagenesis_mp3.lrnn"));
  auto examples = load_examples(dir + "/examples.txt");
  auto pairs = pair_queries(examples, load_queries(dir + "/queries.txt"));
  Result r;
  r.name = "mutagenesis 188 molecules, mp3 template";
  r.mode = "stored";
  r.threads = threads;
  std::vector<size_t> rules(threads, 0), atoms(threads, 0);
  auto t0 = Clock::now();
  std::clock_t c0 = std::clock();
  for (int rep = 0; rep < repeats; ++rep) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (size_t i = t; i < pairs.size(); i += threads) {
          GroundSample s = ground(program, examples[pairs[i].example], pairs[i].queries);
          rules[t] += s.stats.ground_rules;
          atoms[t] += s.num_atoms();
        }
      });
    for (auto& th : pool) th.join();
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count() / repeats;
  r.cpu_seconds = double(std::clock() - c0) / CLOCKS_PER_SEC / repeats;
  for (int t = 0; t < threads; ++t) r.ground_rules += rules[t] / repeats, r.atoms += atoms[t] / repeats;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int tc_nodes = 0, tc_edges = 0;
  bool tc_count = false;
  std::string out = source_dir() + "/bench/results/grounding.json";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--out" && i + 1 < argc) out = argv[++i];
    else if (a == "--tc" && i + 2 < argc) tc_nodes = std::atoi(argv[++i]), tc_edges = std::atoi(argv[++i]);
    else if (a == "--count") tc_count = true;
    else {
      std::fprintf(stderr, "usage: bench_grounding [--quick] [--out PATH] [--tc NODES EDGES [--count]]\n");
      return 2;
    }
  }
  std::printf("grounding throughput (lrnn; the Java NeuraLogic engine grounds ~10-15 thousand ground rules/s)\n");
  std::vector<Result> results;
  if (tc_nodes > 0) {  // one ad-hoc configuration, nothing written
    print(transitive_closure(tc_nodes, tc_edges, !tc_count));
    return 0;
  }
  try {
    results.push_back(transitive_closure(1000, 50000, true));
    print(results.back());
    if (!quick) {
      results.push_back(transitive_closure(2000, 500000, false));
      print(results.back());
    }
    results.push_back(mutagenesis(1, quick ? 3 : 20));
    print(results.back());
    results.push_back(mutagenesis(2, quick ? 3 : 20));
    print(results.back());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  nlohmann::json j = nlohmann::json::array();
  for (const Result& r : results)
    j.push_back({{"name", r.name},
                 {"mode", r.mode},
                 {"threads", r.threads},
                 {"ground_rules", r.ground_rules},
                 {"atoms", r.atoms},
                 {"seconds", r.seconds},
                 {"cpu_seconds", r.cpu_seconds},
                 {"ground_rules_per_cpu_second", r.cpu_rate()},
                 {"ground_rules_per_second", r.rate()}});
  std::filesystem::create_directories(std::filesystem::path(out).parent_path());
  std::ofstream(out) << j.dump(2) << "\n";
  std::printf("wrote %s\n", out.c_str());
  return 0;
}
