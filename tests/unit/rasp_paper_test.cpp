// The paper's programs in `.rasp` syntax (tests/rasp/): outputs against direct reference
// computations on every input up to a small length, and the paper's layers/heads.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "lrnn/rasp.hpp"

namespace {

using namespace lrnn::rasp;

const std::string kDir = std::string(LRNN_SOURCE_DIR) + "/tests/rasp/";
const std::string kBos = "§";

Program load(const std::string& file) { return load_rasp_file(kDir + file); }

std::vector<std::vector<std::string>> all_strings(const std::vector<std::string>& alphabet, int max_len,
                                                  int min_len = 1) {
  std::vector<std::vector<std::string>> out, layer{{}};
  for (int len = 1; len <= max_len; ++len) {
    std::vector<std::vector<std::string>> next;
    for (const auto& s : layer)
      for (const auto& a : alphabet) {
        auto t = s;
        t.push_back(a);
        next.push_back(t);
      }
    layer = next;
    if (len >= min_len) out.insert(out.end(), layer.begin(), layer.end());
  }
  return out;
}

std::vector<Value> as_values(const std::vector<std::string>& s) {
  std::vector<Value> out;
  for (const auto& x : s) out.emplace_back(x);
  return out;
}

std::string show(const std::vector<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += x;
  return out;
}

void expect_numbers(const std::vector<Value>& got, const std::vector<double>& want, const std::string& input) {
  ASSERT_EQ(got.size(), want.size()) << input;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(is_number(got[i])) << input << " position " << i << ": " << repr(got[i]);
    EXPECT_NEAR(to_double(got[i]), want[i], 1e-9) << input << " position " << i;
  }
}

void expect_strings(const std::vector<Value>& got, const std::vector<std::string>& want, const std::string& input) {
  ASSERT_EQ(got.size(), want.size()) << input;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(to_string(got[i]), want[i]) << input << " position " << i;
}

void expect_shape(const Program& p, int layers, std::vector<int> heads) {
  auto a = analyze(p.output);
  EXPECT_EQ(a.layers, layers);
  EXPECT_EQ(a.heads_per_layer, heads);
}

int max_of(const std::vector<int>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

TEST(RaspPaper, Reverse) {
  Program p = load("reverse.rasp");
  EXPECT_EQ(p.convention, Convention::Mean);
  EXPECT_EQ(p.output.name(), "reverse");
  for (const auto& s : all_strings({"a", "b", "c"}, 5)) {
    auto want = s;
    std::reverse(want.begin(), want.end());
    expect_strings(run(p, as_values(s)), want, show(s));
  }
  expect_shape(p, 2, {1, 1});  // the paper: 2 layers, 1 head
}

std::vector<double> counts(const std::vector<std::string>& s, size_t from = 0) {
  std::vector<double> out;
  for (size_t i = 0; i < s.size(); ++i)
    out.push_back(static_cast<double>(std::count(s.begin() + from, s.end(), s[i])));
  return out;
}

TEST(RaspPaper, HistogramWithoutBos) {
  Program p = load("histogram.rasp");
  for (const auto& s : all_strings({"a", "b", "c"}, 5)) expect_numbers(run(p, as_values(s)), counts(s), show(s));
  // selector_width without a BOS takes the original RASP's two heads in one layer.
  expect_shape(p, 1, {2});
}

TEST(RaspPaper, HistogramWithBos) {
  Program p = load("histogram_bos.rasp");
  for (const auto& s : all_strings({"a", "b", "c"}, 5)) {
    auto in = s;
    in.insert(in.begin(), kBos);
    auto want = counts(in, 1);
    want[0] = 0;
    expect_numbers(run(p, as_values(in)), want, show(in));
  }
  expect_shape(p, 1, {1});  // the paper: 1 layer, 1 head
}

TEST(RaspPaper, DoubleHistogram) {
  Program p = load("double_histogram.rasp");
  for (const auto& s : all_strings({"a", "b", "c"}, 5)) {
    auto in = s;
    in.insert(in.begin(), kBos);
    std::map<std::string, int> count;
    for (const auto& t : s) count[t]++;
    std::vector<double> want{0};
    for (const auto& t : s) {
      int same = 0;
      for (const auto& [tok, c] : count) same += c == count[t];
      want.push_back(same);
    }
    expect_numbers(run(p, as_values(in)), want, show(in));
  }
  expect_shape(p, 2, {2, 1});
}

TEST(RaspPaper, Sort) {
  Program p = load("sort.rasp");
  for (const auto& s : all_strings({"a", "b", "c"}, 5)) {
    auto in = s;
    in.insert(in.begin(), kBos);
    auto want = s;
    std::sort(want.begin(), want.end());
    want.insert(want.begin(), kBos);
    expect_strings(run(p, as_values(in)), want, show(in));
  }
  expect_shape(p, 2, {1, 1});  // the paper: 2 layers, 1 head
}

TEST(RaspPaper, MostFrequent) {
  Program p = load("most_frequent.rasp");
  for (const auto& s : all_strings({"a", "b", "c"}, 5)) {
    auto in = s;
    in.insert(in.begin(), kBos);
    // distinct tokens by decreasing count, ties by first occurrence
    std::vector<std::string> distinct;
    for (const auto& t : s)
      if (std::find(distinct.begin(), distinct.end(), t) == distinct.end()) distinct.push_back(t);
    std::stable_sort(distinct.begin(), distinct.end(), [&](const std::string& x, const std::string& y) {
      return std::count(s.begin(), s.end(), x) > std::count(s.begin(), s.end(), y);
    });
    auto got = run(p, as_values(in));
    ASSERT_EQ(got.size(), in.size());
    EXPECT_EQ(to_string(got[0]), kBos);
    for (size_t k = 0; k < distinct.size(); ++k) EXPECT_EQ(to_string(got[k + 1]), distinct[k]) << show(in);
  }
  // After the distinct tokens come the fillers (repeats, sorted to the end).
  auto got = run(p, as_values({kBos, "a", "b", "b"}));
  EXPECT_EQ(to_string(got[1]), "b");
  EXPECT_EQ(to_string(got[2]), "a");
  auto a = analyze(p.output);
  EXPECT_EQ(a.layers, 3);  // the paper: 3 layers, 2 heads
  EXPECT_EQ(max_of(a.heads_per_layer), 2);
}

std::vector<std::string> dyck_reference(const std::vector<std::string>& s, const std::string& pairs) {
  std::vector<std::string> out, stack;
  bool failed = false;
  for (const auto& t : s) {
    size_t k = pairs.find(t);
    if (!failed) {
      if (k % 2 == 0) {
        stack.push_back(t);
      } else if (stack.empty() || stack.back() != std::string(1, pairs[k - 1])) {
        failed = true;
      } else {
        stack.pop_back();
      }
    }
    out.push_back(failed ? "F" : stack.empty() ? "T" : "P");
  }
  return out;
}

TEST(RaspPaper, Dyck1) {
  Program p = load("dyck1.rasp");
  for (const auto& s : all_strings({"(", ")"}, 8)) expect_strings(run(p, as_values(s)), dyck_reference(s, "()"), show(s));
  expect_shape(p, 2, {1, 1});  // the paper: 2 layers, 1 head
}

TEST(RaspPaper, Dyck2) {
  Program p = load("dyck2.rasp");
  for (const auto& s : all_strings({"(", ")", "{", "}"}, 6))
    expect_strings(run(p, as_values(s)), dyck_reference(s, "(){}"), show(s));
  // the paper: 4 layers, 2 heads (1/2/1/1: the second layer is the selector_width)
  expect_shape(p, 4, {1, 2, 1, 1});
}

TEST(RaspPaper, NamedSOpsAndLoad) {
  Program p = load("most_frequent.rasp");
  // `load` brought in bos.rasp's functions; the program's own assignments are named.
  EXPECT_EQ(p.get("histogram_bos").name(), "histogram_bos");
  EXPECT_EQ(p.output.name(), "most_frequent");
  auto h = run(p.with_output("histogram_bos"), as_values({kBos, "a", "b", "a"}));
  EXPECT_NEAR(to_double(h[1]), 2, 1e-9);
}

}  // namespace
