#include <gtest/gtest.h>

#include <memory>

#include "lrnn/diagnostics.hpp"

namespace {

TEST(Diagnostics, FormatsFileLineColumnAndCaret) {
  auto file = std::make_shared<lrnn::SourceFile>(lrnn::SourceFile{"t.lrnn", "a :- b.\nc :- d e.\n"});
  lrnn::Span span{file, 2, 8, 1};
  lrnn::Error err(lrnn::ErrorKind::Parse, span, "expected ',' or '.'");
  EXPECT_EQ(std::string(err.what()), "t.lrnn:2:8: error: expected ',' or '.'\nc :- d e.\n       ^");
  EXPECT_EQ(err.message(), "expected ',' or '.'");
}

TEST(Diagnostics, LongLinesAreWindowedAroundTheColumn) {
  std::string line(5000, 'a');
  auto file = std::make_shared<lrnn::SourceFile>(lrnn::SourceFile{"big.txt", line});
  lrnn::Error err(lrnn::ErrorKind::Parse, lrnn::Span{file, 1, 4000, 1}, "boom");
  std::string text = err.what();
  EXPECT_LT(text.size(), 400u);
  EXPECT_NE(text.find("big.txt:1:4000: error: boom"), std::string::npos);
}

TEST(Diagnostics, UnknownSpanHasNoPosition) {
  lrnn::Error err(lrnn::ErrorKind::Runtime, "no position");
  EXPECT_EQ(std::string(err.what()), "error: no position");
}

}  // namespace
