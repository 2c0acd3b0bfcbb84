// PyNeuraLogic's value builtins @add_eval, @sub_eval, @mul_eval, @div_eval, @mod_eval,
// @max_eval, @min_eval (issue 11): `@op_eval(a, b)` holds for two numbers and is a neuron
// input whose value is a op b. Expected values were recorded from PyNeuraLogic 0.9.2 on the
// same templates and examples.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"
#include "single_output.hpp"

namespace {

using lrnn_test::output_of;

struct Case {
  const char* op;
  double expected;  // op(3, 2)
};

TEST(EvalBuiltins, EachOpIsTheValueOfItsLiteral) {
  for (const Case& c : {Case{"add", 5}, Case{"sub", 1}, Case{"mul", 6}, Case{"div", 1.5}, Case{"mod", 1},
                        Case{"max", 3}, Case{"min", 2}}) {
    // X is bound by nothing but the builtin: it ranges over the example's constants (3)
    const std::string tmpl = std::string("head(X) :- @") + c.op + "_eval(X, 2).";
    EXPECT_DOUBLE_EQ(output_of(tmpl, "val(3).", "1.0 head(3)."), c.expected) << c.op;
  }
}

TEST(EvalBuiltins, TheValueIsOneInputAmongOthers) {
  // recorded from PyNeuraLogic: 0.5 + 5, 2 * 0.5 + 5, and the average of (0.5 + 9, 1 + 4)
  EXPECT_DOUBLE_EQ(output_of("head(X) :- val(X), @add_eval(X, 2).", "<0.5> val(3).", "1.0 head(3)."), 5.5);
  EXPECT_DOUBLE_EQ(output_of("head(X) :- <2.0> val(X), @add_eval(X, 2).", "<0.5> val(3).", "1.0 head(3)."), 6.0);
  EXPECT_DOUBLE_EQ(output_of("head :- val(X), @mul_eval(X, X).", "<0.5> val(3), val(2).", "1.0 head."), 7.25);
}

TEST(EvalBuiltins, DivisionByZeroIsInfinityAndModuloByZeroDoesNotHold) {
  EXPECT_EQ(output_of("head(X) :- val(X), @div_eval(X, 0).", "<0.5> val(3).", "1.0 head(3)."),
            std::numeric_limits<double>::infinity());  // as PyNeuraLogic
  // no value, so the literal is false and head(3) is not derived: its output is 0
  EXPECT_EQ(output_of("head(X) :- val(X), @mod_eval(X, 0).", "<0.5> val(3).", "1.0 head(3)."), 0.0);
}

TEST(EvalBuiltins, ANonNumberMakesTheLiteralFalse) {
  EXPECT_EQ(output_of("head(X) :- val(X), @add_eval(X, 2).\nhead(X) :- val(X).", "<0.5> val(a).", "1.0 head(a)."),
            0.5);
}

TEST(EvalBuiltins, TheEvalAtomIsAnInputNeuronWithItsValue) {
  // out = w * (v + (3 + 2)) with w = 1
  lrnn::Model model(lrnn::Template::from_string("{1} head(X) :- val(X), @add_eval(X, 2)."));
  model.set_parameter(model.parameters().at(0).name, {1.0});
  lrnn::Evaluation ev = model.evaluate(lrnn::Dataset::from_text("<0.5> val(3).", "1.0 head(3)."));
  EXPECT_DOUBLE_EQ(ev.outputs.at(0).value.at(0), 5.5);
  lrnn::GroundNetwork net = model.network(lrnn::Dataset::from_text("<0.5> val(3).", "1.0 head(3)."), 0);
  bool seen = false;
  for (const auto& a : net.atoms) {
    if (a.text != "@add_eval(3, 2)") continue;
    seen = true;
    EXPECT_DOUBLE_EQ(a.value.at(0), 5.0);
  }
  EXPECT_TRUE(seen) << "the eval atom is an input neuron of the network";
}

TEST(EvalBuiltins, AWrongArityIsAnError) {
  try {
    lrnn::Template::from_string("head(X) :- val(X), @add_eval(X, 2, 3).");
    FAIL() << "accepted @add_eval with 3 arguments";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("add_eval"), std::string::npos) << e.what();
  }
}

}  // namespace
