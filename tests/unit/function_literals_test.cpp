// PyNeuraLogic's function literals in rule bodies (issue 11), as its module zoo prints them:
// `tanh(h(T))` is h's value through tanh, `transpose(k(J))` is `k(J)^T`, `reverse(a(X))` is
// `~a(X)`; an activation may take a parameter (`leakyrelu(0.2)`).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"
#include "single_output.hpp"
#include "lrnn/syntax.hpp"

namespace {

using lrnn_test::output_of;

std::string error_of(const std::string& tmpl) {
  try {
    lrnn::parse_template(tmpl);
  } catch (const lrnn::Error& e) {
    return e.what();
  }
  return "parsed";
}

TEST(FunctionLiterals, AnActivationOnABodyLiteral) {
  EXPECT_DOUBLE_EQ(output_of("h(T) :- tanh(a(T)).", "<0.3> a(1).", "1.0 h(1)."), std::tanh(0.3));
  // with a weight outside it, next to a plain literal, nested
  EXPECT_DOUBLE_EQ(output_of("h(T) :- <2.0> sigmoid(a(T)), b(T).", "<0.3> a(1), <0.5> b(1).", "1.0 h(1)."),
                   2.0 / (1.0 + std::exp(-0.3)) + 0.5);
  EXPECT_DOUBLE_EQ(output_of("h(T) :- exp(tanh(a(T))).", "<0.3> a(1).", "1.0 h(1)."), std::exp(std::tanh(0.3)));
}

TEST(FunctionLiterals, TransposeAndReverseAreTheLiteralsOwnForms) {
  lrnn::TemplateAst ast = lrnn::parse_template("h(X) :- transpose(k(X)), reverse(a(X)).");
  ASSERT_EQ(ast.rules.size(), 1u);  // no helper rules
  EXPECT_TRUE(ast.rules[0].body[0].transposed);
  EXPECT_TRUE(ast.rules[0].body[1].soft_negated);
  EXPECT_DOUBLE_EQ(output_of("h(X) :- reverse(a(X)).", "<0.25> a(1).", "1.0 h(1)."), 0.75);
}

TEST(FunctionLiterals, OneHelperRulePerFunctionAndPredicateAfterTheWrittenRules) {
  lrnn::TemplateAst ast = lrnn::parse_template("h(X) :- tanh(a(X, Y)).\ng :- tanh(a(1, 2)), tanh(b).\n");
  ASSERT_EQ(ast.rules.size(), 3u);  // h, g, then a__tanh/2 once; tanh(b) is the atom tanh/1 of b
  EXPECT_EQ(lrnn::print_rule(ast.rules[2]), "a__tanh(A1, A2) :- a(A1, A2). [activation=tanh]");
  EXPECT_EQ(lrnn::print_rule(ast.rules[1]), "g :- a__tanh(1, 2), tanh(b).");
}

TEST(FunctionLiterals, AClashWithAPredicateOfTheTemplateIsAnError) {
  const std::string msg = error_of("h(X) :- tanh(a(X)).\na__tanh(X) :- b(X).");
  EXPECT_NE(msg.find("a__tanh/1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rename"), std::string::npos) << msg;
  EXPECT_NE(error_of("h :- tanh(@lt(1, 2)).").find("needs a literal with a value"), std::string::npos);
}

TEST(FunctionLiterals, LeakyReluTakesItsSlope) {
  EXPECT_DOUBLE_EQ(output_of("h :- a. [activation=leakyrelu(0.2)]", "<-2.0> a.", "1.0 h."), -0.4);
  EXPECT_DOUBLE_EQ(output_of("h :- a. [activation=leaky_relu(alpha=0.5)]", "<-2.0> a.", "1.0 h."), -1.0);
  EXPECT_DOUBLE_EQ(output_of("h :- a. [activation=leaky_relu]", "<-2.0> a.", "1.0 h."), -0.02);
  try {
    output_of("h :- a. [activation=leaky_relu(steep)]", "<-2.0> a.", "1.0 h.");
    FAIL() << "accepted a slope that is not a number";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("finite number"), std::string::npos) << e.what();
  }
}

TEST(FunctionLiterals, PyNeuraLogicsSpellingsOfSoftmaxVariablesAndBooleans) {
  const std::string examples = "<0.5> s(1, 1), <2.0> s(1, 2), <-1.0> s(1, 3), <3.0> v(1), <5.0> v(2), <7.0> v(3).";
  const std::string rule = "a(I) :- s(I, J), v(J). [combination=product, aggregation=";
  const double written = output_of(rule + "softmax(J)]", examples, "1.0 a(1).");
  EXPECT_DOUBLE_EQ(output_of(rule + "softmax(agg_terms=[J])]", examples, "1.0 a(1)."), written);
  EXPECT_NE(written, output_of(rule + "sum]", examples, "1.0 a(1)."));
  EXPECT_DOUBLE_EQ(output_of("h :- a(X). [duplicate_grounding=True, learnable=False]", "a(1), a(2).", "1.0 h."), 1.0);
}

TEST(FunctionLiterals, SliceAsPyNeuraLogicPrintsIt) {
  // rows=[0, 2] and cols=... (Python's Ellipsis: the whole axis)
  const std::string ex = "<[[1, 2, 3], [4, 5, 6], [7, 8, 9]]> m.";
  EXPECT_DOUBLE_EQ(output_of("h :- m. [activation=slice(rows=[1, 2], cols=(2, 3))]", ex, "1.0 h."), 6.0);
  lrnn::Model model(lrnn::Template::from_string("h :- m. [activation=slice(rows=[1, 3], cols=...)]"));
  lrnn::Evaluation ev = model.evaluate(lrnn::Dataset::from_text(ex, "h."));
  EXPECT_EQ(ev.outputs.at(0).value, (std::vector<double>{4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(ev.outputs.at(0).rows, 2);
  EXPECT_EQ(ev.outputs.at(0).cols, 3);
}

TEST(FunctionLiterals, AnAtomMayCombineItsRulesByProduct) {
  // PyNeuraLogic's GCN normalisation: edge_count(I, J) = deg(J) * deg(I) from two rules
  const std::string tmpl =
      "cnt(I, J) :- e(X, J), *n(I). [aggregation=sum]\n"
      "cnt(I, J) :- e(X, I), *n(J). [aggregation=sum]\n"
      "cnt/2 [activation=inverse, combination=product]\n";
  const std::string ex = "e(1, 2), e(3, 2), e(2, 1), e(1, 1), e(2, 3), e(3, 3), e(1, 3), n(1), n(2), n(3).";
  // deg(2) = 2 (edges into 2), deg(3) = 3: 1 / (2 * 3)
  EXPECT_DOUBLE_EQ(output_of(tmpl, ex, "1.0 cnt(3, 2)."), 1.0 / 6.0);
  EXPECT_DOUBLE_EQ(output_of("h :- a. h :- b.\nh/0 [combination=elproduct]", "<[1, 2]> a, <[3, 4]> b.", "h."), 3.0);
  try {
    output_of("h :- a. h :- b.\nh/0 [combination=product]", "<[1, 2]> a, <[3, 4]> b.", "h.");
    FAIL() << "multiplied vectors of an atom's rules as if they were scalars";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("elproduct"), std::string::npos) << e.what();
  }
}

}  // namespace
