// Range scans: a body literal p(J) scanned while the rule's comparison builtins confine J
// to an integer interval around variables already bound (a sliding window
// `@sub(I, J, D), @geq(D, 0), @leq(D, w)`, or `@geq(J, A), @leq(J, B)`) reads only the rows
// whose J lies in that interval instead of every row: attention windows then ground in
// O(n w) instead of testing all n^2 pairs.
//
// The interval is a necessary condition of the builtins, which still run on every row
// read: it only skips rows that cannot pass them. Rows whose value is not a small integer
// are always read (they are tested as before), and rows are read in ascending row order,
// so the ground rules and their order are exactly those of the full scan.
#pragma once

#include <cstdint>
#include <vector>

#include "logic/program.hpp"
#include "logic/relation.hpp"

namespace lrnn::logic {

// J <= base + offset (upper) or J >= base + offset, base a bound variable or a constant.
struct RangeBound {
  bool upper = false;
  bool base_is_var = false;
  uint32_t base = 0;  // variable index, or the constant's symbol id (a small integer)
  int64_t offset = 0;
};

// The bounds the builtins of `cr` put on variable `var` given the variables bound so far.
// Empty unless there is at least one upper and one lower bound.
std::vector<RangeBound> range_bounds(const CompiledRule& cr, uint32_t var, const std::vector<char>& bound);

// The rows of a one-column relation by small-integer value, and the rows holding other
// values. Built once the relation is complete.
class ValueIndex {
 public:
  explicit ValueIndex(const Relation& rel);
  // The rows in [row_lo, row_hi) whose value is a small integer in [lo, hi] or no small
  // integer, ascending, into `out` (cleared first).
  void candidates(int64_t lo, int64_t hi, uint32_t row_lo, uint32_t row_hi, std::vector<uint32_t>& out) const;

 private:
  std::vector<std::pair<int64_t, uint32_t>> by_value_;  // (value, row), sorted
  std::vector<uint32_t> others_;                         // rows of other values, ascending
};

}  // namespace lrnn::logic
