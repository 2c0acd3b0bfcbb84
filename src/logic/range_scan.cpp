#include "logic/range_scan.hpp"

#include <algorithm>
#include <limits>

namespace lrnn::logic {

namespace {

// A term whose value is known when the literal is scanned: a bound variable or a constant
// small integer.
bool known(const ArgRef& a, const std::vector<char>& bound) {
  return a.is_var ? bound[a.value] != 0 : Symbols::is_small_int(a.value);
}

RangeBound bound_of(bool upper, const ArgRef& base, int64_t offset) {
  return RangeBound{upper, base.is_var, base.value, offset};
}

// Bounds on `var` from x OP y (one side `var`, the other known): J <= X, J < X (J <= X - 1
// on integers), and the mirrored forms.
void comparison_bounds(BuiltinOp op, const ArgRef& x, const ArgRef& y, uint32_t var, const std::vector<char>& bound,
                       std::vector<RangeBound>& out) {
  const bool less = op == BuiltinOp::Leq || op == BuiltinOp::Lt;
  const bool strict = op == BuiltinOp::Lt || op == BuiltinOp::Gt;
  if (!less && op != BuiltinOp::Geq && op != BuiltinOp::Gt) return;
  const int64_t step = strict ? 1 : 0;
  if (x.is_var && x.value == var && known(y, bound)) out.push_back(bound_of(less, y, less ? -step : step));
  if (y.is_var && y.value == var && known(x, bound)) out.push_back(bound_of(!less, x, less ? step : -step));
}

// Bounds on `var` through d = x - y (one of x, y is `var`, the other known) and the
// comparisons of d with small-integer constants: d >= c, d > c, d <= c, d < c.
void difference_bounds(const CompiledRule& cr, const ArgRef* sub, uint32_t var, const std::vector<char>& bound,
                       std::vector<RangeBound>& out) {
  const ArgRef &x = sub[0], &y = sub[1], &d = sub[2];
  if (!d.is_var || d.value == var) return;
  const bool var_subtracted = y.is_var && y.value == var && known(x, bound);  // d = X - J
  const bool var_first = x.is_var && x.value == var && known(y, bound);       // d = J - Y
  if (!var_subtracted && !var_first) return;
  for (const BodyLiteral& c : cr.body) {
    if (c.kind != BodyLiteral::Kind::Builtin || c.arity != 2) continue;
    const ArgRef* a = cr.lit_args(c);
    const bool d_left = a[0].is_var && a[0].value == d.value && !a[1].is_var && Symbols::is_small_int(a[1].value);
    const bool d_right = a[1].is_var && a[1].value == d.value && !a[0].is_var && Symbols::is_small_int(a[0].value);
    if (!d_left && !d_right) continue;
    bool at_most;  // d <= limit
    int64_t limit = Symbols::small_int(d_left ? a[1].value : a[0].value);
    switch (c.op) {
      case BuiltinOp::Leq: at_most = d_left; break;
      case BuiltinOp::Geq: at_most = !d_left; break;
      case BuiltinOp::Lt: at_most = d_left, limit += d_left ? -1 : 1; break;
      case BuiltinOp::Gt: at_most = !d_left, limit += d_left ? 1 : -1; break;
      default: continue;
    }
    // d = X - J <= c  <=>  J >= X - c;  d = J - Y <= c  <=>  J <= Y + c (and mirrored).
    if (var_subtracted) out.push_back(bound_of(!at_most, x, -limit));
    else out.push_back(bound_of(at_most, y, limit));
  }
}

}  // namespace

std::vector<RangeBound> range_bounds(const CompiledRule& cr, uint32_t var, const std::vector<char>& bound) {
  std::vector<RangeBound> out;
  for (const BodyLiteral& bl : cr.body) {
    if (bl.kind != BodyLiteral::Kind::Builtin) continue;
    const ArgRef* a = cr.lit_args(bl);
    if (bl.op == BuiltinOp::Sub && bl.arity == 3) difference_bounds(cr, a, var, bound, out);
    else if (bl.arity == 2) comparison_bounds(bl.op, a[0], a[1], var, bound, out);
  }
  const bool upper = std::any_of(out.begin(), out.end(), [](const RangeBound& b) { return b.upper; });
  const bool lower = std::any_of(out.begin(), out.end(), [](const RangeBound& b) { return !b.upper; });
  if (!upper || !lower) out.clear();
  return out;
}

ValueIndex::ValueIndex(const Relation& rel) {
  for (uint32_t r = 0; r < rel.rows(); ++r) {
    const uint32_t v = rel.row(r)[0];
    if (Symbols::is_small_int(v)) by_value_.emplace_back(Symbols::small_int(v), r);
    else others_.push_back(r);
  }
  std::sort(by_value_.begin(), by_value_.end());
}

void ValueIndex::candidates(int64_t lo, int64_t hi, uint32_t row_lo, uint32_t row_hi,
                            std::vector<uint32_t>& out) const {
  out.clear();
  auto it = std::lower_bound(by_value_.begin(), by_value_.end(), std::make_pair(lo, uint32_t{0}));
  for (; it != by_value_.end() && it->first <= hi; ++it)
    if (it->second >= row_lo && it->second < row_hi) out.push_back(it->second);
  for (uint32_t r : others_)
    if (r >= row_lo && r < row_hi) out.push_back(r);
  std::sort(out.begin(), out.end());
}

}  // namespace lrnn::logic
