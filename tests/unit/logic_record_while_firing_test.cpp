// GroundingOptions::record_while_firing: the ground rules of non-recursive rules recorded
// by the least model's one firing, and heads that every substitution makes distinct
// appended without hashing, must give exactly the GroundSample of the general path (every
// head hashed, every rule enumerated again): same atoms in the same order, same ground
// rules in the same order, same bindings and query atoms. Checked on attention (full,
// causal, windowed, strided, two heads), on rules whose heads repeat or are also facts or
// also derived by another rule, on dedup, recursion, the active domain, @op_eval inputs, a
// membership test on an appended relation (its whole-tuple index is built late), with
// and without queries, and on the ground-rule limit.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "logic/grounder.hpp"
#include "logic/program.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "logic_sample_compare.hpp"

namespace {

using namespace lrnn;
using namespace lrnn::logic;

GroundSample ground_with(const Program& p, const ExampleAst& ex, const std::vector<Literal>& queries,
                         bool record, size_t max_ground_rules = kDefaultMaxGroundRules) {
  GroundingOptions o;
  o.record_while_firing = record;
  o.max_ground_rules = max_ground_rules;
  return ground(p, ex, queries, o);
}

// Grounds both ways and compares every array; returns the recorded path's ground rules.
size_t expect_same_grounding(const std::string& rules, const std::string& facts, const std::string& queries = "") {
  SCOPED_TRACE(rules);
  Program p(parse_template(rules));
  const ExampleAst ex = parse_examples(facts)[0];
  std::vector<Literal> qs;
  if (!queries.empty()) qs = parse_queries(queries)[0].queries;
  const GroundSample a = ground_with(p, ex, qs, true);
  const GroundSample b = ground_with(p, ex, qs, false);
  testutil::expect_same_sample(a, b);
  return a.stats.ground_rules;
}

// q, k, v facts of positions 0..n-1 (values do not matter to grounding).
std::string sequence(int n) {
  std::string text;
  for (int i = 0; i < n; ++i)
    for (const char* p : {"q", "k", "v"}) text += std::string("<[1, 2]> ") + p + "(" + std::to_string(i) + "), ";
  return text + "<[1, 1]> extra(0).";
}

std::string out_queries(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += (i ? ", out(" : "out(") + std::to_string(i) + ")";
  return text + ".";
}

std::string attention(const std::string& mask, const std::string& over) {
  return "<0.5> d_k.\nw(I, J) :- d_k, k(J)^T, q(I)" + mask + ". [combination=product, aggregation=softmax(" + over +
         ")]\nout(I) :- w(I, J), v(J). [combination=product, aggregation=sum]\n";
}

TEST(LogicRecordWhileFiring, AttentionMasksGroundAsTheGeneralPath) {
  const int n = 23;
  for (bool with_queries : {true, false}) {
    const std::string qs = with_queries ? out_queries(n) : "";
    EXPECT_EQ(expect_same_grounding(attention("", "J"), sequence(n), qs), size_t(2 * n * n));
    EXPECT_EQ(expect_same_grounding(attention(", @leq(J, I)", "J"), sequence(n), qs), size_t(n * (n + 1)));
    expect_same_grounding(attention(", @sub(I, J, D), @geq(D, 0), @leq(D, 4)", "J, D"), sequence(n), qs);
    expect_same_grounding(attention(", @sub(I, J, D), @mod(D, 3, 0)", "J, D"), sequence(n), qs);
  }
  // Two heads (separate weights) summed into one output, as the zoo's multi-head rules.
  const std::string two_heads =
      "<0.5> d_k.\n"
      "q0(I) :- $wq0={2,2} q(I).\nk0(J) :- $wk0={2,2} k(J).\nv0(J) :- $wv0={2,2} v(J).\n"
      "q1(I) :- $wq1={2,2} q(I).\nk1(J) :- $wk1={2,2} k(J).\nv1(J) :- $wv1={2,2} v(J).\n"
      "w0(I, J) :- d_k, k0(J)^T, q0(I), @leq(J, I). [combination=product, aggregation=softmax(J)]\n"
      "w1(I, J) :- d_k, k1(J)^T, q1(I). [combination=product, aggregation=softmax(J)]\n"
      "a0(I) :- w0(I, J), v0(J). [combination=product, aggregation=sum]\n"
      "a1(I) :- w1(I, J), v1(J). [combination=product, aggregation=sum]\n"
      "out(I) :- $o0={2,2} a0(I), $o1={2,2} a1(I).\n";
  expect_same_grounding(two_heads, sequence(n), out_queries(n));
  expect_same_grounding(two_heads, sequence(n));
}

TEST(LogicRecordWhileFiring, HeadsThatRepeatOrAlreadyExistAreHashed) {
  const std::string facts = "a(1), a(2), a(3), b(2), b(3), b(4), p(3), e(1, 2), e(2, 3), e(3, 1), e(3, 4).";
  // Two rules with one head (the second must find the first one's unhashed rows), a head
  // that is also a fact, heads repeating over an existential variable.
  expect_same_grounding("h(X) :- a(X).\nh(X) :- b(X).\np(X) :- a(X).\nr(X) :- e(X, Y).\n", facts);
  // A membership test on a relation appended unhashed, and a join on it.
  expect_same_grounding("w(I, J) :- a(I), b(J).\nz(I) :- a(I), w(I, I).\ny(I) :- w(I, J), e(J, I).\n", facts);
  // Dedup (a hidden literal's variable), recursion next to a non-recursive reader, the
  // active domain (a head variable no body literal binds), @op_eval inputs.
  expect_same_grounding("h(X) :- a(X), *e(X, Y).\n", facts);
  expect_same_grounding("path(X, Y) :- e(X, Y).\npath(X, Y) :- e(X, Z), path(Z, Y).\nreach(X) :- path(X, 1), a(X).\n",
                        facts, "reach(X).");
  expect_same_grounding("t(X, Y) :- a(X).\n", facts);
  expect_same_grounding("s(X) :- a(X), b(Y), @add_eval(X, Y).\n", facts);
  // Constants and a repeated variable in the head; arithmetic binding a variable.
  expect_same_grounding("c(X, 7, X) :- a(X).\nd(X, Z) :- a(X), b(Y), @add(X, Y, Z).\n", facts);
}

TEST(LogicRecordWhileFiring, TheGroundRuleLimitStopsBothPaths) {
  Program p(parse_template(attention("", "J")));
  const ExampleAst ex = parse_examples(sequence(10))[0];
  for (bool record : {true, false}) {
    // The model's substitutions (100 + 100) fit; the ground rules of both rules do not.
    EXPECT_THROW(ground_with(p, ex, parse_queries(out_queries(10))[0].queries, record, 150), Error);
    EXPECT_EQ(ground_with(p, ex, parse_queries(out_queries(10))[0].queries, record, 201).stats.ground_rules, 200u);
  }
}

}  // namespace

namespace {

// Relevance pruning keeps exactly the atoms reachable from the query atoms through ground
// rules (head to inputs), whether the rules are recursive (a walk over ground rules by
// head) or not (one pass per rule set from the last stratum down): checked against
// reachability computed here on the unpruned grounding.
std::set<std::string> reachable_atoms(const Program& p, const ExampleAst& ex, const std::vector<Literal>& qs) {
  GroundingOptions all;
  all.prune = false;
  const GroundSample s = ground(p, ex, qs, all);
  std::vector<char> seen(s.num_atoms(), 0);
  std::vector<uint32_t> stack;
  for (const auto& atoms : s.query_atoms)
    for (uint32_t a : atoms)
      if (!seen[a]) seen[a] = 1, stack.push_back(a);
  while (!stack.empty()) {
    const uint32_t a = stack.back();
    stack.pop_back();
    for (const GroundRuleSet& r : s.rules)
      for (size_t g = 0; g < r.size(); ++g)
        if (r.head[g] == a)
          for (uint32_t i = 0; i < r.n_inputs; ++i)
            if (!seen[r.inputs[g * r.n_inputs + i]]) seen[r.inputs[g * r.n_inputs + i]] = 1, stack.push_back(r.inputs[g * r.n_inputs + i]);
  }
  std::set<std::string> out;
  for (uint32_t a = 0; a < s.num_atoms(); ++a)
    if (seen[a]) out.insert(p.atom_text(s, a));
  return out;
}

std::set<std::string> kept_atoms(const Program& p, const ExampleAst& ex, const std::vector<Literal>& qs) {
  const GroundSample s = ground(p, ex, qs);
  std::set<std::string> out;
  for (uint32_t a = 0; a < s.num_atoms(); ++a) out.insert(p.atom_text(s, a));
  return out;
}

TEST(LogicPruning, KeepsExactlyWhatTheQueriesReach) {
  const ExampleAst ex = parse_examples(
      "a(1), a(2), a(3), a(4), b(2), b(3), e(1, 2), e(2, 3), e(3, 1), e(4, 4), e(5, 6).")[0];
  const std::string layered =
      "h(X) :- a(X), b(X).\ng(X) :- h(X), e(X, Y).\nf(X) :- g(X), a(X).\nu(X) :- e(X, Y).\nt(X) :- u(X), g(X).\n";
  const std::string recursive =
      "path(X, Y) :- e(X, Y).\npath(X, Y) :- e(X, Z), path(Z, Y).\nr(X) :- path(X, 1), a(X).\ns(X) :- path(X, X).\n";
  for (const auto& [rules, queries] : std::vector<std::pair<std::string, std::string>>{
           {layered, "f(2)."}, {layered, "t(X)."}, {layered, "f(X), u(5)."}, {recursive, "r(X)."}, {recursive, "s(4)."}}) {
    SCOPED_TRACE(rules + queries);
    Program p(parse_template(rules));
    const auto qs = parse_queries(queries)[0].queries;
    const std::set<std::string> expected = reachable_atoms(p, ex, qs);
    EXPECT_FALSE(expected.empty());
    EXPECT_EQ(kept_atoms(p, ex, qs), expected);
  }
}

}  // namespace
