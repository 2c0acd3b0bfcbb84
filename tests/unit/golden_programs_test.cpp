// The golden program tests: every query folder of tests/programs/ holds template.lrnn,
// facts.txt (an examples file), goal.txt (one goal literal) and expected.txt (the exact
// output of `lrnn query`, or `error: <message>` when the query must fail). One driver
// runs them all through the library; one case also runs through the CLI.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "logic/grounder.hpp"
#include "logic/program.hpp"
#include "lrnn/diagnostics.hpp"
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

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

std::string query_output(const fs::path& dir) {
  try {
    lrnn::TemplateAst t = lrnn::load_template((dir / "template.lrnn").string());
    std::vector<lrnn::ExampleAst> facts;
    if (fs::exists(dir / "facts.txt")) facts = lrnn::load_examples((dir / "facts.txt").string());
    lrnn::Literal goal = lrnn::parse_literal(trim(read_file(dir / "goal.txt")));
    std::string out;
    for (const auto& line : lrnn::logic::format_answers(lrnn::logic::answer_query(t, facts, goal))) out += line + "\n";
    return out;
  } catch (const lrnn::Error& e) {
    return "error: " + e.message() + "\n";
  }
}

// The folders holding `marker`: the query cases (a goal.txt) or the rewrite reports (a
// stats.txt, GroundStatsPrintsTheExpectedRewrites below).
std::vector<fs::path> cases(const char* marker = "goal.txt") {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(kPrograms))
    if (entry.is_directory() && fs::exists(entry.path() / marker)) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(GoldenPrograms, EveryCaseGivesItsExpectedAnswers) {
  auto all = cases();
  ASSERT_GE(all.size(), 15u);
  for (const fs::path& dir : all) {
    SCOPED_TRACE(dir.filename().string());
    ASSERT_TRUE(fs::exists(dir / "expected.txt"));
    EXPECT_EQ(query_output(dir), read_file(dir / "expected.txt"));
  }
}

TEST(GoldenPrograms, RequiredCasesExist) {
  for (const char* name : {"transitive_closure_cycle", "builtins_compare_numbers", "builtins_compare_strings",
                           "builtins_arithmetic_bind", "builtins_arithmetic_check", "builtins_structure",
                           "stratified_negation", "unstratifiable", "hidden_literals", "typed_terms",
                           "mutual_recursion", "domain_self_loops", "attention_mask"})
    EXPECT_TRUE(fs::exists(kPrograms / name / "expected.txt")) << name;
}

// The mask's ground rules are exactly the (I, J) pairs of expected.txt: one per pair.
TEST(GoldenPrograms, AttentionMaskHasOneGroundRulePerPairInTheWindow) {
  const fs::path dir = kPrograms / "attention_mask";
  lrnn::TemplateAst t = lrnn::load_template((dir / "template.lrnn").string());
  auto examples = lrnn::load_examples((dir / "facts.txt").string());
  ASSERT_EQ(examples.size(), 1u);
  lrnn::logic::Program program(t);
  lrnn::logic::GroundSample s = lrnn::logic::ground(program, examples[0], {});
  size_t n_keys = 0, n_queries = 0;
  for (const auto& f : examples[0].facts) (f.predicate == "k" ? n_keys : n_queries)++;
  ASSERT_EQ(n_keys, 6u);
  size_t pairs = 0;
  for (size_t i = 0; i < n_queries; ++i)
    for (size_t j = 0; j < n_keys; ++j) pairs += i >= j && i - j <= 2;
  EXPECT_EQ(pairs, 15u);
  ASSERT_EQ(s.rules.size(), 1u);
  EXPECT_EQ(s.rules[0].size(), pairs);
  std::string expected = read_file(dir / "expected.txt");
  EXPECT_EQ(size_t(std::count(expected.begin(), expected.end(), '\n')), pairs);
  // Inputs are k(J), q(I): two per ground rule; the builtins contribute none.
  EXPECT_EQ(s.rules[0].n_inputs, 2u);
}

std::pair<int, std::string> run_cli(const std::string& args) {
  std::string cmd = std::string(LRNN_CLI_PATH) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WEXITSTATUS(status), out};
}

TEST(GoldenPrograms, CliQueryPrintsTheExpectedFile) {
  for (const char* name : {"transitive_closure_cycle", "builtins_structure", "ground_goal_false"}) {
    const fs::path dir = kPrograms / name;
    auto [code, out] = run_cli("query " + (dir / "template.lrnn").string() + " --facts " +
                               (dir / "facts.txt").string() + " '" + trim(read_file(dir / "goal.txt")) + "'");
    EXPECT_EQ(code, 0) << name;
    EXPECT_EQ(out, read_file(dir / "expected.txt")) << name;
  }
  const fs::path tc = kPrograms / "transitive_closure_cycle";
  auto [code, json] = run_cli("query " + (tc / "template.lrnn").string() + " --facts " + (tc / "facts.txt").string() +
                              " 'path(e, Y)' --json");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(json, "[{\"Y\":\"e\"}]\n");
}

TEST(GoldenPrograms, CliReportsErrorsWithPositionAndExitCode) {
  const fs::path bad = kPrograms / "unstratifiable";
  auto [code, out] = run_cli("query " + (bad / "template.lrnn").string() + " --facts " + (bad / "facts.txt").string() + " 'p(X)'");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("template.lrnn:3:15: error: the program is not stratifiable"), std::string::npos) << out;
  EXPECT_NE(out.find("^"), std::string::npos);
  const fs::path tc = kPrograms / "transitive_closure_cycle";
  auto [code2, out2] = run_cli("query " + (tc / "template.lrnn").string() + " 'path(X, Y'");
  EXPECT_EQ(code2, 2);
  EXPECT_NE(out2.find("<goal>:1:"), std::string::npos) << out2;
}

// Golden plan-rewrite reports: every folder with a stats.txt holds template.lrnn and
// examples.txt, and stats.txt is the exact list of rewrite lines that `lrnn ground
// template.lrnn -e examples.txt --stats` prints (docs/semantics.md "Plan rewrites"; its other
// lines hold timings), checked through the CLI and through the library call it prints
// (lrnn::logic::plan_rewrites).

std::string ground_stats(const fs::path& tmpl, const fs::path& examples) {
  auto [code, out] = run_cli("ground " + tmpl.string() + " -e " + examples.string() + " --stats");
  EXPECT_EQ(code, 0) << out;
  return out;
}

// The lines of `text` that start with "rewrite".
std::string rewrite_lines(const std::string& text) {
  std::istringstream in(text);
  std::string out;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("rewrite", 0) == 0) out += line + "\n";
  return out;
}

// The first folder with a stats.txt.
fs::path all_stats_case() {
  const auto all = cases("stats.txt");
  return all.empty() ? fs::path() : all.front();
}

TEST(GoldenPrograms, GroundStatsPrintsTheExpectedRewrites) {
  const auto all = cases("stats.txt");
  ASSERT_GE(all.size(), 3u);
  for (const fs::path& dir : all) {
    SCOPED_TRACE(dir.filename().string());
    const std::string expected = read_file(dir / "stats.txt");
    EXPECT_EQ(rewrite_lines(ground_stats(dir / "template.lrnn", dir / "examples.txt")), expected);
    // The library call: the same rewrites and counts, in the same order ("rewrite NAME: K
    // rule groups, T in training (...)").
    std::string library, printed;
    for (const auto& w : lrnn::logic::plan_rewrites(lrnn::load_template((dir / "template.lrnn").string()),
                                                    lrnn::load_examples((dir / "examples.txt").string()), {}))
      library += "rewrite " + w.name + ": " + std::to_string(w.rule_groups) +
                 (w.rule_groups == 1 ? " rule group, " : " rule groups, ") + std::to_string(w.training_rule_groups) +
                 " in training\n";
    std::istringstream lines(expected);
    for (std::string line; std::getline(lines, line);) printed += line.substr(0, line.find(" (")) + "\n";
    EXPECT_EQ(library, printed);
  }
}

TEST(GoldenPrograms, PlanRewritesGroundsWithinTheGivenAtomLimit) {
  // The rewrite report grounds the samples once more: with the limits `lrnn ground` was
  // given, not the defaults (a raised --max-atoms must not fail the report, a lowered one
  // must hold there too).
  const fs::path dir = all_stats_case();
  const auto tmpl = lrnn::load_template((dir / "template.lrnn").string());
  const auto examples = lrnn::load_examples((dir / "examples.txt").string());
  EXPECT_NO_THROW(lrnn::logic::plan_rewrites(tmpl, examples, {}, lrnn::kDefaultMaxGroundRules, 1'000'000));
  try {
    lrnn::logic::plan_rewrites(tmpl, examples, {}, lrnn::kDefaultMaxGroundRules, 1);
    ADD_FAILURE() << "a limit of 1 atom was not applied";
  } catch (const lrnn::Error& err) {
    EXPECT_NE(std::string(err.what()).find("exceeded 1 atoms"), std::string::npos) << err.what();
  }
}

TEST(GoldenPrograms, GroundStatsOfALogicProgramStillCountsItsGroundRules) {
  // A plain logic program has a plan of no rewrites, or the line says why none was made.
  const fs::path dir = kPrograms / "transitive_closure_cycle";
  const std::string out = ground_stats(dir / "template.lrnn", dir / "facts.txt");
  EXPECT_NE(out.find("rule r0"), std::string::npos) << out;
  EXPECT_TRUE(out.find("rewrite fold_zero_literals: 0 rule groups") != std::string::npos ||
              out.find("rewrites: not planned (") != std::string::npos)
      << out;
}

}  // namespace
