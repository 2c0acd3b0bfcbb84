// The parser builds the right AST for every construct of docs/language.md, and the printer
// writes it back in canonical form: parse(print(t)) == t, print(parse(print(t))) == print(t).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "lrnn/syntax.hpp"

namespace {

using lrnn::Term;
using lrnn::ValueSpec;

// Every construct of the language at least once.
const char* kFullTemplate = R"(% a line comment
/* a block
   comment */
p/2 [activation=sigmoid, combination=sum]
q/1 {3, 1}
r/1 0.5
s/0 <[1, 2]> [aggregation=max]
t/1.
$emb=[1, 2, 3] emb(a).
<0.5> const_fact(b, 'New York', "dq", -1, 2.5e-3).
fact_without_value(c).
{3} random_embedding(d).
$shared=<[[1, 2], [3, 4]]> fixed_matrix.
h(X) :- p(X, Y), q(Y).
h2(X) <= 0.5 p(X, Y), {3, 3} q(Y), $emb r(Y), $w2={1, 3} t(X), -0.25. [activation=tanh]
att(I, J) :- $wq={2, 2} k(J)^T, q(I), @sub(I, J, D), @geq(D, 0), @leq(D, 2). [aggregation=softmax(J), combination=product]
typed(Y) :- person(woman:Y), !married(Y), ~happy(Y), *hidden(Y, _, _Z).
sl(X) :- v(X), {3}. [activation=slice(rows=(0,2), cols=(1,3)), learnable=false, transformation=reshape(2,3)]
sparse(X) :- [5|0:1, 3:-2.5] v(X), <[4|1:1]> w(X).
fixedw(X) :- <0.3> v(X), <$named=[1, 0]> w(X), <$named> w(X), $named w(X).
builtins :- @eq(A, B), @neq(a, b), @lt(1, 2), @gt(2, 1), @next(1, N), @alldiff(A, B, C), @in(X, 1, 2, 3), @true, @false, @add(1, 2, S), @mul(2, 3, M), @div(6, 3, Q), @mod(7, 3, R).
offset_only :- 1.5.
neuralogic_names(d59-23, X) :- +2 p(X, d59-23), @neq(X, d59-23). [offset=$b, init=[1,2], range=(0,1)]
)";

TEST(SyntaxRoundTrip, FullTemplateParsesIntoTheRightAst) {
  auto t = lrnn::parse_template(kFullTemplate, "full.lrnn");
  ASSERT_EQ(t.predicates.size(), 5u);
  EXPECT_EQ(t.predicates[4].name, "t");
  EXPECT_EQ(t.predicates[4].arity, 1);
  EXPECT_FALSE(t.predicates[4].offset.has_value());
  EXPECT_TRUE(t.predicates[4].meta.empty());
  EXPECT_EQ(t.predicates[0].name, "p");
  EXPECT_EQ(t.predicates[0].arity, 2);
  ASSERT_EQ(t.predicates[0].meta.size(), 2u);
  EXPECT_EQ(t.predicates[0].meta[0].key, "activation");
  EXPECT_EQ(t.predicates[0].meta[0].value.name, "sigmoid");
  EXPECT_EQ(t.predicates[1].offset->kind, ValueSpec::Kind::Dims);
  EXPECT_EQ(t.predicates[1].offset->rows, 3);
  EXPECT_EQ(t.predicates[1].offset->cols, 1);
  EXPECT_FALSE(t.predicates[1].offset->dims_is_vector);
  EXPECT_EQ(t.predicates[2].offset->data, std::vector<double>{0.5});
  EXPECT_TRUE(t.predicates[3].offset->fixed);
  EXPECT_EQ(t.predicates[3].meta.at(0).value.name, "max");

  ASSERT_EQ(t.facts.size(), 5u);
  EXPECT_EQ(t.facts[0].weight->name, "emb");
  EXPECT_EQ(t.facts[0].weight->kind, ValueSpec::Kind::Vector);
  EXPECT_EQ(t.facts[0].weight->rows, 3);
  const auto& cf = t.facts[1];
  ASSERT_EQ(cf.arity(), 5);
  EXPECT_EQ(cf.args[1].kind, Term::Kind::String);
  EXPECT_EQ(cf.args[1].text, "New York");
  EXPECT_EQ(cf.args[2].text, "dq");
  EXPECT_EQ(cf.args[3].kind, Term::Kind::Number);
  EXPECT_EQ(cf.args[3].text, "-1");
  EXPECT_EQ(cf.args[4].text, "2.5e-3");
  EXPECT_FALSE(t.facts[2].weight.has_value());
  EXPECT_TRUE(t.facts[3].weight->dims_is_vector);
  EXPECT_EQ(t.facts[3].weight->rows, 3);
  const auto& m = *t.facts[4].weight;
  EXPECT_EQ(m.kind, ValueSpec::Kind::Matrix);
  EXPECT_EQ(m.rows, 2);
  EXPECT_EQ(m.cols, 2);
  EXPECT_EQ(m.data, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_TRUE(m.fixed);
  EXPECT_EQ(m.name, "shared");

  ASSERT_EQ(t.rules.size(), 10u);
  const auto& h2 = t.rules[1];
  ASSERT_EQ(h2.body.size(), 4u);
  EXPECT_EQ(h2.body[0].weight->data, std::vector<double>{0.5});
  EXPECT_EQ(h2.body[1].weight->kind, ValueSpec::Kind::Dims);
  EXPECT_EQ(h2.body[2].weight->kind, ValueSpec::Kind::Reference);
  EXPECT_EQ(h2.body[2].weight->name, "emb");
  EXPECT_EQ(h2.body[3].weight->name, "w2");
  EXPECT_EQ(h2.body[3].weight->rows, 1);
  EXPECT_EQ(h2.body[3].weight->cols, 3);
  ASSERT_TRUE(h2.offset.has_value());
  EXPECT_EQ(h2.offset->data, std::vector<double>{-0.25});
  EXPECT_EQ(h2.meta.at(0).value.name, "tanh");

  const auto& att = t.rules[2];
  EXPECT_TRUE(att.body[0].transposed);
  EXPECT_TRUE(att.body[2].builtin);
  EXPECT_EQ(att.body[2].predicate, "sub");
  EXPECT_EQ(att.meta[0].value.name, "softmax");
  EXPECT_EQ(att.meta[0].value.args, std::vector<std::string>{"J"});
  EXPECT_TRUE(att.meta[0].value.has_parens);

  const auto& typed = t.rules[3];
  ASSERT_EQ(typed.body.size(), 4u);
  EXPECT_EQ(typed.body[0].args[0].type, "woman");
  EXPECT_EQ(typed.body[0].args[0].text, "Y");
  EXPECT_EQ(typed.body[0].args[0].kind, Term::Kind::Variable);
  EXPECT_TRUE(typed.body[1].negated);
  EXPECT_TRUE(typed.body[2].soft_negated);
  EXPECT_TRUE(typed.body[3].hidden);
  EXPECT_EQ(typed.body[3].args[1].kind, Term::Kind::Variable);
  EXPECT_EQ(typed.body[3].args[1].text, "_");

  const auto& sl = t.rules[4];
  EXPECT_TRUE(sl.offset->dims_is_vector);
  ASSERT_EQ(sl.meta.size(), 3u);
  EXPECT_EQ(sl.meta[0].value.name, "slice");
  EXPECT_EQ(sl.meta[0].value.kwargs,
            (std::vector<std::pair<std::string, std::string>>{{"rows", "(0,2)"}, {"cols", "(1,3)"}}));
  EXPECT_EQ(sl.meta[1].value.name, "false");
  EXPECT_EQ(sl.meta[2].key, "transformation");
  EXPECT_EQ(sl.meta[2].value.args, (std::vector<std::string>{"2", "3"}));

  const auto& sp = t.rules[5].body[0].weight.value();
  EXPECT_TRUE(sp.sparse);
  EXPECT_EQ(sp.kind, ValueSpec::Kind::Vector);
  EXPECT_EQ(sp.data, (std::vector<double>{1, 0, 0, -2.5, 0}));
  EXPECT_TRUE(t.rules[5].body[1].weight->fixed);
  EXPECT_TRUE(t.rules[5].body[1].weight->sparse);

  const auto& fw = t.rules[6];
  EXPECT_TRUE(fw.body[1].weight->fixed);
  EXPECT_EQ(fw.body[1].weight->name, "named");
  EXPECT_EQ(fw.body[2].weight->kind, ValueSpec::Kind::Reference);
  EXPECT_TRUE(fw.body[2].weight->fixed);
  EXPECT_FALSE(fw.body[3].weight->fixed);

  EXPECT_EQ(t.rules[7].body.size(), 13u);
  EXPECT_TRUE(t.rules[8].body.empty());
  EXPECT_EQ(t.rules[8].offset->data, std::vector<double>{1.5});

  const auto& nl = t.rules[9];
  EXPECT_EQ(nl.head.args[0].text, "d59-23");
  EXPECT_EQ(nl.head.args[0].kind, Term::Kind::Constant);
  EXPECT_EQ(nl.body[0].weight->data, std::vector<double>{2});
  ASSERT_EQ(nl.meta.size(), 3u);
  EXPECT_EQ(nl.meta[0].value.name, "$b");
  EXPECT_EQ(nl.meta[1].value.name, "[1,2]");
  EXPECT_EQ(nl.meta[2].value.name, "(0,1)");
  EXPECT_FALSE(nl.meta[2].value.has_parens);
}

TEST(SyntaxRoundTrip, FullTemplatePrintsCanonicallyAndReparsesEqual) {
  auto t = lrnn::parse_template(kFullTemplate, "full.lrnn");
  std::string printed = lrnn::print_template(t);
  auto again = lrnn::parse_template(printed, "printed.lrnn");
  EXPECT_EQ(again, t) << printed;
  EXPECT_EQ(lrnn::print_template(again), printed);  // idempotent
  // Spot-check the canonical form of the trickiest lines.
  EXPECT_NE(printed.find("s/0 <[1, 2]> [aggregation=max]\nt/1.\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("h2(X) :- 0.5 p(X, Y), {3, 3} q(Y), $emb r(Y), $w2={1, 3} t(X), -0.25. [activation=tanh]\n"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("sparse(X) :- [5|0:1, 3:-2.5] v(X), <[4|1:1]> w(X).\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("[activation=slice(rows=(0,2), cols=(1,3)), learnable=false, transformation=reshape(2, 3)]"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("<0.5> const_fact(b, 'New York', 'dq', -1, 2.5e-3).\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("offset_only :- 1.5.\n"), std::string::npos) << printed;
}

TEST(SyntaxRoundTrip, ValuesPrintInCanonicalForm) {
  auto weight_of = [](const std::string& text) { return lrnn::parse_literal(text + " a").weight.value(); };
  EXPECT_EQ(lrnn::print_value(weight_of("0.5")), "0.5");
  EXPECT_EQ(lrnn::print_value(weight_of("1.0")), "1");
  EXPECT_EQ(lrnn::print_value(weight_of("1e-3")), "0.001");
  EXPECT_EQ(lrnn::print_value(weight_of("[1,2,3]")), "[1, 2, 3]");
  EXPECT_EQ(lrnn::print_value(weight_of("[[1,2],[3,4]]")), "[[1, 2], [3, 4]]");
  EXPECT_EQ(lrnn::print_value(weight_of("{3}")), "{3}");
  EXPECT_EQ(lrnn::print_value(weight_of("{1,3}")), "{1, 3}");
  EXPECT_EQ(lrnn::print_value(weight_of("< {2,2} >")), "<{2, 2}>");
  EXPECT_EQ(lrnn::print_value(weight_of("$w = < 0.1 >")), "$w=<0.1>");
  EXPECT_EQ(lrnn::print_value(weight_of("$w")), "$w");
  EXPECT_EQ(lrnn::print_value(weight_of("[6|5:2,0:1]")), "[6|0:1, 5:2]");
  EXPECT_EQ(lrnn::print_value(weight_of("[3|]")), "[3|]");
}

TEST(SyntaxRoundTrip, RulesLiteralsAndTerms) {
  auto r = lrnn::parse_rule("h(X)<=a(X),0.5,b(X)^T.[activation=sigmoid]");
  EXPECT_EQ(lrnn::print_rule(r), "h(X) :- a(X), b(X)^T, 0.5. [activation=sigmoid]");
  auto fact = lrnn::parse_rule("<1> edge(I, I)");
  EXPECT_TRUE(fact.body.empty());
  EXPECT_EQ(lrnn::print_rule(fact), "<1> edge(I, I).");
  auto goal = lrnn::parse_literal("reachable(X, charing_cross)");
  EXPECT_EQ(goal.predicate, "reachable");
  ASSERT_EQ(goal.arity(), 2);
  EXPECT_TRUE(goal.args[0].is_variable());
  EXPECT_EQ(goal.args[1].text, "charing_cross");
  EXPECT_EQ(lrnn::print_literal(lrnn::parse_literal("~ ! p(X).")), "!~p(X)");
  EXPECT_EQ(lrnn::print_term(lrnn::parse_literal(R"(p('a\'b'))").args[0]), R"('a\'b')");
  EXPECT_EQ(lrnn::print_term(Term::constant("New York")), "'New York'");
  EXPECT_EQ(lrnn::print_term(lrnn::parse_literal("p(woman:Y)").args[0]), "woman:Y");
  std::vector<lrnn::MetaEntry> meta = lrnn::parse_rule("h :- b. [aggregation=softmax(J), x=f(a=(1,(2,3)))]").meta;
  EXPECT_EQ(lrnn::print_meta(meta), "[aggregation=softmax(J), x=f(a=(1,(2,3)))]");
}

TEST(SyntaxRoundTrip, MetadataIsDistinguishedFromAFollowingVectorFact) {
  auto t = lrnn::parse_template("h :- b. [1, 2] emb(a).\nh2 :- b. [activation=relu]\n[3] x.");
  ASSERT_EQ(t.rules.size(), 2u);
  EXPECT_TRUE(t.rules[0].meta.empty());
  ASSERT_EQ(t.facts.size(), 2u);
  EXPECT_EQ(t.facts[0].weight->data, (std::vector<double>{1, 2}));
  EXPECT_EQ(t.rules[1].meta.at(0).value.name, "relu");
  EXPECT_EQ(t.facts[1].weight->data, std::vector<double>{3});
}

TEST(SyntaxRoundTrip, ExamplesAndQueries) {
  const char* examples_text =
      "a(1), <0.5> b(1, 2).\n"
      "ex2 :- [1, 2] c(x),\n   d(y).\n"
      "<1> xor :- <0> a, <1> b.\n"
      "0 xor :- 0 x, 1 y.\n";
  auto ex = lrnn::parse_examples(examples_text, "ex.txt");
  ASSERT_EQ(ex.size(), 4u);
  EXPECT_EQ(ex[0].facts.size(), 2u);
  EXPECT_EQ(ex[1].id, "ex2");
  EXPECT_EQ(ex[1].facts.size(), 2u);
  EXPECT_EQ(ex[1].facts[1].span.line, 3u);
  EXPECT_EQ(ex[2].queries.at(0).predicate, "xor");
  EXPECT_EQ(ex[3].queries.at(0).weight->data, std::vector<double>{0});
  std::string printed;
  for (const auto& e : ex) printed += lrnn::print_example(e) + "\n";
  EXPECT_EQ(printed,
            "a(1), <0.5> b(1, 2).\n"
            "ex2 :- [1, 2] c(x), d(y).\n"
            "<1> xor :- <0> a, <1> b.\n"
            "0 xor :- 0 x, 1 y.\n");
  EXPECT_EQ(lrnn::parse_examples(printed), ex);

  const char* queries_text = "1.0 predict.\n\n0.0 predict(ussr, commonbloc2, egypt).\nid :- 1.0 q1, 0.0 q2.\nq3(X).\n";
  auto q = lrnn::parse_queries(queries_text, "q.txt");
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(q[2].id, "id");
  ASSERT_EQ(q[2].queries.size(), 2u);
  EXPECT_EQ(q[2].queries[1].weight->data, std::vector<double>{0});
  EXPECT_FALSE(q[3].queries[0].weight.has_value());
  std::string qprinted;
  for (const auto& l : q) qprinted += lrnn::print_query_line(l) + "\n";
  EXPECT_EQ(qprinted, "1 predict.\n0 predict(ussr, commonbloc2, egypt).\nid :- 1 q1, 0 q2.\nq3(X).\n");
  EXPECT_EQ(lrnn::parse_queries(qprinted), q);
}

TEST(SyntaxRoundTrip, ByteOrderMarkAndCrlfLineEndings) {
  auto t = lrnn::parse_template("\xEF\xBB\xBFh(X) :- a(X).\r\ng :- h(1).\r\n");
  ASSERT_EQ(t.rules.size(), 2u);
  EXPECT_EQ(t.rules[1].span.line, 2u);
  EXPECT_EQ(t.rules[1].span.col, 1u);
  try {
    lrnn::parse_template("h :- a.\r\ng :- h(1) x.\r\n");
    FAIL();
  } catch (const lrnn::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "<string>:2:11: error: expected ',' or '.' after the rule body, found 'x'\ng :- h(1) x.\n          ^");
  }
}

TEST(SyntaxRoundTrip, ImportsAreInlinedRelativeToTheImportingFile) {
  auto dir = std::filesystem::temp_directory_path() / "lrnn_syntax_import_test";
  std::filesystem::create_directories(dir / "sub");
  std::ofstream(dir / "main.lrnn") << "a(1).\nimport ./sub/lib.lrnn\nh(X) :- b(X).\n";
  std::ofstream(dir / "sub" / "lib.lrnn") << "import ./leaf.lrnn\nb(X) :- a(X).\n";
  std::ofstream(dir / "sub" / "leaf.lrnn") << "leaf/1 [activation=relu]\n";
  auto t = lrnn::load_template((dir / "main.lrnn").string());
  ASSERT_EQ(t.rules.size(), 2u);
  EXPECT_EQ(t.rules[0].head.predicate, "b");  // inlined at the import, before h
  EXPECT_EQ(t.rules[1].head.predicate, "h");
  ASSERT_EQ(t.predicates.size(), 1u);
  EXPECT_EQ(t.sources.size(), 3u);
  EXPECT_EQ(t.rules[0].span.file->name, (dir / "sub" / "lib.lrnn").lexically_normal().string());
  EXPECT_EQ(t.rules[0].span.line, 2u);
  std::filesystem::remove_all(dir);
}

}  // namespace
