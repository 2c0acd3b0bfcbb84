#include "train/dataset.hpp"

#include <unordered_map>

#include "lrnn/diagnostics.hpp"

namespace lrnn::train {

std::vector<double> target_of(const Literal& query) {
  if (!query.weight) return {};
  const ValueSpec& v = *query.weight;
  if (v.kind == ValueSpec::Kind::Dims || v.kind == ValueSpec::Kind::Reference)
    throw Error(ErrorKind::Semantic, v.span, "a query target must be a number, vector or matrix");
  return v.data;
}

std::vector<Sample> pair_samples(std::vector<ExampleAst> examples, const std::vector<QueryLineAst>& queries) {
  std::vector<Sample> out;
  if (queries.empty()) {
    for (ExampleAst& e : examples) {
      if (e.queries.empty())
        throw Error(ErrorKind::Semantic, e.span,
                    "example has no query: label it (`<1> q :- facts.`) or give a queries file");
      Sample s;
      s.queries = e.queries;
      s.example = std::move(e);
      out.push_back(std::move(s));
    }
    return out;
  }
  bool named = false;
  for (const QueryLineAst& q : queries) named = named || !q.id.empty();
  if (named) {
    std::unordered_map<std::string, size_t> by_id;
    for (size_t i = 0; i < examples.size(); ++i)
      if (!examples[i].id.empty()) by_id.emplace(examples[i].id, i);
    for (const QueryLineAst& q : queries) {
      auto it = by_id.find(q.id);
      if (q.id.empty() || it == by_id.end()) {
        if (examples.size() == 1) {
          out.push_back({examples[0], q.queries});
          continue;
        }
        throw Error(ErrorKind::Semantic, q.span, "no example with id '" + q.id + "' for this query line");
      }
      out.push_back({examples[it->second], q.queries});
    }
    return out;
  }
  if (examples.size() == 1 && queries.size() > 1) {
    // One example serves every query: one sample holding all of them (grounded once).
    Sample s;
    s.example = std::move(examples[0]);
    for (const QueryLineAst& q : queries) s.queries.insert(s.queries.end(), q.queries.begin(), q.queries.end());
    out.push_back(std::move(s));
    return out;
  }
  if (examples.size() != queries.size()) {
    const Span& span = queries.size() > examples.size() ? queries[examples.size()].span
                                                        : examples[queries.size()].span;
    throw Error(ErrorKind::Semantic, span,
                std::to_string(examples.size()) + " examples but " + std::to_string(queries.size()) +
                    " query lines: they pair line by line");
  }
  for (size_t i = 0; i < examples.size(); ++i) {
    Sample s;
    s.queries = queries[i].queries;
    s.example = std::move(examples[i]);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace lrnn::train
