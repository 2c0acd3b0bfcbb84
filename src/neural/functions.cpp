// The functions' descriptors (neural/functions.hpp): parsing metadata values, printing
// them back (to_string output parses to the same descriptor), and the shape rules.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "neural/functions.hpp"

#include "lrnn/diagnostics.hpp"
#include "syntax/number_text.hpp"

namespace lrnn::neural {

namespace {

// Lower-case, without '_' and '-': `Leaky_Relu`, `leaky-relu` and `leakyrelu` are one name.
std::string normalize_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c == '_' || c == '-' || c == ' ') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool parse_int(std::string_view text, int& out) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// "(0,2)", "[0,2]" or "0,2" -> the integers; false unless every element is an integer.
bool parse_int_tuple(std::string_view text, std::vector<int>& out) {
  text = trim(text);
  if (text.size() >= 2 && ((text.front() == '(' && text.back() == ')') || (text.front() == '[' && text.back() == ']')))
    text = text.substr(1, text.size() - 2);
  out.clear();
  while (true) {
    size_t comma = text.find(',');
    int v = 0;
    if (!parse_int(text.substr(0, comma), v)) return false;
    out.push_back(v);
    if (comma == std::string_view::npos) return true;
    text.remove_prefix(comma + 1);
  }
}

std::string spec_text(const FunctionSpec& f) {
  std::string s = f.name;
  if (!f.has_parens && f.args.empty() && f.kwargs.empty()) return s;
  s += '(';
  bool first = true;
  for (const auto& a : f.args) {
    if (!first) s += ", ";
    s += a;
    first = false;
  }
  for (const auto& [k, v] : f.kwargs) {
    if (!first) s += ", ";
    s += k + "=" + v;
    first = false;
  }
  return s + ')';
}

template <typename Kind>
struct NamedKind {
  const char* canonical;
  std::vector<const char*> aliases;  // normalized spellings (canonical included)
  Kind kind;
};

const std::vector<NamedKind<ActivationKind>>& activation_table() {
  static const std::vector<NamedKind<ActivationKind>> names = {
      {"identity", {"identity", "linear", "id", "none"}, ActivationKind::Identity},
      {"sigmoid", {"sigmoid", "logistic"}, ActivationKind::Sigmoid},
      {"tanh", {"tanh"}, ActivationKind::Tanh},
      {"relu", {"relu"}, ActivationKind::Relu},
      {"leaky_relu", {"leakyrelu"}, ActivationKind::LeakyRelu},
      {"exp", {"exp", "exponentiation"}, ActivationKind::Exp},
      {"log", {"log", "logarithm", "ln"}, ActivationKind::Log},
      {"sqrt", {"sqrt"}, ActivationKind::Sqrt},
      {"inverse", {"inverse", "inv"}, ActivationKind::Inverse},
      {"reverse", {"reverse"}, ActivationKind::Reverse},
      {"signum", {"signum"}, ActivationKind::Signum},
      {"lukasiewicz", {"lukasiewicz"}, ActivationKind::Lukasiewicz},
      {"softmax", {"softmax"}, ActivationKind::Softmax},
      {"sparsemax", {"sparsemax"}, ActivationKind::Sparsemax},
      {"norm", {"norm", "layernorm", "normalization"}, ActivationKind::Norm},
      {"transpose", {"transpose", "transp", "transposition"}, ActivationKind::Transpose},
      {"slice", {"slice"}, ActivationKind::Slice},
      {"reshape", {"reshape"}, ActivationKind::Reshape},
  };
  return names;
}

const std::vector<NamedKind<CombinationKind>>& combination_table() {
  static const std::vector<NamedKind<CombinationKind>> names = {
      {"sum", {"sum"}, CombinationKind::Sum},
      {"avg", {"avg", "average", "mean"}, CombinationKind::Avg},
      {"max", {"max", "maximum"}, CombinationKind::Max},
      {"min", {"min", "minimum"}, CombinationKind::Min},
      {"count", {"count"}, CombinationKind::Count},
      {"product", {"product", "prod"}, CombinationKind::Product},
      {"elproduct", {"elproduct", "elementproduct", "hadamard"}, CombinationKind::ElProduct},
      {"concat", {"concat", "concatenation"}, CombinationKind::Concat},
      {"crosssum", {"crosssum"}, CombinationKind::CrossSum},
      {"cossim", {"cossim", "cosinesimilarity", "cosine"}, CombinationKind::CosSim},
      {"softmax", {"softmax"}, CombinationKind::Softmax},
  };
  return names;
}

const std::vector<NamedKind<AggregationKind>>& aggregation_table() {
  static const std::vector<NamedKind<AggregationKind>> names = {
      {"sum", {"sum"}, AggregationKind::Sum},
      {"avg", {"avg", "average", "mean"}, AggregationKind::Avg},
      {"max", {"max", "maximum"}, AggregationKind::Max},
      {"min", {"min", "minimum"}, AggregationKind::Min},
      {"count", {"count"}, AggregationKind::Count},
      {"concat", {"concat", "concatenation"}, AggregationKind::Concat},
      {"softmax", {"softmax"}, AggregationKind::Softmax},
      {"product", {"product", "prod", "elproduct"}, AggregationKind::Product},
  };
  return names;
}

template <typename Kind>
const NamedKind<Kind>* find_name(const std::vector<NamedKind<Kind>>& names, std::string_view name) {
  std::string n = normalize_name(name);
  for (const auto& entry : names)
    for (const char* alias : entry.aliases)
      if (n == alias) return &entry;
  return nullptr;
}

template <typename Kind>
const char* canonical_name(const std::vector<NamedKind<Kind>>& names, Kind kind) {
  for (const auto& entry : names)
    if (entry.kind == kind) return entry.canonical;
  return "?";
}

template <typename Kind>
std::string expected_list(const std::vector<NamedKind<Kind>>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) s += ", ";
    s += names[i].canonical;
  }
  return s;
}

[[noreturn]] void fail(const Span& span, const std::string& message) {
  throw Error(ErrorKind::Semantic, span, message);
}

void expect_no_arguments(const FunctionSpec& f, const char* what, const Span& span) {
  if (!f.args.empty() || !f.kwargs.empty())
    fail(span, std::string(what) + " '" + f.name + "' takes no arguments, found '" +
                   spec_text(f) + "'");
}

// A half-open index range written `(a,b)` with 0 <= a < b.
void parse_range(const FunctionSpec& f, const std::string& text, const char* axis, int& begin,
                 int& end, const Span& span) {
  std::vector<int> v;
  if (!parse_int_tuple(text, v) || v.size() != 2)
    fail(span, std::string("slice ") + axis + " must be a pair of integers '(begin,end)', found '" +
                   text + "' in '" + spec_text(f) + "'");
  if (v[0] < 0 || v[1] <= v[0])
    fail(span, std::string("slice ") + axis + " range '" + text +
                   "' must satisfy 0 <= begin < end (end exclusive) in '" + spec_text(f) + "'");
  begin = v[0];
  end = v[1];
}

}  // namespace

std::string to_string(Shape s) { return std::to_string(s.rows) + "x" + std::to_string(s.cols); }

Shape checked_shape(int64_t rows, int64_t cols, const std::string& what) {
  if (rows > 0 && cols > 0 && rows * cols <= kMaxValueEntries) return {static_cast<int>(rows), static_cast<int>(cols)};
  throw Error(ErrorKind::Limit, what + " would be " + std::to_string(rows) + "x" + std::to_string(cols) + " = " +
                                    std::to_string(rows * cols) + " entries, over the limit of " +
                                    std::to_string(kMaxValueEntries) + " entries per value");
}

namespace {

// leaky_relu(0.2) / leaky_relu(alpha=0.2): one finite number, the slope for x <= 0.
double parse_leaky_slope(const FunctionSpec& f, const Span& span) {
  std::string text;
  if (f.args.size() == 1 && f.kwargs.empty()) {
    text = f.args[0];
  } else if (f.args.empty() && f.kwargs.size() == 1 &&
             (normalize_name(f.kwargs[0].first) == "alpha" || normalize_name(f.kwargs[0].first) == "slope")) {
    text = f.kwargs[0].second;
  } else {
    fail(span, "leaky_relu takes one number, its slope below 0: leaky_relu(0.2) or leaky_relu(alpha=0.2), found '" +
                   spec_text(f) + "'");
  }
  char* end = nullptr;
  const double slope = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(slope))
    fail(span, "leaky_relu's slope must be a finite number, found '" + text + "'");
  return slope;
}

}  // namespace

Activation parse_activation(const FunctionSpec& f, const Span& span) {
  const auto* entry = find_name(activation_table(), f.name);
  if (!entry)
    fail(span, "unknown activation '" + f.name + "'; expected one of " +
                   expected_list(activation_table()));
  Activation a;
  a.kind = entry->kind;
  if (a.kind == ActivationKind::Slice) {
    // slice(rows=(a,b), cols=(c,d)); either may be omitted (= the whole axis). Positional
    // slice((a,b), (c,d)) is read as rows, cols.
    if (f.args.size() > 2) fail(span, "slice takes at most rows and cols, found '" + spec_text(f) + "'");
    if (f.args.size() >= 1) parse_range(f, f.args[0], "rows", a.row_begin, a.row_end, span);
    if (f.args.size() >= 2) parse_range(f, f.args[1], "cols", a.col_begin, a.col_end, span);
    for (const auto& [key, value] : f.kwargs) {
      std::string k = normalize_name(key);
      if (value == "..." && (k == "rows" || k == "row" || k == "cols" || k == "col" || k == "columns"))
        continue;  // PyNeuraLogic's Ellipsis: the whole axis
      if (k == "rows" || k == "row")
        parse_range(f, value, "rows", a.row_begin, a.row_end, span);
      else if (k == "cols" || k == "col" || k == "columns")
        parse_range(f, value, "cols", a.col_begin, a.col_end, span);
      else
        fail(span, "slice has no argument '" + key + "'; expected rows=(a,b) and/or cols=(c,d)");
    }
    if (a.row_end < 0 && a.col_end < 0)
      fail(span, "slice needs rows=(a,b) and/or cols=(c,d), found '" + spec_text(f) + "'");
    return a;
  }
  if (a.kind == ActivationKind::Reshape) {
    std::vector<int> dims;
    if (f.args.size() == 2) {
      int r = 0, c = 0;
      if (parse_int(f.args[0], r) && parse_int(f.args[1], c)) dims = {r, c};
    } else if (f.args.size() == 1) {
      if (!parse_int_tuple(f.args[0], dims)) dims.clear();
      if (dims.size() == 1) dims.push_back(1);  // reshape(n): a column vector
    }
    for (const auto& [key, value] : f.kwargs) {
      std::string k = normalize_name(key);
      int v = 0;
      if (dims.size() != 2) dims = {0, 0};
      if ((k == "rows" || k == "cols") && parse_int(value, v))
        dims[k == "rows" ? 0 : 1] = v;
      else
        fail(span, "reshape has no argument '" + key + "'; expected reshape(rows, cols)");
    }
    if (dims.size() != 2 || dims[0] <= 0 || dims[1] <= 0)
      fail(span, "reshape needs two positive integers 'reshape(rows, cols)', found '" +
                     spec_text(f) + "'");
    a.rows = dims[0];
    a.cols = dims[1];
    return a;
  }
  if (a.kind == ActivationKind::LeakyRelu && (!f.args.empty() || !f.kwargs.empty())) {
    a.slope = parse_leaky_slope(f, span);
    return a;
  }
  expect_no_arguments(f, "activation", span);
  return a;
}

std::string to_string(const Activation& a) {
  std::string name = canonical_name(activation_table(), a.kind);
  if (a.kind == ActivationKind::Slice) {
    std::string s = name + "(";
    if (a.row_end >= 0)
      s += "rows=(" + std::to_string(a.row_begin) + "," + std::to_string(a.row_end) + ")";
    if (a.col_end >= 0) {
      if (a.row_end >= 0) s += ", ";
      s += "cols=(" + std::to_string(a.col_begin) + "," + std::to_string(a.col_end) + ")";
    }
    return s + ")";
  }
  if (a.kind == ActivationKind::Reshape)
    return name + "(" + std::to_string(a.rows) + "," + std::to_string(a.cols) + ")";
  if (a.kind == ActivationKind::LeakyRelu && a.slope != Activation::kDefaultLeakySlope)
    return name + "(" + shortest_number(a.slope) + ")";
  return name;
}

CombinationKind parse_combination(const FunctionSpec& f, const Span& span) {
  const auto* entry = find_name(combination_table(), f.name);
  if (!entry)
    fail(span, "unknown combination '" + f.name + "'; expected one of " +
                   expected_list(combination_table()));
  expect_no_arguments(f, "combination", span);
  return entry->kind;
}

std::string to_string(CombinationKind c) { return canonical_name(combination_table(), c); }

Aggregation parse_aggregation(const FunctionSpec& f, const Span& span) {
  const auto* entry = find_name(aggregation_table(), f.name);
  if (!entry)
    fail(span, "unknown aggregation '" + f.name + "'; expected one of " +
                   expected_list(aggregation_table()));
  Aggregation a;
  a.kind = entry->kind;
  if (a.kind == AggregationKind::Softmax) {
    std::vector<std::string> args = f.args;
    // PyNeuraLogic prints softmax(agg_terms=[J, K]): the same variables as softmax(J, K)
    if (f.args.empty() && f.kwargs.size() == 1 && normalize_name(f.kwargs[0].first) == "aggterms") {
      std::string_view list = trim(f.kwargs[0].second);
      if (list.size() >= 2 && list.front() == '[' && list.back() == ']') list = list.substr(1, list.size() - 2);
      for (size_t begin = 0; begin <= list.size();) {
        size_t comma = list.find(',', begin);
        if (comma == std::string_view::npos) comma = list.size();
        args.emplace_back(trim(list.substr(begin, comma - begin)));
        begin = comma + 1;
      }
    } else if (!f.kwargs.empty()) {
      fail(span, "softmax aggregation takes variable names, e.g. softmax(J) or softmax(agg_terms=[J]), found '" +
                     spec_text(f) + "'");
    }
    if (f.has_parens && args.empty())
      fail(span, "softmax() names no variables: write softmax(J) to normalise over the groundings that differ "
                 "in J, or softmax without parentheses to normalise over all groundings of a head");
    for (const auto& arg : args) {
      std::string_view v = trim(arg);
      if (v.empty() || !(std::isupper(static_cast<unsigned char>(v.front())) || v.front() == '_'))
        fail(span, "softmax aggregation normalises over variables (upper-case names), found '" +
                       std::string(v) + "' in '" + spec_text(f) + "'");
      a.over.emplace_back(v);
    }
    return a;
  }
  expect_no_arguments(f, "aggregation", span);
  return a;
}

std::string to_string(const Aggregation& a) {
  std::string s = canonical_name(aggregation_table(), a.kind);
  if (a.kind == AggregationKind::Softmax && !a.over.empty()) {
    s += "(";
    for (size_t i = 0; i < a.over.size(); ++i) s += (i ? ", " : "") + a.over[i];
    s += ")";
  }
  return s;
}

// ---- shape rules -------------------------------------------------------------------------

Shape activation_shape(const Activation& a, Shape in) {
  switch (a.kind) {
    case ActivationKind::Transpose:
      return {in.cols, in.rows};
    case ActivationKind::Slice: {
      if ((a.row_end >= 0 && (a.row_begin < 0 || a.row_begin >= a.row_end)) ||
          (a.col_end >= 0 && (a.col_begin < 0 || a.col_begin >= a.col_end)))
        throw Error(ErrorKind::Shape, to_string(a) + " is an empty or negative range");
      if (a.row_end > in.rows || a.col_end > in.cols)
        throw Error(ErrorKind::Shape, to_string(a) + " is out of range for a value of shape " +
                                          to_string(in));
      SliceBounds b = slice_bounds(a, in);
      return {b.r1 - b.r0, b.c1 - b.c0};
    }
    case ActivationKind::Reshape:
      if (a.rows <= 0 || a.cols <= 0 || int64_t{a.rows} * a.cols != in.size())
        throw Error(ErrorKind::Shape, to_string(a) + " cannot reshape a value of shape " +
                                          to_string(in) + " (" + std::to_string(in.size()) +
                                          " entries) into " + std::to_string(a.rows) + "x" +
                                          std::to_string(a.cols));
      return {a.rows, a.cols};
    case ActivationKind::Identity: case ActivationKind::Sigmoid: case ActivationKind::Tanh:
    case ActivationKind::Relu: case ActivationKind::LeakyRelu: case ActivationKind::Exp:
    case ActivationKind::Log: case ActivationKind::Sqrt: case ActivationKind::Inverse:
    case ActivationKind::Reverse: case ActivationKind::Signum: case ActivationKind::Lukasiewicz:
    case ActivationKind::Softmax: case ActivationKind::Sparsemax: case ActivationKind::Norm:
      return in;  // element-wise, or whole-value functions that keep the shape
  }
  throw Error(ErrorKind::Runtime, "internal: activation kind " + std::to_string(static_cast<int>(a.kind)));
}

namespace {

[[noreturn]] void mismatch(CombinationKind c, const std::string& rule, Shape a, Shape b) {
  throw Error(ErrorKind::Shape, "combination '" + to_string(c) + "' " + rule + ", but got shapes " +
                                    to_string(a) + " and " + to_string(b));
}

bool is_vector(Shape s) { return s.rows == 1 || s.cols == 1; }

// The common shape of element-wise combinations: every non-scalar input has it.
Shape broadcast_shape(CombinationKind c, const std::vector<Shape>& in) {
  Shape common{1, 1};
  bool have = false;
  for (Shape s : in) {
    if (s.scalar()) continue;
    if (!have) {
      common = s;
      have = true;
    } else if (!(s == common)) {
      mismatch(c, "needs equal shapes (scalars broadcast)", common, s);
    }
  }
  return common;
}

}  // namespace

Shape combination_shape(CombinationKind c, const std::vector<Shape>& in) {
  for (Shape s : in)
    if (s.rows <= 0 || s.cols <= 0)
      throw Error(ErrorKind::Shape, "combination '" + to_string(c) + "' got an empty value of shape " +
                                        to_string(s));
  switch (c) {
    case CombinationKind::Sum:
    case CombinationKind::Avg:
    case CombinationKind::Max:
    case CombinationKind::Min:
    case CombinationKind::ElProduct:
      return broadcast_shape(c, in);
    case CombinationKind::Count:
      return {1, 1};
    case CombinationKind::Product: {
      Shape cur{1, 1};
      bool have = false;
      for (Shape s : in) {
        if (s.scalar()) continue;
        if (!have) {
          cur = s;
          have = true;
        } else if (cur.cols != s.rows) {
          mismatch(c, "multiplies left to right as matrices (columns of the left must equal rows "
                      "of the right)", cur, s);
        } else {
          cur = checked_shape(cur.rows, s.cols, "the product of combination 'product'");
        }
      }
      return cur;
    }
    case CombinationKind::Concat: {
      if (in.empty()) throw Error(ErrorKind::Shape, "combination 'concat' needs at least one input");
      // Values with equal column counts stack vertically (column vectors; scalars count as
      // 1-vectors); row vectors concatenate horizontally. Both are plain concatenations of
      // the row-major data.
      bool same_cols = true, all_rows = true;
      int64_t rows = 0, cols = 0;
      for (Shape s : in) {
        same_cols = same_cols && s.cols == in[0].cols;
        all_rows = all_rows && s.rows == 1;
        rows += s.rows;
        cols += s.cols;
      }
      if (same_cols) return checked_shape(rows, in[0].cols, "combination 'concat'");
      if (all_rows) return checked_shape(1, cols, "combination 'concat'");
      for (Shape s : in)
        if (s.cols != in[0].cols)
          mismatch(c, "stacks column vectors (equal column counts; scalars count as 1-vectors)",
                   in[0], s);
      return checked_shape(rows, in[0].cols, "combination 'concat'");
    }
    case CombinationKind::CrossSum:
      if (in.size() != 2)
        throw Error(ErrorKind::Shape, "combination 'crosssum' needs exactly two vector inputs, got " +
                                          std::to_string(in.size()));
      if (!is_vector(in[0]) || !is_vector(in[1]))
        mismatch(c, "needs two vectors", in[0], in[1]);
      return checked_shape(int64_t{in[0].size()} * in[1].size(), 1, "combination 'crosssum'");
    case CombinationKind::CosSim:
      if (in.size() != 2)
        throw Error(ErrorKind::Shape, "combination 'cossim' needs exactly two inputs, got " +
                                          std::to_string(in.size()));
      if (in[0].size() != in[1].size())
        mismatch(c, "needs two values with the same number of entries", in[0], in[1]);
      return {1, 1};
    case CombinationKind::Softmax: {
      if (in.empty()) throw Error(ErrorKind::Shape, "combination 'softmax' needs at least one input");
      int n = 0;
      for (Shape s : in) n += s.size();
      return {n, 1};
    }
  }
  return {1, 1};
}

Shape aggregation_shape(AggregationKind a, Shape in, size_t segment_length) {
  switch (a) {
    case AggregationKind::Count:
      return {1, 1};
    case AggregationKind::Concat:
      return checked_shape(static_cast<int64_t>(segment_length) * in.rows, in.cols, "aggregation 'concat'");
    case AggregationKind::Sum: case AggregationKind::Avg: case AggregationKind::Max:
    case AggregationKind::Min: case AggregationKind::Softmax: case AggregationKind::Product:
      return in;  // softmax keeps the shape (segment_softmax, then a sum)
  }
  throw Error(ErrorKind::Runtime, "internal: aggregation kind " + std::to_string(static_cast<int>(a)));
}

// ---- the tables by kind -------------------------------------------------------------------

namespace {

// Canonical names indexed by kind; a kind missing from its table is an internal error
// (the unit tests loop over every kind).
template <typename Kind>
std::vector<std::string> names_by_kind(const std::vector<NamedKind<Kind>>& table, int count) {
  std::vector<std::string> out(count);
  for (const auto& entry : table) out.at(static_cast<int>(entry.kind)) = entry.canonical;
  for (int k = 0; k < count; ++k)
    if (out[k].empty()) throw Error(ErrorKind::Runtime, "internal: function kind " + std::to_string(k) + " has no name");
  return out;
}

}  // namespace

std::vector<std::string> activation_names() { return names_by_kind(activation_table(), kActivationKinds); }
std::vector<std::string> combination_names() { return names_by_kind(combination_table(), kCombinationKinds); }
std::vector<std::string> aggregation_names() { return names_by_kind(aggregation_table(), kAggregationKinds); }

}  // namespace lrnn::neural
