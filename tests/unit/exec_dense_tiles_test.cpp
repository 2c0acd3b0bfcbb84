// Banded direct products (exec/dense_tiles.hpp): attention under a causal mask (or any mask
// leaving each query one run of keys, wider than a tile's worth of waste) runs as dense
// tiles. Checked against the per-member products of the same plan (the banded flag
// cleared): every neuron value, every neuron gradient and every parameter gradient agree
// at 1e-12 (relative to the largest), on sequences longer than a tile and not a multiple
// of it, with two heads, a query that is its own key, an average, and a band that does not
// start at column 0. A finite-difference check covers the kernels' parameter gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "exec/dense_tiles.hpp"
#include "exec/plan.hpp"
#include "logic/grounder.hpp"
#include "lrnn/lrnn.hpp"
#include "lrnn/syntax.hpp"
#include "lrnn/zoo.hpp"
#include "model_gradient_check.hpp"
#include "neural/network.hpp"
#include "plan_pass.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

// Two heads of self-attention over x(I): head a with its own keys, head b with the query
// as its key (h(I)^T h(J)) and an averaged weighted sum. MASK is the rule's mask.
const char* kHeads =
    "qa(I) :- $wqa={4,3} x(I).\n"
    "ka(I) :- $wka={4,3} x(I).\n"
    "va(I) :- $wva={2,3} x(I).\n"
    "hb(I) :- $whb={4,3} x(I).\n"
    "<0.5> s.\n"
    "$t=0.7 t.\n"
    "wa(I, J) :- s, ka(J)^T, qa(I) MASK. [combination=product, aggregation=softmax(J)]\n"
    "oa(I) :- wa(I, J), va(J). [combination=product, aggregation=sum]\n"
    "wb(I, J) :- t, hb(J)^T, hb(I) MASK. [combination=product, aggregation=softmax(J)]\n"
    "ob(I) :- wb(I, J), t, hb(J). [combination=product, aggregation=avg]\n"
    "out(I) :- $woa={3,2} oa(I), $wob={3,4} ob(I).\n";

// The heads under `mask`; a mask with a variable of its own (D) normalises over it too.
std::string heads(const std::string& mask) {
  std::string t = kHeads;
  for (size_t at; (at = t.find("MASK")) != std::string::npos;) t.replace(at, 4, mask);
  if (mask.find('D') != std::string::npos)
    for (size_t at; (at = t.find("softmax(J)")) != std::string::npos;) t.replace(at, 10, "softmax(J, D)");
  return t;
}

// n rows of d values spread over [-1, 1] with no two rows alike.
std::vector<double> random_rows(int n, int d, uint64_t seed) {
  std::vector<double> x(size_t(n) * d);
  for (size_t e = 0; e < x.size(); ++e) x[e] = std::sin(1.7 * double(e) + 0.3 * double(seed) + 0.01 * double(e * e % 97));
  return x;
}

using Pass = test::PlanPass;

// One forward and backward pass of the plan (output gradients 1.001, 1.002, ...).
Pass run(const exec::Plan& plan, const train::Engine& engine) { return test::run_plan_pass(plan, engine); }

template <class Vec>
void expect_close(const Vec& a, const Vec& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double largest = 0, diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    largest = std::max(largest, std::abs(b[i]));
    diff = std::max(diff, std::abs(a[i] - b[i]));
  }
  EXPECT_GT(largest, 1e-3) << what;  // something flows
  EXPECT_LE(diff, 1e-12 * largest) << what;
}

// The network of `engine`'s template on the sequence x (n rows of 3).
neural::SampleNetwork network_of(const train::Engine& engine, const std::vector<double>& x, int n) {
  ExampleAst ex;
  ex.facts = zoo::sequence_facts("x", x.data(), n, 3);
  const logic::GroundSample ground = logic::ground(engine.program(), ex, zoo::sequence_queries("out", n));
  return neural::neuralize(engine.model(), ex, ground);
}

// Builds the plan of `text` on sequences of the given lengths (one sample each, merged into
// one plan); returns the number of banded groups and checks the tiles against the
// per-member products of the same plan.
int check_banded_equals_members(const std::string& text, std::vector<int> lengths) {
  train::Engine engine(parse_template(text), train::Initializer{}, 3);
  std::vector<neural::SampleNetwork> nets;
  for (int n : lengths) nets.push_back(network_of(engine, random_rows(n, 3, 11 + n), n));
  std::vector<const neural::SampleNetwork*> samples;
  for (const auto& net : nets) samples.push_back(&net);
  exec::Plan plan = exec::build_plan(engine.model(), samples);
  const Pass tiles = run(plan, engine);
  int banded = 0;
  for (exec::RuleGroup& G : plan.rule_groups) {
    banded += G.direct.banded;
    G.direct.banded = false;
  }
  const Pass members = run(plan, engine);
  expect_close(tiles.ws.values, members.ws.values, "values");
  expect_close(tiles.ws.grads, members.ws.grads, "neuron gradients");
  expect_close(tiles.param_grads, members.param_grads, "parameter gradients");
  return banded;
}
int check_banded_equals_members(const std::string& text, int n) {
  return check_banded_equals_members(text, std::vector<int>{n});
}

TEST(DenseTiles, CausalAttentionEqualsPerMemberProducts) {
  // 1 position, less than a tile, a tile and one more, several tiles and a ragged end.
  for (int n : {1, 5, 65, 150}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    // Two scores and two sums (one position is a dense block).
    EXPECT_EQ(check_banded_equals_members(heads(", @leq(J, I)"), n), n == 1 ? 0 : 4);
  }
}

TEST(DenseTiles, SequencesOfDifferentLengthsInOnePlan) {
  // Two samples: their queries and keys lie back to back, each band within its own sample.
  const std::string one_head =
      "q(I) :- $wq={4,3} x(I).\n"
      "k(I) :- $wk={4,3} x(I).\n"
      "v(I) :- $wv={2,3} x(I).\n"
      "w(I, J) :- k(J)^T, q(I), @leq(J, I). [combination=product, aggregation=softmax(J)]\n"
      "out(I) :- w(I, J), v(J). [combination=product, aggregation=sum]\n";
  EXPECT_EQ(check_banded_equals_members(one_head, std::vector<int>{70, 45}), 2);
  // Scalar facts are one value per sample, so not one for every member: those rules stay
  // per member, and only head a's weighted sum (no scalar factor) runs as tiles.
  EXPECT_EQ(check_banded_equals_members(heads(", @leq(J, I)"), std::vector<int>{70, 45}), 1);
}

// An infinite input row: the per-member products never read it for earlier queries, so
// their outputs stay finite; the tiles (which would multiply it by masked zeros) step aside.
TEST(DenseTiles, NonFiniteValuesFallBackToPerMemberProducts) {
  const int n = 40;
  train::Engine engine(parse_template(heads(", @leq(J, I)")), train::Initializer{}, 3);
  std::vector<double> x = random_rows(n, 3, 2);
  x[3 * (n - 1)] = std::numeric_limits<double>::infinity();
  const neural::SampleNetwork net = network_of(engine, x, n);
  exec::Plan plan = exec::build_plan(engine.model(), {&net});
  const Pass tiles = run(plan, engine);
  for (exec::RuleGroup& G : plan.rule_groups) G.direct.banded = false;
  const Pass members = run(plan, engine);
  ASSERT_EQ(plan.outputs.size(), size_t(n));
  for (int q = 0; q < n; ++q) {
    const exec::OutputRef& o = plan.outputs[q];
    for (uint32_t k = 0; k < o.shape.size(); ++k) {
      const double a = tiles.ws.values[o.offset + k], b = members.ws.values[o.offset + k];
      if (q < n - 1) EXPECT_TRUE(std::isfinite(a)) << "out(" << q << ")";
      EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << "out(" << q << "): " << a << " vs " << b;
    }
  }
}

TEST(DenseTiles, AntiCausalAndWideWindowsAreBanded) {
  // Keys at or after the query (bands ending at the last column).
  EXPECT_EQ(check_banded_equals_members(heads(", @geq(J, I)"), 100), 4);
  // 0 <= I - J <= 90: bands that start past column 0 once the window slides.
  EXPECT_EQ(check_banded_equals_members(heads(", @sub(I, J, D), @geq(D, 0), @leq(D, 90)"), 160), 4);
}

TEST(DenseTiles, NarrowWindowsKeepPerMemberProducts) {
  // A 4-wide window would fill a 64-row tile to a tenth: the per-member path stays.
  EXPECT_EQ(check_banded_equals_members(heads(", @sub(I, J, D), @geq(D, 0), @leq(D, 3)"), 130), 0);
}

TEST(DenseTiles, TileEntriesCountTheMaskedEntriesOfDiagonalTiles) {
  exec::DirectProduct d;
  const uint32_t n = exec::kTileRows + 6;  // causal: row i has columns 0..i
  d.rows = n;
  d.band_begin.push_back(0);
  for (uint32_t i = 0; i < n; ++i) {
    d.band_first.push_back(0);
    d.band_begin.push_back(d.band_begin.back() + i + 1);
  }
  exec::plan_tiles(d);
  EXPECT_EQ(d.tile_begin, (std::vector<uint32_t>{0, exec::kTileRows, n}));
  EXPECT_EQ(exec::banded_tile_entries(d), size_t(exec::kTileRows) * exec::kTileRows + size_t(6) * n);
  // A second sequence of 3 rows after it starts a tile of its own (its band past every
  // column of the tile before).
  for (uint32_t i = 0; i < 3; ++i) {
    d.band_first.push_back(n);
    d.band_begin.push_back(d.band_begin.back() + i + 1);
  }
  d.rows = n + 3;
  exec::plan_tiles(d);
  EXPECT_EQ(d.tile_begin, (std::vector<uint32_t>{0, exec::kTileRows, n, n + 3}));
}

TEST(DenseTiles, CausalGradientsMatchFiniteDifferences) {
  // Longer than a tile, so a full tile and a diagonal one (o averages every position).
  std::string example = "<0.4> o :- ";
  const int n = exec::kTileRows + 2;
  const std::vector<double> x = random_rows(n, 3, 5);
  for (int i = 0; i < n; ++i) {
    char fact[128];
    std::snprintf(fact, sizeof fact, "%s<[%.6f, %.6f, %.6f]> x(%d)", i ? ", " : "", x[3 * i], x[3 * i + 1],
                  x[3 * i + 2], i);
    example += fact;
  }
  example += ".\n";
  const Dataset data = Dataset::from_text(example);
  Settings s;
  s.seed = 9;
  Model model(Template::from_string(heads(", @leq(J, I)") + "o :- $wo={1,3} out(I).\n"), s);
  lrnn_test::GradientCheck check;
  lrnn_test::expect_gradients_match_finite_differences(model, data, &check);
  EXPECT_GT(check.checked, 40u);
}

}  // namespace
