// A plan's blocks of rows 8 or more values wide start at a multiple of 16 values (64 bytes
// in float32, exec/plan_builder.hpp Allocator::take_rows), wherever the data before them
// end: here 3 nodes of 3 features (9 values) and, in PyNeuraLogic's spelling, 4 edge values
// more. Narrower rows and the data stay packed.
#include <gtest/gtest.h>

#include <string>

#include "exec/plan.hpp"
#include "lrnn/syntax.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

std::string gcn(const std::string& edge) {
  return "h(X) :- $w={8,3} x(X).\n"
         "h(X) :- $w={8,3} x(Y), " + edge + "(X, Y). [aggregation=sum]\n"
         "h/1 {8,1} [activation=relu]\n"
         "g(X) :- {2,8} h(X).\n"
         "o :- {1,2} g(X). [aggregation=avg]\n";
}

const char* kExample =
    "<0.3> o :- <[0.5, -1.0, 0.1]> x(1), <[1.0, 0.25, 0.2]> x(2), <[-0.75, 0.4, 0.3]> x(3), "
    "edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2).\n";

exec::Plan training_plan(const std::string& text) {
  train::Engine engine(parse_template(text, "t"));
  const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(kExample, "e"), {}));
  return exec::build_plan(engine.model(), {&set.networks[0]},
                          {.fact_gradients = false, .in_place_atoms = true, .merge_shared_weight_rules = true});
}

void expect_aligned_rows(const exec::Plan& plan) {
  size_t wide = 0, narrow_unaligned = 0;
  for (const exec::RuleGroup& G : plan.rule_groups) {
    if (G.agg_shape.size() >= 8) {
      ++wide;
      EXPECT_EQ(G.agg_off % 16, 0u) << "rule " << G.rule;
    } else {
      narrow_unaligned += G.agg_off % 16 != 0;
    }
    if (G.transform.enabled && G.transform.t_off != exec::kNoValue && G.inputs[0].wout_shape.size() >= 8)
      EXPECT_EQ(G.transform.t_off % 16, 0u) << "rule " << G.rule;
  }
  EXPECT_GE(wide, 1u);
  EXPECT_GE(narrow_unaligned, 1u) << "narrow rows are packed, not padded";
}

TEST(RowAlignment, WideRowsStartOnA64ByteBoundaryInEitherSpelling) {
  const exec::Plan own = training_plan(gcn("*edge")), pyneuralogic = training_plan(gcn("<0.0> edge"));
  EXPECT_NE(own.data.size(), pyneuralogic.data.size()) << "the spellings' data differ in size";
  expect_aligned_rows(own);
  expect_aligned_rows(pyneuralogic);
}

}  // namespace
