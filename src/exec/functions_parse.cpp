// Names of the functions of LANGUAGE.md: parsing metadata values into kernel
// descriptors and printing them back (to_string output parses to the same descriptor).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/functions.hpp"

namespace lrnn::exec {

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

// "(0,2)" or "0,2" -> the integers; false unless every element is an integer.
bool parse_int_tuple(std::string_view text, std::vector<int>& out) {
  text = trim(text);
  if (text.size() >= 2 && text.front() == '(' && text.back() == ')')
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

const std::vector<NamedKind<ActivationKind>>& activation_names() {
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

const std::vector<NamedKind<CombinationKind>>& combination_names() {
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

const std::vector<NamedKind<AggregationKind>>& aggregation_names() {
  static const std::vector<NamedKind<AggregationKind>> names = {
      {"sum", {"sum"}, AggregationKind::Sum},
      {"avg", {"avg", "average", "mean"}, AggregationKind::Avg},
      {"max", {"max", "maximum"}, AggregationKind::Max},
      {"min", {"min", "minimum"}, AggregationKind::Min},
      {"count", {"count"}, AggregationKind::Count},
      {"concat", {"concat", "concatenation"}, AggregationKind::Concat},
      {"softmax", {"softmax"}, AggregationKind::Softmax},
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

Activation parse_activation(const FunctionSpec& f, const Span& span) {
  const auto* entry = find_name(activation_names(), f.name);
  if (!entry)
    fail(span, "unknown activation '" + f.name + "'; expected one of " +
                   expected_list(activation_names()));
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
  expect_no_arguments(f, "activation", span);
  return a;
}

std::string to_string(const Activation& a) {
  std::string name = canonical_name(activation_names(), a.kind);
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
  return name;
}

CombinationKind parse_combination(const FunctionSpec& f, const Span& span) {
  const auto* entry = find_name(combination_names(), f.name);
  if (!entry)
    fail(span, "unknown combination '" + f.name + "'; expected one of " +
                   expected_list(combination_names()));
  expect_no_arguments(f, "combination", span);
  return entry->kind;
}

std::string to_string(CombinationKind c) { return canonical_name(combination_names(), c); }

Aggregation parse_aggregation(const FunctionSpec& f, const Span& span) {
  const auto* entry = find_name(aggregation_names(), f.name);
  if (!entry)
    fail(span, "unknown aggregation '" + f.name + "'; expected one of " +
                   expected_list(aggregation_names()));
  Aggregation a;
  a.kind = entry->kind;
  if (a.kind == AggregationKind::Softmax) {
    if (!f.kwargs.empty())
      fail(span, "softmax aggregation takes variable names, e.g. softmax(J), found '" +
                     spec_text(f) + "'");
    if (f.has_parens && f.args.empty())
      fail(span, "softmax() names no variables: write softmax(J) to normalise over the groundings that differ "
                 "in J, or softmax without parentheses to normalise over all groundings of a head");
    for (const auto& arg : f.args) {
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
  std::string s = canonical_name(aggregation_names(), a.kind);
  if (a.kind == AggregationKind::Softmax && !a.over.empty()) {
    s += "(";
    for (size_t i = 0; i < a.over.size(); ++i) s += (i ? ", " : "") + a.over[i];
    s += ")";
  }
  return s;
}

}  // namespace lrnn::exec
