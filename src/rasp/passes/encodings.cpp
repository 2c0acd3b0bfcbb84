// Pass 2 of the weight compiler (passes.hpp): every needed s-op is numerical (one
// dimension of the residual) or categorical (one-hot over the values it takes). Numerical
// when annotated so, when it aggregates a numerical s-op, or when an aggregate averages
// several selected keys; a categorical annotation that cannot hold is refused.
#include "rasp/passes/passes.hpp"

namespace lrnn::rasp::passes {

Encoded choose_encodings(Observation observed) {
  Encoded e(std::move(observed));
  for (const Node* n : e.order) {
    if (!e.needed.count(n)) continue;
    Feature f;
    f.node = n;
    f.values = e.values.at(n).values;
    f.constant = n->kind == Kind::Constant || (elementwise(n->kind) && frontier_of(e, n).empty());
    if (n->kind == Kind::Tokens) f.values = e.vocab;
    if (n->kind == Kind::Indices) {
      f.values.clear();
      for (int i = 0; i < e.max_len; ++i) f.values.emplace_back(int64_t{i});
    }
    bool numerical = n->encoding == Encoding::Numerical;
    if (n->kind == Kind::Aggregate) {
      const HeadStats& st = e.stats.at(n);
      const Feature& vals = e.features.at(n->children[1].get());
      bool summed = st.max_selected >= 2;
      if (summed && n->encoding == Encoding::Categorical)
        refuse(n, "it is annotated categorical but a query selects " + std::to_string(st.max_selected) +
                      " keys (a categorical aggregate must select at most one)");
      numerical = numerical || summed || vals.numerical;
    }
    if (numerical && !f.constant) {
      for (const auto& v : f.values)
        if (!is_number(v))
          refuse(n, "it is numerical (one dimension) but takes the value " + repr(v) +
                        (is_none(v) ? " (a numerical s-op cannot be undefined: give a numeric default)" : ""));
    }
    f.numerical = numerical;
    e.features[n] = f;
  }
  return e;
}

}  // namespace lrnn::rasp::passes
