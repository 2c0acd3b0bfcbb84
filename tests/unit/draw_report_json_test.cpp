// The outputs of `lrnn train --json` (include/lrnn/report.hpp): write_outputs_json writes
// them without a JSON DOM per output, and must write exactly the bytes of the DOM,
// outputs_json(ev) dumped by nlohmann (sorted keys, its number format, its escaping), for
// every shape of field, every special number and every kind of string.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "lrnn/report.hpp"

namespace {

// The DOM path write_outputs_json replaced: each output's object dumped by nlohmann, one
// after the other with a comma between them (each element written as soon as it is
// dumped, so an output that cannot be dumped leaves the same bytes before it).
void write_reference(std::ostream& os, const lrnn::Evaluation& ev) {
  const nlohmann::json outputs = lrnn::outputs_json(ev);
  os << '[';
  for (size_t i = 0; i < outputs.size(); ++i) os << (i ? "," : "") << outputs[i].dump();
  os << ']';
}

std::string reference(const lrnn::Evaluation& ev) {
  std::ostringstream os;
  write_reference(os, ev);
  EXPECT_EQ(os.str(), lrnn::outputs_json(ev).dump());  // the same text as the whole array's
  return os.str();
}

std::string written(const lrnn::Evaluation& ev) {
  std::ostringstream os;
  lrnn::write_outputs_json(os, ev);
  return os.str();
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Every number whose text could differ between two writers: non-finite ones (null),
// integral doubles (nlohmann writes 1.0), zeros of both signs, the ends of the range,
// subnormals, where the decimal form turns to an exponent, and sums that do not round.
const std::vector<double> kNumbers = {
    0.0, -0.0, 1.0, -1.0, 2.0, 100.0, 123456.0, 0.5, -1.5, 0.1, 0.1 + 0.2, 1.0 / 3.0, 2.0 / 3.0, 1e-300,
    -1e-300, 1e300, 1e21, 1e22, 1e15, 1e16, 1e17, 123456789012345678.0, 9007199254740993.0, 1e-4, 1e-5,
    0.001, 1.7976931348623157e308, std::numeric_limits<double>::min(), std::numeric_limits<double>::denorm_min(),
    -std::numeric_limits<double>::denorm_min(), 2.2250738585072009e-308, 1e-320, 5e-324, 0.30000000000000004,
    std::nextafter(1.0, 2.0), std::nextafter(1.0, 0.0), 4.35, 0.7310585786300049, kNaN, -kNaN, kInf, -kInf};

// Strings nlohmann escapes (quotes, backslashes, \b \f \n \r \t, the other control
// characters as \u00XX, NUL among them) and those it passes through (DEL, UTF-8 of 2, 3
// and 4 bytes).
const std::vector<std::string> kStrings = {
    "",
    "out(n017345)",
    "q(\"quoted\", 'single')",
    "back\\slash(\\\\)",
    "tab\there",
    "lines\nand\r\nreturns",
    "\b\f\x01\x02\x1e\x1f\x7f",
    std::string("nul\0byte", 8),
    "caf\xc3\xa9(\xc3\xbc)",
    "\xe4\xb8\xad\xe6\x96\x87(x)",
    "emoji(\xf0\x9f\x98\x80)",
    "all(\"\\\t\x05\xc3\xa9\xf0\x9f\x98\x80/)",
};

// A vector of `count` entries taken from kNumbers from `first` on.
std::vector<double> numbers(size_t count, size_t first) {
  std::vector<double> v;
  for (size_t i = 0; i < count; ++i) v.push_back(kNumbers[(first + i) % kNumbers.size()]);
  return v;
}

// Every combination of empty, 1- and many-valued target, output and prediction, derived
// or not, in every split, with every string as its query.
lrnn::Evaluation every_shape(bool has_splits) {
  const lrnn::QuerySplit splits[] = {lrnn::QuerySplit::Train, lrnn::QuerySplit::Validation,
                                     lrnn::QuerySplit::Test, lrnn::QuerySplit::None};
  const size_t sizes[] = {0, 1, 5};
  const size_t examples[] = {0, 1, 42, std::numeric_limits<size_t>::max()};
  lrnn::Evaluation ev;
  ev.has_splits = has_splits;
  size_t n = 0;
  for (size_t t : sizes)
    for (size_t v : sizes)
      for (size_t p : sizes)
        for (bool derived : {true, false}) {
          lrnn::Output o;
          o.example = examples[n % std::size(examples)];
          o.query = kStrings[n % kStrings.size()];
          o.target = numbers(t, n);
          o.value = numbers(v, n + 7);
          o.prediction = numbers(p, n + 13);
          o.derived = derived;
          o.split = splits[n % std::size(splits)];
          ev.outputs.push_back(o);
          ++n;
        }
  return ev;
}

TEST(DrawReportJson, EveryFieldShapeIsWrittenAsTheDomDumpsIt) {
  for (bool has_splits : {false, true}) {
    const lrnn::Evaluation ev = every_shape(has_splits);
    EXPECT_EQ(written(ev), reference(ev)) << "has_splits " << has_splits;
  }
}

TEST(DrawReportJson, KeysComeInNlohmannsSortedOrder) {
  lrnn::Evaluation ev;
  ev.has_splits = true;
  lrnn::Output o;
  o.example = 3;
  o.query = "q";
  o.target = {1.0};
  o.value = {0.25, -0.0};
  o.prediction = {kNaN};
  o.split = lrnn::QuerySplit::Validation;
  o.derived = false;
  ev.outputs.push_back(o);
  EXPECT_EQ(written(ev),
            R"([{"derived":false,"example":3,"output":[0.25,-0.0],"prediction":null,"query":"q","split":"val",)"
            R"("target":1.0}])");
  EXPECT_EQ(written(ev), reference(ev));
}

TEST(DrawReportJson, EveryNumberIsWrittenAsTheDomDumpsIt) {
  lrnn::Evaluation ev;
  for (double x : kNumbers) {  // alone (a number) and in a vector (an array)
    lrnn::Output o;
    o.value = {x};
    o.target = {x, -x};
    ev.outputs.push_back(o);
  }
  // Random bit patterns: every exponent, NaNs and infinities among them.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 2000; ++i) {
    lrnn::Output o;
    for (int k = 0; k < 8; ++k) {
      const uint64_t bits = rng();
      double x;
      std::memcpy(&x, &bits, sizeof x);
      o.value.push_back(x);
    }
    ev.outputs.push_back(o);
  }
  EXPECT_EQ(written(ev), reference(ev));
}

TEST(DrawReportJson, NoOutputsAreAnEmptyArray) {
  EXPECT_EQ(written(lrnn::Evaluation{}), "[]");
  EXPECT_EQ(written(lrnn::Evaluation{}), reference(lrnn::Evaluation{}));
}

// Invalid UTF-8 in a query is nlohmann's error (type_error 316), as it was, after the
// same bytes: the outputs before it and the comma.
TEST(DrawReportJson, InvalidUtf8ThrowsAfterTheSameBytes) {
  lrnn::Evaluation ev = every_shape(true);
  ev.outputs[3].query = "bad(\xff)";
  std::ostringstream mine, theirs;
  EXPECT_THROW(lrnn::write_outputs_json(mine, ev), nlohmann::json::type_error);
  EXPECT_THROW(write_reference(theirs, ev), nlohmann::json::type_error);
  EXPECT_EQ(mine.str(), theirs.str());
}

}  // namespace
