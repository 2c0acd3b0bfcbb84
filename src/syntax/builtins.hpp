// The builtin predicates (`@name(...)`): one table of names, operations and arities, read by
// the parser (arity errors with file:line:col) and by the logic compiler (what each does).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lrnn/ast.hpp"

namespace lrnn {

enum class BuiltinOp : uint8_t {
  Eq, Neq, Lt, Leq, Gt, Geq,      // comparisons: all arguments bound
  Next,                           // @next(a, b): b = a + 1 (binds either side)
  AllDiff,                        // @alldiff(...): pairwise distinct
  In,                             // @in(x, a, b, ...): x is one of a, b, ... (binds x)
  True, False,                    // @true, @false
  Add, Sub, Mul, Div, Mod,        // @op(a, b, c): c = a op b (binds c)
  // @op_eval(a, b): true for two numbers; a neuron input whose value is a op b
  AddEval, SubEval, MulEval, DivEval, ModEval, MaxEval, MinEval,
};

struct BuiltinInfo {
  std::string_view name;  // without '@'
  BuiltinOp op;
  int min_arity, max_arity;  // max_arity < 0: unbounded
};

// The builtin of this name (without '@'), or nullptr.
const BuiltinInfo* find_builtin(std::string_view name);
// Every builtin's name, comma separated, in table order (for "unknown builtin" errors).
std::string builtin_names();

inline bool is_arithmetic(BuiltinOp op) {
  return op == BuiltinOp::Add || op == BuiltinOp::Sub || op == BuiltinOp::Mul || op == BuiltinOp::Div ||
         op == BuiltinOp::Mod;
}
inline bool is_eval(BuiltinOp op) { return op >= BuiltinOp::AddEval; }

// Whether a body literal is an input of its rule's neuron: atoms neither hidden (`*`) nor
// negated (`!`), and the value builtins (@op_eval); other builtins are logic only. The logic
// stage (which groundings exist) and the neural stage (what they compute) both ask this.
inline bool is_neuron_input(const Literal& l) {
  if (l.hidden || l.negated) return false;
  if (!l.builtin) return true;
  const BuiltinInfo* b = find_builtin(l.predicate);
  return b && is_eval(b->op);
}

}  // namespace lrnn
