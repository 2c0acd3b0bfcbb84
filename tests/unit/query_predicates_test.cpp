// A query whose predicate nothing defines is an error naming it and the closest defined
// predicate (issue 14: a typo used to evaluate to 0 with loss 1 and no warning).
#include <gtest/gtest.h>

#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"

namespace {

std::string error_of(const std::string& tmpl, const std::string& examples, const std::string& queries = "") {
  try {
    lrnn::Model model(lrnn::Template::from_string(tmpl));
    model.evaluate(lrnn::Dataset::from_text(examples, queries));
  } catch (const lrnn::Error& e) {
    return e.what();
  }
  return "evaluated";
}

TEST(QueryPredicates, AnUndefinedQueryPredicateIsAnErrorWithASuggestion) {
  std::string msg = error_of("{1} predict :- {1} a.", "a.", "1.0 predcit.");
  EXPECT_NE(msg.find("<queries>:1:5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("query predicate predcit/0 is defined by no rule head"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean predict/0?"), std::string::npos) << msg;
  // arity is part of the predicate
  msg = error_of("{1} p(X) :- {1} a(X).", "a(x).", "1.0 p(x, y).");
  EXPECT_NE(msg.find("p/2 is defined by no rule head"), std::string::npos) << msg;
}

TEST(QueryPredicates, RuleHeadsTemplateFactsAndExampleFactsDefineQueries) {
  EXPECT_EQ(error_of("{1} predict :- {1} a.", "a.", "1.0 predict."), "evaluated");
  EXPECT_EQ(error_of("{1} predict :- {1} a.\n<0.5> t.", "a.", "1.0 t."), "evaluated");
  EXPECT_EQ(error_of("{1} predict :- {1} a.", "a, b.", "1.0 b."), "evaluated");
  // defined but not derivable in this example: a legitimate 0 (docs/semantics.md)
  EXPECT_EQ(error_of("{1} predict :- {1} a.", "b.", "0.0 predict."), "evaluated");
}

}  // namespace
