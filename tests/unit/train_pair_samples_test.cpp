// pair_samples from query lines given up (moved) pairs exactly as from lines kept (copied):
// the single-example shortcut that moves a graph's per-node queries, and every other case,
// which it hands to the copying pairing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lrnn/syntax.hpp"
#include "train/dataset.hpp"

namespace {

using namespace lrnn;

void expect_same_pairing(const std::string& examples, const std::string& queries,
                         const std::vector<QuerySplit>& split = {}) {
  SCOPED_TRACE(examples + " | " + queries);
  const std::vector<QueryLineAst> lines = parse_queries(queries, "q.txt");
  std::vector<train::Sample> copied, moved;
  std::string copied_error, moved_error;
  std::vector<uint32_t> copied_of, moved_of;
  try {
    copied = train::pair_samples(parse_examples(examples, "e.txt"), lines, split, &copied_of);
  } catch (const Error& e) {
    copied_error = e.what();
  }
  try {
    moved = train::pair_samples(parse_examples(examples, "e.txt"), std::vector<QueryLineAst>(lines), split, &moved_of);
  } catch (const Error& e) {
    moved_error = e.what();
  }
  EXPECT_EQ(copied_error, moved_error);
  EXPECT_EQ(copied_of, moved_of);
  ASSERT_EQ(copied.size(), moved.size());
  for (size_t i = 0; i < copied.size(); ++i) {
    EXPECT_EQ(copied[i].example, moved[i].example);
    EXPECT_EQ(copied[i].queries, moved[i].queries);
    EXPECT_EQ(copied[i].importance, moved[i].importance);
    EXPECT_EQ(copied[i].split, moved[i].split);
  }
}

TEST(TrainPairSamples, MovedLinesPairAsCopiedOnes) {
  const std::string graph = "x(a), x(b), edge(a, b).";
  expect_same_pairing(graph, "1.0 out(a).\n0.0 out(b).\n");  // the shortcut
  expect_same_pairing(graph, "1.0 out(a).\n0.0 out(b), 1.0 out(a).\n0.5 out(b).\n",
                      {QuerySplit::Train, QuerySplit::Validation, QuerySplit::Test});
  expect_same_pairing(graph, "0.25 l1 :- 1.0 out(a).\n1 l2 :- 0.0 out(b).\n");  // named: not the shortcut
  expect_same_pairing("g :- " + graph, "0.25 g :- 1.0 out(a).\n2 g :- 0.0 out(b).\n");
  expect_same_pairing(graph, "1.0 out(a).\n");                                    // one line
  expect_same_pairing("<1> q :- x(a).", "1.0 out(a).\n0.0 out(b).\n");              // a labelled example
  expect_same_pairing("x(a).\nx(b).", "1.0 out(a).\n0.0 out(b).\n");                // line by line
  expect_same_pairing("x(a).\nx(b).", "1.0 out(a).\n");                             // counts differ: refused
  expect_same_pairing(graph, "1.0 out(a).\n0.0 out(b).\n", {QuerySplit::Train});    // split of the wrong length
}

}  // namespace
