#include "train/dataset.hpp"

#include "lrnn/diagnostics.hpp"
#include "lrnn/logic.hpp"

namespace lrnn::train {

std::vector<double> target_of(const Literal& query) {
  if (!query.weight) return {};
  const ValueSpec& v = *query.weight;
  if (v.kind == ValueSpec::Kind::Dims || v.kind == ValueSpec::Kind::Reference)
    throw Error(ErrorKind::Semantic, v.span, "a query target must be a number, vector or matrix");
  return v.data;
}

std::vector<Sample> pair_samples(std::vector<ExampleAst> examples, const std::vector<QueryLineAst>& queries) {
  // The pairing rules are the logic stage's (logic::pair_queries); a single example that
  // serves many query lines becomes ONE sample holding all of them, so it is grounded
  // and neuralized once (a knowledge base with thousands of queries stays one network).
  std::vector<logic::QueryPairing> pairs = logic::pair_queries(examples, queries);
  std::vector<Sample> out;
  if (examples.size() == 1 && pairs.size() > 1) {
    Sample s;
    for (auto& p : pairs) s.queries.insert(s.queries.end(), p.queries.begin(), p.queries.end());
    s.example = std::move(examples[0]);
    out.push_back(std::move(s));
    return out;
  }
  out.reserve(pairs.size());
  for (auto& p : pairs) {
    if (p.queries.empty())
      throw Error(ErrorKind::Semantic, examples[p.example].span,
                  "example has no query: label it (`<1> q :- facts.`) or give a queries file");
    out.push_back({examples[p.example], std::move(p.queries)});
  }
  return out;
}

}  // namespace lrnn::train
