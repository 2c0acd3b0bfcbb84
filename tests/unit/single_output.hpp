// The value of the only query of a template on one example (tests of single numbers).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "lrnn/model.hpp"

namespace lrnn_test {

inline double output_of(const std::string& tmpl, const std::string& examples, const std::string& queries) {
  lrnn::Model model(lrnn::Template::from_string(tmpl));
  lrnn::Evaluation ev = model.evaluate(lrnn::Dataset::from_text(examples, queries));
  EXPECT_EQ(ev.outputs.size(), 1u);
  return ev.outputs.at(0).value.at(0);
}

}  // namespace lrnn_test
