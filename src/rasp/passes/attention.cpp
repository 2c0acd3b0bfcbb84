// The attention blocks of the weight compiler (passes.hpp): a head per aggregate, width or
// length. Scores are a bilinear form over one-hot subspaces (beta for a selected pair),
// the BOS position scored in between so that nothing selected falls back to BOS, whose
// value is the default; a count attends BOS as strongly as a selected key and writes
// 1/(w+1). The BOS residual is known at compile time, so every head corrects its BOS key
// score and value to be exactly what the construction needs.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "rasp/passes/passes.hpp"

namespace lrnn::rasp::passes {

std::vector<double> head(Laid& laid, const Node* n, const std::vector<double>& bos, CompiledLayer& layer) {
  const int d = laid.model.d_model;
  std::vector<ScoreTerm> terms;
  std::string selector = "select(tokens, tokens, true)";
  if (n->kind == Kind::Length) {
    ScoreTerm all;
    all.table.assign(1, std::vector<uint8_t>(1, 1));
    terms.push_back(all);
  } else {
    terms = score_terms(laid, n->children[0].get());
    selector = n->children[0]->description();
  }
  const bool counting = width_based(laid, n);
  std::vector<double> qk(static_cast<size_t>(d) * d, 0.0), ov(static_cast<size_t>(d) * d, 0.0);
  for (const ScoreTerm& t : terms) {
    const Feature* q = t.query;
    const Feature* k = t.key;
    for (size_t a = 0; a < t.table.size(); ++a)
      for (size_t b = 0; b < t.table[a].size(); ++b) {
        if (!t.table[a][b]) continue;
        int qd = q ? q->offset + static_cast<int>(a) : 0;
        int kd = k ? k->offset + static_cast<int>(b) : 0;
        qk[static_cast<size_t>(qd) * d + kd] += kBeta;
      }
  }
  // BOS: as strong as a selected key for counting heads, half a step below otherwise
  const double bos_score = kBeta * (static_cast<double>(terms.size()) - (counting ? 0.0 : 0.5));
  std::vector<double> bos_value(d, 0.0);
  const Feature& out = laid.features.at(n);
  if (counting) {
    bos_value[laid.scratch.at(n).offset] = 1.0;
  } else {
    const Feature& vals = laid.features.at(n->children[1].get());
    const bool viewed = laid.viewed.count(vals.node) > 0;
    const Feature* through = &vals;  // a viewed s-op is read through the one-hot it is a function of
    std::vector<Value> values = vals.values;
    if (viewed) std::tie(through, values) = view_of(laid, vals.node);
    const size_t entries = !viewed && (vals.constant || vals.numerical) ? 1 : values.size();
    for (size_t i = 0; i < entries; ++i) {
      const Value& v = values.at(i);
      int from = vals.constant ? 0 : through->offset + (vals.numerical && !viewed ? 0 : static_cast<int>(i));
      if (out.numerical) {
        if (!is_number(v)) refuse(n, "a numerical aggregate of " + vals.node->description() + ", which holds " + repr(v));
        double scale = vals.numerical && !vals.constant && !viewed ? 1.0 : to_double(v);
        ov[static_cast<size_t>(out.offset) * d + from] += scale;
      } else {
        if (vals.numerical && !vals.constant && !viewed)
          refuse(n, "a categorical aggregate of the numerical s-op " + vals.node->description());
        // a value no query ever receives (never selected, on any input) needs no weight
        if (!has_value(out, v)) continue;
        ov[static_cast<size_t>(dim_of(out, v)) * d + from] += 1.0;
      }
    }
    const HeadStats& st = laid.stats.at(n);
    if (st.some_empty) bos_value = encode(out, n->constant, d);
  }
  // The BOS key's score and value, exactly as intended whatever the BOS residual holds.
  double magnitude = 0;
  for (double w : qk) magnitude += std::fabs(w);
  double bound = 1;
  for (double x : bos) bound = std::max(bound, std::fabs(x));
  for (const auto& f : laid.features)
    if (f.second.numerical)
      for (const auto& v : f.second.values) bound = std::max(bound, std::fabs(to_double(v)));
  const double big = 2 * magnitude * bound * bound + 2 * kBeta + bos_score;
  std::vector<double> col(d, 0.0), vcol(d, 0.0);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) {
      if (j == 1) continue;
      col[i] += qk[static_cast<size_t>(i) * d + j] * bos[j];
      vcol[i] += ov[static_cast<size_t>(i) * d + j] * bos[j];
    }
  for (int i = 0; i < d; ++i) {
    qk[static_cast<size_t>(i) * d + 1] = -col[i];
    ov[static_cast<size_t>(i) * d + 1] = bos_value[i] - vcol[i];
  }
  qk[0 * d + 1] += bos_score;  // every query scores BOS at bos_score
  qk[1 * d + 1] += big;        // the BOS position attends only to itself
  // Aggregates of one layer that attend alike (the same score matrix, BOS included) are
  // one head writing several outputs: the attention weights are the same, and the value
  // maps write disjoint subspaces (their BOS corrections too), so summing them is exact.
  for (CompiledHead& same : layer.heads)
    if (same.qk == qk) {
      for (size_t i = 0; i < ov.size(); ++i) same.ov[i] += ov[i];
      same.output += ", " + out.node->description();
      return bos_value;
    }
  layer.heads.push_back(CompiledHead{out.node->description(), selector, std::move(qk), std::move(ov)});
  return bos_value;
}

}  // namespace lrnn::rasp::passes
