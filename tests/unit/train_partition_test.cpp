// One big sample split over MPI ranks (train/partition.hpp): the template check and radius,
// and each rank's part of a small graph. The runs over 1, 2 and 3 ranks are the ctest
// `distributed_partition` (tests/distributed/check_partition.py).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "train/dataset.hpp"
#include "train/partition.hpp"
#include "train/sample_store.hpp"

namespace {

using lrnn::train::check_partition_template;

size_t radius_of(const std::string& text, const std::string& query) {
  return check_partition_template(lrnn::parse_template(text, "t.lrnn"), {query});
}

std::string refusal(const std::string& text, const std::string& query) {
  try {
    radius_of(text, query);
  } catch (const lrnn::Error& e) {
    return e.what();
  }
  return "";
}

const char* kGcn =
    "h1(X) :- $w1={2,2} x(X).\n"
    "h1(X) :- $w1={2,2} x(Y), *edge(X, Y).\n"
    "h2(X) :- $w2={2,2} h1(X).\n"
    "h2(X) :- $w2={2,2} h1(Y), *edge(X, Y).\n"
    "out(X) :- {1,2} h2(X).\n";

TEST(TrainPartition, RadiusCountsTheHopsOfEachLayer) {
  EXPECT_EQ(radius_of(kGcn, "out/1"), 2u);  // out(a) reads h1 of neighbours, which read theirs
  EXPECT_EQ(radius_of(kGcn, "h1/1"), 1u);
  EXPECT_EQ(radius_of(kGcn, "x/1"), 0u);    // a fact predicate: the fact itself
  // A rule reading only its own constant's atoms adds no hop.
  EXPECT_EQ(radius_of("a(X) :- x(X).\nb(X) :- a(X).\n", "b/1"), 0u);
  // A fact's constants are adjacent wherever X stands in it.
  EXPECT_EQ(radius_of("h(X) :- x(Y), *edge(Y, X).\n", "h/1"), 1u);
  // X not first in a derived atom: the atom's first constant is within its reach of X, the
  // other constants within reach of that one.
  EXPECT_EQ(radius_of("p(X, Y) :- *edge(X, Y).\nh(X) :- p(Y, X), x(Y).\n", "h/1"), 2u);
}

TEST(TrainPartition, RefusesWhatItCannotBound) {
  // A variable sharing no body literal with X: two hops of edges with nothing to bound them.
  std::string why = refusal("h(X) :- *edge(X, Y), *edge(Y, Z), x(Z).\n", "h/1");
  EXPECT_NE(why.find("t.lrnn:1:"), std::string::npos) << why;
  EXPECT_NE(why.find("variable Z shares no body literal with X"), std::string::npos) << why;
  // A global readout.
  why = refusal("g :- x(Y).\n", "g/0");
  EXPECT_NE(why.find("head has no variable but its body has"), std::string::npos) << why;
  // A constant in a rule.
  why = refusal("h(X) :- x(X), y(c).\n", "h/1");
  EXPECT_NE(why.find("constant 'c'"), std::string::npos) << why;
  // Reachability: the radius grows with every round.
  why = refusal("r(X) :- x(X).\nr(X) :- r(Y), *edge(X, Y).\n", "r/1");
  EXPECT_NE(why.find("t.lrnn:2:"), std::string::npos) << why;
  EXPECT_NE(why.find("recursion"), std::string::npos) << why;
}

// A path a - b - c - d - e: each rank holds the facts within the radius of its queries.
TEST(TrainPartition, EachRankHoldsTheFactsWithinTheRadius) {
  auto examples = lrnn::parse_examples(
      "x(a), x(b), x(c), x(d), x(e), edge(a, b), edge(b, c), edge(c, d), edge(d, e), bias.\n");
  auto queries = lrnn::parse_queries("1.0 out(a), 0.0 out(b), 1.0 out(c), 0.0 out(d), 1.0 out(e).\n");
  lrnn::train::SampleStore store(lrnn::train::pair_samples(std::move(examples), queries));
  const int size = 2;
  std::set<uint32_t> queries_seen;
  uint64_t cut = 0;
  for (int rank = 0; rank < size; ++rank) {
    const auto part = lrnn::train::partition_sample(store, 1, rank, size, /*use_metis=*/false);
    EXPECT_EQ(part.stats.facts, 10u);
    EXPECT_EQ(part.stats.constants, 5u);
    for (uint32_t q : part.query_of) {
      EXPECT_TRUE(queries_seen.insert(q).second);  // every query on exactly one rank
      const std::string c = store.without_facts()[0].queries[q].args[0].text;
      EXPECT_EQ(lrnn::train::owner_of_constant(c, size), rank);
    }
    // Every fact touching a constant within one hop of an owned query's constant is held,
    // and no other (the propositional `bias` everywhere).
    std::set<std::string> near;
    const std::string path = "abcde";
    for (uint32_t q : part.query_of) {
      const size_t i = path.find(store.without_facts()[0].queries[q].args[0].text);
      for (size_t j = i == 0 ? 0 : i - 1; j <= std::min(path.size() - 1, i + 1); ++j) near.insert(path.substr(j, 1));
    }
    uint64_t expected = 1;
    for (size_t i = 0; i < path.size(); ++i) expected += near.count(path.substr(i, 1));  // x(.)
    for (size_t i = 0; i + 1 < path.size(); ++i)
      expected += near.count(path.substr(i, 1)) || near.count(path.substr(i + 1, 1));  // edge(., .)
    EXPECT_EQ(part.stats.held_facts, expected) << "rank " << rank;
    EXPECT_EQ(part.store.fact_count(0), expected);
    EXPECT_EQ(part.store.without_facts()[0].queries.size(), part.query_of.size());
    if (rank == 0) cut = part.stats.cut_facts;
    EXPECT_EQ(part.stats.cut_facts, cut);  // the same count on every rank
  }
  EXPECT_EQ(queries_seen.size(), 5u);
}

TEST(TrainPartition, RefusesAQueryWithoutAConstant) {
  auto examples = lrnn::parse_examples("x(a), flag.\n");
  auto queries = lrnn::parse_queries("1.0 flag.\n");
  lrnn::train::SampleStore store(lrnn::train::pair_samples(std::move(examples), queries));
  try {
    lrnn::train::partition_sample(store, 0, 0, 2, false);
    FAIL() << "a query without constants was assigned";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("query flag has no constant first argument"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

// Two 6-cliques joined by one edge: METIS cuts that edge alone, the same way every call.
TEST(TrainPartition, MetisCutsTheBridgeBetweenTwoCliques) {
  if (!lrnn::train::metis_available()) GTEST_SKIP() << "built without METIS";
  std::vector<uint64_t> begin{0};
  std::vector<uint32_t> constants;
  const auto edge = [&](uint32_t a, uint32_t b) {
    constants.insert(constants.end(), {a, b});
    begin.push_back(constants.size());
  };
  for (uint32_t base : {0u, 6u})
    for (uint32_t a = 0; a < 6; ++a)
      for (uint32_t b = a + 1; b < 6; ++b) edge(base + a, base + b);
  edge(5, 6);
  const std::vector<int> owners = lrnn::train::metis_owners(12, begin, constants, 2);
  ASSERT_EQ(owners.size(), 12u);
  for (uint32_t c = 1; c < 6; ++c) EXPECT_EQ(owners[c], owners[0]);
  for (uint32_t c = 7; c < 12; ++c) EXPECT_EQ(owners[c], owners[6]);
  EXPECT_NE(owners[0], owners[6]);
  EXPECT_EQ(lrnn::train::metis_owners(12, begin, constants, 2), owners);  // deterministic
}

}  // namespace
