// The weight compiler's second pass alone (src/rasp/passes/encodings.cpp): numerical or
// categorical, and the refusals of annotations that cannot hold.
#include <gtest/gtest.h>

#include "rasp_passes_support.hpp"
#include "rasp_test_support.hpp"

namespace {

using namespace rasp_passes_test;

TEST(RaspPassEncodings, CategoricalUnlessAnnotatedOrAveraged) {
  const SOp is_a = numerical(map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "a"}; }, "is_a"));
  const SOp frac = aggregate(select(indices(), indices(), Predicate::Le), is_a, int64_t{0}, Convention::Mean);
  const SOp hist = select(tokens(), tokens(), Predicate::Eq).width().name("hist");
  const SOp both = zipmap({frac, hist}, [](const std::vector<Value>& a) -> Value { return to_double(a[0]) * 0 + to_double(a[1]); }, "both");
  const passes::Encoded e = passes::choose_encodings(passes::observe(input_of(both, abc(), 3), {}));
  EXPECT_TRUE(e.features.at(node(is_a)).numerical);  // annotated
  EXPECT_TRUE(e.features.at(node(frac)).numerical);  // averages up to 3 keys
  const passes::Feature& h = e.features.at(node(hist));
  EXPECT_FALSE(h.numerical);
  EXPECT_EQ(h.values.size(), 3u);  // 1, 2, 3
  for (const auto& [n, f] : e.features) {
    if (n->kind == Kind::Tokens) {
      EXPECT_EQ(f.values, abc());  // the vocabulary, not what was seen
    }
    if (n->kind == Kind::Indices) {
      EXPECT_EQ(f.values.size(), 3u);
    }
    EXPECT_EQ(f.offset, -1);  // laid out later
  }
}

TEST(RaspPassEncodings, RefusesACategoricalAverage) {
  const SOp is_a = map(tokens(), [](const Value& v) -> Value { return int64_t{to_string(v) == "a"}; }, "is_a");
  const SOp first = categorical(aggregate(select(indices(), indices(), Predicate::Le), is_a, int64_t{0}));
  const std::string error = rasp_test::error_of(
      [&] { passes::choose_encodings(passes::observe(input_of(first, abc(), 2), {})); });
  EXPECT_NE(error.find("annotated categorical but a query selects 2 keys"), std::string::npos) << error;
}

TEST(RaspPassEncodings, RefusesANumericalSOpThatTakesAString) {
  const SOp copy = numerical(map(tokens(), [](const Value& v) { return v; }, "copy"));
  const std::string error =
      rasp_test::error_of([&] { passes::choose_encodings(passes::observe(input_of(copy, abc(), 1), {})); });
  EXPECT_NE(error.find("numerical (one dimension) but takes the value"), std::string::npos) << error;
}

}  // namespace
