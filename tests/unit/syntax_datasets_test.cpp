// Every NeuraLogic dataset file parses, with the counts checked against the files
// (counted independently with grep: facts = closing parentheses, targets = line prefixes).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "lrnn/syntax.hpp"
#include "shared_datasets.hpp"

namespace {

const std::string kData = std::string(LRNN_DATASETS_DIR) + "/neuralogic/";

double target(const lrnn::Literal& l) {
  EXPECT_TRUE(l.weight.has_value());
  EXPECT_EQ(l.weight->kind, lrnn::ValueSpec::Kind::Scalar);
  return l.weight->data.at(0);
}

size_t total_facts(const std::vector<lrnn::ExampleAst>& examples) {
  size_t n = 0;
  for (const auto& e : examples) n += e.facts.size();
  return n;
}

class SyntaxDatasets : public lrnn::test::SharedDatasetsTest {};

TEST_F(SyntaxDatasets, Mutagenesis) {
  auto examples = lrnn::load_examples(kData + "molecules/mutagenesis/examples.txt");
  ASSERT_EQ(examples.size(), 188u);
  EXPECT_EQ(total_facts(examples), 20622u);
  EXPECT_EQ(examples[0].facts.size(), 148u);
  const lrnn::Literal& bond = examples[0].facts[0];
  EXPECT_EQ(bond.predicate, "bond");
  ASSERT_EQ(bond.arity(), 3);
  EXPECT_EQ(bond.args[0].kind, lrnn::Term::Kind::Constant);
  EXPECT_EQ(bond.args[0].text, "d59_23");
  EXPECT_EQ(bond.args[2].kind, lrnn::Term::Kind::Number);
  EXPECT_EQ(bond.args[2].text, "0");
  EXPECT_FALSE(bond.weight.has_value());
  EXPECT_EQ(bond.span.line, 1u);
  EXPECT_EQ(bond.span.col, 1u);
  EXPECT_EQ(examples[1].span.line, 2u);
  for (const auto& e : examples) {
    EXPECT_TRUE(e.id.empty());
    EXPECT_TRUE(e.queries.empty());
  }

  auto queries = lrnn::load_queries(kData + "molecules/mutagenesis/queries.txt");
  ASSERT_EQ(queries.size(), 188u);
  int positive = 0, negative = 0;
  for (const auto& q : queries) {
    ASSERT_EQ(q.queries.size(), 1u);
    EXPECT_EQ(q.queries[0].predicate, "predict");
    EXPECT_EQ(q.queries[0].arity(), 0);
    double t = target(q.queries[0]);
    positive += t == 1.0;
    negative += t == 0.0;
  }
  EXPECT_EQ(positive, 125);
  EXPECT_EQ(negative, 63);
}

TEST_F(SyntaxDatasets, NationsIsOneExampleOverManyLines) {
  auto examples = lrnn::load_examples(kData + "nations/examples.txt");
  ASSERT_EQ(examples.size(), 1u);
  ASSERT_EQ(examples[0].facts.size(), 1464u);
  EXPECT_EQ(lrnn::print_literal(examples[0].facts.front()), "nation(uk)");
  EXPECT_EQ(lrnn::print_literal(examples[0].facts.back()), "r(usa, commonbloc2, netherlands)");
  EXPECT_EQ(examples[0].facts.back().span.line, 1466u);

  auto queries = lrnn::load_queries(kData + "nations/queries.txt");
  ASSERT_EQ(queries.size(), 5347u);
  int positive = 0, negative = 0, ternary = 0;
  for (const auto& q : queries) {
    ASSERT_EQ(q.queries.size(), 1u);
    double t = target(q.queries[0]);
    positive += t == 1.0;
    negative += t == 0.0;
    ternary += q.queries[0].arity() == 3;
  }
  EXPECT_EQ(positive, 2565);
  EXPECT_EQ(negative, 2782);
  EXPECT_GT(ternary, 0);
  EXPECT_EQ(lrnn::print_query_line(queries[0]), "1 predict(brazil, illiterates).");
}

TEST_F(SyntaxDatasets, FamilyHasFixedValuedFacts) {
  auto examples = lrnn::load_examples(kData + "simple/family/examples.txt");
  ASSERT_EQ(examples.size(), 1u);
  ASSERT_EQ(examples[0].facts.size(), 6u);
  for (const auto& f : examples[0].facts) {
    ASSERT_TRUE(f.weight.has_value());
    EXPECT_TRUE(f.weight->fixed);
    EXPECT_EQ(f.weight->data, std::vector<double>{1.0});
  }
  EXPECT_EQ(lrnn::print_literal(examples[0].facts[3]), "<1> parent(star, cheyenne)");
  auto queries = lrnn::load_queries(kData + "simple/family/queries.txt");
  ASSERT_EQ(queries.size(), 2u);
  EXPECT_EQ(lrnn::print_query_line(queries[0]), "1 foal(star).");
  EXPECT_EQ(lrnn::print_query_line(queries[1]), "0 negFoal(star).");
}

TEST_F(SyntaxDatasets, Trains) {
  auto examples = lrnn::load_examples(kData + "simple/trains/examples.txt");
  ASSERT_EQ(examples.size(), 1u);
  EXPECT_EQ(examples[0].facts.size(), 441u);
  auto queries = lrnn::load_queries(kData + "simple/trains/queries.txt");
  ASSERT_EQ(queries.size(), 20u);
  for (size_t i = 0; i < queries.size(); ++i) {
    EXPECT_EQ(target(queries[i].queries[0]), i < 10 ? 1.0 : -1.0);
    EXPECT_EQ(queries[i].queries[0].args.at(0).text, std::to_string(i + 1));
  }
}

TEST_F(SyntaxDatasets, LabelledXorExamplesCarryTheirQuery) {
  auto naive = lrnn::load_examples(kData + "simple/xor/naive/trainExamples.txt");
  ASSERT_EQ(naive.size(), 4u);
  const double xor_target[] = {0, 1, 1, 0};
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(naive[i].queries.size(), 1u);
    EXPECT_EQ(naive[i].queries[0].predicate, "xor");
    EXPECT_TRUE(naive[i].queries[0].weight->fixed);
    EXPECT_EQ(target(naive[i].queries[0]), xor_target[i]);
    EXPECT_TRUE(naive[i].id.empty());
    ASSERT_EQ(naive[i].facts.size(), 2u);
  }
  EXPECT_EQ(lrnn::print_example(naive[1]), "<1> xor :- <0> a, <1> b.");

  auto vectorized = lrnn::load_examples(kData + "simple/xor/vectorized/trainExamples.txt");
  ASSERT_EQ(vectorized.size(), 4u);
  const auto& xy = vectorized[2].facts.at(0).weight.value();
  EXPECT_EQ(xy.kind, lrnn::ValueSpec::Kind::Vector);
  EXPECT_EQ(xy.rows, 2);
  EXPECT_EQ(xy.cols, 1);
  EXPECT_EQ(xy.data, (std::vector<double>{1, 0}));
  EXPECT_TRUE(xy.fixed);

  auto solution = lrnn::load_examples(kData + "simple/xor/solution/testExamples.txt");
  ASSERT_EQ(solution.size(), 4u);
  EXPECT_FALSE(solution[3].queries.at(0).weight->fixed);
  EXPECT_EQ(lrnn::print_example(solution[3]), "0 xor :- 1 x, 1 y.");

  auto generalized = lrnn::load_examples(kData + "simple/xor/generalized/examples.txt");
  ASSERT_EQ(generalized.size(), 4u);
  EXPECT_EQ(lrnn::print_literal(generalized[1].queries.at(0)), "<1> xor_at(1)");
  EXPECT_EQ(lrnn::load_examples(kData + "simple/xor/generalized/texamples.txt").size(), 8u);
  auto z = lrnn::load_examples(kData + "simple/xor/generalized/ztexamples.txt");
  ASSERT_EQ(z.size(), 8u);
  EXPECT_EQ(z[0].facts.size(), 3u);
}

// Every data file of every dataset parses (queries files as queries, others as examples),
// and printing then re-parsing gives the same ASTs.
TEST_F(SyntaxDatasets, EveryFileParsesAndRoundTrips) {
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kData)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".txt") continue;
    ++files;
    const std::string path = entry.path().string();
    SCOPED_TRACE(path);
    if (entry.path().filename() == "queries.txt") {
      auto lines = lrnn::load_queries(path);
      ASSERT_FALSE(lines.empty());
      std::string printed;
      for (const auto& q : lines) printed += lrnn::print_query_line(q) + "\n";
      EXPECT_EQ(lrnn::parse_queries(printed), lines);
    } else {
      auto examples = lrnn::load_examples(path);
      ASSERT_FALSE(examples.empty());
      std::string printed;
      for (const auto& e : examples) printed += lrnn::print_example(e) + "\n";
      auto again = lrnn::parse_examples(printed);
      EXPECT_EQ(again, examples);
    }
  }
  EXPECT_EQ(files, 14);
}

}  // namespace
