// Query answers (grounder_impl.hpp): the atoms a query literal matches, and a goal's
// answers as rows of its variables' values.
#include <algorithm>
#include <string>

#include "logic/grounder_impl.hpp"

namespace lrnn::logic::detail {

// The atoms a query literal matches: (predicate, row) pairs.
std::vector<std::pair<uint32_t, uint32_t>> Grounder::match_query(const Literal& q, std::vector<uint32_t>* var_values,
                                                                 std::vector<std::string>* var_names,
                                                                 const uint32_t* interned) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  if (q.builtin) return out;
  uint32_t p = prog_.predicate_id(q.predicate, q.arity());
  constexpr size_t kInline = 4;  // a ground query of a few constants (a node's `out(n17)`): no vectors
  if (!var_names && q.args.size() <= kInline &&
      std::none_of(q.args.begin(), q.args.end(), [](const Term& t) { return t.is_variable(); })) {
    uint32_t consts[kInline];
    for (size_t k = 0; k < q.args.size(); ++k) consts[k] = interned ? interned[k] : syms_.intern_term(q.args[k]);
    if (p == kNone || q.args.empty()) {
      if (p != kNone) {
        const Relation& rel = rels_[p];  // a proposition: its one row, if derived
        for (uint32_t r = 0; r < rel.rows(); ++r) out.emplace_back(p, r);
      }
      return out;
    }
    const Relation& rel = rels_[p];
    const uint32_t r = rel.arity() == q.args.size() ? rel.find(consts) : kNone;
    if (r != kNone) out.emplace_back(p, r);
    return out;
  }
  // Variables: index per distinct named variable; `_` matches anything.
  std::vector<int> var_of(q.args.size(), -1);
  std::vector<std::string> names;
  std::vector<uint32_t> consts(q.args.size(), kNone);
  for (size_t k = 0; k < q.args.size(); ++k) {
    const Term& t = q.args[k];
    if (!t.is_variable()) {
      consts[k] = interned ? *interned++ : syms_.intern_term(t);
    } else if (t.text != "_") {
      auto it = std::find(names.begin(), names.end(), t.text);
      var_of[k] = int(it - names.begin());
      if (it == names.end()) names.push_back(t.text);
    }
  }
  if (var_names) *var_names = names;
  if (p == kNone) return out;
  const Relation& rel = rels_[p];
  // A ground query is one lookup (n queries out(0..n-1) would otherwise scan n rows each).
  if (!consts.empty() && std::none_of(consts.begin(), consts.end(), [](uint32_t c) { return c == kNone; })) {
    const uint32_t r = rel.arity() == consts.size() ? rel.find(consts.data()) : kNone;
    if (r != kNone) out.emplace_back(p, r);
    return out;
  }
  std::vector<uint32_t> vals(names.size());
  std::vector<char> set(names.size());
  for (uint32_t r = 0; r < rel.rows(); ++r) {
    const uint32_t* t = rel.row(r);
    std::fill(set.begin(), set.end(), 0);
    bool ok = true;
    for (size_t k = 0; k < q.args.size() && ok; ++k) {
      if (consts[k] != kNone) {
        ok = t[k] == consts[k];
      } else if (var_of[k] >= 0) {
        if (set[var_of[k]]) {
          ok = vals[var_of[k]] == t[k];
        } else {
          vals[var_of[k]] = t[k];
          set[var_of[k]] = 1;
        }
      }
    }
    if (!ok) continue;
    out.emplace_back(p, r);
    if (var_values) var_values->insert(var_values->end(), vals.begin(), vals.end());
  }
  return out;
}

std::vector<std::vector<std::pair<uint32_t, uint32_t>>> Grounder::match_queries(const std::vector<Literal>& queries) {
  std::vector<const Term*> constants;
  for (const Literal& q : queries)
    if (!q.builtin)
      for (const Term& t : q.args)
        if (!t.is_variable()) constants.push_back(&t);
  std::vector<uint32_t> ids(constants.size());
  syms_.intern_terms(constants, ids);
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> out;
  out.reserve(queries.size());
  const uint32_t* next = ids.data();
  for (const Literal& q : queries) {
    out.push_back(match_query(q, nullptr, nullptr, q.builtin ? nullptr : next));
    if (!q.builtin)
      next += std::count_if(q.args.begin(), q.args.end(), [](const Term& t) { return !t.is_variable(); });
  }
  return out;
}

GoalAnswers Grounder::answer(const Literal& goal) {
  GoalAnswers out;
  std::vector<uint32_t> values;
  auto matches = match_query(goal, &values, &out.variables);
  const size_t w = out.variables.size();
  std::vector<std::vector<uint32_t>> rows;
  for (size_t i = 0; i < matches.size(); ++i)
    rows.emplace_back(values.begin() + i * w, values.begin() + (i + 1) * w);
  std::sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    for (size_t k = 0; k < a.size(); ++k) {
      int c = syms_.compare(a[k], b[k]);
      if (c) return c < 0;
    }
    return false;
  });
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  out.rows = std::move(rows);
  return out;
}

}  // namespace lrnn::logic::detail
