// Attention's score and weighted-sum rules grounded as one block (logic::PairBlock) and run
// from it (neural::SampleNetwork::pair_blocks, the plan's block groups) against the same
// template grounded rule by rule: the same outputs, parameter gradients and data-fact
// gradients (1e-12), for full, causal (@leq, @lt), sliding windows, two heads, derived and learnable q/k/v,
// two sequences in one plan, rows that do not lie back to back (per-pair offsets written
// out), and a non-finite value (the banded tiles' per-member fallback).
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "exec/plan.hpp"
#include "logic/grounder.hpp"
#include "lrnn/syntax.hpp"
#include "lrnn/zoo.hpp"
#include "neural/network.hpp"
#include "plan_pass.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

constexpr int kDim = 3;

std::string attention(const std::string& mask, const std::string& sum_aggregation = "sum") {
  const std::string over = mask.find('D') != std::string::npos ? "J, D" : "J";  // a window's offset D
  return "<0.5> s.\n"
         "w(I, J) :- s, k(J)^T, q(I)" + mask + ". [combination=product, aggregation=softmax(" + over + ")]\n"
         "out(I) :- w(I, J), v(J). [combination=product, aggregation=" + sum_aggregation + "]\n";
}

// Two heads over q, k, v projected from x(I) by learnable weights, summed into out(I).
std::string two_heads(const std::string& mask) {
  std::string t = "<0.5> s.\n";
  for (const std::string h : {"0", "1"}) {
    for (const std::string p : {"q", "k", "v"}) t += p + h + "(I) :- {3,3} x(I).\n";
    t += "w" + h + "(I, J) :- s, k" + h + "(J)^T, q" + h + "(I)" + mask +
         ". [combination=product, aggregation=softmax(J)]\n";
    t += "a" + h + "(I) :- w" + h + "(I, J), v" + h + "(J). [combination=product, aggregation=sum]\n";
  }
  return t + "out(I) :- {3,3} a0(I), {3,3} a1(I).\n";
}

double entry(int which, int seq, int r, int e) {
  return std::sin(0.37 * (r * kDim + e) + 1.3 * which + 0.7 * seq + 0.011 * ((r * 7 + e * 13) % 17));
}

// q, k, v (or x alone) facts of one sequence; `interleaved` lists them position by position
// (q(0), k(0), v(0), q(1), ...), so no predicate's facts lie back to back.
ExampleAst sequence(int seq, int n, const std::vector<std::string>& names, bool interleaved = false) {
  std::vector<std::vector<Literal>> per(names.size());
  for (size_t w = 0; w < names.size(); ++w) {
    std::vector<double> x(size_t(n) * kDim);
    for (int r = 0; r < n; ++r)
      for (int e = 0; e < kDim; ++e) x[size_t(r) * kDim + e] = entry(int(w), seq, r, e);
    per[w] = zoo::sequence_facts(names[w], x.data(), n, kDim);
  }
  ExampleAst ex;
  if (interleaved) {
    for (int r = 0; r < n; ++r)
      for (auto& facts : per) ex.facts.push_back(facts[r]);
  } else {
    for (auto& facts : per) ex.facts.insert(ex.facts.end(), facts.begin(), facts.end());
  }
  return ex;
}

struct Built {
  std::vector<neural::SampleNetwork> nets;
  exec::Plan plan;
  size_t blocks = 0;
};

Built build(const train::Engine& engine, const std::vector<ExampleAst>& seqs, const std::vector<int>& lengths,
            bool blocks) {
  logic::GroundingOptions options;
  if (blocks) options.pair_blocks = neural::pair_block_rules(engine.model(), engine.program());
  Built b;
  b.nets.reserve(seqs.size());
  for (size_t s = 0; s < seqs.size(); ++s) {
    const logic::GroundSample g =
        logic::ground(engine.program(), seqs[s], zoo::sequence_queries("out", lengths[s]), options);
    b.blocks += g.pair_blocks.size();
    b.nets.push_back(neural::neuralize(engine.model(), seqs[s], g));
  }
  std::vector<const neural::SampleNetwork*> samples;
  for (const auto& net : b.nets) samples.push_back(&net);
  b.plan = exec::build_plan(engine.model(), samples);
  return b;
}

void expect_close(double a, double b, const std::string& what) {
  if (std::isnan(a) || std::isnan(b)) {
    EXPECT_TRUE(std::isnan(a) && std::isnan(b)) << what << ": " << a << " vs " << b;
  } else if (std::isinf(a) || std::isinf(b)) {
    EXPECT_EQ(a, b) << what;
  } else {
    EXPECT_NEAR(a, b, 1e-12 * (1 + std::abs(b))) << what;
  }
}

// Grounds `text` on the sequences with and without blocks; the block build must hold
// `expected_blocks` blocks (when given) and give the general build's outputs and gradients.
Built check(const std::string& text, const std::vector<ExampleAst>& seqs, const std::vector<int>& lengths,
            std::optional<size_t> expected_blocks) {
  train::Engine engine(parse_template(text));
  const Built blocked = build(engine, seqs, lengths, true), general = build(engine, seqs, lengths, false);
  if (expected_blocks) EXPECT_EQ(blocked.blocks, *expected_blocks);
  EXPECT_EQ(general.blocks, 0u);
  const test::PlanPass x = test::run_plan_pass(blocked.plan, engine), y = test::run_plan_pass(general.plan, engine);
  EXPECT_EQ(blocked.plan.outputs.size(), general.plan.outputs.size());
  for (size_t o = 0; o < std::min(blocked.plan.outputs.size(), general.plan.outputs.size()); ++o) {
    const exec::OutputRef &a = blocked.plan.outputs[o], &b = general.plan.outputs[o];
    EXPECT_EQ(a.offset == exec::kNoValue, b.offset == exec::kNoValue) << "output " << o;
    EXPECT_EQ(a.shape.size(), b.shape.size()) << "output " << o;
    if (a.offset == exec::kNoValue || b.offset == exec::kNoValue || a.shape.size() != b.shape.size()) continue;
    for (int e = 0; e < a.shape.size(); ++e)
      expect_close(x.ws.values[a.offset + e], y.ws.values[b.offset + e], "output " + std::to_string(o));
  }
  EXPECT_EQ(x.param_grads.size(), y.param_grads.size());
  for (size_t p = 0; p < std::min(x.param_grads.size(), y.param_grads.size()); ++p)
    expect_close(x.param_grads[p], y.param_grads[p], "parameter gradient " + std::to_string(p));
  EXPECT_EQ(blocked.plan.data, general.plan.data);  // the same facts, in the same order
  for (size_t k = 0; k < general.plan.data.size(); ++k)
    expect_close(x.ws.grads[k], y.ws.grads[k], "data gradient " + std::to_string(k));
  return blocked;
}

// The plan's group of template rule r (the first), or null.
const exec::RuleGroup* group_of(const exec::Plan& plan, uint32_t r) {
  for (const exec::RuleGroup& G : plan.rule_groups)
    if (G.rule == r) return &G;
  return nullptr;
}

// Rule 0 (scores) and 1 (sums) of attention() ran from the block, without per-pair arrays.
void expect_implicit_members(const exec::Plan& plan, bool dense) {
  for (uint32_t r : {0u, 1u}) {
    const exec::RuleGroup* G = group_of(plan, r);
    ASSERT_NE(G, nullptr);
    EXPECT_EQ(G->direct.dense, dense) << "rule " << r;
    EXPECT_EQ(G->direct.banded, !dense) << "rule " << r;
    for (const exec::InputBlock& B : G->inputs) EXPECT_TRUE(B.src.empty()) << "rule " << r;
    EXPECT_TRUE(G->softmax_perm.empty());
  }
  EXPECT_TRUE(group_of(plan, 0)->head_segments.empty());
}

TEST(PairBlocks, FullAttention) {
  for (int n : {1, 7, 70}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const Built b = check(attention(""), {sequence(0, n, {"q", "k", "v"})}, {n}, 1);
    expect_implicit_members(b.plan, true);
  }
}

TEST(PairBlocks, AverageOfTheWeightedValues) {
  check(attention("", "avg"), {sequence(0, 9, {"q", "k", "v"})}, {9}, 1);
}

TEST(PairBlocks, CausalAttention) {
  const Built b = check(attention(", @leq(J, I)"), {sequence(0, 90, {"q", "k", "v"})}, {90}, 1);
  expect_implicit_members(b.plan, false);
  check(attention(", @geq(I, J)"), {sequence(0, 20, {"q", "k", "v"})}, {20}, 1);
}

// A narrow window's tiles would be mostly masked: its pairs' offsets are written out. A
// wide one runs as banded tiles whose rows start at later and later keys.
TEST(PairBlocks, SlidingWindows) {
  const std::vector<std::string> qkv = {"q", "k", "v"};
  const Built narrow = check(attention(", @sub(I, J, D), @geq(D, 0), @leq(D, 3)"), {sequence(0, 40, qkv)}, {40}, 1);
  EXPECT_FALSE(group_of(narrow.plan, 0)->direct.banded);
  EXPECT_FALSE(group_of(narrow.plan, 0)->inputs.at(1).src.empty());
  const Built wide = check(attention(", @sub(I, J, D), @geq(D, 0), @leq(D, 100)"), {sequence(0, 300, qkv)}, {300}, 1);
  expect_implicit_members(wide.plan, false);
  EXPECT_EQ(group_of(wide.plan, 0)->direct.band_first.back(), 299u - 100u);
  check(attention(", @sub(I, J, D), @gt(D, 0), @lt(D, 5)"), {sequence(0, 30, qkv), sequence(1, 12, qkv)}, {30, 12}, 2);
}

// What the rules add around the block: a learnable scale, an offset and an activation on
// the scores, a head weight on the weighted sums (both rules' own functions, per pair and
// per head), and a learnable offset on the heads' predicate.
TEST(PairBlocks, RuleFunctionsAroundTheBlock) {
  const std::string text =
      "{1,1} s.\n"
      "w(I, J) :- s, k(J)^T, q(I), @leq(J, I), 0.2. [combination=product, aggregation=softmax(J), "
      "activation=sigmoid]\n"
      "{3,3} out(I) :- w(I, J), v(J). [combination=product, aggregation=avg]\n"
      "out/1 {3}\n";
  const Built b = check(text, {sequence(0, 70, {"q", "k", "v"})}, {70}, 1);
  EXPECT_TRUE(group_of(b.plan, 0)->direct.banded);
  EXPECT_NE(group_of(b.plan, 0)->offset, neural::kNoParam);
  EXPECT_NE(group_of(b.plan, 1)->head_weight, neural::kNoParam);
}

TEST(PairBlocks, StrictlyCausalLeavesTheFirstQueryWithoutKeys) {
  const Built b = check(attention(", @lt(J, I)"), {sequence(0, 30, {"q", "k", "v"})}, {30}, 1);
  EXPECT_EQ(b.plan.outputs.at(0).offset, exec::kNoValue);  // out(0) has no key: no neuron
  EXPECT_NE(b.plan.outputs.at(1).offset, exec::kNoValue);
  check(attention(", @gt(I, J)"), {sequence(0, 12, {"q", "k", "v"})}, {12}, 1);
}

TEST(PairBlocks, TwoHeadsOfDerivedLearnableProjections) {
  check(two_heads(""), {sequence(0, 11, {"x"})}, {11}, 2);
  check(two_heads(", @leq(J, I)"), {sequence(0, 70, {"x"})}, {70}, 2);
}

TEST(PairBlocks, TwoSequencesInOnePlan) {
  check(attention(""), {sequence(0, 9, {"q", "k", "v"}), sequence(1, 5, {"q", "k", "v"})}, {9, 5}, 2);
  check(attention(", @leq(J, I)"), {sequence(0, 70, {"q", "k", "v"}), sequence(1, 33, {"q", "k", "v"})}, {70, 33}, 2);
}

// Queries at positions 5, 0, 6, 1, 7, 2 (in that order) against keys 3..7 under a causal
// mask: queries 0, 1 and 2 see no key, so the rows (5, 6, 7) lie every other q atom apart.
TEST(PairBlocks, RowsNotBackToBackWriteTheirOffsetsOut) {
  const ExampleAst all = sequence(0, 8, {"q", "k", "v"});
  ExampleAst ex;
  for (int i : {5, 0, 6, 1, 7, 2}) ex.facts.push_back(all.facts.at(i));
  for (int which : {1, 2})
    for (int j = 3; j < 8; ++j) ex.facts.push_back(all.facts.at(8 * which + j));
  // out(I) also reads q(I), so queries 0, 1 and 2 keep their q atoms between the rows.
  const std::string text =
      "<0.5> s.\n"
      "w(I, J) :- s, k(J)^T, q(I), @leq(J, I). [combination=product, aggregation=softmax(J)]\n"
      "a(I) :- w(I, J), v(J). [combination=product, aggregation=sum]\n"
      "out(I) :- a(I).\n"
      "out(I) :- q(I).\n";
  const Built b = check(text, {ex}, {8}, 1);
  const exec::RuleGroup* scores = group_of(b.plan, 0);
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(scores->n, 3u + 4u + 5u);
  EXPECT_FALSE(scores->inputs.at(2).src.empty());  // q(I), the rows
  EXPECT_FALSE(scores->direct.banded);
}

TEST(PairBlocks, NonFiniteKeyTakesThePerMemberProducts) {
  ExampleAst ex = sequence(0, 80, {"q", "k", "v"});
  // k(40) holds an infinity: the tiles would multiply it by masked zeros for queries < 40.
  Literal& k40 = ex.facts.at(80 + 40);
  ASSERT_EQ(k40.predicate, "k");
  k40.weight->data[1] = std::numeric_limits<double>::infinity();
  const Built b = check(attention(", @leq(J, I)"), {ex}, {80}, 1);
  // Queries before key 40 never see it: finite (a tile would have made them NaN).
  train::Engine engine(parse_template(attention(", @leq(J, I)")));
  const test::PlanPass pass = test::run_plan_pass(b.plan, engine);
  for (int i : {0, 39}) EXPECT_TRUE(std::isfinite(pass.ws.values.at(b.plan.outputs.at(i).offset))) << "out(" << i << ")";
  EXPECT_FALSE(std::isfinite(pass.ws.values.at(b.plan.outputs.at(40).offset)));
}

// Random blocks against the general path: a mask among none, the four comparisons and
// windows of random bounds; queries and keys over random position sets (keys ascending,
// queries in any order); one or two sequences in a plan. (It found keys left between two
// windows kept as columns, which the general path prunes.)
TEST(PairBlocks, RandomMasksAndPositions) {
  std::mt19937 rng(20261127);
  const std::vector<std::string> comparisons = {"", ", @leq(J, I)", ", @lt(J, I)", ", @geq(I, J)", ", @gt(I, J)"};
  auto positions = [&](int count, int span, bool ascending) {
    std::vector<int> all(span);
    for (int i = 0; i < span; ++i) all[i] = i;
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(count);
    if (ascending) std::sort(all.begin(), all.end());
    return all;
  };
  size_t blocks = 0;
  for (int trial = 0; trial < 30; ++trial) {
    std::string mask = comparisons[rng() % comparisons.size()];
    if (rng() % 3 == 0) {
      const int lo = int(rng() % 5) - 2, hi = lo + int(rng() % 6);
      mask = ", @sub(I, J, D), @geq(D, " + std::to_string(lo) + "), @leq(D, " + std::to_string(hi) + ")";
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + ", mask '" + mask + "'");
    const int n_seqs = 1 + int(rng() % 2);
    std::vector<ExampleAst> seqs;
    std::vector<int> lengths;
    for (int q = 0; q < n_seqs; ++q) {
      const int span = 2 + int(rng() % 30);
      const ExampleAst all = sequence(q, span, {"q", "k", "v"});
      ExampleAst ex;
      for (int i : positions(1 + int(rng() % span), span, false)) ex.facts.push_back(all.facts.at(i));
      for (int j : positions(1 + int(rng() % span), span, true)) {
        ex.facts.push_back(all.facts.at(span + j));
        ex.facts.push_back(all.facts.at(2 * span + j));
      }
      seqs.push_back(std::move(ex));
      lengths.push_back(span);
    }
    // (A mask may leave a sequence no pair, and so no block: any count is right here.)
    blocks += check(attention(mask), seqs, lengths, std::nullopt).blocks;
  }
  EXPECT_GE(blocks, 30u);
}

}  // namespace
