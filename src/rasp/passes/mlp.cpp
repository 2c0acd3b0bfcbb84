// The MLP blocks of the weight compiler (passes.hpp): an exact lookup from the values of
// a table's inputs to an output feature, as ReLU units.
// - Categorical inputs only: a decision tree of conjunction units.
// - One numerical input: per combination of the categorical ones, the piecewise-linear
//   interpolant through the values it takes.
// - Several numerical inputs: the linear function split_lookups fitted, per combination.
#include <algorithm>
#include <cmath>

#include "rasp/passes/passes.hpp"

namespace lrnn::rasp::passes {

namespace {

// A lookup over categorical inputs only, as a decision tree of conjunction units: a unit
// relu(sum of the one-hot dimensions of a partial assignment - (size - 1)) is 1 exactly
// where the inputs hold that assignment. Splitting on one input at a time, a node writes
// the value most of its branches take (one unit) and only the other branches go deeper,
// so an input that decides the output alone (a None that stays None) costs one unit per
// value, not one per combination.
struct CatRow {
  std::vector<int> dims;  // per input: its one-hot dimension (-1: a constant)
  std::vector<double> y;
};
struct CatUnit {
  std::vector<int> assignment;  // the dimensions that must be hot
  std::vector<double> y;
};

// The units writing rows' values given that `base` is already written where `fixed` holds.
std::vector<CatUnit> split(const std::vector<CatRow>& rows, const std::vector<int>& fixed,
                           const std::vector<double>& base, const std::vector<size_t>& free, bool search) {
  auto minus = [](const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> out(a);
    for (size_t j = 0; j < out.size(); ++j) out[j] -= b[j];
    return out;
  };
  bool uniform = true;
  for (const CatRow& r : rows) uniform &= r.y == rows[0].y;
  if (uniform || free.empty()) {
    if (rows.empty() || rows[0].y == base) return {};
    return {CatUnit{fixed, minus(rows[0].y, base)}};
  }
  std::vector<CatUnit> best;
  bool found = false;
  // every input as the first split where the tree is small enough to search, else in order
  const size_t tries = search && free.size() <= 3 ? free.size() : 1;
  for (size_t t = 0; t < tries; ++t) {
    const size_t x = free[t];
    std::vector<size_t> rest;
    for (size_t f : free)
      if (f != x) rest.push_back(f);
    std::map<int, std::vector<CatRow>> parts;
    for (const CatRow& r : rows) parts[r.dims[x]].push_back(r);
    // the default: what most single-valued branches write (or nothing new)
    std::map<std::vector<double>, int> votes;
    for (const auto& [dim, part] : parts) {
      bool same = true;
      for (const CatRow& r : part) same &= r.y == part[0].y;
      if (same) ++votes[part[0].y];
    }
    std::vector<std::vector<double>> defaults{base};
    int most = 0;
    for (const auto& [y, n] : votes)
      if (n > most) most = n;
    for (const auto& [y, n] : votes)
      if (n == most && y != base) {
        defaults.push_back(y);
        break;
      }
    for (const auto& dflt : defaults) {
      std::vector<CatUnit> units;
      if (dflt != base) units.push_back(CatUnit{fixed, minus(dflt, base)});
      for (const auto& [dim, part] : parts) {
        std::vector<int> deeper(fixed);
        deeper.push_back(dim);
        for (auto& u : split(part, deeper, dflt, rest, search && free.size() <= 3)) units.push_back(std::move(u));
      }
      if (!found || units.size() < best.size()) {
        best = std::move(units);
        found = true;
      }
    }
  }
  return best;
}


void categorical_lookup(const std::vector<const Feature*>& inputs, const Table& table, const Feature& out, int d,
                        MlpUnits& units) {
  std::vector<CatRow> rows;
  std::vector<size_t> free;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]->constant) free.push_back(i);
  for (const auto& [k, row] : table.rows) {
    CatRow r;
    for (size_t i = 0; i < inputs.size(); ++i) r.dims.push_back(inputs[i]->constant ? -1 : dim_of(*inputs[i], row.first[i]));
    r.y = encode(out, row.second, d);
    rows.push_back(std::move(r));
  }
  std::vector<CatUnit> tree = split(rows, {}, std::vector<double>(d, 0.0), free, true);
  for (const CatUnit& u : tree) {
    std::vector<double> w(d, 0.0);
    for (int dim : u.assignment) w[dim] += 1.0;
    units.add(w, 1.0 - static_cast<double>(u.assignment.size()), u.y);
  }
}

// A linear function of several numerical inputs per combination of categorical ones:
// relu(x + g) - relu(-x + g) = x where the combination matches (g = 0), 0 elsewhere.
void linear(const std::vector<const Feature*>& inputs, const Table& table,
            const std::map<std::string, std::vector<double>>& coefficients, const Feature& out, int d,
            MlpUnits& units) {
  std::vector<size_t> nums;
  double bound = 1;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]->numerical && !inputs[i]->constant) {
      nums.push_back(i);
      for (const auto& v : inputs[i]->values) bound = std::max(bound, std::fabs(to_double(v)));
    }
  std::map<std::string, std::vector<Value>> group_values;
  for (const auto& [k, row] : table.rows) {
    std::vector<Value> cats;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (std::find(nums.begin(), nums.end(), i) == nums.end()) cats.push_back(row.first[i]);
    group_values[tuple_key(cats)] = cats;
  }
  const double gate = bound + 1;
  for (const auto& [g, coef] : coefficients) {
    const std::vector<Value>& cats = group_values.at(g);
    std::vector<double> match(d, 0.0);
    int m = 0;
    for (size_t i = 0, c = 0; i < inputs.size(); ++i) {
      if (std::find(nums.begin(), nums.end(), i) != nums.end()) continue;
      const Value& v = cats[c++];
      if (inputs[i]->constant) continue;
      match[dim_of(*inputs[i], v)] += 1.0;
      ++m;
    }
    std::vector<double> base(d, 0.0);
    base[out.offset] = coef[0];
    if (coef[0] != 0) units.add(match, m == 0 ? 1.0 : 1.0 - m, base);
    for (size_t j = 0; j < nums.size(); ++j) {
      if (coef[j + 1] == 0) continue;
      std::vector<double> w(d, 0.0), up(d, 0.0), down(d, 0.0);
      for (int x = 0; x < d; ++x) w[x] = gate * match[x];
      std::vector<double> wneg(w);
      const int xd = inputs[nums[j]]->offset;
      w[xd] += 1.0;
      wneg[xd] -= 1.0;
      up[out.offset] = coef[j + 1];
      down[out.offset] = -coef[j + 1];
      // an input that is never negative (never positive) is its own relu (of its
      // negation): one unit; otherwise x = relu(x) - relu(-x), two
      double lo = 0, hi = 0;
      for (const auto& v : inputs[nums[j]]->values) {
        lo = std::min(lo, to_double(v));
        hi = std::max(hi, to_double(v));
      }
      if (hi > 0 || lo == 0) units.add(w, -gate * m, up);
      if (lo < 0) units.add(wneg, -gate * m, down);
    }
  }
}


}  // namespace

// An MLP computing `out` from the table's inputs. Categorical inputs only: a decision
// tree of conjunction units (categorical_lookup). One numerical input: per combination of the
// categorical ones, the piecewise-linear interpolant through the values it takes, as a
// gated base unit plus one ramp relu(x - t) per point where the slope changes.
void lookup(const Node* node, const std::vector<const Feature*>& inputs, const Table& table, const Feature& out,
            int d, const std::map<const Node*, std::map<std::string, std::vector<double>>>& linear_fits,
            MlpUnits& units) {
  if (auto it = linear_fits.find(node); it != linear_fits.end()) return linear(inputs, table, it->second, out, d, units);
  int numeric = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]->numerical || inputs[i]->constant) continue;
    if (numeric >= 0)
      refuse(node, "it depends on two numerical s-ops (" + inputs[numeric]->node->description() + ", " +
                       inputs[i]->node->description() +
                       "); an MLP discretises one numerical input exactly (make one of them categorical)");
    numeric = static_cast<int>(i);
  }
  if (numeric < 0) return categorical_lookup(inputs, table, out, d, units);
  double xmin = 0, xmax = 0;
  {
    const auto& vs = inputs[numeric]->values;
    xmin = xmax = to_double(vs.at(0));
    for (const auto& v : vs) {
      xmin = std::min(xmin, to_double(v));
      xmax = std::max(xmax, to_double(v));
    }
  }
  // group the rows by their categorical values
  std::map<std::string, std::vector<std::pair<double, Value>>> groups;
  std::map<std::string, std::vector<Value>> group_values;
  for (const auto& [k, row] : table.rows) {
    std::vector<Value> cats;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (static_cast<int>(i) != numeric) cats.push_back(row.first[i]);
    std::string g = tuple_key(cats);
    group_values[g] = cats;
    groups[g].emplace_back(to_double(row.first[numeric]), row.second);
  }
  const double gate = (xmax - xmin) + 1.0;  // switches other combinations' ramps off
  for (auto& [g, rows] : groups) {
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const std::vector<Value>& cats = group_values[g];
    std::vector<double> match(d, 0.0);  // sum of the group's one-hot dimensions
    int m = 0;
    for (size_t i = 0, c = 0; i < inputs.size(); ++i) {
      if (static_cast<int>(i) == numeric) continue;
      const Value& v = cats[c++];
      if (inputs[i]->constant) continue;
      match[dim_of(*inputs[i], v)] += 1.0;
      ++m;
    }
    // the points (x, encoded value), the same number twice (2 and 2.0) being one point
    std::vector<std::pair<double, std::vector<double>>> points;
    for (size_t i = 0; i < rows.size(); ++i) {
      std::vector<double> y = encode(out, rows[i].second, d);
      if (i > 0 && rows[i].first - rows[i - 1].first <= 1e-12 * std::max(1.0, std::fabs(rows[i].first))) {
        if (y != points.back().second)
          refuse(node, "it gives " + repr(rows[i - 1].second) + " and " + repr(rows[i].second) +
                           " for two inputs that are the same number");
        rows[i].first = rows[i - 1].first;
        continue;
      }
      points.emplace_back(rows[i].first, std::move(y));
    }
    // base unit: 1 exactly when the categorical inputs hold this combination
    const std::vector<double>& first = points[0].second;
    if (std::any_of(first.begin(), first.end(), [](double v) { return v != 0; }))
      units.add(match, m == 0 ? 1.0 : 1.0 - m, first);
    std::vector<double> slope(d, 0.0);  // of the segment before the current point
    for (size_t i = 0; i + 1 < points.size(); ++i) {
      const double gap = points[i + 1].first - points[i].first;
      std::vector<double> next(d), change(d);
      bool changes = false;
      for (int j = 0; j < d; ++j) {
        next[j] = (points[i + 1].second[j] - points[i].second[j]) / gap;
        change[j] = next[j] - slope[j];
        changes |= change[j] != 0;
      }
      if (changes) {  // relu(x - x_i), gated: the slope changes at x_i
        std::vector<double> w(d, 0.0);
        for (int j = 0; j < d; ++j) w[j] = gate * match[j];
        w[inputs[numeric]->offset] += 1.0;
        units.add(w, -points[i].first - gate * m, change);
      }
      slope = std::move(next);
    }
  }
}

}  // namespace lrnn::rasp::passes
