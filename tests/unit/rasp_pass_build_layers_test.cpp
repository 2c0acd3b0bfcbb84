// The weight compiler's last pass alone (src/rasp/passes/build_layers.cpp): heads and MLPs
// per layer, every MLP switched off at the BOS position, and the BOS key corrected.
#include <gtest/gtest.h>

#include "rasp_passes_support.hpp"

namespace {

using namespace rasp_passes_test;

TEST(RaspPassBuildLayers, ReverseHeadsMlpAndBos) {
  const SOp reverse = make_reverse();
  passes::Laid laid = passes::layout(passes::schedule(readings_of(input_of(reverse, abc(), 4))));
  const int d = laid.model.d_model;
  const std::vector<double> bos = laid.model.bos_embedding;
  const CompiledModel m = passes::build_layers(std::move(laid));
  ASSERT_EQ(m.layers.size(), 2u);
  ASSERT_EQ(m.layers[0].heads.size(), 1u);
  EXPECT_EQ(m.layers[0].heads[0].output, "length");
  EXPECT_EQ(m.layers[0].mlp.outputs, std::vector<std::string>{"opp_idx-1"});
  ASSERT_EQ(m.layers[1].heads.size(), 1u);
  EXPECT_EQ(m.layers[1].heads[0].output, "reverse");
  EXPECT_EQ(m.layers[1].mlp.hidden, 0);
  EXPECT_EQ(m.spaces[m.output_space].name, "reverse");
  // every MLP unit is off at BOS: w1 . bos + b1 <= -1 (BOS's residual is the embedding
  // plus what layer 1's head writes there, which is nothing new for "one" and "bos")
  const CompiledMlp& mlp = m.layers[0].mlp;
  for (int u = 0; u < mlp.hidden; ++u) {
    double pre = mlp.b1[u];
    for (int j = 0; j < 2; ++j) pre += mlp.w1[static_cast<size_t>(u) * d + j] * bos[j];
    EXPECT_LE(pre, 0.0) << u;
  }
  // the passes give the model compile() gives
  const CompiledModel whole = compile(reverse, abc(), 4);
  EXPECT_EQ(whole.d_model, m.d_model);
  for (size_t l = 0; l < m.layers.size(); ++l) {
    EXPECT_EQ(whole.layers[l].mlp.w1, m.layers[l].mlp.w1);
    for (size_t h = 0; h < m.layers[l].heads.size(); ++h) EXPECT_EQ(whole.layers[l].heads[h].qk, m.layers[l].heads[h].qk);
  }
}

TEST(RaspPassBuildLayers, HeadsThatAttendAlikeAreOne) {
  const Selector prefix = select(indices(), indices(), Predicate::Le);
  const SOp is_a = numerical(map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "a"}; }, "is_a"));
  const SOp is_b = numerical(map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "b"}; }, "is_b"));
  const SOp fa = aggregate(prefix, is_a, int64_t{0}, Convention::Mean).name("fa");
  const SOp fb = aggregate(prefix, is_b, int64_t{0}, Convention::Mean).name("fb");
  const SOp sum = numerical(fa + fb).name("sum");
  const CompiledModel m = passes::run_passes(input_of(sum, abc(), 3));
  ASSERT_GE(m.layers.size(), 1u);
  ASSERT_EQ(m.layers[0].heads.size(), 1u);  // fa and fb: one score matrix, two outputs
  EXPECT_EQ(m.layers[0].heads[0].output, "fa, fb");
  EXPECT_EQ(m.verify().mismatches, 0u);
}

}  // namespace
