// Range scans (logic/range_scan.hpp): a one-variable literal scanned while comparison
// builtins confine its variable to an integer interval reads only the rows in it. The
// ground rules must be exactly those of the full scan, in the same order: checked against
// the same rules written so that no interval can be derived (the limits compared with are
// variables bound by facts, not constants), on facts
// that mix integers with a non-integer number and a string (always read, still tested),
// and against pairs counted by brute force.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "logic/grounder.hpp"
#include "logic/program.hpp"
#include "logic/range_scan.hpp"
#include "lrnn/syntax.hpp"

namespace {

using namespace lrnn;
using namespace lrnn::logic;

// Positions 0..n-1 of q and k, plus k(2.5) and k(a) and q(b) when `odd` (values no
// interval covers: they must still be read and tested).
ExampleAst positions(int n, bool odd) {
  std::string text;  // one example: its facts separated by commas
  for (int i = 0; i < n; ++i) text += "q(" + std::to_string(i) + "), k(" + std::to_string(i) + "), ";
  if (odd) text += "k(2.5), k(a), q(b), ";
  text += "lo(3), hi(9), zero(0), three(3), four(4), minus_two(-2).";
  return parse_examples(text)[0];
}

// Rule 0's ground rules as text, in order: the head's arguments and those of its first two
// inputs (the rule's k and q literals; the plain forms have extra inputs).
std::vector<std::string> ground_rules_of(const std::string& rules, const ExampleAst& ex) {
  Program p(parse_template(rules));
  const GroundSample s = ground(p, ex, {});
  auto args = [&](uint32_t atom) {
    std::string t;
    for (uint32_t k = s.atom_args_begin[atom]; k < s.atom_args_begin[atom + 1]; ++k)
      t += p.symbols().name(s.atom_args[k]) + ",";
    return t;
  };
  std::vector<std::string> out;
  for (const GroundRuleSet& r : s.rules) {
    if (r.rule != 0) continue;
    for (size_t g = 0; g < r.size(); ++g)
      out.push_back(args(r.head[g]) + "|" + args(r.inputs[g * r.n_inputs]) + "|" + args(r.inputs[g * r.n_inputs + 1]));
  }
  return out;
}

// Pairs (i, j) of q and k values (0..n-1, and 2.5 for k) with allowed(i, j).
template <class Allowed>
size_t brute_force(int n, Allowed allowed) {
  size_t pairs = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) pairs += allowed(double(i), double(j));
    pairs += allowed(double(i), 2.5);
  }
  return pairs;
}

void expect_same_ground_rules(const std::string& ranged, const std::string& plain, const ExampleAst& ex,
                              size_t expected) {
  const std::vector<std::string> a = ground_rules_of(ranged, ex), b = ground_rules_of(plain, ex);
  EXPECT_EQ(a.size(), expected);
  EXPECT_EQ(a, b);
}

TEST(RangeScan, SlidingWindowEqualsTheFullScan) {
  // 0 <= I - J <= 3: 4 keys per query but the first three, plus 2.5 for I = 3..5.
  const ExampleAst ex = positions(30, true);
  expect_same_ground_rules("w(I, J) :- k(J), q(I), @sub(I, J, D), @geq(D, 0), @leq(D, 3).",
                           "w(I, J) :- k(J), q(I), zero(Z), three(T), @sub(I, J, D), @geq(D, Z), @leq(D, T).", ex,
                           brute_force(30, [](double i, double j) { return i - j >= 0 && i - j <= 3; }));
}

TEST(RangeScan, StrictAndMirroredDifferencesEqualTheFullScan) {
  // D = J - I with -2 < D < 4, written with the constant on either side: J in I-1 .. I+3.
  const ExampleAst ex = positions(25, true);
  const size_t expected = brute_force(25, [](double i, double j) { return j - i > -2 && j - i < 4; });
  expect_same_ground_rules("w(I, J) :- q(I), k(J), @sub(J, I, D), @gt(D, -2), @lt(D, 4).",
                           "w(I, J) :- q(I), k(J), minus_two(M), four(F), @sub(J, I, D), @gt(D, M), @lt(D, F).", ex,
                           expected);
  expect_same_ground_rules("w(I, J) :- q(I), k(J), @sub(J, I, D), @lt(-2, D), @gt(4, D).",
                           "w(I, J) :- q(I), k(J), minus_two(M), four(F), @sub(J, I, D), @lt(M, D), @gt(F, D).", ex,
                           expected);
}

TEST(RangeScan, DirectComparisonsWithBoundVariablesEqualBruteForce) {
  // lo(A), hi(B) bind A = 3, B = 9; A <= J < B and J <= I: for each I, J in 3 .. min(I, 8).
  const ExampleAst ex = positions(20, false);
  // The same as differences compared with a variable zero, which no range sees.
  expect_same_ground_rules(
      "w(I, J) :- lo(A), hi(B), q(I), k(J), @geq(J, A), @lt(J, B), @leq(J, I).",
      "w(I, J) :- lo(A), hi(B), q(I), k(J), zero(Z), @sub(J, A, X), @geq(X, Z), @sub(B, J, Y), @gt(Y, Z), "
      "@sub(I, J, V), @geq(V, Z).",
      ex, brute_force(20, [](double i, double j) { return j >= 3 && j < 9 && j <= i && j != 2.5; }));
}

TEST(RangeScan, BoundsNeedBothSidesAndKnownBases) {
  Program p(parse_template(
      "w(I, J) :- q(I), k(J), @sub(I, J, D), @geq(D, 0), @leq(D, 3).\n"
      "c(I, J) :- q(I), k(J), @leq(J, I).\n"));
  std::vector<char> bound(p.compiled_rules()[0].var_names.size(), 0);
  const uint32_t i = 0, j = 1;  // rule variables in order of first occurrence: I, J, D
  ASSERT_EQ(p.rule_variables(0)[i], "I");
  ASSERT_EQ(p.rule_variables(0)[j], "J");
  EXPECT_TRUE(range_bounds(p.compiled_rules()[0], j, bound).empty());  // I not bound yet
  bound[i] = 1;
  const std::vector<RangeBound> window = range_bounds(p.compiled_rules()[0], j, bound);
  ASSERT_EQ(window.size(), 2u);  // J <= I - 0 and J >= I - 3
  EXPECT_TRUE(window[0].upper);
  EXPECT_EQ(window[0].offset, 0);
  EXPECT_FALSE(window[1].upper);
  EXPECT_EQ(window[1].offset, -3);
  // A causal mask alone bounds J from one side only: no range.
  std::vector<char> bound_c(p.compiled_rules()[1].var_names.size(), 0);
  bound_c[0] = 1;
  EXPECT_TRUE(range_bounds(p.compiled_rules()[1], 1, bound_c).empty());
}

}  // namespace
