// `lrnn zoo`: lists the registered modules, prints a module's template (the same bytes as the
// generated files in examples/transformers/), and refuses a wrong module, parameter or value
// as bad input (exit 2) naming it and the nearest name.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cli_test_support.hpp"

namespace {

using lrnn_test::run_lrnn;

std::string example(const std::string& file) {
  std::ifstream in(std::string(LRNN_SOURCE_DIR) + "/examples/transformers/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CliZoo, ListsEveryRegisteredModule) {
  const auto r = run_lrnn("zoo");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* name : {"attention", "multihead_attention", "relational_attention", "seq2seq", "transformer",
                           "transformer_decoder_layer", "transformer_encoder", "transformer_encoder_layer"})
    EXPECT_NE(("\n" + r.out).find(std::string("\n") + name + " "), std::string::npos) << name << "\n" << r.out;
  EXPECT_EQ(r.out.rfind("attention ", 0), 0u) << r.out;  // sorted by name
}

TEST(CliZoo, ListsAModulesParameters) {
  const auto r = run_lrnn("zoo multihead_attention --params");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("  embed_dim           int     required   size of a token's embedding (E) (>= 1)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  prefix              string  \"attn\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  mask                mask    none"), std::string::npos) << r.out;
}

TEST(CliZoo, PrintsTheGeneratedFilesBytes) {
  struct Case {
    const char* args;
    const char* file;
  };
  for (const Case& c : {Case{"multihead_attention embed_dim=16 num_heads=4", "multihead_attention_16_4.lrnn"},
                        Case{"multihead_attention embed_dim=16 num_heads=4 'mask=@leq(J, I)'",
                             "multihead_attention_16_4_causal.lrnn"},
                        Case{"transformer_encoder_layer d_model=16 nhead=4 dim_feedforward=32",
                             "encoder_layer_16_4_32.lrnn"},
                        Case{"relational_attention node_dim=16 edge_dim=4 num_heads=2",
                             "relational_attention_16_4_2.lrnn"}}) {
    const auto r = run_lrnn(std::string("zoo ") + c.args);
    ASSERT_EQ(r.code, 0) << c.args << "\n" << r.out;
    EXPECT_EQ(r.out, example(c.file)) << c.args;
  }
}

TEST(CliZoo, RefusesWrongInputAsBadInput) {
  auto r = run_lrnn("zoo multihead_atention embed_dim=4");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown zoo module 'multihead_atention' (did you mean 'multihead_attention'?)"),
            std::string::npos)
      << r.out;
  r = run_lrnn("zoo multihead_attention embed_dim=4 num_head=2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown parameter 'num_head' (did you mean 'num_heads'?)"), std::string::npos) << r.out;
  r = run_lrnn("zoo multihead_attention embed_dim=four");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("embed_dim=four: embed_dim is an integer"), std::string::npos) << r.out;
  r = run_lrnn("zoo multihead_attention embed_dim=4 bias=maybe");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("bias=maybe: bias is true or false"), std::string::npos) << r.out;
  r = run_lrnn("zoo multihead_attention num_heads=2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("parameter 'embed_dim' (size of a token's embedding (E)) is required"), std::string::npos)
      << r.out;
  r = run_lrnn("zoo multihead_attention embed_dim=4 embed_dim=8");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("embed_dim given twice"), std::string::npos) << r.out;
  r = run_lrnn("zoo multihead_attention embed_dim");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("'embed_dim': a parameter is given as NAME=VALUE"), std::string::npos) << r.out;
}

}  // namespace
