// RASP values: Python-like semantics for the element-wise operations of s-ops.
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "lrnn/rasp.hpp"

namespace lrnn::rasp {

namespace {

[[noreturn]] void fail(const std::string& message) { throw Error(ErrorKind::Runtime, message); }

// A string made by '+' has at most this many bytes (docs/semantics.md "Limits"): a string
// doubled in a loop of assignments would otherwise grow until the allocation fails.
constexpr size_t kMaxStringBytes = size_t{1} << 20;

std::string concatenate(const std::string& a, const std::string& b) {
  if (a.size() + b.size() > kMaxStringBytes)
    throw Error(ErrorKind::Limit, "'+' would make a string of " + std::to_string(a.size() + b.size()) +
                                      " bytes; RASP strings are limited to " + std::to_string(kMaxStringBytes) +
                                      " bytes");
  return a + b;
}

bool is_double(const Value& v) { return std::holds_alternative<double>(v); }

int64_t as_int(const Value& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  return std::get<int64_t>(v);
}

bool is_integral(const Value& v) {
  return std::holds_alternative<bool>(v) || std::holds_alternative<int64_t>(v);
}

// Relative tolerance for comparisons that involve a double (see values_equal).
bool near(double a, double b) {
  if (a == b) return true;
  if (std::isnan(a) || std::isnan(b)) return false;
  double scale = std::max({1.0, std::fabs(a), std::fabs(b)});
  return std::fabs(a - b) <= 1e-9 * scale;
}

std::string format_double(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", d);
  std::string s = buf;
  // Python prints floats with a decimal point; keep 2.0 distinguishable from 2.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// 64-bit integer arithmetic; overflow (which C++ leaves undefined) is an error.
int64_t checked_int_op(Op op, int64_t x, int64_t y) {
  int64_t r = 0;
  const bool overflow = op == Op::Add   ? __builtin_add_overflow(x, y, &r)
                        : op == Op::Sub ? __builtin_sub_overflow(x, y, &r)
                                        : __builtin_mul_overflow(x, y, &r);
  if (overflow)
    fail("integer overflow: " + std::to_string(x) + " " + op_symbol(op) + " " + std::to_string(y) +
         " is outside the 64-bit range");
  return r;
}

// Exponentiation by squaring: O(log e) steps (1 ^ 10^18 used to take 10^18 multiplications).
// False when the result (or a square it needs) leaves the 64-bit range.
bool int_pow_fits(int64_t base, int64_t e, int64_t& result) {
  result = 1;
  if (base == 0) {
    result = e == 0 ? 1 : 0;
    return true;
  }
  while (true) {
    if ((e & 1) && __builtin_mul_overflow(result, base, &result)) return false;
    e >>= 1;
    if (e == 0 || base == 1) return true;  // once the base is 1, further factors are 1
    if (__builtin_mul_overflow(base, base, &base)) return false;
  }
}

int64_t checked_int_pow(int64_t base, int64_t e) {
  int64_t r = 0;
  if (!int_pow_fits(base, e, r))
    fail("integer overflow: " + std::to_string(base) + " ^ " + std::to_string(e) + " is outside the 64-bit range");
  return r;
}

}  // namespace

bool is_none(const Value& v) { return std::holds_alternative<std::monostate>(v); }
bool is_number(const Value& v) {
  return std::holds_alternative<bool>(v) || std::holds_alternative<int64_t>(v) || is_double(v);
}
bool is_string(const Value& v) { return std::holds_alternative<std::string>(v); }

double to_double(const Value& v) {
  if (is_double(v)) return std::get<double>(v);
  if (is_integral(v)) return static_cast<double>(as_int(v));
  fail("expected a number, got " + type_name(v) + " " + repr(v));
}

bool truthy(const Value& v) {
  return std::visit(
      [](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) return false;
        else if constexpr (std::is_same_v<T, std::string>) return !x.empty();
        else return x != 0;
      },
      v);
}

std::string to_string(const Value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) return "None";
        else if constexpr (std::is_same_v<T, bool>) return x ? "True" : "False";
        else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) return format_double(x);
        else return x;
      },
      v);
}

std::string repr(const Value& v) {
  // Quoted and escaped as JSON; bytes that are not UTF-8 (a token read from any file) show
  // as U+FFFD instead of throwing json's type_error out of an error message.
  if (auto* s = std::get_if<std::string>(&v))
    return nlohmann::json(*s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return to_string(v);
}

std::string type_name(const Value& v) {
  switch (v.index()) {
    case 0: return "None";
    case 1: return "bool";
    case 2: return "int";
    case 3: return "float";
    default: return "string";
  }
}

bool values_equal(const Value& a, const Value& b) {
  if (is_number(a) && is_number(b)) {
    if (is_integral(a) && is_integral(b)) return as_int(a) == as_int(b);
    return near(to_double(a), to_double(b));
  }
  if (is_string(a) && is_string(b)) return std::get<std::string>(a) == std::get<std::string>(b);
  return is_none(a) && is_none(b);
}

int compare_values(const Value& a, const Value& b) {
  if (is_number(a) && is_number(b)) {
    if (is_integral(a) && is_integral(b)) {
      int64_t x = as_int(a), y = as_int(b);
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    double x = to_double(a), y = to_double(b);
    if (near(x, y)) return 0;
    return x < y ? -1 : 1;
  }
  if (is_string(a) && is_string(b)) {
    int c = std::get<std::string>(a).compare(std::get<std::string>(b));
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  fail("cannot order " + type_name(a) + " " + repr(a) + " and " + type_name(b) + " " + repr(b));
}

Value apply_value_op(Op op, const Value& a, const Value& b) {
  switch (op) {
    case Op::Eq: return values_equal(a, b);
    case Op::Ne: return !values_equal(a, b);
    case Op::Lt: return compare_values(a, b) < 0;
    case Op::Le: return compare_values(a, b) <= 0;
    case Op::Gt: return compare_values(a, b) > 0;
    case Op::Ge: return compare_values(a, b) >= 0;
    case Op::And: return truthy(a) && truthy(b);
    case Op::Or: return truthy(a) || truthy(b);
    default: break;
  }
  if (op == Op::Add && is_string(a) && is_string(b)) return concatenate(std::get<std::string>(a), std::get<std::string>(b));
  if (!is_number(a) || !is_number(b))
    fail(std::string("cannot apply '") + op_symbol(op) + "' to " + type_name(a) + " " + repr(a) +
         " and " + type_name(b) + " " + repr(b));
  bool ints = is_integral(a) && is_integral(b);
  switch (op) {
    case Op::Add:
      if (ints) return checked_int_op(Op::Add, as_int(a), as_int(b));
      return to_double(a) + to_double(b);
    case Op::Sub:
      if (ints) return checked_int_op(Op::Sub, as_int(a), as_int(b));
      return to_double(a) - to_double(b);
    case Op::Mul:
      if (ints) return checked_int_op(Op::Mul, as_int(a), as_int(b));
      return to_double(a) * to_double(b);
    case Op::Div: {
      double d = to_double(b);
      if (d == 0) fail("division by zero: " + repr(a) + " / " + repr(b));
      return to_double(a) / d;
    }
    case Op::Mod: {
      if (ints) {
        int64_t x = as_int(a), y = as_int(b);
        if (y == 0) fail("modulo by zero: " + repr(a) + " % " + repr(b));
        // INT64_MIN % -1 traps on x86 (the quotient overflows); every x % +-1 is 0.
        int64_t r = (y == 1 || y == -1) ? 0 : x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;  // Python: the sign of the divisor
        return r;
      }
      double x = to_double(a), y = to_double(b);
      if (y == 0) fail("modulo by zero: " + repr(a) + " % " + repr(b));
      double r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    }
    case Op::Pow: {
      if (ints && as_int(b) >= 0) return checked_int_pow(as_int(a), as_int(b));
      return std::pow(to_double(a), to_double(b));
    }
    default: break;
  }
  fail(std::string("unsupported operator '") + op_symbol(op) + "'");
}

Value apply_value_unary(Op op, const Value& a) {
  if (op == Op::Not) return !truthy(a);
  if (op == Op::Neg) {
    if (is_integral(a)) return checked_int_op(Op::Sub, 0, as_int(a));
    if (is_double(a)) return -std::get<double>(a);
    fail("cannot negate " + type_name(a) + " " + repr(a));
  }
  fail(std::string("'") + op_symbol(op) + "' is not a unary operator");
}

bool apply_predicate(Predicate p, const Value& key, const Value& query) {
  switch (p) {
    case Predicate::Eq: return values_equal(key, query);
    case Predicate::Ne: return !values_equal(key, query);
    case Predicate::Lt: return compare_values(key, query) < 0;
    case Predicate::Le: return compare_values(key, query) <= 0;
    case Predicate::Gt: return compare_values(key, query) > 0;
    case Predicate::Ge: return compare_values(key, query) >= 0;
    case Predicate::True: return true;
    case Predicate::False: return false;
  }
  return false;
}

std::vector<Value> chars(std::string_view text) {
  std::vector<Value> out;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    len = std::min(len, text.size() - i);
    out.emplace_back(std::string(text.substr(i, len)));
    i += len;
  }
  return out;
}

std::vector<Value> parse_input(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '[') return chars(text);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Parse, "input starts with '[' but is not a JSON list: " + std::string(e.what()));
  }
  if (!j.is_array()) throw Error(ErrorKind::Parse, "input must be a string or a JSON list");
  std::vector<Value> out;
  for (const auto& e : j) {
    if (e.is_boolean()) out.emplace_back(e.get<bool>());
    else if (e.is_number_integer()) out.emplace_back(e.get<int64_t>());
    else if (e.is_number()) out.emplace_back(e.get<double>());
    else if (e.is_string()) out.emplace_back(e.get<std::string>());
    else if (e.is_null()) out.emplace_back(std::monostate{});
    else throw Error(ErrorKind::Parse, "input list elements must be numbers, strings or booleans");
  }
  return out;
}

}  // namespace lrnn::rasp
