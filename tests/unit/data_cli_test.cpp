// `lrnn convert tu` and `--dataset tu:DIR`: the converted files train to exactly the same
// result as the dataset read directly, and a malformed folder fails with its file:line.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "cli_test_support.hpp"
#include "shared_datasets.hpp"

namespace {

using CliResult = lrnn_test::CliRun;
using lrnn_test::run_lrnn;

const std::string kMutag = std::string(LRNN_DATASETS_DIR) + "/tu/MUTAG";
const std::string kTemplate = std::string(LRNN_SOURCE_DIR) + "/examples/graphs/gcn_mutag.lrnn";

}  // namespace

TEST(DataCli, ConvertedFilesTrainLikeTheDatasetOption) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  auto dir = std::filesystem::temp_directory_path() / "lrnn_data_cli";
  std::filesystem::create_directories(dir);
  std::string ex = (dir / "ex.txt").string(), q = (dir / "q.txt").string();
  CliResult conv = run_lrnn("convert tu " + kMutag + " -o " + ex + " " + q);
  ASSERT_EQ(conv.code, 0) << conv.out;
  EXPECT_NE(conv.out.find("MUTAG: 188 graphs, 3371 nodes, 7442 directed edges, 2 classes"), std::string::npos);
  const std::string common = " --epochs 3 --test-fraction 0.2 --json";
  CliResult from_files = run_lrnn("train " + kTemplate + " -e " + ex + " -q " + q + common + " 2>/dev/null");
  CliResult from_tu = run_lrnn("train " + kTemplate + " --dataset tu:" + kMutag + common + " 2>/dev/null");
  ASSERT_EQ(from_files.code, 0) << from_files.out;
  ASSERT_EQ(from_tu.code, 0) << from_tu.out;
  // Everything but the timings (`"..._s"`: seconds, a list of them, or an object of them)
  // must be identical: metrics, outputs, test set.
  auto untimed = [](const std::string& json) {
    return std::regex_replace(json, std::regex("\"[a-z_]+_s\":(\\[[0-9.e+,-]*\\]|\\{[^{}]*\\}|[0-9.e+-]+)"), "T");
  };
  EXPECT_NE(from_tu.out.find("\"test\":"), std::string::npos);
  EXPECT_EQ(untimed(from_files.out), untimed(from_tu.out));
}

TEST(DataCli, MalformedFolderAndBadSpecFail) {
  auto dir = std::filesystem::temp_directory_path() / "lrnn_data_cli_bad" / "BAD";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "BAD_graph_indicator.txt") << "1\n3\n";
  CliResult r = run_lrnn("convert tu " + dir.string() + " -o a.txt b.txt");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("BAD_graph_indicator.txt:2:1: error: graph ids must be sorted"), std::string::npos) << r.out;
  CliResult spec = run_lrnn("train " + kTemplate + " --dataset csv:x");
  EXPECT_NE(spec.code, 0);
  EXPECT_NE(spec.out.find("expected FORMAT:PATH with FORMAT tu"), std::string::npos) << spec.out;
}
