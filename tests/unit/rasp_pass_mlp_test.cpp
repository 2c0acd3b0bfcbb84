// The MLP blocks of the weight compiler alone (src/rasp/passes/mlp.cpp): the ReLU units a
// lookup writes compute its table exactly on every row.
#include <gtest/gtest.h>

#include <algorithm>

#include "rasp_passes_support.hpp"
#include "rasp_test_support.hpp"

namespace {

using namespace rasp_passes_test;

// What the units add to the residual `x`.
std::vector<double> run_units(const passes::MlpUnits& units, const std::vector<double>& x) {
  std::vector<double> out(x.size(), 0.0);
  for (size_t u = 0; u < units.b1.size(); ++u) {
    double pre = units.b1[u];
    for (size_t j = 0; j < x.size(); ++j) pre += units.w1[u][j] * x[j];
    for (size_t j = 0; j < x.size(); ++j) out[j] += units.w2[u][j] * std::max(pre, 0.0);
  }
  return out;
}

passes::Feature feature(const SOp& s, bool numerical, std::vector<Value> values, int offset) {
  passes::Feature f;
  f.node = node(s);
  f.numerical = numerical;
  f.values = std::move(values);
  f.offset = offset;
  f.width = numerical ? 1 : static_cast<int>(f.values.size());
  return f;
}

// No linear fits (split_lookups' part).
const std::map<const Node*, std::map<std::string, std::vector<double>>> kNoFits;

void add_row(passes::Table& t, const Value& x, const Value& y) {
  t.rows.emplace(passes::tuple_key({x}), std::make_pair(std::vector<Value>{x}, y));
}

TEST(RaspPassMlp, CategoricalLookupIsExactOnEveryRow) {
  const SOp in = tokens(), out = map(tokens(), [](const Value& v) { return v; }, "out");
  const passes::Feature x = feature(in, false, chars("abc"), 2);
  const passes::Feature y = feature(out, false, {Value("x"), Value("y")}, 5);
  passes::Table t;
  t.inputs = {node(in)};
  add_row(t, Value("a"), Value("x"));
  add_row(t, Value("b"), Value("y"));
  add_row(t, Value("c"), Value("x"));
  passes::MlpUnits units;
  passes::lookup(node(out), {&x}, t, y, 7, kNoFits, units);
  EXPECT_EQ(units.b1.size(), 2u);  // the default x, then y where the token is b
  for (const auto& [key, row] : t.rows) {
    std::vector<double> r(7, 0.0);
    r[0] = 1;
    r[passes::dim_of(x, row.first[0])] = 1;
    EXPECT_EQ(run_units(units, r), passes::encode(y, row.second, 7)) << repr(row.first[0]);
  }
}

TEST(RaspPassMlp, OneNumericalInputIsInterpolatedThroughEveryPoint) {
  const SOp in = numerical(indices()), out = numerical(map(in, [](const Value& v) { return v; }, "square"));
  const passes::Feature x = feature(in, true, {Value(int64_t{0}), Value(int64_t{1}), Value(int64_t{2}), Value(int64_t{3})}, 2);
  const passes::Feature y = feature(out, true, {}, 3);
  passes::Table t;
  t.inputs = {node(in)};
  for (int64_t v = 0; v < 4; ++v) add_row(t, Value(v), Value(v * v));
  passes::MlpUnits units;
  passes::lookup(node(out), {&x}, t, y, 4, kNoFits, units);
  for (int64_t v = 0; v < 4; ++v) {
    const std::vector<double> r{1, 0, static_cast<double>(v), 0};
    EXPECT_DOUBLE_EQ(run_units(units, r)[3], static_cast<double>(v * v)) << v;
  }
}

TEST(RaspPassMlp, RefusesTwoNumericalInputsWithoutALinearFit) {
  const SOp a = numerical(indices()), b = numerical(length()), out = numerical(a * b);
  const passes::Feature fa = feature(a, true, {Value(int64_t{0})}, 2), fb = feature(b, true, {Value(int64_t{1})}, 3);
  const passes::Feature y = feature(out, true, {}, 4);
  passes::Table t;
  t.inputs = {node(a), node(b)};
  passes::MlpUnits units;
  const std::string error = rasp_test::error_of([&] { passes::lookup(node(out), {&fa, &fb}, t, y, 5, kNoFits, units); });
  EXPECT_NE(error.find("an MLP discretises one numerical input exactly"), std::string::npos) << error;
}

}  // namespace
