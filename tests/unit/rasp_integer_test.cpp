// RASP integers are 64-bit and their overflow is an error, never undefined behaviour, a
// trap (SIGFPE on INT64_MIN % -1) or a hang (1 ^ 10^18 by repeated multiplication).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>

#include "lrnn/diagnostics.hpp"
#include "lrnn/rasp.hpp"

namespace {

using lrnn::rasp::Op;
using lrnn::rasp::Value;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();

int64_t int_of(const Value& v) { return std::get<int64_t>(v); }

std::string overflow_of(Op op, int64_t a, int64_t b) {
  try {
    lrnn::rasp::apply_value_op(op, Value(a), Value(b));
  } catch (const lrnn::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(RaspIntegers, OverflowIsAnErrorNamingTheOperation) {
  EXPECT_NE(overflow_of(Op::Add, kMax, 1).find("9223372036854775807 + 1 is outside the 64-bit range"), std::string::npos);
  EXPECT_NE(overflow_of(Op::Sub, kMin, 1).find("outside the 64-bit range"), std::string::npos);
  EXPECT_NE(overflow_of(Op::Mul, 3037000500, 3037000500).find("outside"), std::string::npos);
  EXPECT_NE(overflow_of(Op::Pow, 2, 63).find("2 ^ 63 is outside"), std::string::npos);
  EXPECT_THROW(lrnn::rasp::apply_value_unary(Op::Neg, Value(kMin)), lrnn::Error);
}

TEST(RaspIntegers, ExactResultsAtTheEdges) {
  EXPECT_EQ(int_of(lrnn::rasp::apply_value_op(Op::Add, Value(kMax - 1), Value(int64_t{1}))), kMax);
  EXPECT_EQ(int_of(lrnn::rasp::apply_value_op(Op::Pow, Value(int64_t{2}), Value(int64_t{62}))), int64_t{1} << 62);
  EXPECT_EQ(int_of(lrnn::rasp::apply_value_op(Op::Pow, Value(int64_t{-2}), Value(int64_t{63}))), kMin);
  EXPECT_EQ(int_of(lrnn::rasp::apply_value_op(Op::Pow, Value(int64_t{0}), Value(int64_t{2}))), 0);
  EXPECT_EQ(int_of(lrnn::rasp::apply_value_op(Op::Pow, Value(int64_t{0}), Value(int64_t{0}))), 1);
  EXPECT_EQ(int_of(lrnn::rasp::apply_value_op(Op::Pow, Value(int64_t{3}), Value(int64_t{5}))), 243);
  EXPECT_EQ(int_of(lrnn::rasp::apply_value_op(Op::Mod, Value(kMin), Value(int64_t{-1}))), 0);  // was SIGFPE
  EXPECT_EQ(int_of(lrnn::rasp::apply_value_op(Op::Mod, Value(int64_t{-7}), Value(int64_t{3}))), 2);  // Python's sign
}

TEST(RaspIntegers, HugePowersOfOneAndMinusOneAreImmediate) {
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(int_of(lrnn::rasp::apply_value_op(Op::Pow, Value(int64_t{1}), Value(int64_t{1000000000000000000}))), 1);
  EXPECT_EQ(int_of(lrnn::rasp::apply_value_op(Op::Pow, Value(int64_t{-1}), Value(int64_t{1000000000000000001}))), -1);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
}

TEST(RaspIntegers, TheRaspProgramsOfTheIssueEndWithAnErrorNotASignal) {
  EXPECT_THROW(lrnn::rasp::run(lrnn::rasp::parse_rasp("x = (9223372036854775807 + 1) + tokens_int;"),
                               lrnn::rasp::parse_input("12")),
               lrnn::Error);
  lrnn::rasp::Program p = lrnn::rasp::parse_rasp("x = (1 ^ 1000000000000000000) + tokens_int;");
  EXPECT_EQ(int_of(lrnn::rasp::run(p, lrnn::rasp::parse_input("12"))[0]), 2);
}

}  // namespace
