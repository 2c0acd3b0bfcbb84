// The grounding engine on templates built in code: semi-naive against a naive fixpoint,
// ground-rule enumeration, dedup, relevance pruning, limits, builtins, negation.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "logic/flat_index.hpp"
#include "logic/grounder.hpp"
#include "logic/program.hpp"
#include "logic/relation.hpp"
#include "logic_test_util.hpp"
#include "lrnn/syntax.hpp"

namespace {

using namespace lrnn;
using namespace lrnn::logic;
using lrnn::testutil::example;
using lrnn::testutil::lit;
using lrnn::testutil::rule;

TemplateAst transitive_closure() {
  TemplateAst t;
  t.rules.push_back(rule(lit("path", {"X", "Y"}), {lit("edge", {"X", "Y"})}));
  t.rules.push_back(rule(lit("path", {"X", "Y"}), {lit("edge", {"X", "Z"}), lit("path", {"Z", "Y"})}));
  return t;
}

std::set<std::string> atoms_of(const Program& p, const GroundSample& s, const std::string& pred) {
  std::set<std::string> out;
  for (uint32_t a = 0; a < s.num_atoms(); ++a)
    if (p.predicate_name(s.atom_pred[a]) == pred) out.insert(p.atom_text(s, a));
  return out;
}

std::vector<std::string> answers(const Program& p, const ExampleAst& facts, const Literal& goal) {
  GoalAnswers a = answer_goal(p, facts, goal);
  std::vector<std::string> out;
  for (const auto& row : a.rows) {
    std::string s;
    for (size_t k = 0; k < row.size(); ++k) s += (k ? ", " : "") + a.variables[k] + "=" + p.constant_text(row[k]);
    out.push_back(s);
  }
  return out;
}

TEST(LogicIndex, ChainsRowsWithEqualKeysNewestFirst) {
  Relation rel(2);
  uint32_t ix = rel.index_for(0b01);  // bound first column
  uint32_t t[][2] = {{1, 2}, {1, 3}, {2, 3}, {1, 4}, {1, 2}};
  for (auto& row : t) rel.insert(row);
  EXPECT_EQ(rel.rows(), 4u);  // {1,2} twice is one row
  uint32_t key = 1;
  std::vector<uint32_t> rows;
  for (uint32_t r = rel.index(ix).find(&key, rel.data(), 2); r != kNone; r = rel.index(ix).next(r))
    rows.push_back(r);
  EXPECT_EQ(rows, (std::vector<uint32_t>{3, 1, 0}));
  uint32_t missing = 7;
  EXPECT_EQ(rel.index(ix).find(&missing, rel.data(), 2), kNone);
  uint32_t probe[2] = {2, 3};
  EXPECT_EQ(rel.find(probe), 2u);
  // An index built after the rows exist sees them all, and grows past its first table.
  for (uint32_t i = 0; i < 1000; ++i) {
    uint32_t row[2] = {100 + i % 10, i};
    rel.insert(row);
  }
  uint32_t ix2 = rel.index_for(0b10);
  uint32_t second = 3;
  size_t n = 0;
  for (uint32_t r = rel.index(ix2).find(&second, rel.data(), 2); r != kNone; r = rel.index(ix2).next(r)) ++n;
  EXPECT_EQ(n, 3u);  // {1,3}, {2,3}, {103,3}
  key = 105;
  n = 0;
  for (uint32_t r = rel.index(ix).find(&key, rel.data(), 2); r != kNone; r = rel.index(ix).next(r)) ++n;
  EXPECT_EQ(n, 100u);
}

// A one-column key is looked up in a direct table while its values are dense, and hashed
// once they are not: either way find, the chains and the frozen groups are those of the
// rows themselves (checked against a scan), for keys arriving above and below the first.
TEST(LogicIndex, OneColumnKeysGiveTheSameGroupsDirectOrHashed) {
  for (const uint32_t spread : {1u, 3u, 100000u}) {  // dense, dense with gaps, sparse (hashed)
    Relation rel(2);
    const uint32_t ix = rel.index_for(0b10);  // bound second column
    std::mt19937 rng(spread);
    std::vector<uint32_t> keys;
    for (uint32_t i = 0; i < 3000; ++i) {
      // Keys start mid-range, so later ones widen the table below its first key.
      const uint32_t key = 5000 * spread + (rng() % 600) * spread - 2500 * spread * (i > 100);
      uint32_t row[2] = {i, key};
      rel.insert(row);
      keys.push_back(key);
    }
    std::vector<uint32_t> probes = keys;
    probes.push_back(1);               // below every key
    probes.push_back(~uint32_t{0} - 1);  // above every key
    for (uint32_t key : probes) {
      std::vector<uint32_t> expected;  // the rows with this key, newest first
      for (uint32_t r = rel.rows(); r-- > 0;)
        if (rel.row(r)[1] == key) expected.push_back(r);
      std::vector<uint32_t> chained;
      for (uint32_t r = rel.index(ix).find(&key, rel.data(), 2); r != kNone; r = rel.index(ix).next(r))
        chained.push_back(r);
      ASSERT_EQ(chained, expected) << "spread " << spread << " key " << key;
    }
    // The same index built over existing rows (Index::insert_all) chains them the same way.
    Relation late(2);
    for (uint32_t r = 0; r < rel.rows(); ++r) late.insert(rel.row(r));
    const uint32_t late_ix = late.index_for(0b10);
    for (uint32_t key : probes) {
      std::vector<uint32_t> a, b;
      for (uint32_t r = rel.index(ix).find(&key, rel.data(), 2); r != kNone; r = rel.index(ix).next(r)) a.push_back(r);
      for (uint32_t r = late.index(late_ix).find(&key, late.data(), 2); r != kNone; r = late.index(late_ix).next(r))
        b.push_back(r);
      ASSERT_EQ(b, a) << "spread " << spread << " key " << key;
    }
    uint32_t one_more[2] = {7, keys[0] + 1};  // an insert after insert_all extends its table or hash
    late.insert(one_more);
    EXPECT_EQ(late.index(late_ix).find(&one_more[1], late.data(), 2), late.rows() - 1);
    rel.freeze_index(ix);
    size_t largest = 0;
    for (uint32_t key : probes) {
      std::vector<uint32_t> expected;  // oldest first
      for (uint32_t r = 0; r < rel.rows(); ++r)
        if (rel.row(r)[1] == key) expected.push_back(r);
      largest = std::max(largest, expected.size());
      const auto [begin, end] = rel.index(ix).frozen_group(&key, rel.data(), 2);
      const std::vector<uint32_t> group(rel.index(ix).frozen_rows() + begin, rel.index(ix).frozen_rows() + end);
      ASSERT_EQ(group, expected) << "spread " << spread << " key " << key;
      for (uint32_t i = begin; i < end; ++i) {
        EXPECT_EQ(rel.index(ix).frozen_tuples()[2 * i], rel.row(group[i - begin])[0]);
        EXPECT_EQ(rel.index(ix).frozen_tuples()[2 * i + 1], key);
      }
    }
    EXPECT_EQ(rel.index(ix).frozen_largest_group(), largest);
    // A relation of one column: its whole-tuple index is the one-column key.
    Relation single(1);
    for (uint32_t key : keys) single.insert(&key);
    std::set<uint32_t> distinct(keys.begin(), keys.end());
    EXPECT_EQ(single.rows(), distinct.size());
    for (uint32_t r = 0; r < single.rows(); ++r) EXPECT_EQ(single.find(single.row(r)), r);
    const uint32_t absent = 5000 * spread + 1;  // between the multiples of a spread > 1
    if (spread > 1) EXPECT_EQ(single.find(&absent), kNone);
  }
}

TEST(LogicSymbols, NumbersAreCanonicalAndCompareNumerically) {
  Symbols s;
  EXPECT_EQ(s.intern_term(Term::number("1")), s.intern_term(Term::number("1.0")));
  EXPECT_EQ(s.intern_number(0.5), s.intern_term(Term::number("0.50")));
  EXPECT_EQ(s.name(s.intern_term(Term::number("2.50"))), "2.5");
  EXPECT_EQ(s.name(s.intern_number(-7)), "-7");
  EXPECT_LT(s.compare(s.intern_number(9), s.intern_number(10)), 0);  // not "10" < "9"
  EXPECT_LT(s.compare(s.intern("abc"), s.intern("abd")), 0);
  EXPECT_LT(s.compare(s.intern_number(1e12), s.intern("a")), 0);
  EXPECT_EQ(s.intern("x"), s.intern_term(Term{Term::Kind::String, "x", {}, {}}));
}

// The names' index grows past several doublings; every name keeps its id and is found
// again by find and by intern, and names that differ only past a hash's reach are apart.
TEST(LogicSymbols, ManyNamesKeepTheirIdsThroughTheIndexGrowing) {
  Symbols s;
  std::vector<uint32_t> ids;
  for (int i = 0; i < 20000; ++i) ids.push_back(s.intern("n" + std::to_string(i) + (i % 3 ? "" : "-a-long-name-beyond-sso")));
  EXPECT_EQ(s.table_size(), 20000u);
  for (int i = 0; i < 20000; ++i) {
    const std::string name = "n" + std::to_string(i) + (i % 3 ? "" : "-a-long-name-beyond-sso");
    ASSERT_EQ(s.find(name), ids[i]) << name;
    ASSERT_EQ(s.intern(name), ids[i]);
    ASSERT_EQ(s.name(ids[i]), name);
  }
  EXPECT_EQ(s.find("n20000"), std::nullopt);
  EXPECT_EQ(s.find(""), std::nullopt);
  EXPECT_NE(s.intern(""), s.intern(std::string_view("\0", 1)));
  EXPECT_EQ(s.table_size(), 20002u);
}

// The index shared by the symbols' names and the store's values: entries whose hashes
// agree in every bit are told apart by `same` alone, an entry is found by its full key
// after several growths (rehashed through hash_of), and a failing add leaves it unchanged.
TEST(LogicFlatIndex, CollidingHashesAndGrowthKeepEveryId) {
  FlatIndex index;
  std::vector<std::string> keys;
  const auto hash_of_key = [](const std::string& k) { return k.size() % 2 ? uint64_t{42} : uint64_t{7} << 40; };
  const auto find_or_add = [&](const std::string& k) {
    return index.find_or_add(
        hash_of_key(k), [&](uint32_t id) { return keys[id] == k; },
        [&] {
          keys.push_back(k);
          return uint32_t(keys.size() - 1);
        },
        [&](uint32_t id) { return hash_of_key(keys[id]); });
  };
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(find_or_add("k" + std::to_string(i)), uint32_t(i));
  EXPECT_EQ(index.size(), 3000u);
  for (int i = 0; i < 3000; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_EQ(index.find(hash_of_key(k), [&](uint32_t id) { return keys[id] == k; }), uint32_t(i)) << k;
    ASSERT_EQ(find_or_add(k), uint32_t(i));
  }
  EXPECT_EQ(index.find(42, [&](uint32_t id) { return keys[id] == "absent"; }), FlatIndex::kNone);
  EXPECT_THROW(index.find_or_add(
                   1, [](uint32_t) { return false; }, []() -> uint32_t { throw std::runtime_error("full"); },
                   [&](uint32_t id) { return hash_of_key(keys[id]); }),
               std::runtime_error);
  EXPECT_EQ(index.size(), 3000u);
  EXPECT_EQ(index.find(6000, [](uint32_t) { return true; }), FlatIndex::kNone);  // an empty slot: no probe
}

// intern_terms gives the ids intern_term gives term by term: held names, new names (also
// twice in one call), numbers with and without entries, in the order they come.
TEST(LogicSymbols, InterningTermsTogetherGivesTheIdsOfOneByOne) {
  const std::vector<Term> terms = {Term::constant("b"), Term::number("0.25"), Term::constant("new1"),
                                   Term::number("3"),   Term::constant("a"),  Term::constant("new1"),
                                   Term::number("1e-3"), Term{Term::Kind::String, "new 2", {}, {}}, Term::constant("b")};
  Symbols one, together;
  for (Symbols* s : {&one, &together}) {
    s->intern("a");
    s->intern("b");
  }
  std::vector<uint32_t> expected;
  for (const Term& t : terms) expected.push_back(one.intern_term(t));
  std::vector<const Term*> pointers;
  for (const Term& t : terms) pointers.push_back(&t);
  std::vector<uint32_t> ids(terms.size());
  together.intern_terms(pointers, ids);
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(together.table_size(), one.table_size());
  for (uint32_t id : ids) EXPECT_EQ(together.name(id), one.name(id));
  // A number that does not parse is refused naming it, as intern_term refuses it.
  const Term bad = Term::number("1.2.3");
  const Term* with_bad[] = {&terms[0], &bad};
  uint32_t out[2];
  try {
    together.intern_terms(with_bad, out);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'1.2.3' is not a number"), std::string::npos) << e.what();
  }
}

TEST(LogicGrounding, TransitiveClosureOnACycle) {
  Program p(transitive_closure());
  auto ex = example({lit("edge", {"a", "b"}), lit("edge", {"b", "c"}), lit("edge", {"c", "a"}),
                     lit("edge", {"c", "d"})});
  GroundSample s = ground(p, ex, {});
  auto path = atoms_of(p, s, "path");
  EXPECT_EQ(path.size(), 12u);  // a,b,c reach a,b,c,d; d reaches nothing
  EXPECT_TRUE(path.count("path(a, a)"));
  EXPECT_TRUE(path.count("path(b, d)"));
  EXPECT_FALSE(path.count("path(d, a)"));
  EXPECT_EQ(s.stats.facts, 4u);
  EXPECT_EQ(s.stats.derived, 12u);
  // rule 0: one per edge; rule 1: edge(X,Z), path(Z,Y): 3 edges into the cycle * 4 + edge(c,d)*0
  ASSERT_EQ(s.rules.size(), 2u);
  EXPECT_EQ(s.rules[0].size(), 4u);
  EXPECT_EQ(s.rules[1].size(), 12u);
  EXPECT_EQ(s.rules[1].n_inputs, 2u);
  EXPECT_EQ(s.rules[1].n_vars, 3u);
  EXPECT_EQ(p.rule_variables(1), (std::vector<std::string>{"X", "Y", "Z"}));
  // Every ground rule is consistent: head path(X,Y), inputs edge(X,Z), path(Z,Y).
  const auto& g = s.rules[1];
  for (size_t i = 0; i < g.size(); ++i) {
    const uint32_t* b = g.bindings.data() + i * 3;
    const uint32_t* in = g.inputs.data() + i * 2;
    auto args = [&](uint32_t atom) {
      return std::vector<uint32_t>(s.atom_args.begin() + s.atom_args_begin[atom],
                                   s.atom_args.begin() + s.atom_args_begin[atom + 1]);
    };
    EXPECT_EQ(args(g.head[i]), (std::vector<uint32_t>{b[0], b[1]}));
    EXPECT_EQ(args(in[0]), (std::vector<uint32_t>{b[0], b[2]}));
    EXPECT_EQ(args(in[1]), (std::vector<uint32_t>{b[2], b[1]}));
    EXPECT_NE(s.atom_example_fact[in[0]], kNone);
  }
  EXPECT_EQ(s.stats.ground_rules, 16u);
}

// A rule whose bindings are not kept (GroundingOptions::rule_keeps_bindings) has the same
// ground rules without them, recorded while firing or enumerated after the model.
TEST(LogicGrounding, BindingsKeptOnlyForTheRulesAsked) {
  Program p(transitive_closure());
  auto ex = example({lit("edge", {"a", "b"}), lit("edge", {"b", "c"}), lit("edge", {"c", "a"}),
                     lit("edge", {"c", "d"})});
  for (bool record : {true, false}) {
    SCOPED_TRACE(record ? "recorded while firing" : "enumerated");
    GroundingOptions all, some;
    all.record_while_firing = some.record_while_firing = record;
    some.rule_keeps_bindings = {0, 1};
    GroundingOptions none = some;
    none.rule_keeps_bindings = {0, 0};
    const GroundSample a = ground(p, ex, {}, all), b = ground(p, ex, {}, some), c = ground(p, ex, {}, none);
    ASSERT_EQ(a.rules.size(), 2u);
    for (const GroundSample* other : {&b, &c}) {
      ASSERT_EQ(other->rules.size(), 2u);
      for (size_t r = 0; r < 2; ++r) {
        EXPECT_EQ(other->rules[r].head, a.rules[r].head);
        EXPECT_EQ(other->rules[r].inputs, a.rules[r].inputs);
      }
    }
    EXPECT_EQ(b.rules[0].n_vars, 0u);
    EXPECT_TRUE(b.rules[0].bindings.empty());
    EXPECT_EQ(b.rules[1].n_vars, 3u);
    EXPECT_EQ(b.rules[1].bindings, a.rules[1].bindings);
    EXPECT_EQ(c.rules[1].n_vars, 0u);
    EXPECT_TRUE(c.rules[1].bindings.empty());
    EXPECT_FALSE(a.rules[0].bindings.empty());
  }
}

// Naive fixpoint and a brute-force count of ground rules, for random graphs.
TEST(LogicGrounding, SemiNaiveMatchesNaiveFixpointOnRandomGraphs) {
  Program p(transitive_closure());
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    int n = 2 + int(rng() % 12), m = int(rng() % 30);
    std::set<std::pair<int, int>> edges;
    for (int i = 0; i < m; ++i) edges.insert({int(rng() % n), int(rng() % n)});
    std::vector<Literal> facts;
    for (auto [a, b] : edges) facts.push_back(lit("edge", {"n" + std::to_string(a), "n" + std::to_string(b)}));
    std::set<std::pair<int, int>> path = edges;
    for (bool changed = true; changed;) {
      changed = false;
      for (auto [x, z] : edges)
        for (auto [z2, y] : std::set<std::pair<int, int>>(path))
          if (z == z2 && path.insert({x, y}).second) changed = true;
    }
    size_t expected_rule1 = 0;
    for (auto [x, z] : edges)
      for (auto [z2, y] : path) expected_rule1 += z == z2;
    GroundSample s = ground(p, example(facts), {});
    std::set<std::string> expected;
    for (auto [a, b] : path) expected.insert("path(n" + std::to_string(a) + ", n" + std::to_string(b) + ")");
    EXPECT_EQ(atoms_of(p, s, "path"), expected) << "trial " << trial;
    size_t got_rule1 = 0;
    for (const auto& g : s.rules)
      if (g.rule == 1) got_rule1 = g.size();
    EXPECT_EQ(got_rule1, expected_rule1) << "trial " << trial;
    // Counting mode agrees with the stored count.
    GroundingOptions count_only;
    count_only.store_ground_rules = false;
    EXPECT_EQ(ground(p, example(facts), {}, count_only).stats.ground_rules, s.stats.ground_rules);
  }
}

TEST(LogicGrounding, RecursionThroughSeveralPredicates) {
  TemplateAst t;
  t.rules.push_back(rule(lit("even", {"X"}), {lit("zero", {"X"})}));
  t.rules.push_back(rule(lit("odd", {"Y"}), {lit("even", {"X"}), lit("succ", {"X", "Y"})}));
  t.rules.push_back(rule(lit("even", {"Y"}), {lit("odd", {"X"}), lit("succ", {"X", "Y"})}));
  Program p(t);
  std::vector<Literal> facts{lit("zero", {"0"})};
  for (int i = 0; i < 7; ++i) facts.push_back(lit("succ", {std::to_string(i), std::to_string(i + 1)}));
  EXPECT_EQ(answers(p, example(facts), lit("even", {"X"})),
            (std::vector<std::string>{"X=0", "X=2", "X=4", "X=6"}));
  EXPECT_EQ(answers(p, example(facts), lit("odd", {"X"})),
            (std::vector<std::string>{"X=1", "X=3", "X=5", "X=7"}));
}

TEST(LogicGrounding, IdenticalGroundRulesAreKeptOnceUnlessDuplicateGrounding) {
  TemplateAst t;
  // Y occurs only in a hidden literal: substitutions differing in Y give one ground rule.
  t.rules.push_back(rule(lit("p", {"X"}), {lit("a", {"X"}), lit("*b", {"X", "Y"})}));
  Rule dup = rule(lit("q", {"X"}), {lit("a", {"X"}), lit("*b", {"X", "Y"})});
  MetaEntry m;
  m.key = "duplicate_grounding";
  m.value.name = "true";
  dup.meta.push_back(m);
  t.rules.push_back(dup);
  Program p(t);
  auto ex = example({lit("a", {"1"}), lit("b", {"1", "x"}), lit("b", {"1", "y"}), lit("b", {"1", "z"})});
  GroundSample s = ground(p, ex, {});
  ASSERT_EQ(s.rules.size(), 2u);
  EXPECT_EQ(s.rules[0].size(), 1u);
  EXPECT_EQ(s.rules[1].size(), 3u);
  EXPECT_EQ(s.rules[0].n_inputs, 1u);  // the hidden literal is no input
  EXPECT_EQ(p.input_literals(0), (std::vector<uint32_t>{0}));
}

// A repeated binary fact is one atom, its first fact's (binary relations are loaded
// unhashed and made distinct afterwards): the grounding of the facts with repeats is that
// of the facts without them, atom for atom and rule for rule.
TEST(LogicGrounding, RepeatedBinaryFactsAreOneAtomOfTheFirstFact) {
  TemplateAst t;
  t.rules.push_back(rule(lit("h", {"X"}), {lit("a", {"Y"}), lit("e", {"X", "Y"})}));
  Program p(t);
  std::vector<Literal> distinct{lit("a", {"1"}), lit("a", {"2"}), lit("e", {"1", "2"}), lit("e", {"2", "1"}),
                                lit("e", {"2", "2"})};
  std::vector<Literal> repeated{lit("a", {"1"}), lit("a", {"2"}), lit("e", {"1", "2"}), lit("e", {"2", "1"}),
                                lit("e", {"1", "2"}), lit("e", {"2", "2"}), lit("e", {"2", "1"})};
  const GroundSample once = ground(p, example(distinct), {});
  const GroundSample twice = ground(p, example(repeated), {});
  ASSERT_EQ(twice.num_atoms(), once.num_atoms());
  EXPECT_EQ(twice.num_atoms(), 2u + 3u + 2u);
  for (uint32_t a = 0; a < once.num_atoms(); ++a) EXPECT_EQ(p.atom_text(twice, a), p.atom_text(once, a));
  // Each e atom is its first fact: e(1,2) fact 2, e(2,1) fact 3, e(2,2) fact 5 of `repeated`.
  std::vector<uint32_t> e_facts;
  for (uint32_t a = 0; a < twice.num_atoms(); ++a)
    if (p.predicate_name(twice.atom_pred[a]) == "e") e_facts.push_back(twice.atom_example_fact[a]);
  EXPECT_EQ(e_facts, (std::vector<uint32_t>{2, 3, 5}));
  ASSERT_EQ(twice.rules.size(), once.rules.size());
  for (size_t k = 0; k < once.rules.size(); ++k) {
    EXPECT_EQ(twice.rules[k].head, once.rules[k].head);
    EXPECT_EQ(twice.rules[k].inputs, once.rules[k].inputs);
  }
}

// Past a few thousand binary facts the repeats are found by a radix sort instead of a
// comparison sort: the same atoms either way.
TEST(LogicGrounding, RepeatedFactsAmongThousandsOfEdgesAreOneAtomEach) {
  TemplateAst t;
  t.rules.push_back(rule(lit("h", {"X"}), {lit("a", {"Y"}), lit("e", {"X", "Y"})}));
  Program p(t);
  constexpr int kEdges = 6000;  // above the radix sort's threshold
  std::vector<Literal> facts{lit("a", {"0"})};
  for (int i = 0; i < kEdges; ++i) facts.push_back(lit("e", {std::to_string(i + 1), std::to_string(i % 70)}));
  const GroundSample distinct = ground(p, example(facts), {});
  for (int i : {5, 4000, 5999}) facts.push_back(lit("e", {std::to_string(i + 1), std::to_string(i % 70)}));
  const GroundSample repeated = ground(p, example(facts), {});
  ASSERT_EQ(repeated.num_atoms(), distinct.num_atoms());
  size_t edges = 0;
  for (uint32_t a = 0; a < repeated.num_atoms(); ++a) {
    EXPECT_EQ(p.atom_text(repeated, a), p.atom_text(distinct, a));
    if (p.predicate_name(repeated.atom_pred[a]) == "e") {
      ++edges;
      EXPECT_LE(repeated.atom_example_fact[a], uint32_t(kEdges));  // the first fact, never a repeat
    }
  }
  EXPECT_EQ(edges, size_t(kEdges));
  EXPECT_EQ(repeated.rules.size(), distinct.rules.size());
}

TEST(LogicGrounding, RelevancePruningKeepsOnlyWhatSupportsTheQuery) {
  TemplateAst t;
  t.rules.push_back(rule(lit("h1", {"X"}), {lit("a", {"X"})}));
  t.rules.push_back(rule(lit("h2", {"X"}), {lit("b", {"X"})}));   // cannot reach the query
  t.rules.push_back(rule(lit("out"), {lit("h1", {"X"})}));
  t.rules.push_back(rule(lit("other"), {lit("h2", {"X"})}));
  Program p(t);
  auto ex = example({lit("a", {"1"}), lit("a", {"2"}), lit("b", {"1"})});
  GroundSample all = ground(p, ex, {});
  EXPECT_EQ(all.num_atoms(), 8u);  // a(1) a(2) b(1) h1(1) h1(2) h2(1) out other
  EXPECT_EQ(all.rules.size(), 4u);
  GroundSample pruned = ground(p, ex, {lit("out")});
  EXPECT_EQ(pruned.num_atoms(), 5u);  // a(1) a(2) h1(1) h1(2) out
  ASSERT_EQ(pruned.rules.size(), 2u);
  EXPECT_EQ(pruned.rules[0].rule, 0u);
  EXPECT_EQ(pruned.rules[1].rule, 2u);
  ASSERT_EQ(pruned.query_atoms.size(), 1u);
  ASSERT_EQ(pruned.query_atoms[0].size(), 1u);
  EXPECT_EQ(p.atom_text(pruned, pruned.query_atoms[0][0]), "out");
  // Atom-level: a query on h1(1) keeps only a(1) and h1(1).
  GroundSample one = ground(p, ex, {lit("h1", {"1"})});
  EXPECT_EQ(one.num_atoms(), 2u);
  EXPECT_EQ(one.stats.ground_rules, 1u);
  // A query nothing derives matches no atom.
  GroundSample none = ground(p, ex, {lit("h1", {"3"})});
  ASSERT_EQ(none.query_atoms.size(), 1u);
  EXPECT_TRUE(none.query_atoms[0].empty());
}

TEST(LogicGrounding, LimitOnGroundRulesNamesTheRule) {
  TemplateAst t = transitive_closure();
  auto file = std::make_shared<SourceFile>(SourceFile{"tc.lrnn", "path(X, Y) :- edge(X, Y).\npath(X, Y) :- edge(X, Z), path(Z, Y).\n"});
  t.rules[1].span = Span{file, 2, 1, 10};
  Program p(t);
  std::vector<Literal> facts;
  for (int i = 0; i < 30; ++i) facts.push_back(lit("edge", {std::to_string(i), std::to_string((i + 1) % 30)}));
  GroundingOptions o;
  o.max_ground_rules = 100;
  try {
    ground(p, example(facts), {}, o);
    FAIL() << "expected a limit error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Limit);
    EXPECT_NE(std::string(e.what()).find("tc.lrnn:2:1"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("100 ground rules"), std::string::npos);
  }
  o.max_ground_rules = 30 + 900;  // exactly enough
  EXPECT_EQ(ground(p, example(facts), {}, o).stats.ground_rules, 930u);
}

TEST(LogicGrounding, AnInfiniteModelEndsAtTheAtomLimit) {
  TemplateAst t;
  t.rules.push_back(rule(lit("n", {"Y"}), {lit("n", {"X"}), lit("@add", {"X", "1", "Y"})}));
  Program p(t);
  GroundingOptions o;
  o.max_atoms = 1000;
  try {
    ground(p, example({lit("n", {"0"})}), {}, o);
    FAIL() << "expected a limit error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Limit);
    EXPECT_NE(e.message().find("1000 atoms while deriving n"), std::string::npos) << e.message();
  }
}

TEST(LogicGrounding, StratifiedNegationAndTheUnstratifiableError) {
  TemplateAst t;
  t.rules.push_back(rule(lit("reach", {"X"}), {lit("start", {"X"})}));
  t.rules.push_back(rule(lit("reach", {"Y"}), {lit("reach", {"X"}), lit("edge", {"X", "Y"})}));
  t.rules.push_back(rule(lit("unreached", {"X"}), {lit("node", {"X"}), lit("!reach", {"X"})}));
  Program p(t);
  auto ex = example({lit("start", {"a"}), lit("edge", {"a", "b"}), lit("edge", {"c", "d"}),
                     lit("node", {"a"}), lit("node", {"b"}), lit("node", {"c"}), lit("node", {"d"})});
  EXPECT_EQ(answers(p, ex, lit("unreached", {"X"})), (std::vector<std::string>{"X=c", "X=d"}));
  EXPECT_EQ(p.input_literals(2), (std::vector<uint32_t>{0}));

  TemplateAst bad;
  bad.rules.push_back(rule(lit("p", {"X"}), {lit("n", {"X"}), lit("!q", {"X"})}));
  bad.rules.push_back(rule(lit("q", {"X"}), {lit("n", {"X"}), lit("p", {"X"})}));
  try {
    Program q(bad);
    FAIL() << "expected a stratification error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Semantic);
    EXPECT_NE(e.message().find("not stratifiable"), std::string::npos);
    EXPECT_NE(e.message().find("p/1, q/1"), std::string::npos) << e.message();
  }
}

TEST(LogicGrounding, UnboundComparisonVariableIsAnErrorNamingTheLiteral) {
  TemplateAst t;
  t.rules.push_back(rule(lit("p", {"X"}), {lit("q", {"X"}), lit("@gt", {"Y", "1"})}));
  try {
    Program p(t);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("variable Y in '@gt(Y, 1)'"), std::string::npos) << e.message();
  }
  TemplateAst u;
  u.rules.push_back(rule(lit("p", {"X"}), {lit("q", {"X"}), lit("@nosuch", {"X"})}));
  EXPECT_THROW(Program{u}, Error);
  TemplateAst v;
  v.rules.push_back(rule(lit("p", {"X"}), {lit("q", {"X"}), lit("@add", {"X", "1"})}));
  EXPECT_THROW(Program{v}, Error);  // wrong arity
}

TEST(LogicGrounding, HeadVariablesOutsidePositiveLiteralsRangeOverTheActiveDomain) {
  TemplateAst t;
  Literal self = lit("edge", {"I", "I"});
  self.weight = ValueSpec::scalar(1.0, true);
  t.facts.push_back(self);
  t.rules.push_back(rule(lit("h", {"X"}), {lit("edge", {"X", "Y"})}));
  Program p(t);
  auto ex = example({lit("edge", {"a", "b"}), lit("node", {"c"})});
  GroundSample s = ground(p, ex, {});
  auto edges = atoms_of(p, s, "edge");
  EXPECT_EQ(edges, (std::set<std::string>{"edge(a, a)", "edge(a, b)", "edge(b, b)", "edge(c, c)"}));
  for (uint32_t a = 0; a < s.num_atoms(); ++a) {
    std::string text = p.atom_text(s, a);
    if (text == "edge(a, a)") EXPECT_EQ(s.atom_template_fact[a], 0u);
    if (text == "edge(a, b)") EXPECT_EQ(s.atom_example_fact[a], 0u);
  }
}

TEST(LogicGrounding, TypedTermsActAsHiddenLiterals) {
  TemplateAst t;
  t.rules.push_back(rule(lit("mother", {"X", "Y"}), {lit("parent", {"X", "woman:Y"})}));
  Program p(t);
  auto ex = example({lit("parent", {"ann", "bea"}), lit("parent", {"ann", "carl"}), lit("woman", {"bea"})});
  GroundSample s = ground(p, ex, {});
  EXPECT_EQ(atoms_of(p, s, "mother"), (std::set<std::string>{"mother(ann, bea)"}));
  EXPECT_EQ(p.input_literals(0), (std::vector<uint32_t>{0}));
  ASSERT_EQ(s.rules.size(), 1u);
  EXPECT_EQ(s.rules[0].n_inputs, 1u);
}

TEST(LogicGrounding, AttentionMaskGroundsExactlyThePairsInTheWindow) {
  TemplateAst t;
  t.rules.push_back(rule(lit("w", {"I", "J"}), {lit("k", {"J"}), lit("q", {"I"}), lit("@sub", {"I", "J", "D"}),
                                                 lit("@geq", {"D", "0"}), lit("@leq", {"D", "2"})}));
  Program p(t);
  const int n = 12;
  std::vector<Literal> facts;
  for (int i = 0; i < n; ++i) facts.push_back(lit("k", {std::to_string(i)})), facts.push_back(lit("q", {std::to_string(i)}));
  GroundSample s = ground(p, example(facts), {});
  size_t pairs = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) pairs += i - j >= 0 && i - j <= 2;
  ASSERT_EQ(s.rules.size(), 1u);
  EXPECT_EQ(s.rules[0].size(), pairs);
  for (size_t g = 0; g < s.rules[0].size(); ++g) {
    const uint32_t* b = s.rules[0].bindings.data() + g * 3;  // I, J, D
    double i = p.symbols().number(b[0]), j = p.symbols().number(b[1]), d = p.symbols().number(b[2]);
    EXPECT_EQ(d, i - j);
    EXPECT_TRUE(d >= 0 && d <= 2);
  }
}

TEST(LogicProgram, ExposesVariablesInputsAndPredicates) {
  TemplateAst t;
  // head first, then body left to right; each `_` is its own variable.
  t.rules.push_back(rule(lit("h", {"X"}), {lit("~a", {"X", "_"}), lit("*b", {"_", "Y"}), lit("!c", {"X"}),
                                           lit("@neq", {"X", "Y"}), lit("d", {"Y", "X"})}));
  Program p(t);
  EXPECT_EQ(p.rule_variables(0), (std::vector<std::string>{"X", "_#1", "_#2", "Y"}));
  EXPECT_EQ(p.input_literals(0), (std::vector<uint32_t>{0, 4}));  // ~a and d
  uint32_t d = p.predicate_id("d", 2);
  ASSERT_NE(d, kNone);
  EXPECT_EQ(p.predicate_name(d), "d");
  EXPECT_EQ(p.predicate_arity(d), 2);
  EXPECT_EQ(p.predicate_id("d", 1), kNone);
  // ~a(X, _) must hold like a(X, _); !c(X) must not.
  auto ex = example({lit("a", {"1", "z"}), lit("a", {"2", "z"}), lit("a", {"3", "z"}), lit("b", {"q", "7"}),
                     lit("d", {"7", "1"}), lit("d", {"7", "2"}), lit("d", {"7", "3"}), lit("d", {"7", "4"}),
                     lit("c", {"2"})});
  GroundSample s = ground(p, ex, {lit("h", {"X"})});
  EXPECT_EQ(atoms_of(p, s, "h"), (std::set<std::string>{"h(1)", "h(3)"}));
  ASSERT_EQ(s.rules.size(), 1u);
  EXPECT_EQ(s.rules[0].n_inputs, 2u);
  EXPECT_EQ(s.rules[0].n_vars, 4u);
  // Only the inputs of the kept ground rules stay: a(1,z), a(3,z), d(7,1), d(7,3), h(1), h(3).
  EXPECT_EQ(s.num_atoms(), 6u);
}

TEST(LogicGrounding, ConcurrentGroundingOfOneProgramIsSafe) {
  Program p(transitive_closure());
  auto make = [](int offset) {
    std::vector<Literal> facts;
    for (int i = 0; i < 40; ++i)
      facts.push_back(lit("edge", {"v" + std::to_string(offset + i), "v" + std::to_string(offset + (i * 7 + 3) % 40)}));
    return example(facts);
  };
  size_t expected = ground(p, make(0), {}).stats.ground_rules;
  std::vector<size_t> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      // Offsets make each thread intern its own new constants concurrently.
      got[t] = ground(p, make(1000 * (t + 1)), {}).stats.ground_rules;
    });
  for (auto& th : threads) th.join();
  for (size_t g : got) EXPECT_EQ(g, expected);
}

}  // namespace

// Issue 14: the limit bounds the least-model phase too. `q :- e(A), e(B), e(C).` over 1000
// constants derives one atom from 10^9 substitutions (19 s with a limit of 1000 before).
TEST(LogicGrounding, LimitOnGroundRulesBoundsTheLeastModel) {
  Program p(parse_template("q :- e(A), e(B), e(C).\n", "blow.lrnn"));
  std::vector<Literal> facts;
  for (int i = 0; i < 1000; ++i) facts.push_back(lit("e", {"c" + std::to_string(i)}));
  GroundingOptions o;
  o.max_ground_rules = 1000;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    ground(p, example(facts), {}, o);
    FAIL() << "expected a limit error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Limit);
    EXPECT_NE(e.message().find("1000 ground rules"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("least model of q"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
}
