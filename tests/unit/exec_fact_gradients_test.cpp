// PlanOptions::fact_gradients off (the plans training builds): a TransformSum whose inputs
// are all data facts (a GCN's first layer) skips dL/dX, so the data facts' gradients stay
// zero, while every parameter gradient and every other value's gradient is the same, bit
// for bit, as the plan that computes them all. A layer over derived atoms keeps its input
// gradients, and so does every layer when the example facts are learnable (their
// gradients are read).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exec/plan.hpp"
#include "lrnn/syntax.hpp"
#include "plan_pass.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

const char* kTemplate =
    "h(X) :- $w={3,2} x(X).\n"
    "h(X) :- $w={3,2} x(Y), *edge(X, Y). [aggregation=sum]\n"
    "h/1 {3,1} [activation=relu]\n"
    "g(X) :- $u={3,3} h(X).\n"
    "g(X) :- $u={3,3} h(Y), *edge(X, Y). [aggregation=sum]\n"
    "g/1 {3,1} [activation=tanh]\n"
    "o :- {1,3} g(X). [aggregation=avg]\n";

// `open`/`close` wrap each node's value: "<", ">" fixed, "", "" learnable.
std::string examples(const std::string& open, const std::string& close) {
  return "<0.3> o :- " + open + "[0.5, -1.0]" + close + " x(1), " + open + "[1.0, 0.25]" + close + " x(2), " + open +
         "[-0.75, 0.4]" + close + " x(3), edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2).\n";
}

// The one sample's plan built both ways (the engine is neither copied nor moved: built here).
struct Plans {
  train::Engine engine{parse_template(kTemplate, "t")};
  train::PreparedSet set;
  exec::Plan full, training;

  explicit Plans(bool learnable_facts) {
    const std::string text = learnable_facts ? examples("", "") : examples("<", ">");
    set = engine.prepare(train::pair_samples(parse_examples(text, "e"), {}), kDefaultMaxGroundRules, learnable_facts);
    full = exec::build_plan(engine.model(), {&set.networks[0]});
    training = exec::build_plan(engine.model(), {&set.networks[0]}, exec::PlanOptions{.fact_gradients = false});
  }
};

// The transforms' input_gradients flags in rule group order (only those with a transform).
std::vector<bool> input_gradient_flags(const exec::Plan& plan) {
  std::vector<bool> flags;
  for (const exec::RuleGroup& G : plan.rule_groups)
    if (G.transform.enabled && G.transform.owns_transform) flags.push_back(G.transform.input_gradients);
  return flags;
}

TEST(FactGradients, FirstLayerSkipsInputGradientsAndNothingElseChanges) {
  const Plans p(false);
  // h's shared transform reads x (data facts), g's reads h, o's reads g.
  EXPECT_EQ(input_gradient_flags(p.full), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(input_gradient_flags(p.training), (std::vector<bool>{false, true, true}));
  const size_t data_end = p.full.data.size();
  ASSERT_EQ(data_end, 6u);  // three nodes of two features (edges have no value)
  const test::PlanPass a = test::run_plan_pass(p.full, p.engine), b = test::run_plan_pass(p.training, p.engine);
  EXPECT_EQ(a.ws.values, b.ws.values);
  EXPECT_EQ(a.param_grads, b.param_grads);
  ASSERT_EQ(a.ws.grads.size(), b.ws.grads.size());
  size_t nonzero_fact_grads = 0;
  for (size_t i = 0; i < a.ws.grads.size(); ++i) {
    if (i < data_end) {
      nonzero_fact_grads += a.ws.grads[i] != 0.0;
      EXPECT_EQ(b.ws.grads[i], 0.0) << "data fact value " << i;
    } else {
      EXPECT_EQ(a.ws.grads[i], b.ws.grads[i]) << "value " << i;
    }
  }
  EXPECT_EQ(nonzero_fact_grads, data_end);  // the full plan does compute them
}

TEST(FactGradients, LearnableExampleFactsKeepTheirs) {
  const Plans p(true);
  ASSERT_FALSE(p.training.example_fact_off.empty());
  EXPECT_EQ(input_gradient_flags(p.training), (std::vector<bool>{true, true, true}));
}

}  // namespace
