// RASP core: values, aggregation conventions, memoised evaluation, analyser rules and the
// errors users can provoke.
#include <gtest/gtest.h>

#include "lrnn/rasp.hpp"
#include "rasp_test_support.hpp"

namespace {

using namespace lrnn::rasp;

using rasp_test::error_of;

TEST(RaspCore, ValuesFollowPythonSemantics) {
  EXPECT_TRUE(values_equal(Value(true), Value(int64_t{1})));
  EXPECT_FALSE(values_equal(Value(std::string("1")), Value(int64_t{1})));
  EXPECT_TRUE(values_equal(Value(3.0 * (1.0 / 3.0)), Value(int64_t{1})));
  EXPECT_TRUE(std::holds_alternative<double>(apply_value_op(Op::Div, Value(int64_t{4}), Value(int64_t{2}))));
  EXPECT_EQ(std::get<int64_t>(apply_value_op(Op::Mod, Value(int64_t{-7}), Value(int64_t{3}))), 2);
  EXPECT_EQ(std::get<std::string>(apply_value_op(Op::Add, Value(std::string("a")), Value(std::string("b")))), "ab");
  EXPECT_EQ(to_string(Value(2.5)), "2.5");
  EXPECT_EQ(to_string(Value(2.0)), "2.0");
  EXPECT_EQ(repr(Value(std::string("h"))), "\"h\"");
  EXPECT_NE(error_of([] { apply_value_op(Op::Lt, Value(std::string("a")), Value(int64_t{1})); }).find("cannot order"),
            std::string::npos);
  EXPECT_NE(error_of([] { apply_value_op(Op::Div, Value(int64_t{1}), Value(int64_t{0})); }).find("division by zero"),
            std::string::npos);
  auto in = parse_input("[1, \"a\", 2.5, true]");
  ASSERT_EQ(in.size(), 4u);
  EXPECT_EQ(std::get<int64_t>(in[0]), 1);
  EXPECT_EQ(std::get<std::string>(in[1]), "a");
  EXPECT_EQ(chars("§ab").size(), 3u);
}

TEST(RaspCore, SumAndMeanConventions) {
  SOp prefix = (key(indices()) <= query(indices())).value(tokens());
  std::vector<Value> in{Value(int64_t{2}), Value(int64_t{4}), Value(int64_t{6})};
  auto sum = run(prefix, in, Convention::Sum);
  auto mean = run(prefix, in, Convention::Mean);
  EXPECT_EQ(std::get<int64_t>(sum[2]), 12);
  EXPECT_DOUBLE_EQ(std::get<double>(mean[2]), 4.0);
  // One selected value passes through unchanged (an int stays an int, even under mean).
  EXPECT_EQ(std::get<int64_t>(mean[0]), 2);
  // A per-aggregate convention wins over the program's.
  SOp m = aggregate(key(indices()) <= query(indices()), tokens(), int64_t{0}, Convention::Mean);
  EXPECT_DOUBLE_EQ(std::get<double>(run(m, in, Convention::Sum)[1]), 3.0);
}

TEST(RaspCore, DefaultAndPassThroughOfStrings) {
  SOp prev = (key(indices()) == query(indices() - 1)).value(tokens(), std::string("_"));
  auto out = prev("abc");
  EXPECT_EQ(std::get<std::string>(out[0]), "_");
  EXPECT_EQ(std::get<std::string>(out[2]), "b");
}

TEST(RaspCore, AggregatingSeveralStringsIsAClearError) {
  SOp bad = (key(indices()) <= query(indices())).value(tokens()).name("smear");
  std::string msg = error_of([&] { bad("abc"); });
  EXPECT_NE(msg.find("smear"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot aggregate 2 selected values"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"a\", \"b\""), std::string::npos) << msg;
}

TEST(RaspCore, SelectorComparedWithAnSOpIsAClearError) {
  Operand sel = Selector(select(tokens(), tokens(), Predicate::Eq));
  std::string msg = error_of([&] { apply_binary(Op::Eq, sel, Operand(tokens())); });
  EXPECT_NE(msg.find("cannot compare a selector with an s-op"), std::string::npos) << msg;
  msg = error_of([&] { apply_binary(Op::Add, Operand(Value(int64_t{1})), sel); });
  EXPECT_NE(msg.find("selector"), std::string::npos) << msg;
  msg = error_of([&] { SOp s(std::get<Selector>(sel).node()); });
  EXPECT_NE(msg.find("not an s-op"), std::string::npos) << msg;
  // and/or between selectors is fine
  Operand both = apply_binary(Op::And, sel, sel);
  EXPECT_TRUE(std::holds_alternative<Selector>(both));
}

TEST(RaspCore, EvaluationKeepsIntermediatesAndSelectorMatrices) {
  Selector s = key(indices()) < query(indices());
  SOp w = selector_width(s);
  auto ev = evaluate(w, chars("abcd"));
  ASSERT_TRUE(ev.selectors.count(s.node().get()));
  const auto& m = ev.selectors.at(s.node().get());
  EXPECT_EQ(m[2][0], 1);  // query 2 selects key 0
  EXPECT_EQ(m[0][2], 0);
  EXPECT_EQ(std::get<int64_t>(ev.output[3]), 3);
  EXPECT_EQ(ev.order.back(), w.node().get());
}

TEST(RaspCore, MapFunctionErrorsNameTheNode) {
  SOp bad = tokens().map([](const Value& v) -> Value { return to_double(v) + 1; }, "plus_one").name("p");
  std::string msg = error_of([&] { bad("ab"); });
  EXPECT_NE(msg.find("in p"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected a number"), std::string::npos) << msg;
}

TEST(RaspCore, DeepProgramsRunAndAreReleasedWithoutRecursion) {
  // A chain of 300000 element-wise operations (a Python loop builds these in a second):
  // releasing it must not recurse once per node.
  SOp x = tokens();
  SOp shared = x + 1;
  for (int i = 0; i < 300000; ++i) x = x + 1;
  SOp kept = x;  // a second owner: releasing `x` must keep everything `kept` needs
  x = SOp();
  auto out = kept(std::vector<Value>{Value(int64_t{2})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(out[0]), 300002);
  kept = SOp();
  EXPECT_EQ(std::get<int64_t>(shared(std::vector<Value>{Value(int64_t{1})})[0]), 2);
}

TEST(RaspCore, AnalyserCountsDistinctSelectorsPerLayer) {
  // Two aggregates over the same selector share one head; a different selector is another.
  Selector same = key(tokens()) == query(tokens());
  SOp a = same.value(1) + (key(tokens()) == query(tokens())).value(indices());
  auto r = analyze(a);
  EXPECT_EQ(r.layers, 1);
  EXPECT_EQ(r.heads_per_layer, (std::vector<int>{1}));
  SOp b = a + (key(indices()) < query(indices())).value(1);
  EXPECT_EQ(analyze(b).heads_per_layer, (std::vector<int>{2}));
  // selector_width: one layer, two heads (no BOS token)
  auto w = analyze(selector_width(same));
  EXPECT_EQ(w.layers, 1);
  EXPECT_EQ(w.heads_per_layer, (std::vector<int>{2}));
  // An aggregate over a value computed by attention sits one layer higher.
  SOp c = (key(indices()) == query(0)).value(a);
  EXPECT_EQ(analyze(c).layers, 2);
  // Annotations and names are kept on copies.
  SOp n = numerical(a).name("x");
  EXPECT_EQ(n.node()->encoding, Encoding::Numerical);
  EXPECT_EQ(n.name(), "x");
  EXPECT_TRUE(a.name().empty());
}

}  // namespace

namespace {

// A run keeps every selector matrix: an input whose matrices would not fit is refused up
// front with a Limit error naming the size (a 40000-position reverse used to allocate
// 3.2 GB and take minutes).
TEST(RaspCore, AnInputTooLongForTheSelectorMatricesIsRefused) {
  SOp flipped = (key(indices()) == query(indices())).value(tokens());
  std::vector<Value> in(40000, Value{std::string("a")});
  try {
    run(flipped, in);
    FAIL() << "expected a limit error";
  } catch (const lrnn::Error& e) {
    EXPECT_EQ(e.kind(), lrnn::ErrorKind::Limit);
    EXPECT_NE(std::string(e.what()).find("an input of 40000 positions"), std::string::npos) << e.what();
  }
  std::vector<Value> fits(2000, Value{std::string("a")});
  EXPECT_EQ(run(flipped, fits).size(), 2000u);
}

}  // namespace
