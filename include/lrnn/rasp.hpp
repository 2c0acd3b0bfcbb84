// RASP (Weiss, Goldberg and Yahav, "Thinking Like Transformers", 2021) in lrnn: the
// program representation, the interpreter, the analyser (layers and heads), the `.rasp`
// text syntax, the lowering to lrnn templates and SVG pictures. See docs/rasp.md.
//
// A program is a DAG of nodes held by shared pointers. `SOp` (a sequence operation) and
// `Selector` are small handles over a node, so the C++ combinators, the Python binding and
// the `.rasp` loader all build the same representation. Every node has an id, a kind, its
// children, an encoding annotation (numerical / categorical, for the weight compiler) and
// a name; nodes are immutable once built (`.name()` returns a renamed copy).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "lrnn/ast.hpp"
#include "lrnn/diagnostics.hpp"

namespace lrnn::rasp {

// ---------------------------------------------------------------------------------------
// Values: what one position of an s-op holds.
// ---------------------------------------------------------------------------------------

// none, bool, int, float, string (a character of a string input is a one-character string).
using Value = std::variant<std::monostate, bool, int64_t, double, std::string>;

bool is_none(const Value& v);
bool is_number(const Value& v);  // bool, int or double (bools count as 0/1, as in Python)
bool is_string(const Value& v);
double to_double(const Value& v);  // numbers only; throws lrnn::Error otherwise
bool truthy(const Value& v);       // Python truthiness
// Display form: 3, 2.5, h, True, None (strings unquoted).
std::string to_string(const Value& v);
// Source form: 3, 2.5, "h", True, None (strings quoted).
std::string repr(const Value& v);
std::string type_name(const Value& v);
// Python-like equality: numbers compare by value across bool/int/double (True == 1), a
// string equals only an equal string. Two numbers of which one is a double are equal when
// they differ by at most 1e-9 relative: averages such as (3 * (1/3)) must equal 1.
bool values_equal(const Value& a, const Value& b);
// -1/0/+1 for numbers (same tolerance) and for strings (bytewise); anything else throws.
int compare_values(const Value& a, const Value& b);

// A string input is the sequence of its characters (UTF-8 aware: "§" is one token).
std::vector<Value> chars(std::string_view text);
// "hello" -> characters; "[1, 2, 3]" or "[\"a\", 2]" (JSON list) -> its elements.
std::vector<Value> parse_input(std::string_view text);

// ---------------------------------------------------------------------------------------
// Nodes
// ---------------------------------------------------------------------------------------

enum class Kind : uint8_t {
  Tokens,         // the input
  Indices,        // 0..n-1
  Length,         // n at every position (derived: one attention layer)
  Constant,       // a value broadcast to every position
  Map,            // f(x) element-wise (a lambda or a named built-in)
  ZipMap,         // f(x1, ..., xk) element-wise over several s-ops
  Unary,          // -x, not x
  Binary,         // x op y (arithmetic, comparisons, logical)
  Where,          // cond ? a : b element-wise
  Select,         // selector: entry (query i, key j) = predicate(keys[j], queries[i])
  SelectAnd,      // selector and selector
  SelectOr,       // selector or selector
  SelectNot,      // not selector
  Aggregate,      // children: selector, values; default in `constant`
  SelectorWidth,  // children: selector
};

enum class Op : uint8_t { Add, Sub, Mul, Div, Mod, Pow, Eq, Ne, Lt, Le, Gt, Ge, And, Or, Not, Neg };
enum class Predicate : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, True, False };
// How a value is carried in a transformer's residual stream (tracr's annotations).
enum class Encoding : uint8_t { Unspecified, Categorical, Numerical };
// How an aggregate combines several selected values: RASPy sums, the paper averages.
// `Default` aggregates take the convention of the program they are evaluated in.
enum class Convention : uint8_t { Default, Sum, Mean };

const char* kind_name(Kind k);
const char* op_symbol(Op op);                // "+", "==", "and", ...
const char* predicate_symbol(Predicate p);   // "==", "<", "true", ...
bool is_selector_kind(Kind k);

using MapFn = std::function<Value(const Value&)>;
using ZipFn = std::function<Value(const std::vector<Value>&)>;

struct Node;
using NodePtr = std::shared_ptr<const Node>;

struct Node {
  uint64_t id = 0;  // unique per node, in creation order
  Kind kind = Kind::Tokens;
  std::vector<NodePtr> children;
  Encoding encoding = Encoding::Unspecified;
  std::string name;     // user-given (`.name("x")`, `x = ...;`), may be empty
  Op op = Op::Add;                         // Unary / Binary
  Predicate predicate = Predicate::Eq;     // Select
  Convention convention = Convention::Default;  // Aggregate
  Value constant;       // Constant: the value; Aggregate: the default
  MapFn map_fn;         // Map
  ZipFn zip_fn;         // ZipMap
  std::string label;    // Map / ZipMap: "lambda x: x + 1", "indicator", "round", ...
  bool builtin = false; // Map of a named built-in (indicator, round): the same function wherever written
  Span span;            // where a `.rasp` program wrote it (empty for C++/Python)

  // Releases the children of long chains iteratively: the default recursive release of a
  // program 100000 operations deep (built in a Python loop) would overflow the stack.
  ~Node();

  bool is_selector() const { return is_selector_kind(kind); }
  // "flip" if named, otherwise a short description such as "aggregate#12".
  std::string display_name() const;
  // For titles and reports: the name if named, otherwise what the node computes from its
  // children's display names, without auto-generated ids: "aggregate(select(indices,
  // opp_index, ==), tokens)".
  std::string description() const;
};

// A fresh node id (thread-safe).
uint64_t next_node_id();

class Selector;

// A sequence operation: a handle to a node that computes one value per position.
class SOp {
 public:
  SOp() = default;
  explicit SOp(NodePtr node);
  // Constants broadcast to every position: `tokens * 2 - 1`, `where(c, tokens, "q")`.
  SOp(bool v);
  SOp(int v);
  SOp(int64_t v);
  SOp(double v);
  SOp(const char* v);
  SOp(std::string v);
  static SOp constant(Value v);

  const NodePtr& node() const { return node_; }
  explicit operator bool() const { return static_cast<bool>(node_); }

  // A copy of this s-op under a name (RASPy's `.name()`): the node itself is not changed.
  SOp name(std::string name) const;
  const std::string& name() const;
  SOp map(MapFn f, std::string label = "map") const;
  SOp numerical() const;    // annotate (a renamed-style copy carrying the annotation)
  SOp categorical() const;

  // Evaluate on an input with RASPy's convention (sum): `program("hello")`.
  std::vector<Value> operator()(const std::vector<Value>& input) const;
  std::vector<Value> operator()(std::string_view input) const;

 private:
  NodePtr node_;
};

class Selector {
 public:
  Selector() = default;
  explicit Selector(NodePtr node);
  const NodePtr& node() const { return node_; }
  // A copy of this selector under a name (shown by `draw` and the compiler's head list).
  Selector name(std::string name) const;
  const std::string& name() const;
  // aggregate(self, values, default): RASPy's `.value(...)`.
  SOp value(const SOp& values, Value default_value = int64_t{0}) const;
  SOp width() const;  // selector_width(self)

 private:
  NodePtr node_;
};

// RASPy's `key(x) == query(y)` spelling of select(x, y, ==).
struct Key { SOp sop; };
struct Query { SOp sop; };
Key key(const SOp& keys);
Query query(const SOp& queries);
Selector operator==(const Key& k, const Query& q);
Selector operator!=(const Key& k, const Query& q);
Selector operator<(const Key& k, const Query& q);
Selector operator<=(const Key& k, const Query& q);
Selector operator>(const Key& k, const Query& q);
Selector operator>=(const Key& k, const Query& q);

SOp tokens();
SOp indices();
SOp length();

SOp operator+(const SOp& a, const SOp& b);
SOp operator-(const SOp& a, const SOp& b);
SOp operator*(const SOp& a, const SOp& b);
SOp operator/(const SOp& a, const SOp& b);
SOp operator%(const SOp& a, const SOp& b);
SOp operator==(const SOp& a, const SOp& b);
SOp operator!=(const SOp& a, const SOp& b);
SOp operator<(const SOp& a, const SOp& b);
SOp operator<=(const SOp& a, const SOp& b);
SOp operator>(const SOp& a, const SOp& b);
SOp operator>=(const SOp& a, const SOp& b);
SOp operator&(const SOp& a, const SOp& b);  // logical and (RASPy's &)
SOp operator|(const SOp& a, const SOp& b);  // logical or
SOp operator~(const SOp& a);                // logical not
SOp operator-(const SOp& a);
SOp pow(const SOp& a, const SOp& b);

Selector operator&(const Selector& a, const Selector& b);
Selector operator|(const Selector& a, const Selector& b);
Selector operator~(const Selector& a);

SOp unary(Op op, const SOp& a);
SOp binary(Op op, const SOp& a, const SOp& b);
SOp where(const SOp& cond, const SOp& if_true, const SOp& if_false);
SOp map(const SOp& a, MapFn f, std::string label = "map");
SOp zipmap(const std::vector<SOp>& args, ZipFn f, std::string label = "zipmap");
Selector select(const SOp& keys, const SOp& queries, Predicate predicate);
Selector select_and(const Selector& a, const Selector& b);
Selector select_or(const Selector& a, const Selector& b);
Selector select_not(const Selector& a);
SOp aggregate(const Selector& sel, const SOp& values, Value default_value = int64_t{0},
              Convention convention = Convention::Default);
SOp selector_width(const Selector& sel);
// Annotations: a copy of `a` carrying the encoding.
SOp numerical(const SOp& a);
SOp categorical(const SOp& a);
// Named built-in maps of the `.rasp` language.
SOp indicator(const SOp& a);  // 1 if truthy else 0
SOp round(const SOp& a);      // nearest integer (ties to even, as Python)

// ---------------------------------------------------------------------------------------
// Dynamic operations (the Python binding and the `.rasp` loader): operands whose kind is
// only known at run time. Mixing kinds wrongly (a selector compared with an s-op, a
// selector added to a number) is an lrnn::Error that says what was combined.
// ---------------------------------------------------------------------------------------

using Operand = std::variant<Value, SOp, Selector>;
std::string operand_kind(const Operand& x);  // "value", "s-op", "selector"
Operand apply_unary(Op op, const Operand& a, const Span& span = {});
Operand apply_binary(Op op, const Operand& a, const Operand& b, const Span& span = {});
// Python/RASPy: key(a) <op> query(b) where a, b are values or s-ops.
Selector select_dynamic(const Operand& keys, const Operand& queries, Predicate p,
                        const Span& span = {});
SOp to_sop(const Operand& x, const std::string& what, const Span& span = {});

// Value-level operations (used by the interpreter, constant folding and lowering).
Value apply_value_op(Op op, const Value& a, const Value& b);
Value apply_value_unary(Op op, const Value& a);
bool apply_predicate(Predicate p, const Value& key, const Value& query);
// The value of an element-wise node (Map, ZipMap, Unary, Binary, Where) at one position
// given its children's values there. `None` means "undefined" and stays so, as in tracr's
// evaluator: any `None` argument (for `where`, a `None` condition) gives `None`.
Value apply_elementwise(const Node& n, const std::vector<Value>& args);

// ---------------------------------------------------------------------------------------
// Programs and the interpreter
// ---------------------------------------------------------------------------------------

// A program: its output s-op, its aggregation convention, and (for `.rasp` files) every
// named s-op in order of definition.
struct Program {
  SOp output;
  Convention convention = Convention::Sum;
  std::vector<std::pair<std::string, SOp>> named;
  // The named s-op `name` (throws lrnn::Error naming the available ones).
  SOp get(const std::string& name) const;
  // The program whose output is the named s-op.
  Program with_output(const std::string& name) const;
};

using SelectorMatrix = std::vector<std::vector<uint8_t>>;  // [query i][key j]

// Everything one run computed: the output, every s-op's values and every selector's
// matrix (memoised per node), in evaluation order. Used by `draw` and the lowering tests.
struct Evaluation {
  std::vector<Value> output;
  std::vector<const Node*> order;  // every node evaluated, children before parents
  std::unordered_map<const Node*, std::vector<Value>> values;
  std::unordered_map<const Node*, SelectorMatrix> selectors;
};

// Runs `output` on `input`; `convention` applies to aggregates that have none of their own.
Evaluation evaluate(const SOp& output, const std::vector<Value>& input,
                    Convention convention = Convention::Sum);
std::vector<Value> run(const SOp& output, const std::vector<Value>& input,
                       Convention convention = Convention::Sum);
std::vector<Value> run(const Program& program, const std::vector<Value>& input);

// Every node reachable from `root` (children before parents, each once).
std::vector<const Node*> topological_order(const NodePtr& root);

// ---------------------------------------------------------------------------------------
// Analyser
// ---------------------------------------------------------------------------------------

// What a head attends with: the program's selector, the all-true pattern `length` uses,
// or one of selector_width's two patterns (the selector or/and "key index == 0").
enum class HeadPattern : uint8_t { Selector, All, WidthOr, WidthAnd };

struct Head {
  int layer = 0;
  std::string selector;       // description of the selector
  std::vector<std::string> outputs;  // the s-ops it computes
  HeadPattern pattern = HeadPattern::Selector;
  const Node* selector_node = nullptr;     // the selector (null for `length`)
  std::vector<const Node*> output_nodes;   // the aggregates / widths / length it computes
};

struct Analysis {
  int layers = 0;
  std::vector<int> heads_per_layer;  // index 0 = layer 1
  int max_heads = 0;
  std::vector<Head> heads;
  std::unordered_map<const Node*, int> depth;  // attention depth of every node
};

// Attention depth: inputs and constants 0; element-wise ops the max of their inputs; a
// selector the max of its keys and queries; an aggregate 1 + max(selector, values);
// `length` 1. Heads of a layer: the distinct selectors (by structure) aggregated at that
// depth. selector_width takes one layer and two heads (the original RASP's construction
// without a BOS token: one head over `sel or select(indices, 0, ==)` and one over
// `sel and select(indices, 0, ==)`); that is what gives Dyck-2 its 4 layers / 2 heads.
Analysis analyze(const SOp& output);

// ---------------------------------------------------------------------------------------
// The `.rasp` text syntax (the original RASP language; mean aggregation)
// ---------------------------------------------------------------------------------------

// Parses and runs the statements of a `.rasp` file (`load` paths are relative to it).
// Parse and type errors are lrnn::Error with file:line:col and a caret. The program's
// output is its last assigned s-op.
Program load_rasp_file(const std::string& path);
Program parse_rasp(const std::string& text, const std::string& name = "<string>");

// ---------------------------------------------------------------------------------------
// Lowering to an lrnn template
// ---------------------------------------------------------------------------------------

struct LoweredTemplate {
  TemplateAst ast;
  std::string text;              // the template in the docs/language.md text format
  std::string output_predicate;  // out/2 (categorical: out(I, v)) or out/1 (numerical)
  bool output_numeric = false;
  // True when grounding alone derives exactly the output atoms (every neuron value is 1),
  // so the logic engine's query answering reads the result; otherwise the neural forward
  // pass computes it (counts, sums, averages and what depends on them).
  bool exact = false;
  // True when the value sets are those the interpreter meets on every input over the
  // vocabulary up to max_len (few enough inputs); false when inferred node by node.
  bool values_enumerated = false;
  // Value sets inferred for every lowered s-op (display names), for the report.
  std::vector<std::pair<std::string, std::vector<Value>>> value_sets;
  // The values the output can take, so that readers decode an output atom's constant back
  // to the interpreter's value (value_term writes True as 1 and None as the constant none).
  std::vector<Value> output_values;
};

// Lowers `output` for inputs over `vocab` of length at most `max_len`. See docs/rasp.md
// for the rules; throws lrnn::Error when a value set would exceed `max_values`.
LoweredTemplate to_template(const SOp& output, const std::vector<Value>& vocab, int max_len,
                            Convention convention = Convention::Sum, size_t max_values = 4096);
// The example facts for one input: token(i, v) and index(i, i).
ExampleAst example_facts(const std::vector<Value>& input);
// The constant term a value becomes in lowered templates (bools become 1/0).
Term value_term(const Value& v);

// ---------------------------------------------------------------------------------------
// Pictures
// ---------------------------------------------------------------------------------------

// An SVG (standalone text) of the program on `input`: every s-op's values by layer and
// every layer's selector matrices (query rows, key columns), like RASPy's diagrams.
std::string draw_svg(const SOp& output, const std::vector<Value>& input,
                     Convention convention = Convention::Sum);

}  // namespace lrnn::rasp

namespace lrnn::rasp {

// ---------------------------------------------------------------------------------------
// Weight compiler: a RASP program as the weights of a transformer (docs/rasp.md)
// ---------------------------------------------------------------------------------------

// A named subspace of the residual stream: one dimension per value of a categorical s-op,
// one dimension for a numerical s-op. Constants take no dimensions (they are multiples of
// the "one" direction). Dimensions 0 and 1 are "one" (1 at every position) and "bos" (1 at
// the beginning-of-sequence position only).
struct ResidualSpace {
  std::string name;        // the s-op's name (or description), or "name:width" for scratch
  bool numerical = false;
  std::vector<Value> values;  // categorical: one per dimension; numerical: those that occur
  int offset = -1;            // first dimension (-1: a constant, read from "one")
  int width = 0;
};

// One attention head: scores = x_q^T qk x_k (query rows, key columns), output added to the
// residual = sum_k softmax_k(scores) * ov x_k. Both d_model x d_model, row major.
// How CompiledModel::template_text writes the weights (docs/rasp.md, "Trainable").
struct CompiledTemplateOptions {
  // The compiled weights as fixed weights (<...>): training moves only the readout.
  bool fixed = false;
  // Every weight as its shape only ({rows, cols}): the same template from random init.
  bool random = false;
  // > 0: add rasp_out(P), a learnable readout of the (categorical) output subspace whose
  // logits are readout_scale times its one-hot (a low softmax temperature), for training
  // with cross-entropy on readout_query_text's targets.
  double readout_scale = 0;
};

struct CompiledHead {
  std::string output;    // the s-op it computes
  std::string selector;  // the selector it attends with
  std::vector<double> qk, ov;
};

// One MLP: residual += w2 relu(w1 x + b1); w1 is hidden x d_model, w2 d_model x hidden.
struct CompiledMlp {
  std::vector<std::string> outputs;  // the s-ops it computes
  int hidden = 0;
  std::vector<double> w1, b1, w2;
};

struct CompiledLayer {
  std::vector<CompiledHead> heads;
  CompiledMlp mlp;
};

struct CompileOptions {
  Convention convention = Convention::Sum;
  bool causal = false;  // heads see only earlier positions (and the BOS position)
  // compile enumerates every input over the vocabulary up to max_len to find the exact
  // value sets and attention patterns; more inputs than this is refused.
  size_t max_inputs = 200000;
};

struct VerifyReport {
  size_t checked = 0;     // inputs compared
  size_t total = 0;       // inputs up to max_len
  size_t mismatches = 0;
  bool sampled = false;   // checked < total: a random sample (fixed seed)
  std::string first_mismatch;  // "input [a, b]: interpreter [...], weights [...]"
};

class CompiledModel {
 public:
  SOp program;
  Convention convention = Convention::Sum;
  std::vector<Value> vocab;
  int max_len = 0;
  bool causal = false;
  int d_model = 0;
  std::vector<std::string> dim_labels;  // "one", "bos", "tokens=a", "frac", ...
  std::vector<ResidualSpace> spaces;
  size_t output_space = 0;
  std::vector<double> token_embedding;     // vocab.size() x d_model
  std::vector<double> position_embedding;  // max_len x d_model (real positions 0..max_len-1)
  std::vector<double> bos_embedding;       // d_model
  std::vector<CompiledLayer> layers;
  int analyzed_layers = 0;  // analyze(program).layers, for comparison

  // The residual stream after the last layer, (n + 1) x d_model, row 0 the BOS position.
  std::vector<double> forward(const std::vector<Value>& input) const;
  // Every head's attention weights on an input, in layer order: (n + 1) x (n + 1) row major,
  // [query][key], row and column 0 the BOS position.
  std::vector<std::vector<double>> attention(const std::vector<Value>& input) const;
  // The decoded output: argmax per categorical position, the number for numerical ones.
  std::vector<Value> operator()(const std::vector<Value>& input) const;
  // Compares with the interpreter on every input up to max_len (a sample of max_inputs
  // when there are more).
  VerifyReport verify(size_t max_inputs = 100000) const;

  // The same transformer as an lrnn template (attention and MLP rules with these weights as
  // their initial values), so the engine runs, trains and draws it; its query residual(p)
  // is forward()'s row p. example_text/query_text give an input's facts and queries.
  std::string template_text(const CompiledTemplateOptions& options = {}) const;
  // With options.readout_scale > 0: the readout's queries for an input whose outputs should
  // be `outputs` (a one-hot over the output s-op's values per position, `rasp_out(p)`);
  // a value the output s-op never takes is an error naming it.
  std::string readout_query_text(const std::vector<Value>& outputs) const;
  // The program's own pairs for the readout: every input up to max_len as a named example
  // (examples) and the interpreter's output as its readout queries (queries); more than
  // max_inputs inputs is an error.
  struct ReadoutData {
    std::string examples, queries;
    size_t count = 0;
  };
  ReadoutData readout_data(size_t max_inputs = 100000) const;
  std::string example_text(const std::vector<Value>& input) const;
  std::string query_text(const std::vector<Value>& input) const;
  int input_width() const;  // the one-hot of rasp_input: tokens, BOS, positions

  int heads() const;
  std::vector<int> heads_per_layer() const;
  int mlp_width() const;  // the widest layer's hidden units
  std::string table() const;  // the residual stream layout, one space per line

 private:
  const ResidualSpace& readout_space() const;  // the categorical output, or an error
  std::vector<double> run_layers(const std::vector<Value>& input, std::vector<std::vector<double>>* patterns) const;
  // Each input token's index in the vocabulary; throws lrnn::Error (Runtime) for an input
  // longer than max_len or a token outside the vocabulary, naming it.
  std::vector<size_t> token_indices(const std::vector<Value>& input) const;
};

// An SVG of a compiled model on an input: the residual stream's named subspaces with the
// final values at every position, and every head's attention weights (BOS first), next to
// the interpreter's selector matrices in draw_svg.
std::string draw_compiled_svg(const CompiledModel& model, const std::vector<Value>& input);

// Compiles `output` for inputs over `vocab` of length 1..max_len. Throws lrnn::Error naming
// the s-op whatever cannot be compiled exactly.
CompiledModel compile(const SOp& output, const std::vector<Value>& vocab, int max_len,
                      const CompileOptions& options = {});

}  // namespace lrnn::rasp
