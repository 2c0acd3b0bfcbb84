// The streaming parser reads an example's plain facts straight from the text
// (syntax/plain_fact.hpp) and every other fact token by token; the whole-file parser reads all
// of them token by token. Both must give the same literals, with the same spans (Span's ==
// ignores them, so they are compared field by field), and the same errors, on hand-written
// shapes and on seeded random example files mixing plain and other facts.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lrnn/syntax.hpp"
#include "syntax/lexer.hpp"
#include "syntax/plain_fact.hpp"
#include "syntax/statements.hpp"

namespace {

struct Parsed {
  std::vector<std::vector<lrnn::Literal>> facts;  // per example
  std::string error;                              // what() of the error, if any
  lrnn::Span error_span;
};

Parsed whole(const std::string& text) {
  Parsed out;
  try {
    for (auto& ex : lrnn::syntax::parse_examples_file(lrnn::syntax::make_source(text, "t.txt")))
      out.facts.push_back(std::move(ex.facts));
  } catch (const lrnn::Error& e) {
    out.error = e.what();
    out.error_span = e.span();
  }
  return out;
}

Parsed streamed(const std::string& text) {
  Parsed out;
  std::vector<lrnn::Literal> current;
  try {
    lrnn::syntax::parse_examples_streaming(lrnn::syntax::make_source(text, "t.txt"),
                                           {[&](lrnn::Literal&& l) { current.push_back(l); },  // a copy: the
                                                                                               // parser reuses l
                                            [&] { out.facts.push_back(std::move(current)), current.clear(); }});
  } catch (const lrnn::Error& e) {
    out.error = e.what();
    out.error_span = e.span();
  }
  return out;
}

std::string show(const lrnn::Span& s) {
  return std::to_string(s.line) + ":" + std::to_string(s.col) + "+" + std::to_string(s.length) +
         (s.file ? " " + s.file->name : " (no file)");
}

void expect_same_span(const lrnn::Span& a, const lrnn::Span& b, const std::string& what) {
  EXPECT_EQ(show(a), show(b)) << what;
}

void expect_same(const lrnn::Literal& a, const lrnn::Literal& b, const std::string& where) {
  EXPECT_EQ(a, b) << where;  // everything but the spans
  expect_same_span(a.span, b.span, where + ": the literal's span");
  ASSERT_EQ(a.args.size(), b.args.size()) << where;
  for (size_t i = 0; i < a.args.size(); ++i)
    expect_same_span(a.args[i].span, b.args[i].span, where + ": argument " + std::to_string(i) + "'s span");
  ASSERT_EQ(a.weight.has_value(), b.weight.has_value()) << where;
  if (a.weight) {
    expect_same_span(a.weight->span, b.weight->span, where + ": the value's span");
    ASSERT_EQ(a.weight->data.size(), b.weight->data.size()) << where;
    for (size_t i = 0; i < a.weight->data.size(); ++i)  // to the bit (== would pass -0.0 for 0.0)
      EXPECT_EQ(0, std::memcmp(&a.weight->data[i], &b.weight->data[i], sizeof(double))) << where << " entry " << i;
  }
}

void expect_same_parse(const std::string& text) {
  SCOPED_TRACE("text: " + text);
  const Parsed a = whole(text), b = streamed(text);
  EXPECT_EQ(a.error, b.error);
  if (!a.error.empty()) {
    expect_same_span(a.error_span, b.error_span, "the error's span");
    return;
  }
  ASSERT_EQ(a.facts.size(), b.facts.size());
  for (size_t e = 0; e < a.facts.size(); ++e) {
    ASSERT_EQ(a.facts[e].size(), b.facts[e].size()) << "example " << e;
    for (size_t f = 0; f < a.facts[e].size(); ++f)
      expect_same(a.facts[e][f], b.facts[e][f], "example " + std::to_string(e) + ", fact " + std::to_string(f));
  }
}

TEST(SyntaxPlainFact, PlainFactsReadLikeTokens) {
  for (const char* text : {
           "a(b), edge(n1, n2), x(n1).",
           "<[1.967,-0.838, 1.073]> x(n000000), <[ 0.5 ,\n -2e3 ]> x(n1), edge(n000000, n000001).\n",
           "f(a), 0.5 g(b), -1 g(c), +2.5e-3 g(d), <0.25> h(e), [1, 2,3] v(f), <[7]> w(g).",
           "f(a),\n\n   edge( a ,\tb )\r\n, edge(c,d)  .",
           "f(a), plain, other , last.",
           "f(a), node-1(a-b, c_d), z9(q).",
           "f(a), g(b).\nf(c), g(d), h(e).\n",
           "f(a), 1.0 g(b), 2 g(c).",
           "f(a), -0.0 g(b), 0.1 g(c), 1e-320 g(d).",
       })
    expect_same_parse(text);
}

TEST(SyntaxPlainFact, OtherShapesFallBackToTokens) {
  for (const char* text : {
           "f(a), *edge(a, b), !g(a), ~h(b), @eq(a, b).",  // prefixes (the last two are refused)
           "f(a), g(X), g(t:b), g(1), g(\"s\"), g('q'), g().",
           "f(a), g(b)^T, h(c).",
           "f(a), [[1, 2], [3, 4]] m(a), [3|0:1, 2:-1.5] s(b), {2} d(c), $w=1 n(d), <$v=[1,2]> n(e).",
           "f(a), % a comment\n g(b), /* block */ h(c).",
           "f(a), import(b), g(import).",
           "f(a), g(b) :- h(c).",
           "f(a), g(b)\n",  // no period
           "f(a), 2a g(b).",
           "f(a), 0.5.5 g(b).",
           "f(a), 1e999 g(b).",
           "f(a), <[1, 2] g(b).",
           "f(a), [] g(b).",
           "f(a), [1,] g(b).",
           "f(a), g(b c).",
           "f(a), g(b,).",
           "f(a), g(b), # h(c).",
           "f(a), - g(b).",
           "f(a), < = g(b).",
           "f(a), 0.5 <= g(b).",
       })
    expect_same_parse(text);
}

// Random example files over a mix of fragments, joined with random blanks; many are
// malformed somewhere, and then both parsers must fail alike.
TEST(SyntaxPlainFact, RandomFilesParseAlike) {
  const std::vector<std::string> values = {"",      "",       "",           "0.5 ",      "-1e-3 ",    "+2 ",
                                           "[1, 2,3] ", "<[ 1.5 ,-2 ]> ", "<0.5> ", "[[1,2],[3,4]] ", "[3|0:1] ",
                                           "{2} ",  "$w=1 ",  "<$w=1> ",    "2a ",       "0.5.5 ",    "[] ",
                                           "<[1,]> ", "1e999 ", "-0.0 "};
  const std::vector<std::string> literals = {"a",        "a(b)",      "edge(n1, n2)", "edge(n000001,n000002)",
                                             "*e(a,b)",  "!a(b)",     "a(X)",         "a(t:b)",
                                             "a(1)",     "a(\"s\")",  "a(b)^T",       "import(b)",
                                             "a()",      "a(b-c, d_e)", "x(n1, n2, n3)", "a(b c)"};
  const std::vector<std::string> blanks = {"", " ", "  ", "\n", "\t", " \r\n ", "% c\n", "/* c */"};
  std::mt19937 rng(12345);
  auto pick = [&](const std::vector<std::string>& from) { return from[rng() % from.size()]; };
  for (int file = 0; file < 400; ++file) {
    std::string text;
    const int examples = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < examples; ++e) {
      const int facts = 1 + static_cast<int>(rng() % 8);
      for (int f = 0; f < facts; ++f) {
        if (f) text += pick(blanks) + "," + pick(blanks);
        // Mostly plain facts, as in a big graph's file.
        const bool plain = rng() % 3 != 0;
        text += plain ? (rng() % 2 ? "<[0.25, -1.5]> " : "") + std::string(rng() % 2 ? "x(n1)" : "edge(n1, n22)")
                      : pick(values) + pick(literals);
      }
      text += pick(blanks) + (rng() % 20 ? "." : "") + "\n";
    }
    expect_same_parse(text);
  }
}

// Byte-level mutations of a big graph's text (a byte replaced, inserted or deleted, from
// digits, letters, punctuation, blanks and non-ASCII): whatever the text became, both
// parsers agree on it, fact by fact or error by error.
TEST(SyntaxPlainFact, MutatedTextParsesAlike) {
  const std::string base =
      "<[1.967,-0.838, 1e-3]> x(n000000), <[0.5]> x(n1),\n edge(n000000, n1), edge(n1,n000000), 1 y(n1), z.\n"
      "f(a), 0.25 g(b-c), <0.5> h(c_d), [1,2] v(e).\n";
  const std::string alphabet = "0123456789.,;:-+eE()[]<>{}$*!@~^|/%\"' \t\r\nabnxXT_\xc3\xa9\x01";
  std::mt19937 rng(2024);
  for (int round = 0; round < 3000; ++round) {
    std::string text = base;
    for (int m = 0, n = 1 + static_cast<int>(rng() % 3); m < n; ++m) {
      const size_t at = rng() % text.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: text[at] = c; break;
        case 1: text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        default: text.erase(at, 1); break;
      }
    }
    expect_same_parse(text);
  }
}

}  // namespace

namespace {

// The shapes that take the direct path do take it (else the tests above would compare the
// token-by-token parser with itself), with the tokens the lexer gives.
TEST(SyntaxPlainFact, ScannerTakesPlainShapesOnly) {
  std::vector<std::shared_ptr<const lrnn::SourceFile>> sources;  // the tokens' text lives there
  auto scan = [&](const std::string& text, lrnn::syntax::PlainFact& out) {
    sources.push_back(lrnn::syntax::make_source(text, "t.txt"));
    lrnn::syntax::Lexer lex(sources.back());
    return lrnn::syntax::scan_plain_fact(lex, out);
  };
  lrnn::syntax::PlainFact f;
  ASSERT_TRUE(scan("<[1.5, -2]>\n  edge(n1 ,n22), rest", f));
  EXPECT_EQ(f.value, lrnn::syntax::PlainFact::Value::Vector);
  EXPECT_TRUE(f.fixed);
  EXPECT_EQ(f.numbers, (std::vector<double>{1.5, -2}));
  EXPECT_EQ(f.name.text, "edge");
  EXPECT_EQ(f.name.line, 2u);
  EXPECT_EQ(f.name.col, 3u);
  ASSERT_EQ(f.args.size(), 2u);
  EXPECT_EQ(f.args[1].text, "n22");
  EXPECT_EQ(f.args[1].col, 12u);
  EXPECT_EQ(f.last.text, ")");
  EXPECT_EQ(f.end.offset, std::string("<[1.5, -2]>\n  edge(n1 ,n22)").size());
  ASSERT_TRUE(scan("0.5 a.", f));
  EXPECT_EQ(f.value, lrnn::syntax::PlainFact::Value::Scalar);
  EXPECT_TRUE(f.args.empty());
  for (const char* other : {"*e(a), x.", "a(X), x.", "a(b)^T, x.", "% c\na(b), x.", "a(b) :- c.", "a(t:b), x.",
                            "import(a), x.", "[[1]] a(b), x.", "2a b(c), x.", "a(b)"})
    EXPECT_FALSE(scan(other, f)) << other;
}

}  // namespace

namespace {

// Query lines read their first literal through the same scanner: each line's literals are
// those the token-by-token parser gives for the same text as an examples file (one example
// per line), spans included.
TEST(SyntaxPlainFact, QueryLinesReadLikeTokens) {
  std::mt19937 rng(99);
  const std::vector<std::string> lines = {"1.0 out(n000002).", "0 out(n1).", "out(n3).", "<0.5> out(a, b).",
                                          "[1, 0] cls(n4).", "-1 out(X).", "1.0 a(b), 0.0 c(d).", "1 *h(a).",
                                          "0.5 out(t:n).", "1.0 out(\"s\")."};
  for (int file = 0; file < 200; ++file) {
    std::string text;
    for (int l = 0, n = 1 + static_cast<int>(rng() % 6); l < n; ++l)
      text += std::string(rng() % 3 ? "" : "  ") + lines[rng() % lines.size()] + (rng() % 4 ? "\n" : "\n\n");
    SCOPED_TRACE("text: " + text);
    const auto queries = lrnn::syntax::parse_queries_file(lrnn::syntax::make_source(text, "t.txt"));
    const auto examples = lrnn::syntax::parse_examples_file(lrnn::syntax::make_source(text, "t.txt"));
    ASSERT_EQ(queries.size(), examples.size());
    for (size_t i = 0; i < queries.size(); ++i) {
      ASSERT_EQ(queries[i].queries.size(), examples[i].facts.size());
      for (size_t k = 0; k < queries[i].queries.size(); ++k)
        expect_same(queries[i].queries[k], examples[i].facts[k], "line " + std::to_string(i));
    }
  }
}

}  // namespace
