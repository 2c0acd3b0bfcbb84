// Value sizes are bounded (issue 14): shapes whose entries overflowed `int` (SIGSEGV,
// "vector::_M_fill_insert") or would take gigabytes are refused with an error naming where
// they come from, before anything is allocated.
#include <gtest/gtest.h>

#include <string>

#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"
#include "lrnn/syntax.hpp"

namespace {

std::string error_of_training(const std::string& tmpl, const std::string& examples) {
  try {
    lrnn::Settings s;
    s.epochs = 1;
    lrnn::Model model(lrnn::Template::from_string(tmpl, "big.lrnn"), s);
    model.train(lrnn::Dataset::from_text(examples));
  } catch (const lrnn::Error& e) {
    return e.what();
  }
  return "trained";
}

TEST(ValueLimits, OversizedWeightsAreParseErrorsAtTheirPosition) {
  // fuzz_train (issue 32): a one-dimensional {n} passed unchecked, so a rule no network
  // uses made a 100M-entry weight and trained it at 4 GB.
  const std::string cases[] = {"{1,65536} q :- {65536,65536} a.", "q :- {46341,46341} a.", "q :- [2000000000|0:1] a.",
                               "h :- {3,2} a, {100000000}.\nq :- {1,1} a."};
  for (const std::string& text : cases) {
    std::string msg = error_of_training(text, "<1> q :- a.");
    EXPECT_NE(msg.find("big.lrnn:1:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("over the limit of 67108864 entries per value"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(lrnn::parse_template("q :- {8192,8192} a."));  // exactly the limit
  EXPECT_NO_THROW(lrnn::parse_template("q :- {67108864} a."));
}

TEST(ValueLimits, ShapesComputedFromLegalOnesAreChecked) {
  // A 65536-row column times a 65536-column row: each legal, the product 2^32 entries.
  std::string msg = error_of_training("h :- {65536,1} a.\ng :- {1,65536} a.\nq :- h, g. [combination=product]\n", "<1> q :- a.");
  EXPECT_NE(msg.find("over the limit"), std::string::npos) << msg;
}

}  // namespace
