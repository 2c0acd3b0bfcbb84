#include "train/dataset.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <set>

#include "lrnn/diagnostics.hpp"
#include "lrnn/suggest.hpp"
#include "lrnn/logic.hpp"

namespace lrnn::train {

std::vector<double> target_of(const Literal& query) {
  if (!query.weight) return {};
  const ValueSpec& v = *query.weight;
  if (v.kind == ValueSpec::Kind::Dims || v.kind == ValueSpec::Kind::Reference)
    throw Error(ErrorKind::Semantic, v.span, "a query target must be a number, vector or matrix");
  return v.data;
}

namespace {

void check_line_split(const std::vector<QuerySplit>& line_split, size_t lines) {
  if (!line_split.empty() && line_split.size() != lines)
    throw Error(ErrorKind::Semantic, "a query split by lines needs one part per query line");
}

// The samples of logic::pair_queries's pairings (with query lines, pair k is line k). A
// single example that serves many query lines becomes ONE sample holding all of them, so it
// is grounded and neuralized once (a knowledge base with thousands of queries stays one
// network).
std::vector<Sample> samples_of_pairs(std::vector<ExampleAst> examples, std::vector<logic::QueryPairing> pairs,
                                     const std::vector<QuerySplit>& line_split, std::vector<uint32_t>* example_of) {
  auto part_of = [&](size_t pair) { return line_split.empty() ? QuerySplit::Train : line_split[pair]; };
  std::vector<Sample> out;
  if (examples.size() == 1 && pairs.size() > 1) {
    Sample s;
    bool weighted = false;
    for (const auto& p : pairs) weighted |= !p.importance.empty();
    size_t total = 0;
    for (const auto& p : pairs) total += p.queries.size();
    s.queries.reserve(total);
    for (size_t k = 0; k < pairs.size(); ++k) {
      auto& p = pairs[k];
      if (weighted) {
        if (p.importance.empty()) p.importance.assign(p.queries.size(), 1.0);
        s.importance.insert(s.importance.end(), p.importance.begin(), p.importance.end());
      }
      s.split.insert(s.split.end(), p.queries.size(), part_of(k));
      // Moved, and each pairing's freed: with a query per node of a big graph, copies
      // would hold the queries' literals twice.
      s.queries.insert(s.queries.end(), std::make_move_iterator(p.queries.begin()),
                       std::make_move_iterator(p.queries.end()));
      std::vector<Literal>().swap(p.queries);
    }
    if (line_split.empty()) s.split.clear();
    s.example = std::move(examples[0]);
    out.push_back(std::move(s));
    if (example_of) example_of->assign(1, 0);
    return out;
  }
  if (example_of) {
    example_of->clear();
    for (const auto& p : pairs) example_of->push_back(static_cast<uint32_t>(p.example));
  }
  out.reserve(pairs.size());
  // An example is moved into its last sample, not copied (a TU dataset held twice was
  // most of NCI1's peak memory).
  std::vector<uint32_t> uses(examples.size(), 0);
  for (const auto& p : pairs) ++uses[p.example];
  for (auto& p : pairs) {
    // The examples file lacks what training reads from it: bad input (exit 2), as `check` says.
    if (p.queries.empty())
      throw Error(ErrorKind::Parse, examples[p.example].span,
                  "example has no query: label it (`<1> q :- facts.`) or give a queries file");
    const size_t k = out.size();
    if (--uses[p.example] == 0) {
      out.push_back({std::move(examples[p.example]), std::move(p.queries), std::move(p.importance), {}});
    } else {
      out.push_back({examples[p.example], std::move(p.queries), std::move(p.importance), {}});
    }
    if (!line_split.empty() && part_of(k) != QuerySplit::Train) out.back().split.assign(out.back().queries.size(), part_of(k));
  }
  return out;
}

}  // namespace

std::vector<Sample> pair_samples(std::vector<ExampleAst> examples, const std::vector<QueryLineAst>& queries,
                                 const std::vector<QuerySplit>& line_split, std::vector<uint32_t>* example_of) {
  check_line_split(line_split, queries.size());
  std::vector<logic::QueryPairing> pairs = logic::pair_queries(examples, queries);
  return samples_of_pairs(std::move(examples), std::move(pairs), line_split, example_of);
}

namespace {

// What pairing gives one unlabelled example and unnamed query lines (a big graph's query per
// node, in one to three files): one sample with every line's queries, moved straight from
// the lines. Through logic::pair_queries each line's literals were moved into a pairing of
// their own first: a second heap block per query, held with the lines' until the end
// (reading the 200k-node graph of bench/big_graph.py took 0.65-1.18 s before, 0.60-0.65 s
// after; on the 2M-node graph the reading's page faults hide the difference).
bool one_sample_of_lines(std::vector<ExampleAst>& examples, std::vector<QueryLineAst>& lines,
                         const std::vector<QuerySplit>& line_split, std::vector<Sample>& out) {
  if (examples.size() != 1 || lines.size() < 2 || !examples[0].queries.empty()) return false;
  if (std::any_of(lines.begin(), lines.end(), [](const QueryLineAst& l) { return !l.id.empty(); })) return false;
  Sample s;
  size_t total = 0;
  for (const QueryLineAst& l : lines) total += l.queries.size();
  s.queries.reserve(total);
  const bool weighted = std::any_of(lines.begin(), lines.end(), [](const QueryLineAst& l) { return l.importance != 1.0; });
  for (size_t k = 0; k < lines.size(); ++k) {
    QueryLineAst& line = lines[k];
    if (weighted) s.importance.insert(s.importance.end(), line.queries.size(), line.importance);
    if (!line_split.empty()) s.split.insert(s.split.end(), line.queries.size(), line_split[k]);
    s.queries.insert(s.queries.end(), std::make_move_iterator(line.queries.begin()),
                     std::make_move_iterator(line.queries.end()));
    std::vector<Literal>().swap(line.queries);
  }
  s.example = std::move(examples[0]);
  out.push_back(std::move(s));
  return true;
}

}  // namespace

std::vector<Sample> pair_samples(std::vector<ExampleAst> examples, std::vector<QueryLineAst>&& queries,
                                 const std::vector<QuerySplit>& line_split, std::vector<uint32_t>* example_of) {
  check_line_split(line_split, queries.size());
  if (std::vector<Sample> one; one_sample_of_lines(examples, queries, line_split, one)) {
    if (example_of) example_of->assign(1, 0);
    return one;
  }
  std::vector<logic::QueryPairing> pairs = logic::pair_queries(examples, std::move(queries));
  return samples_of_pairs(std::move(examples), std::move(pairs), line_split, example_of);
}

}  // namespace lrnn::train

namespace lrnn::train {

std::string predicate_key(const Literal& l) { return l.predicate + "/" + std::to_string(l.args.size()); }

void check_queries_defined(const TemplateAst& tmpl, std::span<const Sample> samples) {
  std::set<std::string> fact_keys;
  for (const Sample& s : samples)
    for (const Literal& f : s.example.facts) fact_keys.insert(predicate_key(f));
  check_queries_defined(tmpl, std::move(fact_keys), samples);
}

void check_queries_defined(const TemplateAst& tmpl, std::set<std::string> fact_keys, std::span<const Sample> samples) {
  std::set<std::string> defined = std::move(fact_keys);
  for (const Rule& r : tmpl.rules) defined.insert(predicate_key(r.head));
  for (const Literal& f : tmpl.facts) defined.insert(predicate_key(f));
  const Literal* last_defined = nullptr;  // queries come in runs of one predicate (a graph's nodes)
  for (const Sample& s : samples)
    for (const Literal& q : s.queries) {
      if (last_defined && q.predicate == last_defined->predicate && q.args.size() == last_defined->args.size() &&
          q.builtin == last_defined->builtin)
        continue;
      if (q.builtin || defined.count(predicate_key(q))) {
        last_defined = &q;
        continue;
      }
      const std::string key = predicate_key(q);
      const std::string closest = closest_name(key, defined);
      throw Error(ErrorKind::Semantic, q.span,
                  "query predicate " + key + " is defined by no rule head, template fact or example fact, so it "
                  "could only ever be 0" + (closest.empty() ? std::string() : "; did you mean " + closest + "?"));
    }
}

}  // namespace lrnn::train
