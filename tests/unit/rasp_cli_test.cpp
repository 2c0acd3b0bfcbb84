// `lrnn rasp run|analyze|lower|draw` through the built executable (LRNN_CLI_PATH).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lrnn/syntax.hpp"

namespace {

const std::string kRasp = std::string(LRNN_SOURCE_DIR) + "/tests/rasp/";

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result lrnn_rasp(const std::string& args) {
  auto dir = std::filesystem::temp_directory_path();
  auto tag = std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" + std::to_string(std::rand());
  auto out = dir / ("rasp_cli_out_" + tag), err = dir / ("rasp_cli_err_" + tag);
  std::string cmd = std::string(LRNN_CLI_PATH) + " rasp " + args + " >" + out.string() + " 2>" + err.string();
  int status = std::system(cmd.c_str());
  Result r;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;  // -1: killed by a signal (a crash)
  return r;
}

TEST(RaspCli, RunPrintsTheOutput) {
  Result r = lrnn_rasp("run " + kRasp + "reverse.rasp --input hello");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "[o, l, l, e, h]\n");
  r = lrnn_rasp("run " + kRasp + "dyck1.rasp --input '(()))(' --json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"name\":\"dyck1\",\"output\":[\"P\",\"P\",\"P\",\"T\",\"F\",\"F\"]}\n");
  r = lrnn_rasp("run " + kRasp + "histogram.rasp --input '[1, 2, 1]' --json");
  EXPECT_EQ(r.out, "{\"name\":\"histogram\",\"output\":[2,1,2]}\n");
  r = lrnn_rasp("run " + kRasp + "histogram_bos.rasp --input '§abb' --output histogram_bos --all");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "histogram_bos = [0.0, 1.0, 2.0, 2.0]\n");
}

TEST(RaspCli, AnalyzeReportsLayersAndHeads) {
  Result r = lrnn_rasp("analyze " + kRasp + "dyck2.rasp");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("layers: 4\nheads per layer: 1 2 1 1\nmax heads: 2\n"), std::string::npos) << r.out;
  r = lrnn_rasp("analyze " + kRasp + "sort.rasp --json");
  EXPECT_NE(r.out.find("\"heads_per_layer\":[1,1],\"layers\":2,\"max_heads\":1"), std::string::npos) << r.out;
}

TEST(RaspCli, LowerWritesAParsableTemplateAndExample) {
  auto dir = std::filesystem::temp_directory_path();
  auto tmpl = dir / "rasp_cli_reverse.lrnn", ex = dir / "rasp_cli_reverse_ex.txt";
  Result r = lrnn_rasp("lower " + kRasp + "reverse.rasp --vocab a,b,c --max-len 4 -o " + tmpl.string() +
                       " --input abc --example-out " + ex.string());
  EXPECT_EQ(r.code, 0) << r.err;
  lrnn::TemplateAst t = lrnn::load_template(tmpl.string());
  EXPECT_GT(t.rules.size(), 10u);
  EXPECT_EQ(slurp(ex), "token(0, 'a'), index(0, 0), token(1, 'b'), index(1, 1), token(2, 'c'), index(2, 2).\n");
  // the logic engine answers the lowered program (exact: no counting involved)
  auto q = std::string(LRNN_CLI_PATH) + " query " + tmpl.string() + " --facts " + ex.string() + " 'out(I, V)' > " +
           (dir / "rasp_cli_q.txt").string();
  ASSERT_EQ(std::system(q.c_str()), 0);
  EXPECT_EQ(slurp(dir / "rasp_cli_q.txt"), "I=0, V=c\nI=1, V=b\nI=2, V=a\n");
  std::filesystem::remove(tmpl);
  std::filesystem::remove(ex);
  std::filesystem::remove(dir / "rasp_cli_q.txt");
}

TEST(RaspCli, DrawWritesAnSvg) {
  auto svg = std::filesystem::temp_directory_path() / "rasp_cli_sort.svg";
  Result r = lrnn_rasp("draw " + kRasp + "sort.rasp --input '§cab' -o " + svg.string());
  EXPECT_EQ(r.code, 0) << r.err;
  std::string text = slurp(svg);
  EXPECT_EQ(text.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(text.find("layer 1: 1 head(s)"), std::string::npos);
  EXPECT_NE(text.find("layer 2: 1 head(s)"), std::string::npos);
  EXPECT_NE(text.find("</svg>"), std::string::npos);
  // Says where the picture went, as `lrnn draw` does; the SVG itself only into the file.
  EXPECT_EQ(r.err, "wrote " + svg.string() + "\n");
  EXPECT_EQ(r.out, "");
  std::filesystem::remove(svg);
}

TEST(RaspCli, ErrorsAreClearAndNeverCrash) {
  Result r = lrnn_rasp("run " + kRasp + "errors/parse_error.rasp --input abc");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("parse_error.rasp:2:28: error: expected ')' to close the call, found ';'"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("count = selector_width(same;\n                           ^"), std::string::npos) << r.err;
  r = lrnn_rasp("run " + kRasp + "errors/aggregate_strings.rasp --input abc");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("aggregate_strings.rasp:3:9: error: in smear: cannot aggregate 2 selected values that are "
                       "not all numbers (\"a\", \"b\") at position 1"),
            std::string::npos)
      << r.err;
  r = lrnn_rasp("run " + kRasp + "errors/selector_compare.rasp --input abc");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("selector_compare.rasp:2:12: error: cannot compare a selector with an s-op"), std::string::npos)
      << r.err;
  r = lrnn_rasp("lower " + kRasp + "reverse.rasp --vocab '' --max-len 3");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.code, -1);
  r = lrnn_rasp("run " + kRasp + "missing.rasp --input a");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.code, -1);
}

}  // namespace
