// The first call of bench_attention_lrnn's templates on a new length, by stage (issue 13):
// grounding (logic::ground), network (neural::neuralize) and plan (exec::build_plan), each
// timed alone, the minimum over --repeats calls, in CPU seconds of the process (on a shared,
// loaded machine the wall time also counts other jobs' turns; run with OMP_NUM_THREADS=1)
// and the wall seconds of the whole first call. Prints the ground rules and the network's
// structure hash too, so two builds can be checked to produce the same network.
//
// The score and weighted-sum rules are grounded as blocks (logic::GroundingOptions::pair_blocks,
// as zoo::SequenceModel grounds them); `--blocks 0` grounds them rule by rule.
//
//   bench_attention_stages --sizes 512,2048 --variants full,causal,window [--repeats 3] [--blocks 0|1]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "attention_template.hpp"
#include "exec/plan.hpp"
#include "logic/grounder.hpp"
#include "lrnn/syntax.hpp"
#include "lrnn/zoo.hpp"
#include "neural/network.hpp"
#include "train/engine.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> sizes = {"512", "2048"}, variants = {"full", "causal", "window"};
  int d = 64, window = 16, repeats = 3, blocks = 1;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string k = argv[a], v = argv[a + 1];
    if (k == "--sizes") sizes = bench::split_commas(v);
    else if (k == "--variants") variants = bench::split_commas(v);
    else if (k == "--dim") d = std::atoi(v.c_str());
    else if (k == "--window") window = std::atoi(v.c_str());
    else if (k == "--repeats") repeats = std::atoi(v.c_str());
    else if (k == "--blocks") blocks = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::printf("%-6s %-7s %10s %9s %9s %9s %9s %9s  %s\n", "n", "variant", "rules", "ground", "network", "plan",
              "cpu_s", "wall_s", "structure_hash");
  for (const std::string& variant : variants) {
    for (const std::string& size : sizes) {
      const int n = std::atoi(size.c_str());
      lrnn::train::Engine engine(lrnn::parse_template(bench::attention_template(d, bench::attention_mask(variant, window))));
      lrnn::logic::GroundingOptions grounding;
      if (blocks) grounding.pair_blocks = lrnn::neural::pair_block_rules(engine.model(), engine.program());
      std::mt19937_64 rng(1234 + n);
      std::normal_distribution<double> g;
      lrnn::ExampleAst ex;
      for (const char* p : {"q", "k", "v"}) {
        std::vector<double> x(size_t(n) * d);
        for (auto& e : x) e = g(rng);
        auto facts = lrnn::zoo::sequence_facts(p, x.data(), n, d);
        ex.facts.insert(ex.facts.end(), facts.begin(), facts.end());
      }
      const auto queries = lrnn::zoo::sequence_queries("out", n);
      double best[4] = {1e30, 1e30, 1e30, 1e30};
      size_t rules = 0;
      uint64_t hash = 0;
      for (int r = 0; r < repeats; ++r) {
        const auto wall0 = std::chrono::steady_clock::now();
        double t0 = bench::cpu_seconds();
        lrnn::logic::GroundSample ground = lrnn::logic::ground(engine.program(), ex, queries, grounding);
        double t1 = bench::cpu_seconds();
        best[0] = std::min(best[0], t1 - t0);
        lrnn::neural::SampleNetwork net = lrnn::neural::neuralize(engine.model(), ex, ground);
        t0 = bench::cpu_seconds();
        best[1] = std::min(best[1], t0 - t1);
        lrnn::exec::Plan plan = lrnn::exec::build_plan(engine.model(), {&net});
        best[2] = std::min(best[2], bench::cpu_seconds() - t0);
        best[3] = std::min(best[3], std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count());
        rules = ground.stats.ground_rules;
        hash = net.structure_hash;
      }
      std::printf("%-6d %-7s %10zu %9.4f %9.4f %9.4f %9.4f %9.4f  %016llx\n", n, variant.c_str(), rules, best[0],
                  best[1], best[2], best[0] + best[1] + best[2], best[3], static_cast<unsigned long long>(hash));
      std::fflush(stdout);
    }
  }
  return 0;
}
