#include "train/dataset.hpp"

#include <algorithm>
#include <cstdint>
#include <set>

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

namespace lrnn::train {

namespace {

std::string predicate_key(const Literal& l) { return l.predicate + "/" + std::to_string(l.args.size()); }

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

void check_queries_defined(const TemplateAst& tmpl, const std::vector<Sample>& samples) {
  std::set<std::string> defined;
  for (const Rule& r : tmpl.rules) defined.insert(predicate_key(r.head));
  for (const Literal& f : tmpl.facts) defined.insert(predicate_key(f));
  for (const Sample& s : samples)
    for (const Literal& f : s.example.facts) defined.insert(predicate_key(f));
  for (const Sample& s : samples)
    for (const Literal& q : s.queries) {
      if (q.builtin || defined.count(predicate_key(q))) continue;
      const std::string key = predicate_key(q);
      std::string closest;
      size_t best = SIZE_MAX;
      for (const std::string& d : defined)
        if (size_t dist = edit_distance(key, d); dist < best) best = dist, closest = d;
      throw Error(ErrorKind::Semantic, q.span,
                  "query predicate " + key + " is defined by no rule head, template fact or example fact, so it "
                  "could only ever be 0" + (closest.empty() ? std::string() : "; did you mean " + closest + "?"));
    }
}

}  // namespace lrnn::train
