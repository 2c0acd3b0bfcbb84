// Selectors as the summands of a head's score (passes.hpp): a table over the values the
// query side and the key side compare, each side read from one categorical feature (an
// s-op's one-hot, a joint feature, the one-hot a viewed s-op is a function of, or "one"
// for constants). An `and` of parts sums a table per part; anything else over several
// pairs of s-ops is one table over joint values.
#include <algorithm>

#include "rasp/passes/passes.hpp"

namespace lrnn::rasp::passes {

int next_attention(int ready) { return ready % 2 == 0 ? ready + 1 : ready + 2; }
int next_mlp(int ready) { return ready % 2 == 0 ? ready + 2 : ready + 1; }

namespace {

void leaves(const Node* s, std::vector<const Node*>& out) {
  if (s->kind == Kind::Select) out.push_back(s);
  else for (const auto& c : s->children) leaves(c.get(), out);
}

// One side of a score table: the feature it reads (null: constants only, read from
// "one") and, per dimension of it, the values of the s-ops compared on that side.
struct Side {
  const Feature* feature = nullptr;
  std::vector<const Node*> sops;
  std::vector<std::vector<Value>> values;
};

Value side_value(const Side& side, const std::vector<Value>& values, const Node* sop) {
  for (size_t i = 0; i < side.sops.size(); ++i)
    if (side.sops[i] == sop) return values[i];
  return canon(sop->constant);  // a constant
}

bool formula(const Node* s, const Side& q, const std::vector<Value>& qv, const Side& k, const std::vector<Value>& kv) {
  switch (s->kind) {
    case Kind::Select:
      if (s->predicate == Predicate::True || s->predicate == Predicate::False)
        return apply_predicate(s->predicate, Value{}, Value{});
      return apply_predicate(s->predicate, side_value(k, kv, s->children[0].get()),
                             side_value(q, qv, s->children[1].get()));
    case Kind::SelectAnd: return formula(s->children[0].get(), q, qv, k, kv) && formula(s->children[1].get(), q, qv, k, kv);
    case Kind::SelectOr: return formula(s->children[0].get(), q, qv, k, kv) || formula(s->children[1].get(), q, qv, k, kv);
    case Kind::SelectNot: return !formula(s->children[0].get(), q, qv, k, kv);
    default: return false;
  }
}

// Why an s-op is numerical, for a refusal: the user's annotation, or what made it so.
std::string why_numerical(const Encoded& e, const Node* sop) {
  if (sop->encoding == Encoding::Numerical) return "annotated numerical: drop the annotation";
  if (sop->kind == Kind::Aggregate) {
    const HeadStats& st = e.stats.at(sop);
    if (st.max_selected >= 2)
      return "an aggregate whose queries select up to " + std::to_string(st.max_selected) +
             " keys averages them; make it select one key per query, or map it to categories";
    return "it aggregates the numerical " + sop->children[1]->description();
  }
  return "its values are numbers computed from a numerical s-op";
}

// The categorical feature a selector compares (null: a constant, read from "one").
const Feature* compared(const Encoded& e, const Node* sel, const Node* sop, const char* role) {
  const Feature& f = e.features.at(sop);
  if (f.constant) return nullptr;
  if (f.numerical)
    refuse(sel, std::string("its ") + role + " " + sop->description() + " is numerical (" + why_numerical(e, sop) +
                    "); selectors compare categorical s-ops");
  return &f;
}

Side side_of(Scheduled& s, const Node* sel, int side) {
  Side out;
  out.sops = side_sops(sel, side);
  if (out.sops.size() >= 2) {
    Joint& j = s.joints.at(out.sops);
    if (j.feature.ready < 0) {  // first asked by schedule(), once its inputs are scheduled
      int ready = 0;
      const auto sh = s.joint_shadowed.find(out.sops);
      for (const Node* in : j.table.inputs)
        ready = std::max(ready, sh != s.joint_shadowed.end() && sh->second.count(in) ? shadow(s, in).ready
                                                                                     : s.features.at(in).ready);
      j.feature.ready = j.embedded != Kind::Constant ? 0 : next_mlp(ready);
    }
    out.feature = &j.feature;
    out.values = j.tuples;
  } else if (out.sops.size() == 1) {
    out.feature = compared(s, sel, out.sops[0], side == 0 ? "keys" : "queries");
    if (s.viewed.count(out.sops[0])) {
      auto [in, values] = view_of(s, out.sops[0]);
      out.feature = in;
      for (const auto& v : values) out.values.push_back({v});
    } else {
      for (const auto& v : s.features.at(out.sops[0]).values) out.values.push_back({v});
    }
  } else {
    out.values.emplace_back();  // constants only: one row, the values not looked at
  }
  return out;
}

// One score term: the selector's table over its query side's and key side's values.
ScoreTerm term(Scheduled& s, const Node* sel) {
  const Side q = side_of(s, sel, 1), k = side_of(s, sel, 0);
  ScoreTerm t;
  t.query = q.feature;
  t.key = k.feature;
  t.table.assign(q.values.size(), std::vector<uint8_t>(k.values.size()));
  for (size_t a = 0; a < q.values.size(); ++a)
    for (size_t b = 0; b < k.values.size(); ++b) t.table[a][b] = formula(sel, q, q.values[a], k, k.values[b]);
  return t;
}

}  // namespace

std::vector<const Node*> side_sops(const Node* sel, int side) {
  std::vector<const Node*> ls, out;
  leaves(sel, ls);
  for (const Node* l : ls) {
    if (l->predicate == Predicate::True || l->predicate == Predicate::False) continue;
    const Node* c = l->children[side].get();
    if (c->kind != Kind::Constant && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const Node* a, const Node* b) { return a->id < b->id; });
  return out;
}

size_t compared_pairs(const Node* sel) {
  std::vector<const Node*> ls;
  leaves(sel, ls);
  std::set<std::pair<const Node*, const Node*>> pairs;
  for (const Node* l : ls)
    if (l->predicate != Predicate::True && l->predicate != Predicate::False)
      pairs.emplace(l->children[0].get(), l->children[1].get());
  return pairs.size();
}

const Feature& shadow(Scheduled& s, const Node* in) {
  Feature& copy = s.shadows[in];
  copy.node = in;
  copy.values.clear();
  for (const auto& v : s.features.at(in).values) {
    bool seen = false;
    for (const auto& c : copy.values) seen |= values_equal(c, v);
    if (!seen) copy.values.push_back(v);
  }
  copy.ready = next_mlp(s.features.at(in).ready);
  return copy;
}

std::vector<ScoreTerm> score_terms(Scheduled& s, const Node* sel) {
  if (compared_pairs(sel) <= 1 || sel->kind != Kind::SelectAnd) return {term(s, sel)};
  std::vector<ScoreTerm> out = score_terms(s, sel->children[0].get());
  for (auto& t : score_terms(s, sel->children[1].get())) out.push_back(std::move(t));
  return out;
}

}  // namespace lrnn::rasp::passes
