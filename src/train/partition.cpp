// One big sample split over MPI ranks: the template's check and radius, and each rank's
// part of the sample (train/partition.hpp, docs/distributed.md "One sample over many ranks").
#include "train/partition.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "lrnn/diagnostics.hpp"
#include "train/dataset.hpp"

namespace lrnn::train {

namespace {

// How far a predicate's atoms reach, in hops of the co-occurrence graph: `reach` bounds the
// distance of an atom's other constants from its first one, `radius` the distance from its
// first constant of the facts its existence and value depend on. A fact predicate: its
// constants share the fact (reach 1), and it depends on itself (radius 0).
struct Extent {
  size_t reach = 0, radius = 0;
  bool operator==(const Extent&) const = default;
};

[[noreturn]] void refuse(const Rule& rule, const std::string& why) {
  throw Error(ErrorKind::Semantic, rule.span,
              "one sample cannot be split over MPI ranks with this rule: " + why +
                  " (docs/distributed.md \"One sample over many ranks\"; several examples are split by sample)");
}

// The structural check of one rule; returns the name of the head's first variable X (empty
// for a rule without variables).
std::string check_rule(const Rule& rule) {
  const auto no_constant = [&](const Literal& lit) {
    for (const Term& t : lit.args)
      if (!t.is_variable())
        refuse(rule, "it has the constant '" + t.text + "' (constants in rules are not partitioned yet)");
  };
  no_constant(rule.head);
  for (const Literal& lit : rule.body) no_constant(lit);
  bool body_vars = false;
  for (const Literal& lit : rule.body) body_vars = body_vars || !lit.args.empty();
  if (rule.head.args.empty()) {
    if (body_vars)
      refuse(rule, "its head has no variable but its body has (a readout of the whole sample: every rank would "
                   "need every atom)");
    return {};
  }
  const std::string x = rule.head.args[0].text;
  // Every variable must share a body literal (not a builtin: it reads no atom) with X, so
  // that it is bound near X.
  std::set<std::string> anchored{x};
  for (const Literal& lit : rule.body) {
    if (lit.builtin) continue;
    const bool has_x = std::any_of(lit.args.begin(), lit.args.end(), [&](const Term& t) { return t.text == x; });
    if (has_x)
      for (const Term& t : lit.args) anchored.insert(t.text);
  }
  const auto check = [&](const Term& t) {
    if (!anchored.count(t.text))
      refuse(rule, "its variable " + t.text + " shares no body literal with " + x +
                       ", the head's first variable (its atoms could lie anywhere in the sample)");
  };
  for (const Term& t : rule.head.args) check(t);
  for (const Literal& lit : rule.body)
    for (const Term& t : lit.args) check(t);
  return x;
}

// The rule's bound on its head's Extent given every predicate's current one.
Extent rule_extent(const Rule& rule, const std::string& x, const std::map<std::string, Extent>& extents) {
  if (x.empty()) return {};
  const auto extent_of = [&](const Literal& l) {
    auto it = extents.find(predicate_key(l));
    return it == extents.end() ? Extent{1, 0} : it->second;  // a fact predicate
  };
  // Each variable's distance from X: through the literals that contain X.
  std::map<std::string, size_t> dist{{x, 0}};
  for (const Literal& lit : rule.body) {
    if (lit.builtin) continue;
    const auto at = std::find_if(lit.args.begin(), lit.args.end(), [&](const Term& t) { return t.text == x; });
    if (at == lit.args.end()) continue;
    const Extent e = extent_of(lit);
    // A fact's constants are adjacent; a derived atom's are within reach of its first: of X
    // when X is first, else within reach of the first, which is within reach of X.
    const bool derived = extents.count(predicate_key(lit)) != 0;
    const size_t d = !derived || at == lit.args.begin() ? e.reach : 2 * e.reach;
    for (const Term& t : lit.args) {
      auto [it, fresh] = dist.emplace(t.text, d);
      if (!fresh) it->second = std::min(it->second, t.text == x ? 0 : d);
    }
  }
  Extent out;
  for (const Term& t : rule.head.args) out.reach = std::max(out.reach, dist.at(t.text));
  for (const Literal& lit : rule.body) {
    if (lit.builtin) continue;
    const size_t first = lit.args.empty() ? 0 : dist.at(lit.args[0].text);
    out.radius = std::max(out.radius, first + extent_of(lit).radius);
  }
  return out;
}

std::string number_key(const std::string& text) {
  double v = 0;
  const char* begin = text.data() + (!text.empty() && text[0] == '+');
  if (std::from_chars(begin, text.data() + text.size(), v).ec != std::errc()) return "\x01" + text;
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return "\x01" + std::string(buf, res.ptr);
}

}  // namespace

std::string constant_key(Term::Kind kind, const std::string& text) {
  return kind == Term::Kind::Number ? number_key(text) : text;
}

size_t check_partition_template(const TemplateAst& tmpl, const std::vector<std::string>& query_predicates) {
  std::vector<std::string> xs;
  std::map<std::string, Extent> extents;
  for (const Rule& rule : tmpl.rules) {
    xs.push_back(check_rule(rule));
    extents.emplace(predicate_key(rule.head), Extent{});
  }
  // Example facts of a rule's head predicate count as well: start every head at a fact's.
  for (auto& [key, e] : extents) e = Extent{1, 0};
  // Iterate to the fixpoint; a bound that still grows after as many rounds as there are
  // rules grows through recursion (reachability over the graph: no radius bounds it).
  for (size_t round = 0;; ++round) {
    bool changed = false;
    const Rule* grew = nullptr;
    for (size_t r = 0; r < tmpl.rules.size(); ++r) {
      const Extent e = rule_extent(tmpl.rules[r], xs[r], extents);
      Extent& held = extents[predicate_key(tmpl.rules[r].head)];
      const Extent merged{std::max(held.reach, e.reach), std::max(held.radius, e.radius)};
      if (!(merged == held)) {
        held = merged;
        changed = true;
        grew = &tmpl.rules[r];
      }
    }
    if (!changed) break;
    if (round > tmpl.rules.size() + 1)
      refuse(*grew, "its head depends on itself through rules that reach one hop further each time (recursion over "
                    "the graph needs the ghost-atom fixpoint, not implemented)");
  }
  size_t radius = 0;
  for (const std::string& q : query_predicates) {
    auto it = extents.find(q);
    if (it != extents.end()) radius = std::max(radius, it->second.radius);
  }
  return radius;
}

int owner_of_constant(const std::string& key, int size) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a, then a final mix: fixed on every platform
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return static_cast<int>(h % static_cast<uint64_t>(size));
}

namespace {

constexpr uint32_t kFar = std::numeric_limits<uint32_t>::max();

// The co-occurrence graph of a sample's constants, as the facts between them (those of
// SampleConstants), each constant's facts indexed (CSR).
class ConstantGraph {
 public:
  ConstantGraph(const SampleConstants& c, size_t num_constants)
      : begin_(c.fact_begin), constants_(c.fact_constants), first_(num_constants + 1, 0), facts_of_(c.fact_constants.size()) {
    for (uint32_t k : constants_) ++first_[k + 1];
    for (size_t c = 0; c < num_constants; ++c) first_[c + 1] += first_[c];
    std::vector<uint64_t> fill(first_.begin(), first_.end() - 1);
    for (size_t f = 0; f < num_facts(); ++f)
      for (uint64_t t = begin_[f]; t < begin_[f + 1]; ++t) facts_of_[fill[constants_[t]]++] = static_cast<uint32_t>(f);
  }
  size_t num_facts() const { return begin_.size() - 1; }
  size_t num_constants() const { return first_.size() - 1; }

  // Breadth first from `from`, `radius` hops: each constant's distance (kFar: farther).
  std::vector<uint32_t> ball(const std::vector<uint32_t>& from, size_t radius) const {
    std::vector<uint32_t> dist(num_constants(), kFar);
    std::vector<uint32_t> frontier;
    for (uint32_t c : from)
      if (dist[c] == kFar) {
        dist[c] = 0;
        frontier.push_back(c);
      }
    for (size_t d = 0; d < radius && !frontier.empty(); ++d) {
      std::vector<uint32_t> next;
      for (uint32_t c : frontier)
        for (uint64_t k = first_[c]; k < first_[c + 1]; ++k) {
          const uint32_t f = facts_of_[k];
          for (uint64_t t = begin_[f]; t < begin_[f + 1]; ++t) {
            const uint32_t o = constants_[t];
            if (dist[o] == kFar) {
              dist[o] = static_cast<uint32_t>(d + 1);
              next.push_back(o);
            }
          }
        }
      frontier = std::move(next);
    }
    return dist;
  }
  // The facts within a ball: those with a constant in it, and those without constants.
  std::vector<uint32_t> facts_within(const std::vector<uint32_t>& dist) const {
    std::vector<uint32_t> keep;
    for (size_t f = 0; f < num_facts(); ++f) {
      bool held = begin_[f] == begin_[f + 1];
      for (uint64_t t = begin_[f]; t < begin_[f + 1] && !held; ++t) held = dist[constants_[t]] != kFar;
      if (held) keep.push_back(static_cast<uint32_t>(f));
    }
    return keep;
  }
  // The facts whose constants have more than one owner (the edge cut).
  uint64_t cut_facts(const std::vector<int>& owner) const {
    uint64_t cut = 0;
    for (size_t f = 0; f < num_facts(); ++f) {
      bool crosses = false;
      for (uint64_t t = begin_[f]; t < begin_[f + 1]; ++t)
        crosses = crosses || owner[constants_[t]] != owner[constants_[begin_[f]]];
      cut += crosses;
    }
    return cut;
  }

 private:
  const std::vector<uint64_t>& begin_;
  const std::vector<uint32_t>& constants_;
  std::vector<uint64_t> first_;
  std::vector<uint32_t> facts_of_;
};

// `head`'s example with only its queries `queries` (their importance and split kept), their
// literals `source`'s where it holds them.
Sample with_queries(const Sample& head, const std::vector<uint32_t>& queries, const PartSource* source) {
  Sample out;
  out.example.id = head.example.id;
  out.example.span = head.example.span;
  if (source) out.queries = source->queries(queries);
  for (uint32_t q : queries) {
    if (!source) out.queries.push_back(head.queries[q]);
    if (!head.importance.empty()) out.importance.push_back(head.importance[q]);
    if (!head.split.empty()) out.split.push_back(head.split[q]);
  }
  return out;
}

// The constants of sample 0 of `samples`, numbered as SampleConstants says.
SampleConstants store_constants(const SampleStore& samples) {
  const Sample& head = samples.without_facts()[0];
  SampleConstants out;
  SampleStore::FactTerms terms = samples.fact_terms(0);
  std::unordered_map<std::string, uint32_t> index;
  const auto intern = [&](std::string key) {  // the constant of `key`, numbered when first seen
    auto [at, fresh] = index.emplace(key, static_cast<uint32_t>(out.keys.size()));
    if (fresh) out.keys.push_back(std::move(key));
    return at->second;
  };
  std::unordered_map<uint64_t, uint32_t> by_string;  // (kind, string id) -> constant
  const auto constant_of = [&](Term::Kind kind, uint32_t text) {
    const uint64_t k = (static_cast<uint64_t>(kind == Term::Kind::Number) << 32) | text;
    auto it = by_string.find(k);
    if (it != by_string.end()) return it->second;
    const uint32_t c = intern(constant_key(kind, samples.string_of(text)));
    by_string.emplace(k, c);
    return c;
  };
  out.fact_constants.resize(terms.text.size());
  for (size_t t = 0; t < terms.text.size(); ++t) {
    if (terms.kind[t] == Term::Kind::Variable)
      throw Error(ErrorKind::Semantic, "an example fact with a variable cannot be partitioned");
    out.fact_constants[t] = constant_of(terms.kind[t], terms.text[t]);
  }
  out.query_constant.resize(head.queries.size());
  for (size_t q = 0; q < head.queries.size(); ++q) {
    const Literal& query = head.queries[q];
    check_query_argument(query);
    out.query_constant[q] = intern(constant_key(query.args[0].kind, query.args[0].text));
  }
  out.fact_begin = std::move(terms.begin);
  return out;
}

}  // namespace

void check_query_argument(const Literal& query) {
  if (query.args.empty() || query.args[0].is_variable())
    throw Error(ErrorKind::Semantic, query.span,
                "the query " + query.predicate + (query.args.empty() ? "" : "(" + query.args[0].text + ", ...)") +
                    " has no constant first argument: it belongs to no rank of a partitioned sample");
}

SamplePartition partition_sample(const SampleStore& samples, size_t radius, int rank, int size, bool use_metis,
                                 bool ghosts, const PartSource* source) {
  if (samples.size() != 1) throw Error(ErrorKind::Runtime, "internal: partition_sample needs exactly one sample");
  const Sample& head = samples.without_facts()[0];
  SamplePartition out;
  PartitionStats& st = out.stats;
  st.radius = radius;

  SampleConstants constants = source ? source->constants() : store_constants(samples);
  const size_t num_queries = source ? source->num_queries() : head.queries.size();
  if (constants.query_constant.size() != num_queries || (!head.split.empty() && head.split.size() != num_queries))
    throw Error(ErrorKind::Runtime, "internal: a partition source's queries are not its dataset's");
  const std::vector<uint32_t>& query_constant = constants.query_constant;
  const std::vector<uint32_t>& fact_constants = constants.fact_constants;
  const size_t num_constants = constants.keys.size(), num_facts = constants.num_facts();
  // The owners: METIS's partition of the co-occurrence graph, or a hash of each constant.
  std::vector<int> owner =
      use_metis ? metis_owners(num_constants, constants.fact_begin, fact_constants, size) : std::vector<int>{};
  st.metis = !owner.empty();
  if (owner.empty()) {
    owner.resize(num_constants);
    for (size_t c = 0; c < num_constants; ++c) owner[c] = owner_of_constant(constants.keys[c], size);
  }
  if (ghosts)
    for (size_t c = 0; c < num_constants; ++c) out.owners.emplace(std::move(constants.keys[c]), owner[c]);
  std::vector<std::string>().swap(constants.keys);
  std::vector<uint32_t> seeds;
  for (size_t q = 0; q < num_queries; ++q) {
    if (owner[query_constant[q]] != rank) continue;
    out.query_of.push_back(static_cast<uint32_t>(q));
    seeds.push_back(query_constant[q]);
  }
  {
    std::vector<uint8_t> seen(num_constants, 0);
    for (uint32_t c : seeds) st.query_constants += !std::exchange(seen[c], 1);
  }
  // With ghosts every owned atom may be read by another rank: each is grounded whole.
  if (ghosts)
    for (size_t c = 0; c < num_constants; ++c)
      if (owner[c] == rank) seeds.push_back(static_cast<uint32_t>(c));
  const ConstantGraph graph(constants, num_constants);
  const std::vector<uint32_t> dist = graph.ball(seeds, radius);
  const std::vector<uint32_t> keep = graph.facts_within(dist);
  st.cut_facts = graph.cut_facts(owner);
  st.constants = num_constants;
  for (size_t c = 0; c < num_constants; ++c) {
    st.owned_constants += owner[c] == rank;
    st.held_constants += dist[c] != kFar;
  }
  st.facts = num_facts;
  st.held_facts = keep.size();
  st.queries = num_queries;
  st.owned_queries = out.query_of.size();

  Sample mine = with_queries(head, out.query_of, source);
  if (ghosts && num_queries > 0) {
    // One query's ball (the sample's first, on every rank): what the ghosts' shapes are read
    // from (train/ghost_cut.hpp), a few facts where the rank's part is most of the sample.
    const std::vector<uint32_t> probe = graph.facts_within(graph.ball({query_constant[0]}, radius));
    out.probe = source ? source->keep_facts(probe, with_queries(head, {0}, source))
                       : samples.keep_facts(0, probe, with_queries(head, {0}, nullptr));
  }
  // A part of most of the sample is grounded from the sample's own facts (those beyond the
  // radius change no owned atom), not from a copy; a source's part is always built.
  out.whole = !source && ghosts && keep.size() >= num_facts - num_facts / 10;
  if (out.whole) out.head = std::move(mine);
  else out.store = source ? source->keep_facts(keep, std::move(mine)) : samples.keep_facts(0, keep, std::move(mine));
  st.built_facts = (source ? 0 : num_facts) + (out.whole ? 0 : keep.size()) + (out.probe.size() ? out.probe.fact_count(0) : 0);
  return out;
}

}  // namespace lrnn::train
