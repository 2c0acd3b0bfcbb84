// Golden plan-rewrite reports: every folder of tests/programs/ with a stats.txt holds
// template.lrnn and examples.txt, and stats.txt is the exact list of rewrite lines that
// `lrnn ground template.lrnn -e examples.txt --stats` prints (docs/semantics.md "Plan
// rewrites"; the other lines hold timings). Run through the CLI, as a user runs it, and
// through the library call it prints (lrnn::logic::plan_rewrites).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lrnn/logic.hpp"
#include "lrnn/syntax.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path kPrograms = fs::path(LRNN_SOURCE_DIR) / "tests" / "programs";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> stats_cases() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(kPrograms))
    if (entry.is_directory() && fs::exists(entry.path() / "stats.txt")) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The lines of `text` that start with "rewrite".
std::string rewrite_lines(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line))
    if (line.rfind("rewrite", 0) == 0) out += line + "\n";
  return out;
}

// `lrnn ground TEMPLATE -e EXAMPLES --stats`'s output (its exit code expected 0).
std::string ground_stats(const fs::path& tmpl, const fs::path& examples) {
  const std::string cmd =
      std::string(LRNN_CLI_PATH) + " ground " + tmpl.string() + " -e " + examples.string() + " --stats 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  EXPECT_EQ(WEXITSTATUS(pclose(pipe)), 0) << out;
  return out;
}

TEST(GoldenRewrites, GroundStatsPrintsTheExpectedRewrites) {
  const auto all = stats_cases();
  ASSERT_GE(all.size(), 3u);
  for (const fs::path& dir : all) {
    SCOPED_TRACE(dir.filename().string());
    const std::string expected = read_file(dir / "stats.txt");
    EXPECT_EQ(rewrite_lines(ground_stats(dir / "template.lrnn", dir / "examples.txt")), expected);
    // The library call gives the same counts, in the same order.
    std::string library;
    for (const auto& w : lrnn::logic::plan_rewrites(lrnn::load_template((dir / "template.lrnn").string()),
                                                    lrnn::load_examples((dir / "examples.txt").string()), {}))
      library += w.name + " " + std::to_string(w.rule_groups) + "\n";
    std::string printed;
    std::istringstream lines(expected);
    for (std::string line; std::getline(lines, line);) {
      const size_t colon = line.find(':');
      printed += line.substr(8, colon - 8) + " " + line.substr(colon + 2, line.find(' ', colon + 2) - colon - 2) + "\n";
    }
    EXPECT_EQ(library, printed);
  }
}

TEST(GoldenRewrites, ALogicProgramIsNotPlanned) {
  // Its ground rules are counted as before; a plain logic program still has a plan (of
  // no rewrites) or says why none was made.
  const fs::path dir = kPrograms / "transitive_closure_cycle";
  const std::string out = ground_stats(dir / "template.lrnn", dir / "facts.txt");
  EXPECT_NE(out.find("rule r0"), std::string::npos) << out;
  EXPECT_TRUE(out.find("rewrite fold_zero_literals: 0 rule groups") != std::string::npos ||
              out.find("rewrites: not planned (") != std::string::npos)
      << out;
}

}  // namespace
