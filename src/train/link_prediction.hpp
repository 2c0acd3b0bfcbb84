// Link prediction and knowledge-base completion on one example (docs/big_graphs.md "Link
// prediction"): the queries are the true links (or triples) of one graph or knowledge base;
// each epoch draws corrupted ones as negatives, and validation and test links are ranked
// against every corruption (filtered MRR, Hits@k) and scored against fixed negatives (AUC).
//
// A link's score is the template's rules for the query predicate (the decoder), over atoms
// of one argument each (the encoder: a node's embedding h2(X), an entity's e(S), a
// relation's r(R)). The encoder runs once per epoch over the whole example; the decoder
// runs on chunks of links whose argument atoms are copied in (a plan of identical small
// networks, one per link), so that new negatives cost no grounding. This file splits the
// template into those two parts and holds what both training and tests need.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lrnn/ast.hpp"
#include "lrnn/training.hpp"
#include "train/numerics.hpp"

namespace lrnn::train {

enum class Corrupt : uint8_t { Tail, Head, Both };
Corrupt parse_corrupt(const std::string& name);  // "tail" | "head" | "both"

struct LinkConfig {
  size_t negatives = 1;          // corruptions drawn per training link per epoch
  Corrupt corrupt = Corrupt::Tail;
  double margin = 0;             // > 0: margin ranking loss; 0: the configured loss, targets 1 / 0
  bool ranking = false;          // filtered MRR / Hits@k of validation and test links every epoch
  size_t chunk = 0;  // links per decoder pass (0: as many as fit in cache)
  // How scores are computed: sums of products of the rows straight from the encoder
  // (train/link_multilinear.hpp) where the decoder has that form, else the decoder plan
  // (Auto); always the plan; or the products, refusing a decoder without that form
  // (tests compare the two).
  enum class Decoder : uint8_t { Auto, Plan, Multilinear };
  Decoder decoder = Decoder::Auto;
};
LinkConfig link_config(const Settings& settings);

// One atom of one argument that the decoder reads: `literal` with its variable (if any)
// at argument `variable_arg` standing for the query's argument `position`.
struct EncoderAtom {
  Literal literal;
  int variable_arg = -1;  // -1: no variable (a template fact read as it is)
  int position = -1;      // the link argument it depends on (-1: none)
};

// The template split for link prediction on `predicate/arity`.
struct LinkDecoder {
  std::string predicate;
  int arity = 0;
  std::vector<uint32_t> rules;       // the template rules that compute scores (decoder)
  std::vector<std::string> tail_predicates;  // "name/arity" of the decoder's heads
  std::vector<EncoderAtom> inputs;   // what the decoder reads, each (literal, position) once
};
// Throws lrnn::Error naming the rule and literal when the scores are not a function of the
// arguments' own atoms (a join, a builtin or a relation between two arguments in a
// decoder rule), when no rule defines the predicate, or when an encoder rule reads a score.
LinkDecoder split_link_template(const TemplateAst& tmpl, const std::string& predicate, int arity);

// The links of one example, as indices: link l's arguments are args[l * arity + i], each an
// index into `constants`; entities are the constants of the first and last arguments.
struct LinkTable {
  int arity = 0;
  std::vector<std::string> constants;
  std::vector<uint32_t> args;
  std::vector<QuerySplit> split;
  std::vector<uint32_t> entities;  // constant indices, in order of first appearance
  std::vector<size_t> query_of;    // per link: its query in the sample
  size_t size() const { return split.size(); }
  uint32_t arg(size_t l, int i) const { return args[l * arity + i]; }
};
// Throws lrnn::Error naming the query when a query is not a ground atom of one predicate,
// has a target other than 1, or fewer than two arguments.
LinkTable link_table(const std::vector<Literal>& queries, const std::vector<QuerySplit>& split);

// Corruptions of links: `count` per link of `links` (indices into the table), in order; the
// corrupted side (first or last argument, by `corrupt`) and the entity drawn from rng.
// Output: args of the corrupted links, flat (arity per link).
void draw_negatives(const LinkTable& table, const std::vector<uint32_t>& links, size_t count, Corrupt corrupt,
                    Rng& rng, std::vector<uint32_t>& out);

// The rank of a true link's score among its candidates' (filtered: the other true links
// removed by the caller), ties counted half: 1 + greater + equal / 2.
double rank_among(double truth, const std::vector<double>& candidates);

}  // namespace lrnn::train
