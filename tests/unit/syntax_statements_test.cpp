// The statement index of examples / queries files (src/syntax/statements.cpp), which lets an
// MPI rank parse only its block: a block parses to exactly the whole file's statements at
// those indices, and an error in a block names the line and column of the whole file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "syntax/statements.hpp"

namespace {

using lrnn::syntax::StatementIndex;

std::shared_ptr<const lrnn::SourceFile> source(const std::string& text) {
  return std::make_shared<const lrnn::SourceFile>(lrnn::SourceFile{"ex.txt", text});
}

// Examples spanning lines, several on one line, comments holding '.', numbers with a
// decimal point and quoted constants holding '.'.
const char* kExamples =
    "% a comment. with periods.\n"
    "<1> q :- a(1), b('x.y'),\n"
    "   c(2.5).  <0> q :- a(2). /* block. comment */\n"
    "<1.0> q :- [0.5, 1.5] v(3),\n"
    "\n"
    "  a(3).\n"
    "e4 :- a(4), b(\"s. t\").\n";

TEST(SyntaxStatements, IndexFindsEveryStatementAndItsPosition) {
  const StatementIndex index = lrnn::syntax::index_statements(source(kExamples));
  ASSERT_EQ(index.size(), 4u);
  EXPECT_EQ(index.starts[0].line, 2u);
  EXPECT_EQ(index.starts[0].col, 1u);
  EXPECT_EQ(index.starts[1].line, 3u);
  EXPECT_EQ(index.starts[1].col, 13u);
  EXPECT_EQ(index.starts[2].line, 4u);
  EXPECT_EQ(index.starts[3].line, 7u);
  EXPECT_FALSE(index.starts[0].named);
  EXPECT_TRUE(index.starts[3].named);
  EXPECT_TRUE(index.any_named());
}

TEST(SyntaxStatements, EveryBlockParsesToTheWholeFilesStatements) {
  const std::vector<lrnn::ExampleAst> whole = lrnn::parse_examples(kExamples, "ex.txt");
  ASSERT_EQ(whole.size(), 4u);
  const StatementIndex index = lrnn::syntax::index_statements(source(kExamples));
  for (size_t first = 0; first < 4; ++first)
    for (size_t last = first + 1; last <= 4; ++last) {
      auto block = lrnn::syntax::parse_examples_file(lrnn::syntax::statements_source(index, first, last));
      ASSERT_EQ(block.size(), last - first) << first << ".." << last;
      for (size_t k = 0; k < block.size(); ++k) {
        EXPECT_EQ(lrnn::print_example(block[k]), lrnn::print_example(whole[first + k]));
        EXPECT_EQ(block[k].span.line, whole[first + k].span.line);
        EXPECT_EQ(block[k].span.col, whole[first + k].span.col);
      }
    }
}

TEST(SyntaxStatements, AnErrorInABlockNamesTheLineOfTheWholeFile) {
  const std::string text = "<1> q :- a(1).\n<0> q :- a(2).\n<1> q :-\n  a(3) b(4).\n<0> q :- a(5).\n";
  const StatementIndex index = lrnn::syntax::index_statements(source(text));
  ASSERT_EQ(index.size(), 4u);
  // The first block parses without reading the broken third example.
  EXPECT_EQ(lrnn::syntax::parse_examples_file(lrnn::syntax::statements_source(index, 0, 2)).size(), 2u);
  std::string what;
  try {
    lrnn::syntax::parse_examples_file(lrnn::syntax::statements_source(index, 2, 4));
  } catch (const lrnn::Error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("ex.txt:4:8: error"), std::string::npos) << what;
  // The whole file reports the same place.
  try {
    lrnn::parse_examples(text, "ex.txt");
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("ex.txt:4:8: error"), std::string::npos) << e.what();
  }
}

TEST(SyntaxStatements, QueryLinesAndAnUnfinishedLastStatement) {
  const StatementIndex queries = lrnn::syntax::index_statements(source("1.0 predict.\n0 predict.\n1 predict"));
  ASSERT_EQ(queries.size(), 3u);
  EXPECT_FALSE(queries.any_named());
  auto first_two = lrnn::syntax::parse_queries_file(lrnn::syntax::statements_source(queries, 0, 2));
  ASSERT_EQ(first_two.size(), 2u);
  EXPECT_EQ(lrnn::print_query_line(first_two[1]), "0 predict.");
  EXPECT_THROW(lrnn::syntax::parse_queries_file(lrnn::syntax::statements_source(queries, 2, 3)), lrnn::Error);
  EXPECT_TRUE(lrnn::syntax::statements_source(queries, 1, 1)->text.empty());
}

}  // namespace
