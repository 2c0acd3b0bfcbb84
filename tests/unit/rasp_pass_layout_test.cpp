// The weight compiler's sixth pass alone (src/rasp/passes/layout.cpp): the residual
// stream's subspaces and the embeddings.
#include <gtest/gtest.h>

#include "rasp_passes_support.hpp"

namespace {

using namespace rasp_passes_test;

passes::Laid laid_of(const SOp& program, int max_len) {
  return passes::layout(passes::schedule(readings_of(input_of(program, abc(), max_len))));
}

TEST(RaspPassLayout, HistogramSpaces) {
  const SOp hist = select(tokens(), tokens(), Predicate::Eq).width().name("hist");
  const passes::Laid l = laid_of(hist, 3);
  const CompiledModel& m = l.model;
  // one, bos; tokens (3); hist (3 values); hist's 1/(w+1)
  EXPECT_EQ(m.d_model, 2 + 3 + 3 + 1);
  ASSERT_EQ(m.spaces.size(), 3u);
  EXPECT_EQ(m.spaces[0].name, "tokens");
  EXPECT_EQ(m.spaces[1].name, "hist");
  EXPECT_EQ(m.spaces[2].name, "hist:1/(width+1)");
  EXPECT_TRUE(m.spaces[2].numerical);
  EXPECT_EQ(m.dim_labels[0], "one");
  EXPECT_EQ(m.dim_labels[1], "bos");
  EXPECT_EQ(m.dim_labels[2], "tokens=a");
  EXPECT_EQ(l.scratch.at(node(hist)).offset, 8);
  // the token embedding: "one" and the token's one-hot; positions unread (no indices)
  for (int v = 0; v < 3; ++v)
    for (int j = 0; j < m.d_model; ++j)
      EXPECT_EQ(m.token_embedding[v * m.d_model + j], j == 0 || j == 2 + v ? 1.0 : 0.0) << v << " " << j;
  for (double x : m.position_embedding) EXPECT_EQ(x, 0.0);
  EXPECT_EQ(m.bos_embedding[0], 1.0);
  EXPECT_EQ(m.bos_embedding[1], 1.0);
  EXPECT_TRUE(m.layers.empty());  // build_layers' part
}

TEST(RaspPassLayout, AnEmbeddedMapIsWrittenIntoThePositionEmbedding) {
  const SOp parity = map(indices(), [](const Value& v) -> Value { return int64_t{std::get<int64_t>(v) % 2}; }, "parity");
  const SOp out = select(parity, parity, Predicate::Eq).width().name("same_parity");
  const passes::Laid l = laid_of(out, 3);
  const CompiledModel& m = l.model;
  // parity is read by the selector from its own subspace (2 values), not through the
  // 3 indices; the indices themselves take no dimension
  const passes::Feature& p = l.features.at(node(parity));
  ASSERT_EQ(p.width, 2);
  for (int i = 0; i < 3; ++i) {
    const double* row = m.position_embedding.data() + static_cast<size_t>(i) * m.d_model;
    EXPECT_EQ(row[p.offset + (i % 2)], 1.0);
    EXPECT_EQ(row[p.offset + 1 - (i % 2)], 0.0);
  }
  for (const ResidualSpace& s : m.spaces) EXPECT_NE(s.name, "indices");
}

}  // namespace
