// Rules that pass their one input on unchanged, planned as aliases of it
// (PlanOptions::alias_identity_rules, exec/plan_alias_rules.cpp). Checked on a GIN layer
// (with and without batch norm: `in(I) :- x(I)` and `in(I) :- agg(I)` alias, the weighted
// rules and the neighbour sum do not), planned per sample and as one plan of both samples,
// in the training options: the aliased plan has two rule groups and two slots per node
// fewer, and its outputs, value gradients of the facts and parameter gradients equal the
// unaliased plan's bit for bit (the order of additions is unchanged in GIN). Rules that are
// not the identity on their input (an offset, an activation, a weight, two groundings per
// head, a negation) keep their groups, and the plans agree at 1e-12.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "exec/plan.hpp"
#include "lrnn/syntax.hpp"
#include "plan_pass.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

std::string gin(bool batch_norm) {
  return std::string(
             "agg(I) :- x(J), *edge(J, I). [aggregation=sum]\n"
             "in(I) :- x(I).\n"
             "in(I) :- agg(I).\n"
             "mlp(I) :- {4,2} in(I).\n"
             "mlp/1 {4}\n") +
         (batch_norm ? "mlp/1 [normalization=batch]\n" : "") +
         "mlp/1 [activation=relu]\n"
         "h(I) :- {3,4} mlp(I).\n"
         "h/1 {3}\n"
         "h/1 [activation=relu]\n"
         "agg2(I) :- h(J), *edge(J, I). [aggregation=sum]\n"
         "in2(I) :- h(I).\n"
         "in2(I) :- agg2(I).\n"
         "o :- {1,3} in2(I). [aggregation=sum]\n"
         "o :- {1,2} x(I). [aggregation=sum]\n";
}

// Rules that look alike but are not the identity on their input.
const char* kNotIdentity =
    "a(I) :- x(I). [activation=sigmoid]\n"
    "b(I) :- {2,2} x(I).\n"
    "c(I) :- x(J), *edge(I, J).\n"
    "d(I) :- ~y(I).\n"
    "e(I) :- x(I).\n"
    "e/1 {2}\n"
    "o :- {1,2} a(I), {1,2} b(I), {1,2} c(I), d(I), {1,2} e(I). [aggregation=sum]\n";

const char* kExamples =
    "<1.0> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[-0.75, 0.4]> x(3), <0.3> y(1), <0.6> y(2), <0.1> y(3), "
    "edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2).\n"
    "<0.0> o :- <[0.2, 0.6]> x(1), <[-0.3, 0.9]> x(2), <[0.7, -0.1]> x(3), <[0.1, 0.1]> x(4), <0.2> y(1), "
    "<0.9> y(2), <0.5> y(3), <0.4> y(4), edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2), edge(3, 4), edge(4, 3), "
    "edge(4, 1).\n";

struct Planned {
  train::Engine engine;
  train::PreparedSet set;
  explicit Planned(const std::string& text) : engine(parse_template(text, "t")) {
    set = engine.prepare(train::pair_samples(parse_examples(kExamples, "e"), {}));
  }
  exec::Plan plan(std::vector<size_t> samples, bool alias) const {
    std::vector<const neural::SampleNetwork*> nets;
    for (size_t s : samples) nets.push_back(&set.networks[s]);
    exec::PlanOptions options{.fact_gradients = false, .in_place_atoms = true, .alias_identity_rules = alias};
    return exec::build_plan(engine.model(), nets, options);
  }
};

// Outputs and parameter gradients of the two plans: equal (exact) or within 1e-12.
void expect_same(const exec::Plan& a, const exec::Plan& b, const train::Engine& engine, bool exact) {
  const test::PlanPass pa = test::run_plan_pass(a, engine), pb = test::run_plan_pass(b, engine);
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t o = 0; o < a.outputs.size(); ++o) {
    const double ya = pa.ws.values[a.outputs[o].offset], yb = pb.ws.values[b.outputs[o].offset];
    EXPECT_GT(std::abs(ya), 1e-3);
    if (exact) EXPECT_EQ(ya, yb);
    else EXPECT_NEAR(ya, yb, 1e-12 * std::abs(ya));
  }
  size_t nonzero = 0;
  for (size_t i = 0; i < pa.param_grads.size(); ++i) {
    nonzero += pa.param_grads[i] != 0.0;
    if (exact) EXPECT_EQ(pa.param_grads[i], pb.param_grads[i]) << "parameter entry " << i;
    else EXPECT_NEAR(pa.param_grads[i], pb.param_grads[i], 1e-12 * (1 + std::abs(pa.param_grads[i])));
  }
  EXPECT_GT(nonzero, 8u);  // real gradients (beside ReLU zeros and batch norm's fixed statistics)
}

void check_gin(bool batch_norm) {
  Planned p(gin(batch_norm));
  for (const std::vector<size_t>& samples : {std::vector<size_t>{0}, {1}, {0, 1}}) {
    const exec::Plan plain = p.plan(samples, false), aliased = p.plan(samples, true);
    // in <- x, in <- agg, in2 <- h, in2 <- agg2: four groups and their copies gone.
    EXPECT_EQ(aliased.rule_groups.size() + 4, plain.rule_groups.size());
    uint32_t nodes = 0;
    for (size_t s : samples) nodes += s == 0 ? 3 : 4;
    // The copies of x (2 wide), agg (2), h (3) and agg2 (3) per node.
    EXPECT_EQ(aliased.num_values + nodes * (2 + 2 + 3 + 3), plain.num_values);
    expect_same(plain, aliased, p.engine, true);
  }
}

TEST(AliasRules, GinLayerInputsAreAliases) { check_gin(false); }
TEST(AliasRules, GinLayerWithBatchNorm) { check_gin(true); }

TEST(AliasRules, RulesThatChangeTheirInputKeepTheirGroups) {
  Planned p(kNotIdentity);
  for (const std::vector<size_t>& samples : {std::vector<size_t>{0}, {0, 1}}) {
    const exec::Plan plain = p.plan(samples, false), aliased = p.plan(samples, true);
    // Only e(I) :- x(I) aliases (e's offset belongs to its atom, not the rule).
    EXPECT_EQ(aliased.rule_groups.size() + 1, plain.rule_groups.size());
    expect_same(plain, aliased, p.engine, false);
  }
}

// A GraphSAGE layer as PyNeuraLogic writes it (weights on the heads): the self rule's head
// weight reads its input's rows where they lie (DirectProduct::input_rows), as does a rule
// of one data fact per head; a rule whose heads all read one row, one with an activation,
// and the neighbour average keep their sums. Same outputs and
// parameter gradients as without aliasing and as the plain plan, to 1e-12.
const char* kHeadWeighted =
    "e(I) :- {3,2} x(I).\n"
    "{3,3} s(I) :- e(I).\n"
    "{3,3} s(I) :- e(J), *edge(J, I). [aggregation=avg]\n"
    "s/1 {3} [activation=relu]\n"
    "{2,2} f(I) :- x(I).\n"
    "{2,3} p(I) :- e(J), *pair(I, J).\n"
    "{3,3} n(I) :- e(I). [activation=tanh]\n"
    "o :- {1,3} s(I), {1,2} f(I), {1,2} p(I), {1,3} n(I). [aggregation=sum]\n";

TEST(AliasRules, HeadWeightsReadTheirOneInputsRowsWhereTheyLie) {
  train::Engine engine(parse_template(kHeadWeighted, "t"));
  const train::PreparedSet set = engine.prepare(train::pair_samples(
      parse_examples("<1.0> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[-0.75, 0.4]> x(3), edge(1, 2), "
                     "edge(2, 1), edge(2, 3), edge(3, 2), pair(1, 1), pair(2, 1), pair(3, 1).\n"
                     "<0.0> o :- <[0.2, 0.6]> x(1), <[-0.3, 0.9]> x(2), <[0.7, -0.1]> x(3), <[0.1, 0.1]> x(4), "
                     "edge(1, 2), edge(2, 3), edge(3, 4), edge(4, 1), pair(1, 4), pair(2, 4), pair(3, 4), "
                     "pair(4, 4).\n",
                     "e"),
      {}));
  auto rule_of = [&](const exec::Plan& plan, bool in_place) {
    std::vector<uint32_t> rules;
    for (const exec::RuleGroup& G : plan.rule_groups)
      if (G.direct.input_rows == in_place) rules.push_back(G.rule);
    std::sort(rules.begin(), rules.end());
    return rules;
  };
  for (const std::vector<size_t>& samples : {std::vector<size_t>{0}, {1}, {0, 1}}) {
    std::vector<const neural::SampleNetwork*> nets;
    for (size_t s : samples) nets.push_back(&set.networks[s]);
    exec::PlanOptions options{.fact_gradients = false, .in_place_atoms = true, .alias_identity_rules = true};
    const exec::Plan aliased = exec::build_plan(engine.model(), nets, options);
    options.alias_identity_rules = false;
    const exec::Plan kept = exec::build_plan(engine.model(), nets, options);
    exec::PlanOptions plain_options;
    plain_options.disabled_rewrites.set();
    const exec::Plan plain = exec::build_plan(engine.model(), nets, plain_options);
    EXPECT_EQ(rule_of(aliased, true), (std::vector<uint32_t>{1, 3})) << "s(I) :- e(I) and f(I) :- x(I)";
    EXPECT_TRUE(rule_of(kept, true).empty());
    EXPECT_TRUE(rule_of(plain, true).empty());
    EXPECT_LT(aliased.num_values, kept.num_values);  // no rows of s's and f's sums
    expect_same(kept, aliased, engine, false);
    expect_same(plain, aliased, engine, false);
  }
}

}  // namespace
