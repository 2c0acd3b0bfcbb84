// Metadata is checked when a template is compiled (issue 14): unknown keys, non-boolean
// flags, repeated keys and `softmax()` are errors at their position, never ignored.
#include <gtest/gtest.h>

#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"

namespace {

std::string error_of(const std::string& tmpl) {
  try {
    lrnn::Model model(lrnn::Template::from_string(tmpl, "t.lrnn"));
  } catch (const lrnn::Error& e) {
    return e.what();
  }
  return "compiled";
}

TEST(TemplateMetadata, UnknownKeysAreErrorsWithTheClosestKey) {
  std::string msg = error_of("{1} q :- {1} a. [activaton=tanh]");
  EXPECT_NE(msg.find("t.lrnn:1:18: error: unknown metadata key 'activaton' for a rule; did you mean 'activation'?"),
            std::string::npos) << msg;
  msg = error_of("{1} q :- {1} a. [colour=blue]");
  EXPECT_NE(msg.find("unknown metadata key 'colour' for a rule (valid: activation"), std::string::npos) << msg;
  msg = error_of("{1} q :- {1} a.\nq/0 [aggregation=sum]");
  EXPECT_NE(msg.find("unknown metadata key 'aggregation' for predicate q/0"), std::string::npos) << msg;
}

TEST(TemplateMetadata, FlagsRepeatsAndEmptySoftmaxAreErrors) {
  EXPECT_NE(error_of("{1} q :- {1} a. [learnable=maybe]").find("'learnable' takes true or false, found 'maybe'"),
            std::string::npos);
  EXPECT_NE(error_of("{1} q :- {1} a. [activation=tanh, activation=relu]").find("'activation' is given twice"),
            std::string::npos);
  EXPECT_NE(error_of("{1} q :- {1} a. [aggregation=softmax()]").find("softmax() names no variables"),
            std::string::npos);
  EXPECT_EQ(error_of("{1} q :- {1} a. [learnable=false, duplicate_grounding=true, transformation=tanh]"), "compiled");
}

}  // namespace
