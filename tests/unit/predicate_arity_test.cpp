// Arity is part of the predicate (docs/language.md): a declaration `shape/1 [...]` applies to
// shape/1 only and does not forbid shape/2 (issue 11: PyNeuraLogic's Trains template
// declares shape/1 and uses shape/2; lrnn refused it with "wrong arity").
#include <gtest/gtest.h>

#include <cmath>

#include "lrnn/model.hpp"
#include "lrnn/syntax.hpp"

namespace {

TEST(PredicateArity, ADeclarationOfPSlash1LeavesPSlash2Alone) {
  const std::string tmpl =
      "shape/1 [activation=sigmoid]\n"
      "{1} shape(X) :- {1} a(X).\n"
      "{1} shape(X, Y) :- {1} a(X), {1} a(Y).\n"
      "{1} q :- shape(X), shape(X, Y).\n";
  ASSERT_NO_THROW(lrnn::parse_template(tmpl));
  lrnn::Model model(lrnn::Template::from_string(tmpl));
  lrnn::Dataset data = lrnn::Dataset::from_text("<2> a(x).", "1.0 q.");
  for (const lrnn::Parameter& p : model.parameters()) model.set_parameter(p.name, std::vector<double>(p.values.size(), 1.0));
  // shape/1 has the declared sigmoid: sigmoid(1*2) ; shape/2 stays identity: 2 + 2.
  lrnn::GroundNetwork net = model.network(data, 0);
  double shape1 = -1, shape2 = -1;
  for (const auto& a : net.atoms) {
    if (a.text == "shape(x)") shape1 = a.value[0];
    if (a.text == "shape(x, x)") shape2 = a.value[0];
  }
  EXPECT_NEAR(shape1, 1.0 / (1.0 + std::exp(-2.0)), 1e-12);
  EXPECT_NEAR(shape2, 4.0, 1e-12);
}

}  // namespace
