// The compact sample store (train/sample_store.hpp): samples decode to exactly what was
// stored (every field, spans field by field, values bit for bit), subsets and slices pick
// the right samples, a TU dataset streamed into a store is the dataset from_ast would
// build, and a set prepared from the store is the set prepared from the samples (whose
// networks hold no growth slack).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "api/dataset_impl.hpp"
#include "lrnn/datasets.hpp"
#include "lrnn/syntax.hpp"
#include "syntax/statements.hpp"
#include "shared_datasets.hpp"
#include "train/engine.hpp"
#include "train/sample_store.hpp"

namespace {

using namespace lrnn;

bool same_span(const Span& a, const Span& b) {
  return a.file == b.file && a.line == b.line && a.col == b.col && a.length == b.length;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// operator== of the AST ignores spans and compares doubles by value (a NaN differs from
// itself, -0.0 equals 0.0); this compares spans field by field and the values bit for bit.
void expect_same_literal(const Literal& a, const Literal& b) {
  Literal a_fields = a, b_fields = b;
  if (a_fields.weight) a_fields.weight->data.clear();
  if (b_fields.weight) b_fields.weight->data.clear();
  EXPECT_EQ(a_fields, b_fields);
  EXPECT_TRUE(same_span(a.span, b.span)) << a.predicate;
  ASSERT_EQ(a.args.size(), b.args.size());
  for (size_t i = 0; i < a.args.size(); ++i) EXPECT_TRUE(same_span(a.args[i].span, b.args[i].span)) << a.predicate;
  ASSERT_EQ(a.weight.has_value(), b.weight.has_value());
  if (a.weight) {
    EXPECT_TRUE(same_bits(a.weight->data, b.weight->data)) << a.predicate;
    EXPECT_TRUE(same_span(a.weight->span, b.weight->span)) << a.predicate;
  }
}

void expect_same_sample(const train::Sample& a, const train::Sample& b) {
  EXPECT_EQ(a.example.id, b.example.id);
  EXPECT_TRUE(same_span(a.example.span, b.example.span));
  EXPECT_EQ(a.queries, b.queries);
  EXPECT_EQ(a.importance, b.importance);
  ASSERT_EQ(a.example.facts.size(), b.example.facts.size());
  for (size_t f = 0; f < a.example.facts.size(); ++f) expect_same_literal(a.example.facts[f], b.example.facts[f]);
}

// Facts with everything a literal can carry, built in code (parsed files give spans).
std::vector<train::Sample> unusual_samples() {
  std::vector<train::Sample> out = train::pair_samples(
      parse_examples("<1> q :- <[1, -0.5]> f(a, 'New York'), $w=[2, 3] g(woman:Y, 3), h(b).\n"
                     "<0> q :- {2} f(a, b), [3|0:1.5] s(c), <0.25> h(b).\n",
                     "<store test>"),
      {});
  Literal odd;
  odd.predicate = "odd";
  odd.args = {Term::variable("X"), Term::number("-0"), Term{Term::Kind::String, "x y", "t", {}}};
  odd.builtin = odd.hidden = odd.negated = odd.soft_negated = odd.transposed = true;
  odd.weight = ValueSpec::scalar(-0.0);
  Literal nan = odd;
  nan.predicate = "nan";
  nan.weight = ValueSpec::scalar(std::numeric_limits<double>::quiet_NaN());
  Literal zero = odd;
  zero.predicate = "zero";
  zero.weight = ValueSpec::scalar(0.0);  // equal to -0.0 as a double, not as stored bits
  out[1].example.facts.push_back(odd);
  out[1].example.facts.push_back(nan);
  out[1].example.facts.push_back(zero);
  out[1].importance = {0.5};
  return out;
}

TEST(SampleStore, DecodesExactlyWhatWasStored) {
  const std::vector<train::Sample> samples = unusual_samples();
  const train::SampleStore store{std::vector<train::Sample>(samples)};
  ASSERT_EQ(store.size(), samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(store.fact_count(i), samples[i].example.facts.size());
    expect_same_sample(store.at(i), samples[i]);
    EXPECT_TRUE(store.without_facts()[i].example.facts.empty());
    EXPECT_EQ(store.without_facts()[i].queries, samples[i].queries);
  }
  // the parsed facts kept their places in the file
  EXPECT_EQ(store.at(0).example.facts[1].span.line, 1u);
  EXPECT_GT(store.at(0).example.facts[1].span.col, 1u);
  EXPECT_TRUE(std::signbit(store.at(1).example.facts[3].weight->data[0]));   // -0.0
  EXPECT_FALSE(std::signbit(store.at(1).example.facts[5].weight->data[0]));  // 0.0
  EXPECT_TRUE(std::isnan(store.at(1).example.facts[4].weight->data[0]));
  EXPECT_EQ(store.fact_predicates(),
            (std::vector<std::string>{"f/2", "g/2", "h/1", "nan/3", "odd/3", "s/1", "zero/3"}));
}

// A term on its fact's line keeps its span as a code in the term (no row of the span table);
// every other term (another line, another file, before its fact, too far along or too long
// for the code) a row. Both decode to the span given.
TEST(SampleStore, TermSpansOnTheFactsLineAndOffIt) {
  const auto file = std::make_shared<const SourceFile>(SourceFile{"graph.txt", "edge(a, b)."});
  const auto other = std::make_shared<const SourceFile>(SourceFile{"other.txt", "b"});
  const auto fact_with = [&](std::vector<Span> term_spans) {
    Literal l;
    l.predicate = "edge";
    l.span = Span{file, 3, 7, 10};
    for (size_t k = 0; k < term_spans.size(); ++k) {
      l.args.push_back(Term::constant(std::string(1, char('a' + k))));
      l.args.back().span = term_spans[k];
    }
    return l;
  };
  train::Sample sample;
  sample.example.facts = {
      fact_with({Span{file, 3, 12, 1}, Span{file, 3, 15, 1}}),                     // both codes
      fact_with({Span{file, 3, 7, 1}, Span{file, 3, 7 + (1u << 20) - 1, 2047}}),  // the codes' limits
      fact_with({Span{file, 4, 1, 1}, Span{file, 3, 6, 1}}),            // the next line; before the fact
      fact_with({Span{file, 3, 7 + (1u << 20), 1}, Span{file, 3, 8, 2048}}),  // past the limits
      fact_with({Span{other, 3, 12, 1}, Span{}}),                             // another file; no span
  };
  const train::SampleStore store{std::vector<train::Sample>{sample}};
  expect_same_sample(store.at(0), sample);
  const train::SampleStore::Facts facts = store.facts(0);
  Literal scratch;
  for (size_t f = 0; f < sample.example.facts.size(); ++f)
    expect_same_literal(facts.fact(f, scratch), sample.example.facts[f]);
  // The codes take no rows: a thousand facts whose terms lie on their line take a third of
  // the span rows of a thousand whose terms lie on the next.
  train::Sample coded, rows;
  for (int k = 0; k < 1000; ++k) {
    coded.example.facts.push_back(fact_with({Span{file, 3, 12, 1}, Span{file, 3, 15, 1}}));
    rows.example.facts.push_back(fact_with({Span{file, 4, 12, 1}, Span{file, 4, 15, 1}}));
  }
  const size_t coded_bytes = train::SampleStore{std::vector<train::Sample>{coded}}.bytes();
  const size_t row_bytes = train::SampleStore{std::vector<train::Sample>{rows}}.bytes();
  EXPECT_GE(row_bytes - coded_bytes, 2000 * 16u);  // two 16-byte rows per fact
  expect_same_sample(train::SampleStore{std::vector<train::Sample>{coded}}.at(0), coded);
}

TEST(SampleStore, SubsetAndSlicePickTheirSamples) {
  const std::vector<train::Sample> samples = unusual_samples();
  const train::SampleStore store{std::vector<train::Sample>(samples)};
  const std::vector<size_t> picked = {1, 0, 1};
  const train::SampleStore sub = store.subset(picked);
  ASSERT_EQ(sub.size(), 3u);
  for (size_t k = 0; k < picked.size(); ++k) expect_same_sample(sub.at(k), samples[picked[k]]);
  const train::SampleStore tail = store.slice(1, 2);
  ASSERT_EQ(tail.size(), 1u);
  expect_same_sample(tail.at(0), samples[1]);
  EXPECT_EQ(tail.fact_predicates(), (std::vector<std::string>{"f/2", "h/1", "nan/3", "odd/3", "s/1", "zero/3"}));
}

// Grounding reads a stored sample's facts one at a time (SampleStore::Facts): in order, out
// of order and by value alone they are the facts at() decodes.
TEST(SampleStore, FactsReadOneAtATimeAreTheStoredFacts) {
  const std::vector<train::Sample> samples = unusual_samples();
  const train::SampleStore store{std::vector<train::Sample>(samples)};
  for (size_t i = 0; i < samples.size(); ++i) {
    const train::SampleStore::Facts facts = store.facts(i);
    const std::vector<Literal>& expected = samples[i].example.facts;
    ASSERT_EQ(facts.size(), expected.size());
    Literal scratch;  // one scratch for every read, as the grounder reads them
    for (size_t f = 0; f < expected.size(); ++f) expect_same_literal(facts.fact(f, scratch), expected[f]);
    for (size_t f = expected.size(); f-- > 0;) expect_same_literal(facts.fact(f, scratch), expected[f]);
    for (size_t f = 0; f < expected.size(); ++f) {
      ASSERT_EQ(facts.value(f) != nullptr, expected[f].weight.has_value());
      if (facts.value(f)) EXPECT_TRUE(same_bits(facts.value(f)->data, expected[f].weight->data));
    }
  }
  Literal scratch;
  EXPECT_EQ(store.facts(1).fact(2, scratch).predicate, "h");  // a source of its own, read out of order
}

// What the grounder reads of a stored fact (FactSource::interned): its predicate, builtin
// flag and the symbols Symbols::intern_term gives its terms, whether or not the source
// memoises the symbols (a sample with many facts per distinct string does); a fact with a
// variable or a number that does not parse is left to fact() (whose error names the term).
TEST(SampleStore, InternedFactsAreTheFactsTermsInterned) {
  std::vector<train::Sample> samples = unusual_samples();
  samples[0].example.facts.push_back(samples[0].example.facts[0]);
  samples[0].example.facts.back().args[0] = Term::number("+2.50");
  samples[0].example.facts.push_back(samples[0].example.facts[0]);
  samples[0].example.facts.back().args[1] = Term::number("2.5x");
  for (int copies = 0; copies < 300; ++copies)  // many facts over a few strings: memoised
    samples[0].example.facts.push_back(samples[0].example.facts[copies % 3]);
  const train::SampleStore store{std::vector<train::Sample>(samples)};
  for (size_t i = 0; i < samples.size(); ++i) {
    logic::Symbols symbols, expected_symbols;
    const train::SampleStore::Facts facts = store.facts(i);
    logic::FactSource::Interned interned;
    size_t refused = 0;
    for (size_t f = 0; f < samples[i].example.facts.size(); ++f) {
      const Literal& l = samples[i].example.facts[f];
      const bool readable = std::none_of(l.args.begin(), l.args.end(), [](const Term& t) {
        return t.is_variable() || (t.kind == Term::Kind::Number && t.text == "2.5x");
      });
      ASSERT_EQ(facts.interned(f, symbols, interned), readable) << i << " " << f;
      if (!readable) {
        ++refused;
        continue;
      }
      EXPECT_EQ(interned.predicate, l.predicate);
      EXPECT_EQ(interned.builtin, l.builtin);
      ASSERT_EQ(interned.args.size(), l.args.size());
      for (size_t k = 0; k < l.args.size(); ++k) {
        EXPECT_EQ(interned.args[k], expected_symbols.intern_term(l.args[k])) << i << " " << f << " " << k;
      }
    }
    // sample 0: "2.5x" and g(woman:Y, 3) with its 100 copies; sample 1: the three facts with X
    EXPECT_EQ(refused, i == 0 ? 102u : 3u);
  }
  logic::Symbols symbols;
  logic::FactSource::Interned interned;
  ASSERT_TRUE(store.facts(0).interned(3, symbols, interned));  // a number term, read out of order
  EXPECT_EQ(interned.args[0], symbols.intern_number(2.5));
}

// An examples file parsed with its facts streamed into a store (what Dataset::load does:
// the facts are never all held as literals) and paired after: the samples that parsing
// the examples whole and pairing them gives, for each way of pairing.
TEST(SampleStore, StreamedParseThenPairedIsTheParsedDataset) {
  struct Case {
    std::string examples, queries;
    size_t samples;
  };
  const std::vector<Case> cases = {
      {"<1> q :- <[1, -0.5]> f(a, b), g(c).\n<0> q :- f(a, c), <2> h(d).\n", "", 2},    // labelled, in order
      {"x :- f(a, c), <2> h(d).\ny :- h(e), g(a).\n",                                   // named: reordered, twice
       "y :- 1.0 h(e).\nx :- 0.5 f(a, c).\ny :- 0.0 g(a).\n", 3},
      {"f(a, c), <2> h(d), h(e).\n", "1.0 h(d).\n0.0 h(e).\n1.0 f(a, c).\n", 1},   // one example, many lines
      // The streaming parser reads every fact after an example's first into one reused
      // literal: each fact must come out as if new whatever the one before it held (more
      // or fewer terms, types, strings, prefixes, each kind of value, or none).
      {"g :- <[1, 2, 3]> x(a, b, c), y, z(p:d), w(e), $v=<[[1, 2], [3, 4]]> m(f), u(\"s t\", 7),\n"
       "  *hid(a)^T, [4|1:-1.5, 3:2] sp(b), r(), {2, 3} d(c), 0.5 s(a), t(q:a, b), $v m(g), k.\n"
       "h :- k, <0.25> x(n1), e(n1, n2), <[1, 2]> x(n2), e(n2, n1),\n"
       // names of 16 bytes (held in the store's lookup slots) and longer (hashed), alike
       "  l(abcdefghijklmnop, abcdefghijklmnoq, abcdefghijklmnopq, abcdefghijklmnopr, abcdefghijklmnop),\n"
       "  l(abcdefghijklmnopr, abcdefghijklmnopq, abcdefghijklmno, \"\", abcdefghijklmnoq).\n",
       "g :- 1.0 k.\nh :- 0.0 k.\n", 2},
  };
  for (const Case& c : cases) {
    const auto source = std::make_shared<const SourceFile>(SourceFile{"<streamed>", c.examples});
    std::vector<QueryLineAst> lines;
    if (!c.queries.empty()) lines = parse_queries(c.queries, "<queries>");
    const std::vector<train::Sample> expected = train::pair_samples(syntax::parse_examples_file(source), lines);
    ASSERT_EQ(expected.size(), c.samples) << c.examples;
    train::SampleStore::Builder facts;
    std::vector<ExampleAst> heads = syntax::parse_examples_streaming(
        source, {[&](Literal&& fact) { facts.add_fact(fact); }, [&] { facts.end_sample({}); }});
    for (const ExampleAst& h : heads) EXPECT_TRUE(h.facts.empty());
    std::vector<uint32_t> example_of;
    std::vector<train::Sample> paired = train::pair_samples(std::move(heads), lines, {}, &example_of);
    const train::SampleStore store = std::move(facts).finish().with_heads(std::move(paired), example_of);
    ASSERT_EQ(store.size(), expected.size()) << c.examples;
    for (size_t i = 0; i < expected.size(); ++i) expect_same_sample(store.at(i), expected[i]);
  }
}

class SampleStoreTu : public test::SharedDatasetsTest {};

// load_tu streams each graph into the store; it must hold the samples from_ast pairs from
// read_tu's examples and queries, and hold them in a fraction of the literals' bytes.
TEST_F(SampleStoreTu, StreamedMutagIsTheParsedDataset) {
  TuData d = read_tu("../shared/datasets/tu/MUTAG");
  const std::vector<train::Sample> expected = train::pair_samples(d.examples, d.queries);
  const Dataset streamed = load_tu("../shared/datasets/tu/MUTAG");
  const train::SampleStore& store = streamed.impl().samples;
  ASSERT_EQ(store.size(), expected.size());
  EXPECT_EQ(streamed.parsed_examples(), expected.size());
  size_t facts = 0, args = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    expect_same_sample(store.at(i), expected[i]);
    for (const Literal& l : expected[i].example.facts) args += l.args.size();
    facts += expected[i].example.facts.size();
  }
  // 16 bytes per fact and per argument, the 7 + 4 distinct one-hot labels stored once
  const size_t literal_bytes = facts * sizeof(Literal) + args * sizeof(Term);
  EXPECT_LT(store.bytes(), 16 * (facts + args) + 64 * 1024);
  EXPECT_LT(store.bytes() * 5, literal_bytes);
}

// Every network and output of a set prepared from the store equals the set prepared from
// the same samples as objects (the store decodes each sample while it is grounded).
TEST_F(SampleStoreTu, PreparedFromTheStoreAsFromTheSamples) {
  TuData d = read_tu("../shared/datasets/tu/MUTAG");
  const std::vector<train::Sample> samples = train::pair_samples(d.examples, d.queries);
  const train::SampleStore store{std::vector<train::Sample>(samples)};
  const train::Engine engine(parse_template("h(X) :- {4,7} x(X).\nh(X) :- {4,7} x(Y), *edge(X, Y).\n"
                                            "predict :- {1,4} h(X). [aggregation=avg]\n",
                                            "<gcn>"));
  const train::PreparedSet a = engine.prepare(std::span<const train::Sample>(samples));
  const train::PreparedSet b = engine.prepare(store);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a.networks[i].structure_hash, b.networks[i].structure_hash);
    EXPECT_TRUE(same_bits(a.networks[i].fact_data, b.networks[i].fact_data));
    EXPECT_EQ(a.networks[i].inputs, b.networks[i].inputs);
  }
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t o = 0; o < a.outputs.size(); ++o) {
    EXPECT_EQ(a.outputs[o].text, b.outputs[o].text);
    EXPECT_EQ(a.outputs[o].target, b.outputs[o].target);
  }
  EXPECT_EQ(engine.evaluate(a, train::LossKind::Mse).metrics.loss, engine.evaluate(b, train::LossKind::Mse).metrics.loss);
  // A set's networks live as long as it is trained: they hold no growth slack.
  for (const neural::SampleNetwork& net : b.networks) {
    EXPECT_EQ(net.fact_data.capacity(), net.fact_data.size());
    EXPECT_EQ(net.inputs.capacity(), net.inputs.size());
    EXPECT_EQ(net.rule.capacity(), net.rule.size());
    EXPECT_EQ(net.atom_depth.capacity(), net.atom_depth.size());
  }
}

}  // namespace
