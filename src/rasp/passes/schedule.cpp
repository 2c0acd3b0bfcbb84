// Pass 5 of the weight compiler (passes.hpp): the sublayer after which every feature is in
// the residual (attention of layer l is sublayer 2l-1, its MLP 2l). Tokens, indices,
// constants and embedded s-ops are there from the start; an element-wise lookup is in
// the first MLP after its inputs; a head attends in the first attention after its
// selector's features and its values (a count is decoded by the MLP after it).
#include <algorithm>

#include "rasp/passes/passes.hpp"

namespace lrnn::rasp::passes {

Scheduled schedule(Readings readings) {
  Scheduled s(std::move(readings));
  for (const Node* n : s.order) {
    if (!s.needed.count(n)) continue;
    Feature& f = s.features.at(n);
    if (f.constant || n->kind == Kind::Tokens || n->kind == Kind::Indices) {
      f.ready = 0;
      continue;
    }
    if (s.embedded.count(n)) {
      f.ready = 0;
      continue;
    }
    if (elementwise(n->kind)) {
      int ready = 0;
      auto sh = s.shadowed.find(n);
      for (const Node* in : frontier_of(s, n)) {
        int at = s.direct.count(n) && is_count(s, in) ? s.attention_at.at(in) : s.features.at(in).ready;
        if (sh != s.shadowed.end() && sh->second.count(in)) at = shadow(s, in).ready;
        ready = std::max(ready, at);
      }
      f.ready = next_mlp(ready);
      continue;
    }
    int ready = 0;
    if (n->kind == Kind::Aggregate) ready = s.features.at(n->children[1].get()).ready;
    if (n->kind != Kind::Length) {
      const Node* sel = n->children[0].get();
      for (const ScoreTerm& t : score_terms(s, sel)) {
        if (t.query) ready = std::max(ready, t.query->ready);
        if (t.key) ready = std::max(ready, t.key->ready);
      }
    }
    if (s.options.causal && !s.stats.at(n).causal_violation.empty())
      refuse(n, "causal attention sees only earlier positions, but " + s.stats.at(n).causal_violation);
    s.attention_at[n] = next_attention(ready);
    f.ready = s.attention_at[n] + (width_based(s, n) ? 1 : 0);
  }
  return s;
}

}  // namespace lrnn::rasp::passes
