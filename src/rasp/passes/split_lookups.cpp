// Pass 3 of the weight compiler (passes.hpp): one MLP discretises one numerical input
// exactly, so an element-wise s-op (or a joint feature) over several numerical inputs is
// either a linear function of them (fitted exactly), or reads all but one through a
// categorical copy, or has the element-wise s-ops inside it that read those inputs given
// their own MLP, an earlier layer. The last case changes what is observed: the driver then
// runs observe again with the returned Materialization.
#include <algorithm>
#include <cmath>

#include "rasp/passes/passes.hpp"

namespace lrnn::rasp::passes {

namespace {

// y = a + sum_i w_i x_i over the rows of each combination of categorical inputs, exactly
// (to 1e-9), or false. Fills `linear[n]` with the coefficients per combination.
bool fit_linear(const Encoded& e, const Node* n, Lookups& out) {
  const Table& t = e.tables.at(n);
  std::vector<size_t> nums = numerical_inputs(e, t.inputs);
  const size_t k = nums.size();
  std::map<std::string, std::vector<const std::pair<std::vector<Value>, Value>*>> groups;
  for (const auto& [key, row] : t.rows) {
    if (!is_number(row.second)) return false;
    std::vector<Value> cats;
    for (size_t i = 0; i < row.first.size(); ++i)
      if (std::find(nums.begin(), nums.end(), i) == nums.end()) cats.push_back(row.first[i]);
    groups[tuple_key(cats)].push_back(&row);
  }
  std::map<std::string, std::vector<double>> fitted;
  for (const auto& [g, rows] : groups) {
    // normal equations with a tiny ridge: (X^T X + eps I) c = X^T y, X = [1, x_1..x_k]
    const size_t m = k + 1;
    std::vector<std::vector<double>> a(m, std::vector<double>(m + 1, 0.0));
    for (const auto* row : rows) {
      std::vector<double> x{1.0};
      for (size_t i : nums) x.push_back(to_double(row->first[i]));
      const double y = to_double(row->second);
      for (size_t r = 0; r < m; ++r) {
        for (size_t c = 0; c < m; ++c) a[r][c] += x[r] * x[c];
        a[r][m] += x[r] * y;
      }
    }
    for (size_t r = 0; r < m; ++r) a[r][r] += 1e-12;
    for (size_t c = 0; c < m; ++c) {
      size_t pivot = c;
      for (size_t r = c + 1; r < m; ++r)
        if (std::fabs(a[r][c]) > std::fabs(a[pivot][c])) pivot = r;
      std::swap(a[c], a[pivot]);
      if (a[c][c] == 0) return false;
      for (size_t r = 0; r < m; ++r) {
        if (r == c) continue;
        const double f = a[r][c] / a[c][c];
        for (size_t j = c; j <= m; ++j) a[r][j] -= f * a[c][j];
      }
    }
    std::vector<double> coef(m);
    for (size_t r = 0; r < m; ++r) coef[r] = a[r][m] / a[r][r];
    for (size_t r = 0; r < m; ++r)  // integral coefficients stay integral
      if (std::fabs(coef[r] - std::nearbyint(coef[r])) < 1e-9) coef[r] = std::nearbyint(coef[r]);
    for (const auto* row : rows) {
      double y = coef[0];
      for (size_t i = 0; i < k; ++i) y += coef[i + 1] * to_double(row->first[nums[i]]);
      const double want = to_double(row->second);
      if (std::fabs(y - want) > 1e-9 * std::max(1.0, std::fabs(want))) return false;
    }
    fitted[g] = coef;
  }
  out.linear[n] = fitted;
  return true;
}

// The input (of `nums`) with the most values: the one read as a number, the others
// through their categorical copies.
size_t widest(const Encoded& e, const std::vector<const Node*>& inputs, const std::vector<size_t>& nums) {
  size_t keep = nums[0];
  for (size_t i : nums)
    if (e.features.at(inputs[i]).values.size() > e.features.at(inputs[keep]).values.size()) keep = i;
  return keep;
}

}  // namespace

Lookups split_lookups(const Encoded& e) {
  Lookups out;
  out.next = e.materialization;
  std::set<const Node*>& materialized = out.next.materialized;
  const std::set<const Node*>& before = e.materialization.materialized;  // what the frontiers were computed with
  for (const auto& [sops, j] : e.joints) {
    const std::vector<size_t> nums = numerical_inputs(e, j.table.inputs);
    if (nums.size() < 2) continue;
    if (e.materialization.joint_by_components.count(sops)) {
      // it reads several numerical components: all but the one with most values through
      // a categorical copy (as a lookup does)
      const size_t keep = widest(e, j.table.inputs, nums);
      for (size_t i : nums)
        if (i != keep) out.joint_shadowed[sops].insert(j.table.inputs[i]);
      continue;
    }
    // one MLP discretises one numerical input: the element-wise s-ops inside the
    // components that read a numerical input get their own MLP (as for lookups), or,
    // when the components are those inputs, the joint reads the components
    std::set<const Node*> numeric_inputs;
    for (size_t i : nums) numeric_inputs.insert(j.table.inputs[i]);
    bool added = false;
    std::set<const Node*> seen;
    std::vector<const Node*> stack;
    for (const Node* c : sops)
      if (elementwise(c->kind) && !before.count(c)) stack.push_back(c);
    while (!stack.empty()) {
      const Node* x = stack.back();
      stack.pop_back();
      if (!seen.insert(x).second) continue;
      for (const auto& c : x->children) {
        if (numeric_inputs.count(c.get())) {
          materialized.insert(x);
          added = true;
        }
        if (elementwise(c->kind) && !before.count(c.get())) stack.push_back(c.get());
      }
    }
    if (!added) out.next.joint_by_components.insert(sops);
    out.resplit = true;
  }
  for (const Node* n : e.order) {
    if (!e.needed.count(n) || !elementwise(n->kind) || e.features.at(n).constant) continue;
    const Table& t = e.tables.at(n);
    std::vector<size_t> nums = numerical_inputs(e, t.inputs);
    if (nums.size() < 2) continue;
    if (e.features.at(n).numerical && fit_linear(e, n, out)) continue;
    // the element-wise s-ops inside that read one of the numerical inputs get their own MLP
    std::set<const Node*> numeric_inputs;
    for (size_t i : nums) numeric_inputs.insert(t.inputs[i]);
    bool added = false;
    std::set<const Node*> seen;
    std::vector<const Node*> stack{n};
    while (!stack.empty()) {
      const Node* x = stack.back();
      stack.pop_back();
      if (!seen.insert(x).second) continue;
      for (const auto& c : x->children) {
        if (x != n && numeric_inputs.count(c.get())) {
          materialized.insert(x);  // possibly already by another s-op of this pass
          added = true;
        }
        if (elementwise(c->kind) && !before.count(c.get())) stack.push_back(c.get());
      }
    }
    if (!added) {
      // it reads the numerical s-ops itself: all but the one with most values are read
      // through a categorical copy (one-hot, made by an MLP of an earlier layer)
      const size_t keep = widest(e, t.inputs, nums);
      for (size_t i : nums)
        if (i != keep) out.shadowed[n].insert(t.inputs[i]);
      continue;
    }
    out.resplit = true;
  }
  return out;
}

}  // namespace lrnn::rasp::passes
