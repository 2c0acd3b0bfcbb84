#include "syntax/builtins.hpp"

namespace lrnn {

namespace {

constexpr BuiltinInfo kBuiltins[] = {
    {"eq", BuiltinOp::Eq, 2, 2},           {"neq", BuiltinOp::Neq, 2, 2},
    {"lt", BuiltinOp::Lt, 2, 2},           {"leq", BuiltinOp::Leq, 2, 2},
    {"gt", BuiltinOp::Gt, 2, 2},           {"geq", BuiltinOp::Geq, 2, 2},
    {"next", BuiltinOp::Next, 2, 2},       {"alldiff", BuiltinOp::AllDiff, 1, -1},
    {"in", BuiltinOp::In, 2, -1},          {"true", BuiltinOp::True, 0, 0},
    {"false", BuiltinOp::False, 0, 0},     {"add", BuiltinOp::Add, 3, 3},
    {"sub", BuiltinOp::Sub, 3, 3},         {"mul", BuiltinOp::Mul, 3, 3},
    {"div", BuiltinOp::Div, 3, 3},         {"mod", BuiltinOp::Mod, 3, 3},
    // PyNeuraLogic's value builtins: true for two numbers, and their input value is a op b
    {"add_eval", BuiltinOp::AddEval, 2, 2}, {"sub_eval", BuiltinOp::SubEval, 2, 2},
    {"mul_eval", BuiltinOp::MulEval, 2, 2}, {"div_eval", BuiltinOp::DivEval, 2, 2},
    {"mod_eval", BuiltinOp::ModEval, 2, 2}, {"max_eval", BuiltinOp::MaxEval, 2, 2},
    {"min_eval", BuiltinOp::MinEval, 2, 2},
};

}  // namespace

const BuiltinInfo* find_builtin(std::string_view name) {
  for (const auto& b : kBuiltins)
    if (name == b.name) return &b;
  return nullptr;
}

std::string builtin_names() {
  std::string out;
  for (const auto& b : kBuiltins) {
    if (!out.empty()) out += ", ";
    out += b.name;
  }
  return out;
}

}  // namespace lrnn
