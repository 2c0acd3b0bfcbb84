// bench_parse: throughput of the text-format parser (src/syntax) on the NeuraLogic
// datasets and on a generated 10 MB single-line examples file. Prints one line per
// configuration (median of several runs, wall time and process CPU time) and writes
// bench/results/parse.json. `bench_parse FILE...` times the given examples files instead
// (3 runs each; bench/big_graph.py writes a 113 MB graph) and writes no JSON; `bench_parse
// --store FILE...` times the text path of Dataset::load instead (parsed into the compact store). There is no peer: PyNeuraLogic parses inside its Java engine
// as part of building the dataset, which cannot be timed separately.
#include <cstdio>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "lrnn/syntax.hpp"
#include "syntax/statements.hpp"
#include "train/sample_store.hpp"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path)) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double cpu_ms() { return 1000.0 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

struct Result {
  std::string name;
  size_t bytes = 0;
  size_t items = 0;
  double wall_ms = 0, cpu_ms = 0;
};

template <class Parse>
Result measure(const std::string& name, const std::string& text, int runs, Parse parse) {
  std::vector<double> wall, cpu;
  size_t items = 0;
  for (int i = 0; i < runs; ++i) {
    double c0 = cpu_ms();
    auto t0 = std::chrono::steady_clock::now();
    items = parse(text);
    auto t1 = std::chrono::steady_clock::now();
    cpu.push_back(cpu_ms() - c0);
    wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return Result{name, text.size(), items, wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

}  // namespace

void print(const Result& r) {
  const double mb_per_s = r.bytes / 1e6 / (r.cpu_ms / 1e3);
  std::cout << r.name << ": " << r.bytes / 1000 << " KB, " << r.items << " facts/queries, wall " << r.wall_ms
            << " ms, cpu " << r.cpu_ms << " ms (" << mb_per_s << " MB/s of cpu time)\n";
}

int run(int argc, char** argv);

// A file that cannot be read or parsed is reported, not left to terminate the program.
int main(int argc, char** argv) {
  if (argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf("usage: bench_parse [FILE... | --store FILE...]\n"
                "  no arguments: the NeuraLogic datasets and a generated 10 MB file (writes bench/results/parse.json)\n"
                "  FILE...: each examples file parsed (3 runs); --store FILE...: parsed into the compact store\n");
    return 0;
  }
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_parse: %s\n", e.what());
    return 1;
  }
}

int run(int argc, char** argv) {
  const std::string data = std::string(LRNN_DATASETS_DIR) + "/neuralogic/";
  std::vector<Result> results;
  auto count_facts = [](const std::string& text) {
    size_t n = 0;
    for (const auto& e : lrnn::parse_examples(text, "bench")) n += e.facts.size();
    return n;
  };
  // The text path of `Dataset::load`: each fact parsed straight into the compact store.
  auto count_stored = [](const std::string& text) {
    lrnn::train::SampleStore::Builder store;
    size_t n = 0;
    lrnn::syntax::parse_examples_streaming(std::make_shared<const lrnn::SourceFile>(lrnn::SourceFile{"bench", text}),
                                           {[&](lrnn::Literal&& fact) { store.add_fact(fact), ++n; },
                                            [&] { store.end_sample({}); }});
    (void)std::move(store).finish();
    return n;
  };
  if (argc > 2 && std::string(argv[1]) == "--store") {
    for (int i = 2; i < argc; ++i) print(measure(argv[i], read_file(argv[i]), 3, count_stored));
    return 0;
  }
  if (argc > 1) {
    for (int i = 1; i < argc; ++i) print(measure(argv[i], read_file(argv[i]), 3, count_facts));
    return 0;
  }
  results.push_back(measure("mutagenesis examples (188 molecules)", read_file(data + "molecules/mutagenesis/examples.txt"),
                            15, count_facts));
  results.push_back(measure("nations examples (1 example, 1466 lines)", read_file(data + "nations/examples.txt"), 15,
                            count_facts));
  results.push_back(measure("nations queries (5347 lines)", read_file(data + "nations/queries.txt"), 15,
                            [](const std::string& text) { return lrnn::parse_queries(text, "bench").size(); }));
  std::string line;
  for (int i = 0; line.size() < 10'000'000; ++i)
    line += (i ? ", " : "") + std::string("edge(n") + std::to_string(i) + ", n" + std::to_string(i + 1) + ")";
  line += ".\n";
  results.push_back(measure("10 MB single line (edge facts)", line, 3, count_facts));

  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : results) {
    const double mb_per_s = r.bytes / 1e6 / (r.cpu_ms / 1e3);
    print(r);
    out.push_back({{"name", r.name}, {"bytes", r.bytes}, {"items", r.items}, {"wall_ms", r.wall_ms},
                   {"cpu_ms", r.cpu_ms}, {"mb_per_cpu_s", mb_per_s}});
  }
  std::filesystem::create_directories("bench/results");
  std::ofstream("bench/results/parse.json") << out.dump(2) << "\n";
  return 0;
}
