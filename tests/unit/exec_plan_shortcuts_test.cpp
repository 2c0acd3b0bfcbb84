// The plan's in-order shortcuts (exec::PlanOptions::in_order_shortcuts): attention's pair
// atoms taking their one input's offset straight from the rule group, and softmax segments
// read off members already in segment order. The plan built with them must be the plan
// built without them, field by field, and both must run to the same values and gradients,
// which must also match attention computed directly here (softmax over the allowed keys of
// scale * q_i . k_j, then the weighted sum of v_j) at 1e-12: full, causal, a sliding
// window, two lengths in one plan, a rule whose pairs an extra body literal restricts (not
// a product of independent domains), and a predicate whose atoms have two inputs each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "exec/plan.hpp"
#include "logic/grounder.hpp"
#include "lrnn/lrnn.hpp"
#include "lrnn/syntax.hpp"
#include "lrnn/zoo.hpp"
#include "neural/network.hpp"
#include "plan_pass.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

constexpr int kDim = 4;
constexpr double kScale = 0.5;

// Single-head attention on q, k, v facts; `mask` is appended to the score rule's body.
std::string attention(const std::string& mask) {
  const std::string over = mask.find('D') != std::string::npos ? "J, D" : "J";
  return "<0.5> s.\n"
         "w(I, J) :- s, k(J)^T, q(I)" + mask + ". [combination=product, aggregation=softmax(" + over + ")]\n"
         "out(I) :- w(I, J), v(J). [combination=product, aggregation=sum]\n";
}

// Row r of a sequence's q, k or v (n rows of kDim), distinct across rows and sequences.
double entry(int which, int seq, int r, int e) {
  return std::sin(0.37 * (r * kDim + e) + 1.3 * which + 0.7 * seq + 0.011 * ((r * 7 + e * 13) % 17));
}

struct Sequence {
  int n = 0;
  std::function<bool(int, int)> allowed;  // key j for query i
  ExampleAst example;
};

Sequence sequence(int seq, int n, std::function<bool(int, int)> allowed, const std::string& extra_facts = "") {
  Sequence s{n, std::move(allowed), {}};
  const char* names[] = {"q", "k", "v"};
  for (int which = 0; which < 3; ++which) {
    std::vector<double> x(size_t(n) * kDim);
    for (int r = 0; r < n; ++r)
      for (int e = 0; e < kDim; ++e) x[size_t(r) * kDim + e] = entry(which, seq, r, e);
    const auto facts = zoo::sequence_facts(names[which], x.data(), n, kDim);
    s.example.facts.insert(s.example.facts.end(), facts.begin(), facts.end());
  }
  if (!extra_facts.empty()) {
    const ExampleAst more = parse_examples(extra_facts).at(0);
    s.example.facts.insert(s.example.facts.end(), more.facts.begin(), more.facts.end());
  }
  return s;
}

// out(i) computed directly.
std::vector<double> reference_out(int seq, const Sequence& s, int i) {
  std::vector<double> score, out(kDim, 0.0);
  std::vector<int> keys;
  for (int j = 0; j < s.n; ++j) {
    if (!s.allowed(i, j)) continue;
    double dot = 0;
    for (int e = 0; e < kDim; ++e) dot += entry(0, seq, i, e) * entry(1, seq, j, e);
    score.push_back(kScale * dot);
    keys.push_back(j);
  }
  const double top = *std::max_element(score.begin(), score.end());
  double total = 0;
  for (double& x : score) total += (x = std::exp(x - top));
  for (size_t t = 0; t < keys.size(); ++t)
    for (int e = 0; e < kDim; ++e) out[e] += score[t] / total * entry(2, seq, keys[t], e);
  return out;
}

void expect_same_rule_group(const exec::RuleGroup& a, const exec::RuleGroup& b) {
  EXPECT_EQ(std::tie(a.rule, a.n, a.m, a.softmax_perm, a.softmax_segments, a.head_segments),
            std::tie(b.rule, b.n, b.m, b.softmax_perm, b.softmax_segments, b.head_segments));
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i)
    EXPECT_EQ(std::tie(a.inputs[i].src, a.inputs[i].raw_shape, a.inputs[i].x_off),
              std::tie(b.inputs[i].src, b.inputs[i].raw_shape, b.inputs[i].x_off));
  const exec::DirectProduct &d = a.direct, &e = b.direct;
  EXPECT_EQ(std::tie(d.kind, d.dense, d.banded, d.band_begin, d.band_first, d.outer_off, d.inner_off),
            std::tie(e.kind, e.dense, e.banded, e.band_begin, e.band_first, e.outer_off, e.inner_off));
  EXPECT_EQ(std::tie(a.comb_off, a.pre_off, a.act_off, a.perm_off, a.psoft_off, a.soft_off, a.agg_off, a.out_off),
            std::tie(b.comb_off, b.pre_off, b.act_off, b.perm_off, b.psoft_off, b.soft_off, b.agg_off, b.out_off));
}

void expect_same_plan(const exec::Plan& a, const exec::Plan& b) {
  EXPECT_EQ(a.num_values, b.num_values);
  EXPECT_EQ(a.data, b.data);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t k = 0; k < a.steps.size(); ++k) {
    EXPECT_EQ(a.steps[k].atom, b.steps[k].atom);
    EXPECT_EQ(a.steps[k].index, b.steps[k].index);
  }
  ASSERT_EQ(a.rule_groups.size(), b.rule_groups.size());
  for (size_t k = 0; k < a.rule_groups.size(); ++k) expect_same_rule_group(a.rule_groups[k], b.rule_groups[k]);
  ASSERT_EQ(a.atom_groups.size(), b.atom_groups.size());
  for (size_t k = 0; k < a.atom_groups.size(); ++k) {
    EXPECT_EQ(a.atom_groups[k].src, b.atom_groups[k].src);
    EXPECT_EQ(a.atom_groups[k].segments, b.atom_groups[k].segments);
    EXPECT_EQ(a.atom_groups[k].out_off, b.atom_groups[k].out_off);
  }
  EXPECT_EQ(a.atom_offsets, b.atom_offsets);
  EXPECT_EQ(a.atom_shapes, b.atom_shapes);
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t o = 0; o < a.outputs.size(); ++o) EXPECT_EQ(a.outputs[o].offset, b.outputs[o].offset);
}

using Pass = test::PlanPass;
Pass run(const exec::Plan& plan, const train::Engine& engine) { return test::run_plan_pass(plan, engine); }

// One network planned with and without the shortcuts: the same plan, values and
// gradients. Returns the plan with shortcuts.
exec::Plan check_one_network(const train::Engine& engine, const neural::SampleNetwork& net) {
  exec::Plan fast = exec::build_plan(engine.model(), {&net});
  const exec::Plan general = exec::build_plan(engine.model(), {&net}, exec::PlanOptions{.in_order_shortcuts = false});
  expect_same_plan(fast, general);
  const Pass x = run(fast, engine), y = run(general, engine);
  EXPECT_EQ(x.ws.values, y.ws.values);
  EXPECT_EQ(x.ws.grads, y.ws.grads);
  EXPECT_EQ(x.param_grads, y.param_grads);
  return fast;
}

// Plans `text` on the sequences (merged into one plan) with and without the shortcuts,
// checks they are the same plan with the same values and gradients, and checks every
// out(i) against the direct computation. Returns the plan (with shortcuts).
exec::Plan check(const std::string& text, const std::vector<Sequence>& seqs) {
  train::Engine engine(parse_template(text));
  std::vector<neural::SampleNetwork> nets;
  for (const Sequence& s : seqs) {
    const logic::GroundSample g = logic::ground(engine.program(), s.example, zoo::sequence_queries("out", s.n));
    nets.push_back(neural::neuralize(engine.model(), s.example, g));
  }
  std::vector<const neural::SampleNetwork*> samples;
  for (const auto& net : nets) samples.push_back(&net);
  exec::Plan fast = exec::build_plan(engine.model(), samples);
  const exec::Plan general = exec::build_plan(engine.model(), samples, exec::PlanOptions{.in_order_shortcuts = false});
  expect_same_plan(fast, general);
  const Pass a = run(fast, engine), b = run(general, engine);
  EXPECT_EQ(a.ws.values, b.ws.values);
  EXPECT_EQ(a.ws.grads, b.ws.grads);
  EXPECT_EQ(a.param_grads, b.param_grads);
  size_t o = 0;
  for (size_t s = 0; s < seqs.size(); ++s)
    for (int i = 0; i < seqs[s].n; ++i, ++o) {
      const exec::OutputRef& ref = fast.outputs.at(o);
      EXPECT_EQ(ref.sample, s);
      const std::vector<double> want = reference_out(static_cast<int>(s), seqs[s], i);
      EXPECT_EQ(ref.shape.size(), kDim);
      if (ref.shape.size() != kDim) continue;
      for (int e = 0; e < kDim; ++e)
        EXPECT_NEAR(a.ws.values[ref.offset + e], want[e], 1e-12) << "sample " << s << ", out(" << i << ")[" << e << "]";
    }
  return fast;
}

bool all(int, int) { return true; }
bool causal(int i, int j) { return j <= i; }

TEST(PlanShortcuts, FullAttention) {
  for (int n : {1, 7, 70}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const exec::Plan plan = check(attention(""), {sequence(0, n, all)});
    EXPECT_TRUE(plan.rule_groups.at(0).direct.dense || n == 1);
  }
}

TEST(PlanShortcuts, CausalAttention) {
  const exec::Plan plan = check(attention(", @leq(J, I)"), {sequence(0, 90, causal)});
  EXPECT_TRUE(plan.rule_groups.at(0).direct.banded);
}

TEST(PlanShortcuts, SlidingWindow) {
  check(attention(", @sub(I, J, D), @geq(D, 0), @leq(D, 3)"),
        {sequence(0, 40, [](int i, int j) { return i - j >= 0 && i - j <= 3; })});
}

TEST(PlanShortcuts, TwoLengthsInOnePlan) {
  check(attention(""), {sequence(0, 9, all), sequence(1, 5, all)});
  check(attention(", @leq(J, I)"), {sequence(0, 70, causal), sequence(1, 33, causal)});
}

// Two heads in one network: the second score rule's softmax groups continue the first's
// numbering (they start at n), and its members form a grid of their own.
TEST(PlanShortcuts, TwoHeadsInOneNetwork) {
  train::Engine engine(parse_template(
      "<0.5> s.\n"
      "w(I, J) :- s, k(J)^T, q(I). [combination=product, aggregation=softmax(J)]\n"
      "u(I, J) :- s, q(J)^T, k(I). [combination=product, aggregation=softmax(J)]\n"
      "out(I) :- w(I, J), v(J). [combination=product, aggregation=sum]\n"
      "out(I) :- u(I, J), v(J). [combination=product, aggregation=sum]\n"));
  const Sequence s = sequence(0, 37, all);
  const logic::GroundSample g = logic::ground(engine.program(), s.example, zoo::sequence_queries("out", s.n));
  const neural::SampleNetwork net = neural::neuralize(engine.model(), s.example, g);
  const exec::Plan fast = check_one_network(engine, net);
  ASSERT_GE(fast.rule_groups.size(), 2u);
  EXPECT_TRUE(fast.rule_groups[0].direct.dense);
  EXPECT_TRUE(fast.rule_groups[1].direct.dense);
}

// The pairs are those listed by ok(I, J) facts (value 1, a factor of the product): not a
// product of independent domains, so no block, and the scores of each query are a subset.
TEST(PlanShortcuts, PairsRestrictedByAnotherLiteral) {
  const int n = 12;
  auto allowed = [](int i, int j) { return (i * 5 + j * 3) % 4 != 0 || i == j; };
  std::string facts;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (allowed(i, j)) facts += (facts.empty() ? "" : ", ") + ("ok(" + std::to_string(i) + ", " + std::to_string(j) + ")");
  facts += ".";  // one example: one line
  const exec::Plan plan = check(attention(", ok(I, J)"), {sequence(0, n, allowed, facts)});
  EXPECT_FALSE(plan.rule_groups.at(0).direct.dense);
}

// Atoms with two inputs each (two rules derive them) or with an activation are not passed
// through: the shortcut declines and the general path groups them (the same plan).
TEST(PlanShortcuts, AtomsWithTwoInputsKeepTheirGroup) {
  const std::string text =
      "a(I) :- q(I).\n"
      "a(I) :- k(I).\n"
      "b(I) :- a(I), v(I). [combination=elproduct]\n"
      "out(I) :- b(I).\n"
      "b/1 [activation=sigmoid]\n";
  train::Engine engine(parse_template(text));
  const Sequence s = sequence(0, 6, all);
  const logic::GroundSample g = logic::ground(engine.program(), s.example, zoo::sequence_queries("out", s.n));
  const neural::SampleNetwork net = neural::neuralize(engine.model(), s.example, g);
  const exec::Plan fast = check_one_network(engine, net);
  EXPECT_EQ(fast.atom_groups.size(), 2u);  // a (two inputs), b (sigmoid)
  const Pass x = run(fast, engine);
  const double want = 1 / (1 + std::exp(-(entry(0, 0, 2, 1) + entry(1, 0, 2, 1)) * entry(2, 0, 2, 1)));
  EXPECT_NEAR(x.ws.values[fast.outputs.at(2).offset + 1], want, 1e-12);
}

}  // namespace

// Input values of different shapes: the one-pass scan stops and the per-input path names
// the literal, with the same message either way.
TEST(PlanShortcuts, InputsOfDifferentShapesAreRefusedNamingTheLiteral) {
  train::Engine engine(parse_template("h(I) :- y(I), x(I). [combination=elproduct]\nout(I) :- h(I).\n"));
  const ExampleAst ex = parse_examples("<[1, 2]> x(0), <[1, 2, 3]> x(1), <[1, 1]> y(0), <[1, 1]> y(1).").at(0);
  const logic::GroundSample g = logic::ground(engine.program(), ex, zoo::sequence_queries("out", 2));
  const neural::SampleNetwork net = neural::neuralize(engine.model(), ex, g);
  std::string messages[2];
  for (int shortcuts = 0; shortcuts < 2; ++shortcuts) {
    try {
      exec::build_plan(engine.model(), {&net}, exec::PlanOptions{.in_order_shortcuts = shortcuts == 1});
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      messages[shortcuts] = e.message();
    }
  }
  EXPECT_NE(messages[1].find("literal x(I): input values have different shapes 2x1 and 3x1"), std::string::npos)
      << messages[1];
  EXPECT_EQ(messages[0], messages[1]);
}
