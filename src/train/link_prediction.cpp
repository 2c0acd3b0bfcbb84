#include "train/link_prediction.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "train/dataset.hpp"

namespace lrnn::train {

Corrupt parse_corrupt(const std::string& name) {
  if (name == "tail") return Corrupt::Tail;
  if (name == "head") return Corrupt::Head;
  if (name == "both") return Corrupt::Both;
  throw Error(ErrorKind::Semantic, "unknown corruption '" + name + "' (expected tail, head or both)");
}

LinkConfig link_config(const Settings& s) {
  LinkConfig c;
  if (s.negatives < 1) throw Error(ErrorKind::Semantic, "link prediction needs at least 1 negative per link");
  if (!(s.margin >= 0)) throw Error(ErrorKind::Semantic, "the margin must be 0 (no margin loss) or positive");
  c.negatives = s.negatives;
  c.corrupt = parse_corrupt(s.corrupt);
  c.margin = s.margin;
  c.ranking = s.ranking;
  c.chunk = s.link_chunk;
  return c;
}

namespace {

std::vector<std::string> variables_of(const Literal& l) {
  std::vector<std::string> vars;
  for (const Term& t : l.args)
    if (t.is_variable() && std::find(vars.begin(), vars.end(), t.text) == vars.end()) vars.push_back(t.text);
  return vars;
}

[[noreturn]] void refuse(const Span& span, const std::string& message) {
  throw Error(ErrorKind::Semantic, span, "link prediction: " + message);
}

// The decoder's predicates: the query's, and every predicate a decoder rule reads with two
// or more of its head's variables (a function of several arguments).
std::set<std::string> decoder_predicates(const TemplateAst& tmpl, const std::string& query_key) {
  std::set<std::string> tail{query_key};
  for (bool grew = true; grew;) {
    grew = false;
    for (const Rule& r : tmpl.rules) {
      if (!tail.count(predicate_key(r.head))) continue;
      for (const Literal& b : r.body)
        if (!b.builtin && !b.hidden && variables_of(b).size() >= 2 && tail.insert(predicate_key(b)).second) grew = true;
    }
  }
  return tail;
}

void check_decoder_rule(const Rule& r) {
  const std::vector<std::string> head_vars = variables_of(r.head);
  for (const Term& t : r.head.args)
    if (!t.is_variable())
      refuse(r.head.span, "a score rule's head must list variables only, found '" + t.text + "' in " + print_literal(r.head));
  if (head_vars.size() != r.head.args.size())
    refuse(r.head.span, "a score rule's head must list distinct variables: " + print_literal(r.head));
  for (const Literal& b : r.body) {
    if (b.builtin || b.hidden || b.negated)
      refuse(b.span, "the score rule for " + predicate_key(r.head) + " reads '" + print_literal(b) +
                         "', a relation between its arguments; a score must be computed from atoms of one argument "
                         "each (and of other scores)");
    for (const std::string& v : variables_of(b))
      if (std::find(head_vars.begin(), head_vars.end(), v) == head_vars.end())
        refuse(b.span, "the score rule for " + predicate_key(r.head) + " joins over " + v + " in '" + print_literal(b) +
                           "'; a score must be computed from atoms of its arguments alone");
  }
}

bool is_template_fact(const TemplateAst& tmpl, const Literal& l) {
  return std::any_of(tmpl.facts.begin(), tmpl.facts.end(),
                     [&](const Literal& f) { return f.predicate == l.predicate && f.args == l.args; });
}

// Follows the query's arguments through the decoder's rules: which argument each encoder
// atom's variable stands for.
void trace_positions(const TemplateAst& tmpl, const std::set<std::string>& tail, const std::string& key,
                     const std::vector<int>& positions, std::set<std::pair<std::string, std::vector<int>>>& seen,
                     LinkDecoder& out) {
  if (!seen.insert({key, positions}).second) return;
  for (const Rule& r : tmpl.rules) {
    if (predicate_key(r.head) != key) continue;
    std::map<std::string, int> position_of;
    for (size_t i = 0; i < r.head.args.size(); ++i) position_of[r.head.args[i].text] = positions[i];
    for (const Literal& b : r.body) {
      if (tail.count(predicate_key(b))) {
        std::vector<int> inner;
        for (const Term& t : b.args) {
          if (!t.is_variable())
            refuse(b.span, "the score atom '" + print_literal(b) + "' must have variables as arguments");
          inner.push_back(position_of.at(t.text));
        }
        trace_positions(tmpl, tail, predicate_key(b), inner, seen, out);
        continue;
      }
      EncoderAtom atom;
      atom.literal = b;
      atom.literal.weight.reset();
      atom.literal.transposed = atom.literal.soft_negated = false;
      atom.literal.span = Span{};
      for (size_t i = 0; i < b.args.size(); ++i)
        if (b.args[i].is_variable()) {
          atom.variable_arg = static_cast<int>(i);
          atom.position = position_of.at(b.args[i].text);
        }
      if (atom.variable_arg < 0 && !is_template_fact(tmpl, atom.literal))
        refuse(b.span, "the score rule for " + key + " reads '" + print_literal(atom.literal) +
                           "', which depends on no argument; only template facts may be read so");
      const bool known = std::any_of(out.inputs.begin(), out.inputs.end(), [&](const EncoderAtom& a) {
        return a.literal == atom.literal && a.position == atom.position;
      });
      if (!known) out.inputs.push_back(std::move(atom));
    }
  }
}

}  // namespace

LinkDecoder split_link_template(const TemplateAst& tmpl, const std::string& predicate, int arity) {
  LinkDecoder d;
  d.predicate = predicate;
  d.arity = arity;
  const std::string query_key = predicate + "/" + std::to_string(arity);
  const std::set<std::string> tail = decoder_predicates(tmpl, query_key);
  d.tail_predicates.assign(tail.begin(), tail.end());
  for (uint32_t i = 0; i < tmpl.rules.size(); ++i) {
    const Rule& r = tmpl.rules[i];
    if (tail.count(predicate_key(r.head))) {
      check_decoder_rule(r);
      d.rules.push_back(i);
      continue;
    }
    for (const Literal& b : r.body)
      if (tail.count(predicate_key(b)))
        refuse(b.span, "the rule for " + predicate_key(r.head) + " reads the score '" + print_literal(b) +
                           "'; scores are computed per link, after the atoms of their arguments");
  }
  auto defined = [&](const std::string& key) {
    return std::any_of(d.rules.begin(), d.rules.end(), [&](uint32_t i) { return predicate_key(tmpl.rules[i].head) == key; });
  };
  if (!defined(query_key)) throw Error(ErrorKind::Semantic, "link prediction: no rule of the template defines " + query_key);
  // A relation of two arguments that no rule computes is data (an edge fact): reading it
  // would make a link's score depend on facts about that very pair.
  for (uint32_t i : d.rules)
    for (const Literal& b : tmpl.rules[i].body)
      if (tail.count(predicate_key(b)) && !defined(predicate_key(b)))
        refuse(b.span, "the score rule for " + predicate_key(tmpl.rules[i].head) + " reads '" + print_literal(b) +
                           "', a relation between its arguments; a score must be computed from atoms of one argument "
                           "each (and of other scores)");
  for (const Literal& f : tmpl.facts)
    if (tail.count(predicate_key(f)))
      refuse(f.span, "'" + print_literal(f) + "' is a fact of a score predicate; scores must come from rules");
  std::vector<int> positions(arity);
  for (int i = 0; i < arity; ++i) positions[i] = i;
  std::set<std::pair<std::string, std::vector<int>>> seen;
  trace_positions(tmpl, tail, query_key, positions, seen, d);
  return d;
}

LinkTable link_table(const std::vector<Literal>& queries, const std::vector<QuerySplit>& split) {
  LinkTable t;
  std::unordered_map<std::string, uint32_t> index;
  std::vector<uint8_t> is_entity;
  std::string predicate;
  for (size_t q = 0; q < queries.size(); ++q) {
    const Literal& l = queries[q];
    const QuerySplit part = split.empty() ? QuerySplit::Train : split[q];
    if (part == QuerySplit::None) continue;
    if (predicate.empty()) {
      predicate = l.predicate;
      t.arity = l.arity();
      if (t.arity < 2)
        throw Error(ErrorKind::Semantic, l.span, "link prediction: the query '" + print_literal(l) +
                                                     "' has fewer than two arguments (a link joins two)");
    }
    if (l.predicate != predicate || l.arity() != t.arity)
      throw Error(ErrorKind::Semantic, l.span, "link prediction: every query must be a " + predicate + "/" +
                                                   std::to_string(t.arity) + " link, found '" + print_literal(l) + "'");
    if (l.weight && !(l.weight->kind == ValueSpec::Kind::Scalar && l.weight->data.size() == 1 && l.weight->data[0] == 1.0))
      throw Error(ErrorKind::Semantic, l.span, "link prediction: the query '" + print_literal(l) +
                                                   "' has a target other than 1; the queries are the true links, and "
                                                   "negatives are drawn each epoch (drop the false ones)");
    for (int i = 0; i < t.arity; ++i) {
      const Term& a = l.args[i];
      if (a.is_variable())
        throw Error(ErrorKind::Semantic, l.span, "link prediction: the query '" + print_literal(l) +
                                                     "' has a variable; links are ground atoms");
      auto [it, added] = index.emplace(a.text, static_cast<uint32_t>(t.constants.size()));
      if (added) {
        t.constants.push_back(a.text);
        is_entity.push_back(0);
      }
      t.args.push_back(it->second);
      if ((i == 0 || i == t.arity - 1) && !is_entity[it->second]) {
        is_entity[it->second] = 1;
        t.entities.push_back(it->second);
      }
    }
    t.split.push_back(part);
    t.query_of.push_back(q);
  }
  if (t.size() == 0) throw Error(ErrorKind::Semantic, "link prediction: the example has no link queries");
  return t;
}

void draw_negatives(const LinkTable& table, const std::vector<uint32_t>& links, size_t count, Corrupt corrupt,
                    Rng& rng, std::vector<uint32_t>& out) {
  const int k = table.arity;
  out.resize(links.size() * count * k);
  uint32_t* o = out.data();
  for (uint32_t l : links)
    for (size_t j = 0; j < count; ++j, o += k) {
      std::copy_n(table.args.begin() + size_t(l) * k, k, o);
      const bool head = corrupt == Corrupt::Head || (corrupt == Corrupt::Both && uniform_below(rng, 2) == 0);
      o[head ? 0 : k - 1] = table.entities[uniform_below(rng, table.entities.size())];
    }
}

double rank_among(double truth, const std::vector<double>& candidates) {
  size_t greater = 0, equal = 0;
  for (double s : candidates) {
    greater += s > truth;
    equal += s == truth;
  }
  return 1.0 + double(greater) + 0.5 * double(equal);
}

}  // namespace lrnn::train
