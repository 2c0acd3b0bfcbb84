// The RASP weight compiler as passes (docs/rasp.md, "Weight compiler"), laid out as
// tracr's compiler is: each pass is a function from one struct to the next, in its own
// file, and compiler.cpp only runs them in order.
//
//   CompileInput --observe--> Observation --choose_encodings--> Encoded
//     --split_lookups--> Lookups   (repeat from observe while it gives an s-op its own MLP)
//   Encoded + Lookups --choose_readings--> Readings --schedule--> Scheduled
//     --layout--> Laid --build_layers--> CompiledModel
//
// Each struct extends the one before it (built from it by moving), so a later pass reads
// what every earlier pass decided under the same names. The blocks the last passes write with (MLP lookups,
// attention heads, selector score tables, residual encodings) are in their own files too
// (mlp.cpp, attention.cpp, score_terms.cpp, residual.cpp).
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lrnn/rasp.hpp"

namespace lrnn::rasp {  // the compiler's input enumeration (compiled_model.cpp)
size_t compiled_input_count(size_t vocab, int max_len);
std::vector<Value> compiled_input(const std::vector<Value>& vocab, int max_len, size_t k);
}  // namespace lrnn::rasp

namespace lrnn::rasp::passes {

// ---- values, tables and features (values.cpp) ----------------------------------------------

// Score of a selected pair: the softmax weight of a pair scored beta/2 lower is e^-50.
constexpr double kBeta = 100.0;

// The widest joint feature built (its head's score matrix is d_model squared).
constexpr size_t kMaxJointWidth = 4096;

[[noreturn]] void refuse(const Node* n, const std::string& why);
bool elementwise(Kind k);
// Doubles rounded to 12 significant digits, so that 1/3 reached by different sums is one
// value of a set and one row of a table.
Value canon(const Value& v);
std::string key_of(const Value& v);
std::string tuple_key(const std::vector<Value>& t);
// A key under which numbers that compare equal (1, 1.0, True) are one: selectors compare
// them alike, so a joint feature gives them one dimension.
std::string number_tuple_key(const std::vector<Value>& t);

struct ValueSet {
  std::vector<Value> values;
  std::unordered_set<std::string> keys;
  void add(const Value& v) {
    if (keys.insert(key_of(v)).second) values.push_back(v);
  }
};

// A lookup an MLP computes: input tuple -> value, as observed.
struct Table {
  std::vector<const Node*> inputs;  // features (a width's scratch is its own node's input)
  std::map<std::string, std::pair<std::vector<Value>, Value>> rows;
};

// What the attention of an aggregate / width / length saw over all inputs.
struct HeadStats {
  size_t max_selected = 0;
  bool some_empty = false;
  std::string causal_violation;
};

struct Feature {
  const Node* node = nullptr;
  bool constant = false;
  bool numerical = false;
  std::vector<Value> values;
  int offset = -1;
  int width = 0;
  int ready = 0;  // sublayer after which it is in the residual (attention 2l-1, MLP 2l)
  size_t space = 0;
};

// One summand of a head's score: table[query value][key value] over two categorical
// features (null: the "one" direction, i.e. a constant).
struct ScoreTerm {
  const Feature* query = nullptr;
  const Feature* key = nullptr;
  std::vector<std::vector<uint8_t>> table;
};

// A joint categorical feature: one dimension per tuple of the values of several s-ops
// (`components`) that occurs at some position of some input. An `or`/`not` of selectors
// over different s-ops is a table over the query's and the key's joint values, which a
// bilinear score expresses exactly (a sum of per-pair tables cannot). It is a lookup
// (an MLP, or the token / position embedding) over `table.inputs`: the non-element-wise
// s-ops the components are computed from, or the components themselves when those would
// need two numerical inputs in one MLP.
struct Joint {
  std::vector<const Node*> components;  // by id; constants excluded
  const Node* selector = nullptr;       // the first selector reading it (for messages)
  Table table;                          // inputs' values -> the tuple's label
  std::vector<std::vector<Value>> tuples;  // per dimension: the components' values
  std::unordered_map<std::string, size_t> index;  // tuple_key(tuple) -> dimension
  Feature feature;
  Kind embedded = Kind::Constant;  // Tokens / Indices: part of that embedding, no MLP
};

std::string joint_name(const Joint& j);

// ---- the passes' structs -------------------------------------------------------------------

// The compiler's input: the program, its s-ops in topological order, the (deduplicated)
// vocabulary, and the options with the default convention resolved.
struct CompileInput {
  SOp output;
  std::vector<Value> vocab;
  int max_len = 0;
  CompileOptions options;
  std::vector<const Node*> order;
};

// What earlier rounds of observe/split_lookups decided, carried into the next round.
struct Materialization {
  std::set<const Node*> materialized;  // element-wise s-ops with their own MLP
  // joints whose inputs would be two numerical s-ops: computed from their components
  std::set<std::vector<const Node*>> joint_by_components;
};

// observe.cpp: which s-ops the transformer materialises, and what every one of them does
// on every input up to max_len (value sets, lookup tables, attention statistics).
struct Observation : CompileInput {
  explicit Observation(CompileInput earlier) : CompileInput(std::move(earlier)) {}
  Materialization materialization;
  std::set<const Node*> needed;
  std::set<const Node*> read_directly;  // read by attention or the output (not an MLP lookup)
  // element-wise s-op -> the non-element-wise s-ops it is a function of (constants aside)
  std::map<const Node*, std::vector<const Node*>> frontier;
  std::unordered_map<const Node*, ValueSet> values;
  std::unordered_map<const Node*, Table> tables;
  std::unordered_map<const Node*, Table> width_tables;
  std::unordered_map<const Node*, HeadStats> stats;
  std::map<std::vector<const Node*>, Joint> joints;  // by their components
};
Observation observe(const CompileInput& input, const Materialization& materialization);

// encodings.cpp: each needed s-op numerical (one dimension) or categorical (one-hot).
struct Encoded : Observation {
  explicit Encoded(Observation earlier) : Observation(std::move(earlier)) {}
  std::map<const Node*, Feature> features;
};
Encoded choose_encodings(Observation observed);

// split_lookups.cpp: how element-wise s-ops over several numerical inputs are computed.
struct Lookups {
  bool resplit = false;  // some s-op got its own MLP: observe again with `next`
  Materialization next;
  // element-wise s-op -> numerical inputs it reads through a categorical copy
  std::map<const Node*, std::set<const Node*>> shadowed;
  std::map<const Node*, std::map<std::string, std::vector<double>>> linear;
  // joint -> numerical inputs it reads through a categorical copy
  std::map<std::vector<const Node*>, std::set<const Node*>> joint_shadowed;
};
Lookups split_lookups(const Encoded& encoded);

// readings.cpp: how counts are read, which s-ops are part of an embedding, which are read
// by attention through the one-hot they are a function of.
struct Readings : Encoded {
  explicit Readings(Encoded earlier) : Encoded(std::move(earlier)) {}
  std::map<const Node*, std::set<const Node*>> shadowed;
  std::map<const Node*, std::map<std::string, std::vector<double>>> linear;
  std::map<std::vector<const Node*>, std::set<const Node*>> joint_shadowed;
  std::set<const Node*> decoded;  // counts decoded by an MLP
  std::set<const Node*> direct;   // element-wise s-ops reading counts as 1/(w+1)
  std::map<const Node*, Kind> embedded;  // element-wise s-ops of the tokens / indices alone
  std::set<const Node*> viewed;  // embedded s-ops read by attention through the tokens' (indices') one-hot
};
Readings choose_readings(Encoded encoded, Lookups lookups);

// schedule.cpp: the sublayer after which every feature is in the residual.
struct Scheduled : Readings {
  explicit Scheduled(Readings earlier) : Readings(std::move(earlier)) {}
  std::map<const Node*, Feature> shadows;  // numerical s-op -> its categorical copy
  std::unordered_map<const Node*, int> attention_at;
};
Scheduled schedule(Readings readings);

// layout.cpp: the residual stream's subspaces and the embeddings.
struct Laid : Scheduled {
  explicit Laid(Scheduled earlier) : Scheduled(std::move(earlier)) {}
  CompiledModel model;  // d_model, dim_labels, spaces and embeddings set
  std::unordered_map<const Node*, Feature> scratch;  // a count's 1/(w+1)
};
Laid layout(Scheduled scheduled);

// build_layers.cpp: every layer's heads and MLP; the model's output space.
CompiledModel build_layers(Laid laid);

// compiler.cpp: observe, choose_encodings and split_lookups repeated until split_lookups
// gives no s-op its own MLP; the last round's results.
std::pair<Encoded, Lookups> observe_and_split(const CompileInput& input);
// Every pass in order (compile() checks the arguments and builds the input).
CompiledModel run_passes(const CompileInput& input);

// ---- what several passes ask (readings.cpp) --------------------------------------------------

const std::vector<const Node*>& frontier_of(const Observation& o, const Node* n);
std::vector<size_t> numerical_inputs(const Encoded& e, const std::vector<const Node*>& inputs);
// Sums of several selected values compile as a width times a constant (or are refused).
bool width_based(const Encoded& e, const Node* n);
// A count (selector_width, length, a sum of a constant) is 1/(w+1) after its head.
bool is_count(const Encoded& e, const Node* n);
// value -> 1/(w+1) of a count, or empty when two widths give one value.
std::map<std::string, Value> count_inverse(const Observation& o, const Node* n);
// Whether a non-embedded element-wise s-op or joint feature reads `n` from the residual.
bool read_by_lookup(const Readings& r, const Node* n);
// A viewed s-op's values per dimension of the one-hot it is read through.
std::pair<const Feature*, std::vector<Value>> view_of(const Encoded& e, const Node* n);

// ---- selectors as score terms (score_terms.cpp) ----------------------------------------------

int next_attention(int ready);
int next_mlp(int ready);
// The s-ops a selector's leaves compare on one side (0: keys, 1: queries), by id.
std::vector<const Node*> side_sops(const Node* sel, int side);
// How many different (keys, queries) pairs of s-ops a selector's leaves compare.
size_t compared_pairs(const Node* sel);
// The categorical copy of a numerical s-op, made by the MLP after it.
const Feature& shadow(Scheduled& s, const Node* in);
// The summands of a selector's score. The first call for a joint feature schedules it.
std::vector<ScoreTerm> score_terms(Scheduled& s, const Node* sel);

// ---- reading and writing the residual (residual.cpp) -----------------------------------------

// The dimension holding `value` of a categorical feature ("one" for a constant).
int dim_of(const Feature& f, const Value& value);
bool has_value(const Feature& f, const Value& value);
// The residual vector a feature holding `value` is.
std::vector<double> encode(const Feature& f, const Value& value, int d);

// ---- MLP and attention blocks (mlp.cpp, attention.cpp) --------------------------------------

struct MlpUnits {
  std::vector<std::vector<double>> w1;  // per unit: d_model weights
  std::vector<double> b1;
  std::vector<std::vector<double>> w2;  // per unit: d_model output column
  void add(std::vector<double> w, double b, std::vector<double> out) {
    w1.push_back(std::move(w));
    b1.push_back(b);
    w2.push_back(std::move(out));
  }
};

// MLP units computing `out` from the table's inputs; `linear` holds the linear functions
// split_lookups fitted, by s-op.
void lookup(const Node* node, const std::vector<const Feature*>& inputs, const Table& table, const Feature& out,
            int d, const std::map<const Node*, std::map<std::string, std::vector<double>>>& linear,
            MlpUnits& units);

// Adds a head for `n` (an aggregate, a width or length) given the BOS residual `bos`;
// returns what the head writes at the BOS position.
std::vector<double> head(Laid& laid, const Node* n, const std::vector<double>& bos, CompiledLayer& layer);

}  // namespace lrnn::rasp::passes
