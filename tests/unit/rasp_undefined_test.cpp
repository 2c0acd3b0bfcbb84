// Regression tests for issue #15's "fix on the way": None ("undefined") propagates through
// element-wise operations as in tracr's evaluator, selectors refuse None keys/queries naming
// the s-op, selectors can be named, lowered templates report their output values, and the
// pictures agree with analyze and keep their text inside the cells.
#include <gtest/gtest.h>

#include <regex>

#include "lrnn/rasp.hpp"
#include "rasp_test_support.hpp"

namespace {

using namespace lrnn::rasp;
using rasp_test::error_of;

// tracr's detect_pattern(tokens, "ab"): position i is True when tokens[i-1:i+1] == "ab";
// the first position has no predecessor, so it is None (undefined), not False.
SOp shift_by(int offset, const SOp& sop) {
  Selector sel = select(indices(), indices(), Predicate::Eq);
  SOp shifted_query = map(indices(), [offset](const Value& i) -> Value { return std::get<int64_t>(i) - offset; });
  return aggregate(select(indices(), shifted_query, Predicate::Eq), sop, Value{});
}

SOp detect_ab() {
  SOp prev_is_a = map(shift_by(1, tokens()), [](const Value& v) -> Value { return to_string(v) == "a"; }, "is_a");
  SOp here_is_b = map(tokens(), [](const Value& v) -> Value { return to_string(v) == "b"; }, "is_b");
  return prev_is_a & here_is_b;
}

TEST(RaspUndefined, ElementwiseOperationsPropagateNone) {
  auto out = run(detect_ab(), chars("aaba"));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_TRUE(is_none(out[0]));
  EXPECT_EQ(out[1], Value(false));
  EXPECT_EQ(out[2], Value(true));
  EXPECT_EQ(out[3], Value(false));

  SOp undefined = aggregate(select(indices(), indices(), Predicate::False), tokens(), Value{});
  std::vector<SOp> ops{undefined + 1, undefined == 1, ~undefined, undefined | true, -undefined,
                       map(undefined, [](const Value&) -> Value { return int64_t{7}; }),
                       zipmap({undefined, tokens()}, [](const std::vector<Value>&) -> Value { return int64_t{7}; }),
                       where(undefined, tokens(), tokens()), indicator(undefined)};
  for (const SOp& op : ops) {
    auto vals = run(op, std::vector<Value>{Value(int64_t{1}), Value(int64_t{2})});
    EXPECT_TRUE(is_none(vals[0]) && is_none(vals[1])) << op.node()->description();
  }
  // a defined condition still chooses a branch that may hold None
  auto chosen = run(where(SOp(true), undefined, tokens()), std::vector<Value>{Value(int64_t{1})});
  EXPECT_TRUE(is_none(chosen[0]));
}

TEST(RaspUndefined, SelectingWithNoneIsAnErrorNamingTheSOp) {
  SOp undefined = aggregate(select(indices(), indices(), Predicate::False), tokens(), Value{}).name("nothing");
  std::string key_error = error_of([&] { run(select(undefined, indices(), Predicate::Eq).value(tokens()), chars("ab")); });
  EXPECT_NE(key_error.find("key s-op nothing is None at position 0"), std::string::npos) << key_error;
  std::string query_error = error_of([&] { run(select(indices(), undefined, Predicate::Lt).value(tokens()), chars("ab")); });
  EXPECT_NE(query_error.find("query s-op nothing is None"), std::string::npos) << query_error;
  // an always-true selector does not look at the values
  auto all = run(select(undefined, undefined, Predicate::True).width(), chars("ab"));
  EXPECT_EQ(all[0], Value(int64_t{2}));
}

TEST(RaspUndefined, LoweringAgreesOnNone) {
  LoweredTemplate t = to_template(detect_ab(), chars("ab"), 4);
  bool has_none = false, has_true = false;
  for (const auto& v : t.output_values) {
    has_none |= is_none(v);
    has_true |= v == Value(true);
  }
  EXPECT_TRUE(has_none);
  EXPECT_TRUE(has_true);
}

TEST(RaspUndefined, SelectorsCarryNames) {
  Selector flip = select(indices(), indices(), Predicate::Eq).name("same_position");
  EXPECT_EQ(flip.name(), "same_position");
  EXPECT_EQ(select(indices(), indices(), Predicate::Eq).name(), "");
  Analysis a = analyze(flip.value(tokens()));
  ASSERT_EQ(a.heads.size(), 1u);
  EXPECT_EQ(a.heads[0].selector, "same_position");
}

TEST(RaspUndefined, DescriptionsHaveNoGeneratedIds) {
  SOp opp = (length() - indices() - 1).name("opp_index");
  SOp flip = select(indices(), opp, Predicate::Eq).value(tokens());
  EXPECT_EQ(flip.node()->description(), "aggregate(select(indices, opp_index, ==), tokens)");
  EXPECT_EQ(flip.node()->display_name().find("aggregate#"), 0u);
}

int count(const std::string& text, const std::string& what) {
  int c = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++c;
  return c;
}

TEST(RaspUndefined, DrawingAgreesWithAnalyze) {
  // reverse: length is a head of layer 1, the flip a head of layer 2
  SOp opp = (length() - indices() - 1).name("opp_index");
  SOp flip = select(indices(), opp, Predicate::Eq).value(tokens()).name("flip");
  std::string svg = draw_svg(flip, chars("abc"));
  EXPECT_NE(svg.find("2 layer(s), 2 head(s)"), std::string::npos);
  EXPECT_NE(svg.find("layer 1: 1 head(s)"), std::string::npos);
  EXPECT_NE(svg.find("layer 2: 1 head(s)"), std::string::npos);
  EXPECT_FALSE(std::regex_search(svg, std::regex(">[^<]*#[0-9]+[^<]*<"))) << "auto-generated ids in the picture";
  // selector_width is two heads in one layer, as analyze counts it
  SOp hist = select(tokens(), tokens(), Predicate::Eq).width().name("hist");
  std::string hsvg = draw_svg(hist, chars("aab"));
  EXPECT_EQ(analyze(hist).heads_per_layer, std::vector<int>{2});
  EXPECT_NE(hsvg.find("layer 1: 2 head(s)"), std::string::npos);
  EXPECT_EQ(count(hsvg, "(or index 0)") + count(hsvg, "(and index 0)"), 2);
}

TEST(RaspUndefined, DrawingNamesAndCells) {
  // no auto-generated ids as titles or labels
  SOp prefix_mean = aggregate(select(indices(), indices(), Predicate::Le), tokens(), int64_t{0}, Convention::Mean);
  std::string svg = draw_svg(prefix_mean, std::vector<Value>{Value(int64_t{1}), Value(int64_t{0}), Value(int64_t{0}),
                                                               Value(int64_t{1})});
  EXPECT_EQ(std::regex_search(svg, std::regex(">[^<]*#[0-9]+[^<]*<")), false) << svg;
  // every value cell is as wide as its text: 0.333 (5 characters at 7.2px) needs 44px
  EXPECT_NE(svg.find("0.333"), std::string::npos);
  EXPECT_EQ(svg.find("width=\"26\" height=\"26\""), std::string::npos);
  // an annotated copy (same name, same values) is one row; two different s-ops sharing a
  // name get numbered labels
  SOp x = (tokens() + 1).name("x");
  SOp y = (x.numerical() + (tokens() * 2).name("x")).name("out");
  std::string two = draw_svg(y, std::vector<Value>{Value(int64_t{3})});
  EXPECT_EQ(count(two, ">x  [L0]<"), 1);
  EXPECT_EQ(count(two, ">x (2)  [L0]<"), 1);
}

}  // namespace
