// The RASP weight compiler: tracr's library programs compile and the weights agree with the
// interpreter on every input up to max_len; what cannot be compiled exactly is refused
// naming the s-op.
#include <gtest/gtest.h>

#include <cmath>

#include "lrnn/lrnn.hpp"
#include "lrnn/rasp.hpp"
#include "rasp_test_support.hpp"

namespace {

using namespace lrnn::rasp;
using rasp_test::error_of;

std::vector<Value> abc() { return chars("abc"); }

void expect_exact(const SOp& program, const std::vector<Value>& vocab, int max_len, CompileOptions options = {}) {
  CompiledModel m = compile(program, vocab, max_len, options);
  VerifyReport r = m.verify();
  EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch << "\n" << m.table();
  EXPECT_EQ(r.checked, r.total);
  EXPECT_GT(r.checked, 0u);
}

SOp make_length() { return select(tokens(), tokens(), Predicate::True).width().name("length"); }

SOp make_reverse(const SOp& sop) {
  SOp opp = (make_length() - indices()).name("opp_idx");
  opp = (opp - 1).name("opp_idx-1");
  return select(indices(), opp, Predicate::Eq).value(sop, Value{}).name("reverse");
}

SOp make_hist() { return select(tokens(), tokens(), Predicate::Eq).width().name("hist"); }

SOp make_sort_unique(const SOp& vals, const SOp& keys) {
  SOp target = select(keys, keys, Predicate::Lt).width().name("target_pos");
  return select(target, indices(), Predicate::Eq).value(vals, Value{}).name("sort");
}

// The compiled transformer as an lrnn template: the engine's forward pass of the rules
// gives forward()'s residual stream on every input up to max_len (so decoding it gives the
// interpreter's values), for heads, MLPs and causal masks.
void expect_template_matches(const SOp& program, const std::vector<Value>& vocab, int max_len,
                             CompileOptions options = {}) {
  const CompiledModel m = compile(program, vocab, max_len, options);
  lrnn::Model engine(lrnn::Template::from_string(m.template_text(), "compiled.lrnn"));
  std::string examples, queries;
  std::vector<std::vector<Value>> inputs;
  for (size_t k = 0; k < compiled_input_count(vocab.size(), max_len); ++k) {
    inputs.push_back(compiled_input(vocab, max_len, k));
    const std::string id = "s" + std::to_string(k);
    examples += id + " :- " + m.example_text(inputs.back()) + ".\n";
    queries += id + " :- " + m.query_text(inputs.back()) + ".\n";
  }
  const lrnn::Evaluation ev = engine.evaluate(lrnn::Dataset::from_text(examples, queries));
  size_t compared = 0;
  double worst = 0;
  for (const lrnn::Output& o : ev.outputs) {
    const std::vector<double> x = m.forward(inputs[o.example]);
    const size_t p = std::stoul(o.query.substr(o.query.find('(') + 1));
    ASSERT_EQ(o.value.size(), static_cast<size_t>(m.d_model)) << o.query;
    for (int c = 0; c < m.d_model; ++c)
      worst = std::max(worst, std::fabs(o.value[c] - x[p * m.d_model + c]));
    ++compared;
  }
  size_t positions = 0;
  for (const auto& in : inputs) positions += in.size() + 1;
  EXPECT_EQ(compared, positions);
  EXPECT_LT(worst, 1e-9) << m.template_text().substr(0, 400);
}

TEST(RaspCompiler, TemplateRunsInTheEngineExactly) {
  expect_template_matches(make_reverse(tokens()), abc(), 3);
  expect_template_matches(make_hist(), abc(), 3);
  std::vector<Value> nums{Value(int64_t{1}), Value(int64_t{2}), Value(int64_t{3})};
  SOp keys = zipmap({tokens(), indices()}, [](const std::vector<Value>& a) -> Value {
    return to_double(a[0]) + to_double(a[1]) / 3;
  }, "unique_key");
  expect_template_matches(make_sort_unique(tokens(), keys), nums, 3);
  CompileOptions causal;
  causal.causal = true;
  SOp is_a = numerical(map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "a"}; }, "is_a"));
  SOp frac = numerical(aggregate(select(indices(), indices(), Predicate::Le), is_a, int64_t{0}, Convention::Mean));
  expect_template_matches(frac, abc(), 3, causal);
  SOp centred = numerical(map(frac, [](const Value& v) -> Value { return to_double(v) - 0.5; }, "minus_half"));
  expect_template_matches(centred, abc(), 3);
  // a joint feature (an MLP-only first layer) and its head
  Selector mixed = select(tokens(), tokens(), Predicate::Eq) | select(indices(), SOp(int64_t{0}), Predicate::Eq);
  expect_template_matches(mixed.width(), abc(), 3);
}

TEST(RaspCompiler, LengthIsOneLayer) {
  CompiledModel m = compile(make_length(), abc(), 5);
  EXPECT_EQ(m.layers.size(), 1u);
  EXPECT_EQ(m.heads(), 1);
  auto out = m(chars("abca"));
  ASSERT_EQ(out.size(), 4u);
  for (const auto& v : out) EXPECT_EQ(v, Value(int64_t{4}));
  expect_exact(make_length(), abc(), 5);
  // the built-in `length` too
  expect_exact(length() * 2, abc(), 4);
}

TEST(RaspCompiler, AttentionPatternsAndPicture) {
  CompiledModel rev = compile(make_reverse(tokens()), abc(), 5);
  auto patterns = rev.attention(chars("abc"));
  ASSERT_EQ(patterns.size(), 2u);  // length, then the flip
  // the flip: query position i (row i + 1) attends to key position 2 - i, BOS to itself
  const auto& flip = patterns[1];
  EXPECT_NEAR(flip[0 * 4 + 0], 1.0, 1e-12);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(flip[(i + 1) * 4 + (3 - i)], 1.0, 1e-12);
  // length: every query attends equally to BOS and the 3 tokens
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(patterns[0][1 * 4 + k], 0.25, 1e-12);
  std::string svg = draw_compiled_svg(rev, chars("abc"));
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("2 layer(s), 2 head(s)"), std::string::npos);
  EXPECT_NE(svg.find("layer 2: 1 head(s)"), std::string::npos);
  EXPECT_NE(svg.find("tokens=a"), std::string::npos);
}

TEST(RaspCompiler, ReverseHistSortAgreeOnEveryInput) {
  expect_exact(make_reverse(tokens()), abc(), 5);
  expect_exact(make_hist(), abc(), 5);
  // sort_unique needs unique keys; tracr's make_sort makes them so with the index
  std::vector<Value> nums{Value(int64_t{1}), Value(int64_t{2}), Value(int64_t{3})};
  const int max_len = 4;
  SOp keys = zipmap({tokens(), indices()}, [](const std::vector<Value>& a) -> Value {
    return to_double(a[0]) + to_double(a[1]) / max_len;
  }, "unique_key");
  expect_exact(make_sort_unique(tokens(), keys), nums, max_len);
  auto sorted = compile(make_sort_unique(tokens(), keys), nums, max_len)(
      std::vector<Value>{Value(int64_t{3}), Value(int64_t{1}), Value(int64_t{2}), Value(int64_t{1})});
  std::vector<Value> expected_sort{Value(int64_t{1}), Value(int64_t{1}), Value(int64_t{2}), Value(int64_t{3})};
  EXPECT_EQ(sorted, expected_sort);
  CompiledModel rev = compile(make_reverse(tokens()), abc(), 5);
  EXPECT_EQ(rev.layers.size(), 2u);  // length, then the flip
  std::vector<Value> expected = chars("cba");
  EXPECT_EQ(rev(chars("abc")), expected);
}

TEST(RaspCompiler, NumericalMeanKeepsFractions) {
  // tracr's frac_prevs: the fraction of earlier tokens that are "a", k/n for every k <= n
  SOp is_a = numerical(map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "a"}; }, "is_a"));
  SOp frac = numerical(aggregate(select(indices(), indices(), Predicate::Le), is_a, int64_t{0}, Convention::Mean));
  expect_exact(frac, abc(), 5);
  CompiledModel m = compile(frac, abc(), 5);
  auto out = m(chars("abaa"));
  EXPECT_NEAR(to_double(out[1]), 0.5, 1e-12);
  EXPECT_NEAR(to_double(out[2]), 2.0 / 3.0, 1e-12);
  // a numerical map with negative outputs (tracr clips them through ReLU)
  SOp centred = numerical(map(frac, [](const Value& v) -> Value { return to_double(v) - 0.5; }, "minus_half"));
  expect_exact(centred, abc(), 4);
  EXPECT_LT(to_double(compile(centred, abc(), 4)(chars("b"))[0]), 0.0);
}

TEST(RaspCompiler, NoneDefaultStaysDistinguishable) {
  SOp prev = select(indices(), map(indices(), [](const Value& i) -> Value { return std::get<int64_t>(i) - 1; }),
                    Predicate::Eq)
                 .value(tokens(), Value{});
  expect_exact(prev, abc(), 4);
  auto out = compile(prev, abc(), 4)(chars("ab"));
  EXPECT_TRUE(is_none(out[0]));
  EXPECT_EQ(out[1], Value(std::string("a")));
}

TEST(RaspCompiler, CompositeAndSelector) {
  // earlier positions holding the same token: an `and` of selectors over different s-ops
  Selector same_before = select(tokens(), tokens(), Predicate::Eq) & select(indices(), indices(), Predicate::Lt);
  expect_exact(same_before.width(), abc(), 5);
  expect_exact(aggregate(same_before, SOp(int64_t{1}), int64_t{0}), abc(), 4);
  // not/or over one pair of s-ops is one table
  Selector other = ~select(tokens(), tokens(), Predicate::Eq) | select(tokens(), tokens(), Predicate::Lt);
  expect_exact(other.width(), abc(), 4);
}

TEST(RaspCompiler, CompositeOrNotOverDifferentSOps) {
  // or / not across pairs of s-ops: one table over the joint (tokens, indices) values
  Selector mixed = select(tokens(), tokens(), Predicate::Eq) | select(indices(), indices(), Predicate::Lt);
  expect_exact(mixed.width(), abc(), 4);
  CompiledModel m = compile(mixed.width(), abc(), 4);
  bool joint = false;
  for (const auto& space : m.spaces) joint |= space.name == "(tokens, indices)" || space.name == "(indices, tokens)";
  EXPECT_TRUE(joint) << m.table();
  EXPECT_EQ(m.heads(), 1);
  // [a, b, a, c]: the same token or an earlier position: {0, 2}, {0, 1}, {0, 1, 2}, {0, 1, 2, 3}
  std::vector<Value> widths{Value(int64_t{2}), Value(int64_t{2}), Value(int64_t{3}), Value(int64_t{4})};
  EXPECT_EQ(m(chars("abac")), widths);
  Selector neither = ~(select(tokens(), tokens(), Predicate::Eq) | select(indices(), indices(), Predicate::Le));
  expect_exact(neither.width(), abc(), 4);
  // a key-only part (the BOS trick) and an `and` with a joint part: mean and categorical heads
  Selector with_first = select(tokens(), tokens(), Predicate::Eq) | select(indices(), SOp(int64_t{0}), Predicate::Eq);
  expect_exact(numerical(aggregate(with_first, numerical(map(indices(), [](const Value& i) -> Value {
                                     return to_double(i);
                                   })),
                                   int64_t{0}, Convention::Mean)),
               abc(), 4);
  Selector prev_other = (select(tokens(), tokens(), Predicate::Eq) | select(indices(), SOp(int64_t{0}), Predicate::Eq)) &
                        select(indices(), map(indices(), [](const Value& i) -> Value { return std::get<int64_t>(i) - 1; }),
                               Predicate::Eq);
  expect_exact(aggregate(prev_other, tokens(), Value{}), abc(), 4);
  // the joint's values are computed from what the compared s-ops are computed from, so a
  // joint over a map of a mean and the indices needs no layer of its own for the map
  SOp frac = numerical(aggregate(select(indices(), indices(), Predicate::Le),
                                 numerical(map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "a"}; })),
                                 int64_t{0}, Convention::Mean));
  SOp half = map(frac, [](const Value& v) -> Value { return int64_t{to_double(v) >= 0.5}; }, "half");
  Selector either = select(half, half, Predicate::Eq) | select(indices(), indices(), Predicate::Gt);
  expect_exact(either.width(), abc(), 4);
  // numerical s-ops compared inside an `or`: one-hot through the joint, exact; two of them
  // in one joint: one read through a categorical copy (an MLP before the joint's)
  SOp frac_b = numerical(aggregate(select(indices(), indices(), Predicate::Le),
                                   numerical(map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "b"}; })),
                                   int64_t{0}, Convention::Mean));
  Selector by_frac = select(frac, frac, Predicate::Eq) | select(indices(), indices(), Predicate::Lt);
  expect_exact(by_frac.width(), abc(), 4);
  Selector two = select(frac, frac, Predicate::Eq) | select(frac_b, frac_b, Predicate::Lt);
  expect_exact(two.width(), abc(), 4);
  CompiledModel m2 = compile(two.width(), abc(), 4);
  bool copy = false;
  for (const auto& space : m2.spaces) copy |= space.name.find(":categorical") != std::string::npos;
  EXPECT_TRUE(copy) << m2.table();
  // means of booleans take True / False as well as 1.0 / 0.0: one joint value, one MLP row
  auto bool_frac = [](const char* token) {
    SOp is = numerical(map(tokens(), [token](const Value& v) -> Value { return to_string(v) == token; }));
    return numerical(aggregate(select(indices(), indices(), Predicate::Le), is, int64_t{0}, Convention::Mean));
  };
  SOp bool_a = bool_frac("a"), bool_b = bool_frac("b");
  expect_exact((select(bool_a, bool_a, Predicate::Eq) | select(bool_b, bool_b, Predicate::Lt)).width(), abc(), 4);
}

TEST(RaspCompiler, SumOfAConstantIsAWidth) {
  SOp count = select(indices(), indices(), Predicate::Le).value(SOp(int64_t{3}));  // RASPy sum
  expect_exact(count, abc(), 5);
}

TEST(RaspCompiler, CausalHeads) {
  SOp prefix = select(indices(), indices(), Predicate::Le).width();
  CompileOptions causal;
  causal.causal = true;
  expect_exact(prefix, abc(), 4, causal);
  std::string err = error_of([&] { compile(make_reverse(tokens()), abc(), 4, causal); });
  EXPECT_NE(err.find("causal attention sees only earlier positions"), std::string::npos) << err;
}

TEST(RaspCompiler, RefusalsNameTheSOp) {
  // a sum of several different selected values
  SOp sum = select(indices(), indices(), Predicate::Le).value(indices()).name("prefix_sum");
  std::string err = error_of([&] { compile(sum, abc(), 3); });
  EXPECT_NE(err.find("cannot compile prefix_sum"), std::string::npos) << err;
  // a product of two numerical means: one is read through a categorical copy
  SOp mean_a = numerical(aggregate(select(indices(), indices(), Predicate::Le),
                                   map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "a"}; }),
                                   int64_t{0}, Convention::Mean));
  SOp mean_b = numerical(aggregate(select(indices(), indices(), Predicate::Le),
                                   map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "b"}; }),
                                   int64_t{0}, Convention::Mean));
  expect_exact(numerical(zipmap({mean_a, mean_b}, [](const std::vector<Value>& x) -> Value {
                 return to_double(x[0]) * to_double(x[1]);
               })),
               abc(), 4);
  // a selector comparing a numerical s-op
  SOp mean_tokens = numerical(aggregate(select(indices(), indices(), Predicate::Le), mean_a, int64_t{0}, Convention::Mean));
  err = error_of([&] { compile(select(mean_tokens, mean_tokens, Predicate::Eq).name("by_mean").width(), abc(), 3); });
  EXPECT_NE(err.find("cannot compile by_mean"), std::string::npos) << err;
  EXPECT_NE(err.find("is numerical (annotated numerical: drop the annotation)"), std::string::npos) << err;
  // ... and one the user never annotated (issue 32: the refusal told them to drop an
  // annotation they had not written): an average of several selected keys
  SOp prefix_share = aggregate(select(indices(), indices(), Predicate::Le),
                               map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "a"}; }),
                               int64_t{0}, Convention::Mean);
  err = error_of([&] { compile(select(prefix_share, prefix_share, Predicate::Eq).name("by_share").width(), abc(), 3); });
  EXPECT_NE(err.find("cannot compile by_share"), std::string::npos) << err;
  EXPECT_NE(err.find("averages them"), std::string::npos) << err;
  EXPECT_EQ(err.find("annotation"), std::string::npos) << err;
  // a joint feature wider than the limit: (tokens, a mean over the prefix) of 10 tokens
  // weighted 1, 10, 100, ... takes more than 4096 tuples up to length 5
  SOp weight = numerical(map(tokens(), [](const Value& v) -> Value {
    return std::pow(10.0, static_cast<double>(to_string(v)[0] - 'a'));
  }));
  SOp prefix_mean = aggregate(select(indices(), indices(), Predicate::Le), weight, int64_t{0}, Convention::Mean);
  SOp code = map(prefix_mean, [](const Value& v) -> Value { return to_double(v); }).name("code");
  Selector wide = (select(tokens(), tokens(), Predicate::Eq) | select(code, code, Predicate::Eq)).name("wide");
  err = error_of([&] { compile(wide.width(), chars("abcdefghij"), 5); });
  EXPECT_NE(err.find("cannot compile wide: it compares (tokens, code) jointly, which take more than 4096"),
            std::string::npos)
      << err;
  // a categorical aggregate of several strings fails in the interpreter: named too
  err = error_of([&] { compile(select(indices(), indices(), Predicate::Le).value(tokens()).name("gather"), abc(), 3); });
  EXPECT_NE(err.find("gather"), std::string::npos) << err;
  // too many inputs to enumerate
  err = error_of([&] { compile(tokens(), chars("abcdefghij"), 9); });
  EXPECT_NE(err.find("inputs over a vocabulary of 10"), std::string::npos) << err;
  // bad tokens at run time
  CompiledModel m = compile(make_hist(), abc(), 3);
  EXPECT_NE(error_of([&] { m(chars("abz")); }).find("not in the vocabulary"), std::string::npos);
  EXPECT_NE(error_of([&] { m(chars("abca")); }).find("at most 3"), std::string::npos);
}

}  // namespace

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_test_support.hpp"

namespace {

TEST(RaspCompilerCli, CompileWritesTheModelAndVerifies) {
  auto path = std::filesystem::temp_directory_path() / ("rasp_compile_" + std::to_string(std::rand()) + ".json");
  auto run = lrnn_test::run_lrnn("rasp compile " + std::string(LRNN_SOURCE_DIR) +
                                 "/tests/rasp/reverse.rasp --vocab a,b,c --max-len 4 --verify -o " + path.string());
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("verify: 120 of 120 inputs, 0 mismatches"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("categorical  a b c"), std::string::npos) << run.out;
  std::ifstream in(path);
  nlohmann::json model = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  EXPECT_EQ(model["layers"], 2);
  const int d = model["d_model"];
  EXPECT_EQ(model["weights"]["layers.1.heads.0.qk"]["shape"], nlohmann::json({d, d}));
  EXPECT_EQ(model["weights"]["embed.tokens"]["data"].size(), static_cast<size_t>(3 * d));
  // a program the compiler refuses: exit code 1 and the s-op named
  auto refused = lrnn_test::run_lrnn("rasp compile " + std::string(LRNN_SOURCE_DIR) +
                                     "/tests/rasp/errors/aggregate_strings.rasp --vocab a,b --max-len 3");
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.out.find("cannot compile"), std::string::npos) << refused.out;
}

}  // namespace

namespace {

// The paper's Dyck programs (tests/rasp, mean aggregation): chains of numerical comparisons
// split into MLPs of their own and stay exact.
TEST(RaspCompilerPaper, DyckProgramsCompileExactly) {
  const std::string dir = std::string(LRNN_SOURCE_DIR) + "/tests/rasp/";
  Program dyck1 = load_rasp_file(dir + "dyck1.rasp");
  CompileOptions mean;
  mean.convention = dyck1.convention;
  CompiledModel m1 = compile(dyck1.output, chars("()a"), 5, mean);
  VerifyReport r1 = m1.verify();
  EXPECT_EQ(r1.mismatches, 0u) << r1.first_mismatch;
  EXPECT_EQ(r1.checked, 363u);
  Program dyck2 = load_rasp_file(dir + "dyck2.rasp");
  CompiledModel m2 = compile(dyck2.output, chars("(){}"), 4, mean);
  VerifyReport r2 = m2.verify();
  EXPECT_EQ(r2.mismatches, 0u) << r2.first_mismatch;
  EXPECT_EQ(r2.checked, 340u);
  EXPECT_EQ(m2.analyzed_layers, 4);
}

// The paper's BOS-style programs combine selectors over different s-ops with `or`
// (`sel or select(indices, 0, ==)`): one score table over joint values of the s-ops each
// side compares. Exact on every input over "§abc" (the BOS symbol and 3 tokens) up to 4.
TEST(RaspCompilerPaper, BosProgramsCompileExactly) {
  const std::string dir = std::string(LRNN_SOURCE_DIR) + "/tests/rasp/";
  std::vector<Value> bos_vocab{Value(std::string("§"))};
  for (const auto& v : chars("abc")) bos_vocab.push_back(v);
  struct Expected {
    const char* file;
    size_t layers;
    int heads;
  };
  for (const Expected& e : {Expected{"histogram_bos.rasp", 2, 1}, Expected{"sort.rasp", 3, 2},
                            Expected{"most_frequent.rasp", 5, 4}, Expected{"double_histogram.rasp", 4, 3}}) {
    Program p = load_rasp_file(dir + e.file);
    CompileOptions options;
    options.convention = p.convention;
    CompiledModel m = compile(p.output, bos_vocab, 4, options);
    VerifyReport r = m.verify();
    EXPECT_EQ(r.mismatches, 0u) << e.file << ": " << r.first_mismatch;
    EXPECT_EQ(r.checked, 340u) << e.file;
    EXPECT_EQ(m.layers.size(), e.layers) << e.file << "\n" << m.table();
    EXPECT_EQ(m.heads(), e.heads) << e.file;
  }
}

}  // namespace

namespace {

// The size-saving constructions of issue 15 stay exact on every input: a categorical lookup
// over three inputs (the decision tree searches its split order), a non-monotone numerical
// map with negative values (the interpolant's ramps), a map of the indices read by a head
// as its query and a map of the tokens as its values (folded into the head), and two
// aggregates attending alike (one head).
TEST(RaspCompiler, SmallerConstructionsStayExact) {
  SOp prev_token = select(indices(), map(indices(), [](const Value& i) -> Value { return std::get<int64_t>(i) - 1; }),
                          Predicate::Eq)
                       .value(tokens(), Value{});
  SOp mixed = zipmap({prev_token, tokens(), indices()}, [](const std::vector<Value>& a) -> Value {
    if (is_none(a[0])) return std::string("start");
    const std::string s = to_string(a[0]) + to_string(a[1]);
    return std::get<int64_t>(a[2]) % 2 == 0 && s != "ab" ? std::string("even") : s == "ba" ? std::string("ba") : std::string("odd");
  }, "mixed");
  expect_exact(mixed, abc(), 5);
  SOp is_a = numerical(map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "a"}; }, "is_a"));
  SOp frac = numerical(aggregate(select(indices(), indices(), Predicate::Le), is_a, int64_t{0}, Convention::Mean));
  SOp wave = numerical(map(frac, [](const Value& v) -> Value {
    const double x = to_double(v);
    return x < 0.3 ? -2.0 * x : x < 0.6 ? 1.0 - 3.0 * x : x * x;
  }, "wave"));
  expect_exact(wave, abc(), 5);
  // shift by 2: `indices - 2` is folded into the head's query, no subspace of its own
  SOp shifted = select(indices(), map(indices(), [](const Value& i) -> Value { return std::get<int64_t>(i) - 2; }),
                       Predicate::Eq)
                    .value(map(tokens(), [](const Value& t) -> Value { return to_string(t) == "a"; }), Value{});
  expect_exact(shifted, abc(), 5);
  const CompiledModel m = compile(shifted, abc(), 5);
  // folded where that saves width: `tokens == "a"` keeps its 2 dimensions (the tokens'
  // one-hot, which nothing else reads, would be 3)
  for (const auto& space : m.spaces) EXPECT_NE(space.name, "map(indices)") << m.table();
  EXPECT_EQ(m.d_model, 2 + 5 + 2 + 3) << m.table();
  // two means over one selector: one head
  SOp is_b = numerical(map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "b"}; }, "is_b"));
  SOp frac_b = numerical(aggregate(select(indices(), indices(), Predicate::Le), is_b, int64_t{0}, Convention::Mean));
  SOp balance = numerical(zipmap({frac, frac_b}, [](const std::vector<Value>& a) -> Value {
    return to_double(a[0]) - to_double(a[1]);
  }, "balance"));
  expect_exact(balance, abc(), 5);
  const CompiledModel b = compile(balance, abc(), 5);
  EXPECT_EQ(b.heads_per_layer(), std::vector<int>{1});
  EXPECT_EQ(b.mlp_width(), 2);  // relu(frac) - relu(frac_b): means are never negative
}

}  // namespace
