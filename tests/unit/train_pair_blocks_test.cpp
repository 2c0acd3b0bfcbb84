// Preparing a dataset grounds attention's score and weighted-sum rules as blocks
// (train::Engine::prepare with neural::pair_block_rules). The same template with an `@true`
// in its score rule (which changes nothing it computes, but is no block) grounds them rule
// by rule: both must train to the same weights and evaluate to the same outputs, and the
// block model's outputs must be those of its inspected network (which grounds without blocks).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "logic/grounder.hpp"
#include "lrnn/lrnn.hpp"
#include "lrnn/syntax.hpp"
#include "neural/network.hpp"
#include "train/engine.hpp"

namespace {

std::string attention_template(const std::string& mask, bool as_block) {
  return "<0.5> s.\n"
         "q(I) :- $wq={3,2} x(I).\nk(I) :- $wk={3,2} x(I).\nv(I) :- $wv={3,2} x(I).\n"
         "w(I, J) :- s, k(J)^T, q(I)" + mask + (as_block ? "" : ", @true") +
         ". [combination=product, aggregation=softmax(J)]\n"
         "a(I) :- w(I, J), v(J). [combination=product, aggregation=sum]\n"
         "out(I) :- $wo={1,3} a(I). [activation=sigmoid]\n";
}

// Sequences of 3..9 positions with 2-d inputs; out(i) is 1 where the input's first entry is positive.
lrnn::Dataset sequences() {
  std::string examples, queries;
  for (int s = 0; s < 6; ++s) {
    const int n = 3 + (s * 5) % 7;
    std::string facts, targets;
    for (int i = 0; i < n; ++i) {
      const double a = std::sin(1.7 * s + 0.9 * i), b = std::cos(0.4 * s - 1.1 * i);
      facts += (i ? ", <[" : "<[") + std::to_string(a) + ", " + std::to_string(b) + "]> x(" + std::to_string(i) + ")";
      targets += (i ? ", " : "") + std::string(a > 0 ? "1" : "0") + " out(" + std::to_string(i) + ")";
    }
    examples += "s" + std::to_string(s) + " :- " + facts + ".\n";
    queries += "s" + std::to_string(s) + " :- " + targets + ".\n";
  }
  return lrnn::Dataset::from_text(examples, queries);
}

lrnn::Settings settings() {
  lrnn::Settings s;
  s.epochs = 3;
  s.batch_size = 2;
  s.seed = 7;
  return s;
}

size_t block_rules(const std::string& text) {
  lrnn::train::Engine engine(lrnn::parse_template(text));
  return lrnn::neural::pair_block_rules(engine.model(), engine.program()).size();
}

TEST(TrainPairBlocks, TemplatesAreBlocksOrNot) {
  EXPECT_EQ(block_rules(attention_template(", @leq(J, I)", true)), 1u);
  EXPECT_EQ(block_rules(attention_template(", @leq(J, I)", false)), 0u);
  // The pair atoms pass their value through: not with an activation, nor under `product`
  // (which the plan refuses for a matrix value, a shape only the plan knows).
  EXPECT_EQ(block_rules(attention_template("", true) + "w/2 [activation=sigmoid]\n"), 0u);
  EXPECT_EQ(block_rules(attention_template("", true) + "w/2 [combination=product]\n"), 0u);
  EXPECT_EQ(block_rules(attention_template("", true) + "w/2 [combination=elproduct]\n"), 1u);
}

TEST(TrainPairBlocks, BlocksTrainAsTheRulesDo) {
  const lrnn::Dataset data = sequences();
  for (const std::string mask : {"", ", @leq(J, I)", ", @sub(I, J, D), @geq(D, 0), @leq(D, 1)"}) {
    SCOPED_TRACE("mask '" + mask + "'");
    std::string block_text = attention_template(mask, true), rule_text = attention_template(mask, false);
    if (mask.find('D') != std::string::npos)
      for (std::string* t : {&block_text, &rule_text}) t->replace(t->find("softmax(J)"), 10, "softmax(J, D)");
    lrnn::Model blocks(lrnn::Template::from_string(block_text), settings());
    lrnn::Model rules(lrnn::Template::from_string(rule_text), settings());
    const lrnn::TrainReport a = blocks.train(data), b = rules.train(data);
    ASSERT_EQ(a.history.size(), b.history.size());
    for (size_t e = 0; e < a.history.size(); ++e) EXPECT_NEAR(a.history[e].train.loss, b.history[e].train.loss, 1e-10);
    const auto pa = blocks.parameters(), pb = rules.parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t p = 0; p < pa.size(); ++p)
      for (size_t e = 0; e < pa[p].values.size(); ++e)
        EXPECT_NEAR(pa[p].values[e], pb[p].values[e], 1e-10) << pa[p].name << "[" << e << "]";
    // The trained block model against its own inspection (grounded without blocks): the
    // first sample's outputs out(0), out(1), ... come first.
    const auto outputs = blocks.forward(data);
    const lrnn::GroundNetwork net = blocks.network(data, 0);
    size_t checked = 0;
    for (const lrnn::GroundNetwork::Atom& atom : net.atoms) {
      if (atom.text.rfind("out(", 0) != 0) continue;
      const size_t i = std::stoul(atom.text.substr(4));
      ASSERT_EQ(atom.value.size(), outputs.at(i).size());
      EXPECT_NEAR(atom.value[0], outputs[i][0], 1e-12) << atom.text;
      ++checked;
    }
    EXPECT_GT(checked, 2u);
  }
}

}  // namespace
