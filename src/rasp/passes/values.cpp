// The values, keys and refusals every pass of the weight compiler shares (passes.hpp).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "rasp/passes/passes.hpp"

namespace lrnn::rasp::passes {

void refuse(const Node* n, const std::string& why) {
  throw Error(ErrorKind::Semantic, "cannot compile " + n->description() + ": " + why);
}

bool elementwise(Kind k) {
  return k == Kind::Map || k == Kind::ZipMap || k == Kind::Unary || k == Kind::Binary || k == Kind::Where;
}

Value canon(const Value& v) {
  if (auto* d = std::get_if<double>(&v)) {
    if (!std::isfinite(*d)) return v;
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.12g", *d);
    return std::strtod(buf, nullptr);
  }
  return v;
}

std::string key_of(const Value& v) { return type_name(v) + ":" + repr(v); }

std::string tuple_key(const std::vector<Value>& t) {
  std::string k;
  for (const auto& v : t) k += key_of(v) + "\x1f";
  return k;
}

namespace {

std::string number_key(const Value& v) {
  if (!is_number(v)) return key_of(v);
  char buf[40];
  std::snprintf(buf, sizeof buf, "n:%.12g", to_double(v));
  return buf;
}

}  // namespace

std::string number_tuple_key(const std::vector<Value>& t) {
  std::string k;
  for (const auto& v : t) k += number_key(v) + "\x1f";
  return k;
}

std::string joint_name(const Joint& j) {
  std::string name;
  for (const Node* c : j.components) name += (name.empty() ? "" : ", ") + c->description();
  return "(" + name + ")";
}

}  // namespace lrnn::rasp::passes
