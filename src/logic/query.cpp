// Query answering and query/example pairing (include/lrnn/logic.hpp).
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <type_traits>
#include <unordered_map>

#include "logic/grounder.hpp"
#include "logic/program.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/logic.hpp"

namespace lrnn::logic {

QueryResult answer_query(const TemplateAst& tmpl, const std::vector<ExampleAst>& facts,
                         const Literal& goal, size_t max_ground_rules, size_t max_atoms) {
  if (goal.builtin || goal.negated || goal.soft_negated) {
    throw Error(ErrorKind::Semantic, goal.span, "a goal must be a plain atom such as p(X, a)");
  }
  ExampleAst all;
  for (const ExampleAst& e : facts) all.facts.insert(all.facts.end(), e.facts.begin(), e.facts.end());
  // Predicates only the facts or the goal mention still get ids, so a goal on a fact
  // predicate is answered.
  std::vector<std::pair<std::string, int>> extra{{goal.predicate, goal.arity()}};
  for (const Literal& f : all.facts) extra.emplace_back(f.predicate, f.arity());
  Program program(tmpl, extra);
  GroundingOptions options;
  options.max_ground_rules = max_ground_rules;
  options.max_atoms = max_atoms;
  GoalAnswers answers = answer_goal(program, all, goal, options);
  QueryResult result;
  result.variables = answers.variables;
  result.ground = answers.variables.empty();
  const Symbols& syms = program.symbols();
  for (const auto& row : answers.rows) {
    std::vector<AnswerValue> values;
    for (uint32_t id : row) {
      AnswerValue v;
      v.text = program.constant_text(id);
      v.is_number = syms.is_number(id);
      v.number = v.is_number ? syms.number(id) : 0;
      values.push_back(std::move(v));
    }
    result.rows.push_back(std::move(values));
  }
  return result;
}

std::vector<std::string> format_answers(const QueryResult& result) {
  if (result.ground) return {result.holds() ? "true" : "false"};
  std::vector<std::string> lines;
  for (const auto& row : result.rows) {
    std::string line;
    for (size_t k = 0; k < row.size(); ++k) {
      if (k) line += ", ";
      line += result.variables[k] + "=" + row[k].text;
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

namespace {

// pair_queries over lines it copies (a const vector) or moves from.
template <class Lines>
std::vector<QueryPairing> pair_lines(const std::vector<ExampleAst>& examples, Lines& query_lines) {
  using Line = std::remove_reference_t<decltype(query_lines[0])>;  // const for the copying pairing
  std::vector<QueryPairing> out;
  if (query_lines.empty()) {
    for (size_t e = 0; e < examples.size(); ++e) out.push_back({e, examples[e].queries, {}});
    return out;
  }
  auto pairing = [&](size_t e, Line& line) {
    QueryPairing p{e, examples[e].queries, {}};
    if constexpr (std::is_const_v<Line>)
      p.queries.insert(p.queries.end(), line.queries.begin(), line.queries.end());
    else
      p.queries.insert(p.queries.end(), std::make_move_iterator(line.queries.begin()),
                       std::make_move_iterator(line.queries.end()));
    if (line.importance != 1.0) {
      p.importance.assign(p.queries.size(), 1.0);
      std::fill(p.importance.end() - static_cast<std::ptrdiff_t>(line.queries.size()), p.importance.end(),
                line.importance);
    }
    return p;
  };
  size_t named = 0;
  for (const auto& q : query_lines) named += !q.id.empty();
  if (named > 0) {
    if (named != query_lines.size()) {
      for (const auto& q : query_lines)
        if (q.id.empty())
          throw Error(ErrorKind::Semantic, q.span,
                      "this query line has no id but others do: name every line `id :- ...` or none");
    }
    std::unordered_map<std::string, size_t> by_id;
    for (size_t e = 0; e < examples.size(); ++e)
      if (!examples[e].id.empty()) by_id.emplace(examples[e].id, e);
    for (auto& q : query_lines) {
      auto it = by_id.find(q.id);
      if (it == by_id.end())
        throw Error(ErrorKind::Semantic, q.span, "no example has the id '" + q.id + "'");
      out.push_back(pairing(it->second, q));
    }
    return out;
  }
  if (examples.size() == 1) {
    for (auto& q : query_lines) out.push_back(pairing(0, q));
    return out;
  }
  if (examples.size() != query_lines.size()) {
    const Span& where = query_lines.size() > examples.size() ? query_lines[examples.size()].span
                                                             : query_lines.back().span;
    throw Error(ErrorKind::Semantic, where,
                std::to_string(examples.size()) + " examples but " + std::to_string(query_lines.size()) +
                    " query lines: unnamed queries pair with examples line by line (equal counts) or "
                    "all with a single example");
  }
  for (size_t i = 0; i < examples.size(); ++i) out.push_back(pairing(i, query_lines[i]));
  return out;
}

}  // namespace

std::vector<QueryPairing> pair_queries(const std::vector<ExampleAst>& examples,
                                       const std::vector<QueryLineAst>& query_lines) {
  return pair_lines(examples, query_lines);
}

std::vector<QueryPairing> pair_queries(const std::vector<ExampleAst>& examples,
                                       std::vector<QueryLineAst>&& query_lines) {
  return pair_lines(examples, query_lines);
}

}  // namespace lrnn::logic
