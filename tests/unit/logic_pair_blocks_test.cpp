// GroundingOptions::pair_blocks: attention's score rule and weighted sum grounded as one
// PairBlock must stand for exactly the general grounding: the same atoms but the pair
// atoms w(I, J), and the block's pairs expanded must be the general path's score and sum
// ground rules (compared by atom text: atom numbering differs), with the same stats.
// Where an example or a template does not allow a block, the grounding must be the
// general one atom for atom.
#include <gtest/gtest.h>

#include <algorithm>
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

// Facts pred(i) for each position, with a 2-vector value (values do not matter to grounding).
std::string facts_of(const std::string& pred, const std::vector<int>& positions) {
  std::string text;
  for (int i : positions) text += "<[1, 2]> " + pred + "(" + std::to_string(i) + "), ";
  return text;
}

std::vector<int> range(int begin, int end) {
  std::vector<int> out;
  for (int i = begin; i < end; ++i) out.push_back(i);
  return out;
}

// q, k and v over positions 0..n-1.
std::string sequence(int n) { return facts_of("q", range(0, n)) + facts_of("k", range(0, n)) + facts_of("v", range(0, n)); }

// Facts written "f, g, " or "f, g" as an example: "f, g."
std::string example_text(std::string facts) {
  while (!facts.empty() && (facts.back() == ' ' || facts.back() == ',')) facts.pop_back();
  return facts + ".";
}

std::string attention(const std::string& mask) {
  return "<0.5> d_k.\nw(I, J) :- d_k, k(J)^T, q(I)" + mask +
         ". [combination=product, aggregation=softmax(J)]\na(I) :- w(I, J), v(J). [combination=product, aggregation=sum]\n";
}

// "a(0), ..., a(n-1)." (`more` queries before the period).
std::string a_queries(int n, const std::string& more = "") {
  std::string text;
  for (int i = 0; i < n; ++i) text += (i ? ", a(" : "a(") + std::to_string(i) + ")";
  return text + more + ".";
}

// The index of the template rule whose head predicate is `head`.
uint32_t rule_of(const TemplateAst& ast, const std::string& head) {
  for (uint32_t r = 0; r < ast.rules.size(); ++r)
    if (ast.rules[r].head.predicate == head) return r;
  ADD_FAILURE() << "no rule for " << head;
  return 0;
}

struct Case {
  TemplateAst ast;
  std::unique_ptr<Program> program;
  ExampleAst example;
  std::vector<Literal> queries;
  std::vector<PairBlockRules> pairs;

  Case(const std::string& rules, const std::string& facts, const std::string& queries_text,
       const std::vector<std::pair<std::string, std::string>>& score_and_sum = {{"w", "a"}})
      : ast(parse_template(rules)), program(std::make_unique<Program>(ast)), example(parse_examples(example_text(facts))[0]) {
    if (!queries_text.empty()) queries = parse_queries(queries_text)[0].queries;
    for (const auto& [score, sum] : score_and_sum) pairs.push_back({rule_of(ast, score), rule_of(ast, sum)});
  }
  GroundSample general(size_t max_ground_rules = kDefaultMaxGroundRules) const {
    GroundingOptions o;
    o.max_ground_rules = max_ground_rules;
    return ground(*program, example, queries, o);
  }
  GroundSample blocks(size_t max_ground_rules = kDefaultMaxGroundRules) const {
    GroundingOptions o;
    o.max_ground_rules = max_ground_rules;
    o.pair_blocks = pairs;
    return ground(*program, example, queries, o);
  }
  bool is_pair_atom(const GroundSample& s, uint32_t atom) const {
    for (const PairBlockRules& pr : pairs)
      if (s.atom_pred[atom] == program->compiled_rules()[pr.score_rule].head_pred) return true;
    return false;
  }
};

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string ground_rule_text(uint32_t rule, const std::string& head, const std::vector<std::string>& inputs) {
  return std::to_string(rule) + ": " + head + " :- " + join(inputs);
}

// Every ground rule of the sample as text, the blocks' pairs expanded (a score rule
// w(I, J) :- inputs and a sum rule a(I) :- w(I, J), v(J) per pair), sorted.
std::vector<std::string> ground_rule_texts(const Program& p, const GroundSample& s) {
  std::vector<std::string> out;
  for (const GroundRuleSet& set : s.rules) {
    for (size_t g = 0; g < set.size(); ++g) {
      std::vector<std::string> inputs;
      for (uint32_t i = 0; i < set.n_inputs; ++i) inputs.push_back(p.atom_text(s, set.inputs[g * set.n_inputs + i]));
      out.push_back(ground_rule_text(set.rule, p.atom_text(s, set.head[g]), inputs));
    }
  }
  for (const PairBlock& b : s.pair_blocks) {
    const std::string w = p.predicate_name(p.compiled_rules()[b.score_rule].head_pred);
    for (size_t r = 0; r < b.rows(); ++r) {
      for (size_t c = b.first_of(r); c < b.first_of(r) + b.band_of(r); ++c) {
        const std::string pair =
            w + "(" + p.constant_text(b.row_symbol[r]) + ", " + p.constant_text(b.column_symbol[c]) + ")";
        std::vector<std::string> score;
        for (uint32_t in : b.score_inputs)
          score.push_back(in == kRowInput      ? p.atom_text(s, b.row_atom[r])
                          : in == kColumnInput ? p.atom_text(s, b.column_atom[c])
                                               : p.atom_text(s, in));
        out.push_back(ground_rule_text(b.score_rule, pair, score));
        std::vector<std::string> sum(2, p.atom_text(s, b.value_atom[c]));
        sum[b.sum_pair_input] = pair;
        out.push_back(ground_rule_text(b.sum_rule, p.atom_text(s, b.head_atom[r]), sum));
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> atom_texts(const Case& c, const GroundSample& s, bool without_pairs) {
  std::vector<std::string> out;
  for (uint32_t a = 0; a < s.num_atoms(); ++a)
    if (!without_pairs || !c.is_pair_atom(s, a)) out.push_back(c.program->atom_text(s, a));
  std::sort(out.begin(), out.end());
  return out;
}

bool includes(const std::vector<std::string>& all, const std::vector<std::string>& part) {
  return std::includes(all.begin(), all.end(), part.begin(), part.end());
}

// Grounds with and without blocks and checks that the blocks stand for the general
// grounding; returns the block sample. `partly_queried`: queries reach only some heads of
// a block, which is then kept whole (more atoms and ground rules than the general path's).
GroundSample expect_blocks_match(const Case& c, bool partly_queried = false) {
  const GroundSample general = c.general();
  const GroundSample blocks = c.blocks();
  const auto atoms = atom_texts(c, blocks, false), general_atoms = atom_texts(c, general, true);
  const auto rules = ground_rule_texts(*c.program, blocks), general_rules = ground_rule_texts(*c.program, general);
  EXPECT_EQ(atoms, atom_texts(c, blocks, true));  // no pair atom
  if (partly_queried) {
    EXPECT_TRUE(includes(atoms, general_atoms));
    EXPECT_TRUE(includes(rules, general_rules));
    EXPECT_GT(rules.size(), general_rules.size());
  } else {
    EXPECT_EQ(atoms, general_atoms);
    EXPECT_EQ(rules, general_rules);
  }
  for (const GroundRuleSet& set : blocks.rules)
    for (const PairBlock& b : blocks.pair_blocks) EXPECT_TRUE(set.rule != b.score_rule && set.rule != b.sum_rule);
  for (const PairBlock& b : blocks.pair_blocks) EXPECT_EQ(b.level, c.program->compiled_rules()[b.sum_rule].stratum);
  if (partly_queried) return blocks;
  EXPECT_EQ(blocks.query_atoms.size(), general.query_atoms.size());
  for (size_t q = 0; q < std::min(blocks.query_atoms.size(), general.query_atoms.size()); ++q) {
    std::vector<std::string> a, b;
    for (uint32_t x : blocks.query_atoms[q]) a.push_back(c.program->atom_text(blocks, x));
    for (uint32_t x : general.query_atoms[q]) b.push_back(c.program->atom_text(general, x));
    EXPECT_EQ(a, b);
  }
  EXPECT_EQ(blocks.stats.facts, general.stats.facts);
  EXPECT_EQ(blocks.stats.derived, general.stats.derived);
  EXPECT_EQ(blocks.stats.ground_rules, general.stats.ground_rules);
  return blocks;
}

// A grounding that must not use a block: atom for atom the general one.
void expect_general(const Case& c) {
  const GroundSample a = c.blocks();
  const GroundSample b = c.general();
  EXPECT_TRUE(a.pair_blocks.empty());
  testutil::expect_same_sample(a, b);
}

std::vector<uint32_t> bands(const PairBlock& b) {
  std::vector<uint32_t> out;
  for (size_t r = 0; r < b.rows(); ++r) out.push_back(b.band_of(r));
  return out;
}

TEST(LogicPairBlocks, MasksGroundAsOneBlock) {
  const int n = 7;
  for (bool with_queries : {true, false}) {
    SCOPED_TRACE(with_queries);
    const std::string qs = with_queries ? a_queries(n) : "";
    GroundSample full = expect_blocks_match(Case(attention(""), sequence(n), qs));
    ASSERT_EQ(full.pair_blocks.size(), 1u);
    EXPECT_EQ(full.pair_blocks[0].rows(), size_t(n));
    EXPECT_EQ(full.pair_blocks[0].columns(), size_t(n));
    EXPECT_TRUE(full.pair_blocks[0].band.empty());
    EXPECT_EQ(full.stats.ground_rules, size_t(2 * n * n));
    // Causal: row i pairs with keys 0..i; strictly: 0..i-1 (row 0 pairs with none).
    for (const std::string mask : {", @leq(J, I)", ", @geq(I, J)"}) {
      GroundSample causal = expect_blocks_match(Case(attention(mask), sequence(n), qs));
      ASSERT_EQ(causal.pair_blocks.size(), 1u);
      EXPECT_EQ(bands(causal.pair_blocks[0]), (std::vector<uint32_t>{1, 2, 3, 4, 5, 6, 7}));
      EXPECT_EQ(causal.stats.ground_rules, size_t(n * (n + 1)));
    }
    for (const std::string mask : {", @lt(J, I)", ", @gt(I, J)"}) {
      GroundSample strict = expect_blocks_match(Case(attention(mask), sequence(n), qs));
      ASSERT_EQ(strict.pair_blocks.size(), 1u);
      EXPECT_EQ(bands(strict.pair_blocks[0]), (std::vector<uint32_t>{1, 2, 3, 4, 5, 6}));
      EXPECT_EQ(strict.pair_blocks[0].row_symbol.front(), strict.pair_blocks[0].column_symbol[1]);
    }
    // A head that is also an example fact: one atom, a fact, and the block's head.
    GroundSample fact = expect_blocks_match(Case(attention(", @leq(J, I)"), sequence(n) + "<[3, 3]> a(2)", qs));
    ASSERT_EQ(fact.pair_blocks.size(), 1u);
    EXPECT_NE(fact.atom_example_fact[fact.pair_blocks[0].head_atom[2]], kNone);
    EXPECT_EQ(fact.atom_example_fact[fact.pair_blocks[0].head_atom[3]], kNone);
  }
}

std::vector<uint32_t> firsts(const PairBlock& b) {
  std::vector<uint32_t> out;
  for (size_t r = 0; r < b.rows(); ++r) out.push_back(b.first_of(r));
  return out;
}

// A sliding window: key J within [I - hi, I - lo] of query I (offset D = I - J).
std::string window_attention(const std::string& bounds) {
  return "<0.5> d_k.\nw(I, J) :- d_k, k(J)^T, q(I), @sub(I, J, D)" + bounds +
         ". [combination=product, aggregation=softmax(J, D)]\na(I) :- w(I, J), v(J). [combination=product, "
         "aggregation=sum]\n";
}

TEST(LogicPairBlocks, WindowsGroundAsOneBandedBlock) {
  const int n = 7;
  for (bool with_queries : {true, false}) {
    SCOPED_TRACE(with_queries);
    const std::string qs = with_queries ? a_queries(n) : "";
    // 0 <= i - j <= 2: row i pairs with keys i-2..i.
    GroundSample w = expect_blocks_match(Case(window_attention(", @geq(D, 0), @leq(D, 2)"), sequence(n), qs));
    ASSERT_EQ(w.pair_blocks.size(), 1u);
    EXPECT_EQ(bands(w.pair_blocks[0]), (std::vector<uint32_t>{1, 2, 3, 3, 3, 3, 3}));
    EXPECT_EQ(firsts(w.pair_blocks[0]), (std::vector<uint32_t>{0, 0, 0, 1, 2, 3, 4}));
    // Strict bounds, written in the other order: 1 <= i - j < 3; row 0 sees no key, and key
    // 6 no query (it is no column).
    GroundSample strict = expect_blocks_match(Case(window_attention(", @lt(D, 3), @gt(D, 0)"), sequence(n), qs));
    ASSERT_EQ(strict.pair_blocks.size(), 1u);
    EXPECT_EQ(bands(strict.pair_blocks[0]), (std::vector<uint32_t>{1, 2, 2, 2, 2, 2}));
    EXPECT_EQ(firsts(strict.pair_blocks[0]), (std::vector<uint32_t>{0, 0, 1, 2, 3, 4}));
    EXPECT_EQ(strict.pair_blocks[0].columns(), size_t(n - 1));
    // A look-ahead window (-2 <= i - j <= -1): keys before every window are no columns.
    GroundSample ahead = expect_blocks_match(Case(window_attention(", @geq(D, -2), @leq(D, -1)"), sequence(n), qs));
    ASSERT_EQ(ahead.pair_blocks.size(), 1u);
    EXPECT_EQ(ahead.pair_blocks[0].columns(), size_t(n - 1));
    EXPECT_EQ(firsts(ahead.pair_blocks[0]).front(), 0u);
  }
  // Queries 5 and 20 over keys 0..24 (0 <= i - j <= 2): keys 6..17 and 21..24 lie in no
  // window and are no columns, so each band stays one run of the remaining columns.
  const std::string gap = facts_of("q", {5, 20}) + facts_of("k", range(0, 25)) + facts_of("v", range(0, 25));
  GroundSample apart = expect_blocks_match(Case(window_attention(", @geq(D, 0), @leq(D, 2)"), gap, "a(5), a(20)."));
  ASSERT_EQ(apart.pair_blocks.size(), 1u);
  EXPECT_EQ(apart.pair_blocks[0].columns(), 6u);
  EXPECT_EQ(apart.pair_blocks[0].value_atom.size(), 6u);
  EXPECT_EQ(firsts(apart.pair_blocks[0]), (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(bands(apart.pair_blocks[0]), (std::vector<uint32_t>{3, 3}));
  // Keys out of order, or a window of non-integer positions: the general path.
  const std::string window = window_attention(", @geq(D, 0), @leq(D, 2)");
  expect_general(Case(window, facts_of("q", {0, 1, 2, 3}) + facts_of("k", {3, 1, 2}) + facts_of("v", {1, 2, 3}), ""));
  expect_general(Case(window, "<[1, 2]> q(a), <[1, 2]> k(b), <[1, 2]> v(b)", ""));
  // Not a window: the offset the other way, a bound on a key, an offset used elsewhere.
  for (const std::string& rules : {
           std::string("<0.5> d_k.\nw(I, J) :- d_k, k(J)^T, q(I), @sub(J, I, D), @leq(D, 2).\n"),
           std::string("<0.5> d_k.\nw(I, J) :- d_k, k(J)^T, q(I), @sub(I, J, D), @leq(J, 2).\n"),
           std::string("<0.5> d_k.\nw(I, J) :- d_k, k(J)^T, q(I), @sub(I, J, D), e(D).\n"),
           std::string("<0.5> d_k.\nw(I, J) :- d_k, k(J)^T, q(I), @sub(I, J, D).\n"),
       }) {
    SCOPED_TRACE(rules);
    Case c(rules + "a(I) :- w(I, J), v(J).\n", sequence(4) + "e(1)", "");
    EXPECT_FALSE(pair_block_structure(*c.program, c.pairs[0].score_rule, c.pairs[0].sum_rule));
    expect_general(c);
  }
}

TEST(LogicPairBlocks, TwoHeadsOverDerivedProjectionsAreTwoBlocks) {
  const std::string two_heads =
      "<0.5> d_k.\n"
      "q0(I) :- $wq0={2,2} q(I).\nk0(J) :- $wk0={2,2} k(J).\nv0(J) :- $wv0={2,2} v(J).\n"
      "q1(I) :- $wq1={2,2} q(I).\nk1(J) :- $wk1={2,2} k(J).\nv1(J) :- $wv1={2,2} v(J).\n"
      "w0(I, J) :- d_k, k0(J)^T, q0(I), @leq(J, I). [combination=product, aggregation=softmax(J)]\n"
      "w1(I, J) :- q1(I), k1(J)^T, d_k. [combination=product, aggregation=softmax(J)]\n"
      "a0(I) :- w0(I, J), v0(J). [combination=product, aggregation=sum]\n"
      "a1(I) :- v1(J), w1(I, J). [combination=product, aggregation=sum]\n"
      "out(I) :- $o0={2,2} a0(I), $o1={2,2} a1(I).\n";
  const int n = 6;
  const std::vector<std::pair<std::string, bool>> queries_partly = {
      {"out(0), out(1), out(2), out(3), out(4), out(5).", false}, {"", false}, {"out(2), out(5).", true}};
  for (const auto& [qs, partly] : queries_partly) {
    SCOPED_TRACE(qs);
    const GroundSample s = expect_blocks_match(Case(two_heads, sequence(n), qs, {{"w0", "a0"}, {"w1", "a1"}}), partly);
    ASSERT_EQ(s.pair_blocks.size(), 2u);
    EXPECT_EQ(bands(s.pair_blocks[0]), (std::vector<uint32_t>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(s.pair_blocks[1].pairs(), size_t(n * n));
    EXPECT_EQ(s.pair_blocks[1].score_inputs[0], kRowInput);
    EXPECT_EQ(s.pair_blocks[1].score_inputs[1], kColumnInput);
    EXPECT_EQ(s.pair_blocks[1].sum_pair_input, 1u);
    EXPECT_EQ(s.pair_blocks[0].sum_pair_input, 0u);
  }
}

TEST(LogicPairBlocks, CrossAttentionAndEmptyBands) {
  // Queries over 0..5, keys and values over 0..8.
  const std::string cross = facts_of("q", range(0, 6)) + facts_of("k", range(0, 9)) + facts_of("v", range(0, 9));
  const GroundSample full = expect_blocks_match(Case(attention(""), cross, ""));
  ASSERT_EQ(full.pair_blocks.size(), 1u);
  EXPECT_EQ(full.pair_blocks[0].rows(), 6u);
  EXPECT_EQ(full.pair_blocks[0].columns(), 9u);
  const GroundSample causal = expect_blocks_match(Case(attention(", @leq(J, I)"), cross, a_queries(6)));
  EXPECT_EQ(bands(causal.pair_blocks.at(0)), (std::vector<uint32_t>{1, 2, 3, 4, 5, 6}));
  // Queries 0..5 under keys 3..8: rows 0, 1, 2 allow no key and are no rows (no a(0..2)).
  const std::string late_keys = facts_of("q", range(0, 6)) + facts_of("k", range(3, 9)) + facts_of("v", range(0, 9));
  const GroundSample late = expect_blocks_match(Case(attention(", @leq(J, I)"), late_keys, ""));
  ASSERT_EQ(late.pair_blocks.size(), 1u);
  EXPECT_EQ(bands(late.pair_blocks[0]), (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(late.pair_blocks[0].row_symbol, (std::vector<uint32_t>{late.pair_blocks[0].column_symbol[0],
                                                                   late.pair_blocks[0].column_symbol[1],
                                                                   late.pair_blocks[0].column_symbol[2]}));
  // Keys in any order without a comparison: columns in the order of the k facts.
  const std::string shuffled = facts_of("q", {0, 1}) + facts_of("k", {3, 1, 2}) + facts_of("v", {1, 2, 3});
  const GroundSample any_order = expect_blocks_match(Case(attention(""), shuffled, ""));
  ASSERT_EQ(any_order.pair_blocks.size(), 1u);
  Program p(parse_template(attention("")));
  EXPECT_EQ(p.constant_text(any_order.pair_blocks[0].column_symbol[0]), "3");
}

TEST(LogicPairBlocks, QueriesKeepABlockWholeOrDropIt) {
  const int n = 5;
  // One head queried: the block is computed whole, so every head and input is kept.
  const GroundSample one = expect_blocks_match(Case(attention(", @leq(J, I)"), sequence(n), "a(1)."), true);
  ASSERT_EQ(one.pair_blocks.size(), 1u);
  EXPECT_EQ(one.pair_blocks[0].rows(), size_t(n));
  EXPECT_EQ(one.stats.ground_rules, size_t(n * (n + 1)));
  // A query no head supports: no block.
  const std::string gated = attention("") + "out(I) :- a(I), gate(I).\n";
  const GroundSample none = expect_blocks_match(Case(gated, sequence(n) + "gate(1)", "out(3)."));
  EXPECT_TRUE(none.pair_blocks.empty());
  EXPECT_EQ(none.num_atoms(), 0u);
}

TEST(LogicPairBlocks, ExamplesThatAllowNoBlockGroundAsTheGeneralPath) {
  const int n = 5;
  const std::string causal = attention(", @leq(J, I)");
  // A key without a value.
  expect_general(Case(attention(""), facts_of("q", range(0, n)) + facts_of("k", range(0, n)) + facts_of("v", {0, 1, 3, 4}), ""));
  // A query on the pair atoms, with and without the heads queried.
  expect_general(Case(causal, sequence(n), "w(3, 1)."));
  expect_general(Case(causal, sequence(n), a_queries(n, ", w(X, Y)")));
  // A pair atom given as an example fact.
  expect_general(Case(causal, sequence(n) + "<[1, 1]> w(0, 0)", ""));
  // Keys not ascending under the comparison.
  expect_general(Case(causal, facts_of("q", {0, 1, 2, 3}) + facts_of("k", {3, 1, 2}) + facts_of("v", {1, 2, 3}), ""));
  // The ground literal's atom missing (no d_k).
  expect_general(Case("w(I, J) :- d_k, k(J)^T, q(I).\na(I) :- w(I, J), v(J).\n", sequence(n), a_queries(n)));
}

TEST(LogicPairBlocks, TemplatesThatAreNoBlockGroundAsTheGeneralPath) {
  const std::string sum = "a(I) :- w(I, J), v(J).\n";
  const std::vector<std::string> no_blocks = {
      "<0.5> d_k.\nw(I, J) :- d_k, k(J), q(I), e(I).\n" + sum,       // an extra literal of I
      "<0.5> d_k.\nw(I, J) :- d_k, k(J), q(I), @leq(I, J).\n" + sum,  // the comparison the other way
      "<0.5> d_k.\nw(I, J) :- d_k, k(J), q(I), @neq(I, J).\n" + sum,  // another builtin
      "w(I, J) :- k(J), q(I), @leq(J, I), @lt(J, I).\n" + sum,         // two comparisons
      "w(I, J) :- k(J), *q(I).\n" + sum,                                // a hidden literal
      "w(I, J) :- k(J), q(I), !e(I).\n" + sum,                          // negation
      "w(I, J) :- k(J), q(I), e(_).\n" + sum,                           // another variable
      "w(I, J) :- k(J), q(I), @add_eval(I, J).\n" + sum,                // a value builtin
      "w(I, J) :- k(J), q(I).\na(I) :- w(I, J), v(J), e(I).\n",        // an extra literal in the sum
      "w(I, J) :- k(J), q(I).\na(I) :- w(J, I), v(J).\n",              // the pair read transposed
      attention("") + "z(I, J) :- w(I, J).\n",                         // w read by another rule
      attention("") + "w(I, J) :- e(I), e(J).\n",                      // w derived by another rule
      attention("") + "a(I) :- e(I).\n",                               // a derived by another rule
      attention("") + "path(X, Y) :- e(X, Y).\npath(X, Y) :- e(X, Z), path(Z, Y).\n",  // recursion
  };
  const std::string facts = sequence(4) + "e(1), e(2)";
  for (const std::string& rules : no_blocks) {
    SCOPED_TRACE(rules);
    Case c(rules, facts, "");
    EXPECT_FALSE(pair_block_structure(*c.program, c.pairs[0].score_rule, c.pairs[0].sum_rule));
    expect_general(c);
  }
  Case block(attention(", @gt(I, J)"), facts, "");
  EXPECT_TRUE(pair_block_structure(*block.program, block.pairs[0].score_rule, block.pairs[0].sum_rule));
  EXPECT_FALSE(pair_block_structure(*block.program, block.pairs[0].sum_rule, block.pairs[0].score_rule));
}

TEST(LogicPairBlocks, TheGroundRuleLimitStopsBothPaths) {
  Case c(attention(""), sequence(10), a_queries(10));
  // The model's substitutions (100 + 100) do not fit in 150.
  // Both name the sum rule's least model (the score rule's 100 substitutions fit).
  std::string block_error, general_error;
  try {
    c.blocks(150);
  } catch (const Error& e) {
    block_error = e.what();
  }
  try {
    c.general(150);
  } catch (const Error& e) {
    general_error = e.what();
  }
  EXPECT_NE(block_error.find("least model of a "), std::string::npos) << block_error;
  EXPECT_EQ(block_error, general_error);
  EXPECT_EQ(c.blocks(201).stats.ground_rules, 200u);
  EXPECT_EQ(c.general(201).stats.ground_rules, 200u);
  EXPECT_EQ(c.blocks(201).pair_blocks.size(), 1u);
}

}  // namespace
