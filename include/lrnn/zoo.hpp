// The zoo: rule generators for attention and transformer layers (issue 5). Each
// generator returns a Module: the template as text in the docs/language.md format (printable,
// editable, parsed with parse_template), the predicates that carry its input and output,
// and how every weight maps onto the parameters of the matching torch.nn module.
//
// Conventions shared by every generator (docs/transformers.md explains them):
//  - A sequence is one example: token i of an [n, d] input is the example fact
//    `<[x_i0, ..., x_id-1]> input(i)` (see sequence_example); positions are the numbers
//    0..n-1, so masks compare them with arithmetic builtins.
//  - Query positions are the variable I, key positions J; masks are extra body literals of
//    the score rule and may use any other variable except those names (D is used by the
//    built-in masks).
//  - Every weight is named `$<prefix>_<what>`, so a model's parameters can be read and
//    written by name and shared between rules.
//  - One attention head h of a module with prefix p (E = embed_dim, hd = E / heads):
//        <1/sqrt(hd)> p_d_k.
//        p_q{h}(I) :- $p_wq{h}={hd,E} x(I), $p_bq{h}={hd}.            (k, v alike on the key input)
//        p_w{h}(I, J) :- p_d_k, p_k{h}(J)^T, p_q{h}(I), MASK. [combination=product, aggregation=softmax(J)]
//    (a mask with helper variables, e.g. D = I - J, normalises over them too: softmax(J, D))
//        p_a{h}(I) :- p_w{h}(I, J), p_v{h}(J). [combination=product, aggregation=sum]
//    and the output projection sums the heads through column slices of W_o:
//        out(I) :- $p_wo0={E,hd} p_a0(I), ..., $p_bo={E}.
//    which is exactly torch's out_proj(concat(heads)).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "lrnn/ast.hpp"
#include "lrnn/training.hpp"

namespace lrnn::zoo {

// Body literals restricting which key positions J a query position I attends to. A masked
// pair is never grounded, so its score is never computed.
struct Mask {
  std::vector<std::string> literals;  // e.g. "@leq(J, I)"
  std::string label;                  // short description, e.g. "causal"

  static Mask none() { return {}; }
  static Mask causal();                    // J <= I
  static Mask sliding_window(int w);       // 0 <= I - J <= w
  static Mask strided(int s);              // (I - J) mod s == 0
  // Arbitrary literals in the text format, comma-separated, e.g. "@neq(I, J)" or
  // "allowed(I, J)" (an example predicate). Checked by parsing.
  static Mask custom(const std::string& literals);
  Mask operator&(const Mask& other) const;  // both restrictions
  bool empty() const { return literals.empty(); }
};

// How one lrnn weight is read from a torch.nn module's state_dict: weight `$weight` equals
// torch_name[row_begin:row_end, col_begin:col_end] (1-D tensors: rows only, cols = {0, 1}).
struct TorchSlice {
  std::string weight;      // without '$'
  std::string torch_name;  // state_dict key, e.g. "self_attn.in_proj_weight"
  int row_begin = 0, row_end = 0, col_begin = 0, col_end = 1;
  bool vector = false;  // the torch tensor is 1-D
};

struct Module {
  std::string kind;                 // "MultiheadAttention", "TransformerEncoderLayer", ...
  std::string prefix;               // prefix of every predicate and weight it defines
  std::string input;                // predicate/1 holding the input sequence
  std::string memory;               // decoder layers: predicate/1 of the encoder output
  std::string output;               // predicate/1 holding the output sequence
  std::string edge;                 // relational attention: predicate/2 of edge embeddings
  int input_dim = 0, output_dim = 0;
  std::vector<std::string> lines;   // the template, one rule or fact per line
  std::vector<TorchSlice> torch;    // weight -> torch parameter mapping

  std::string text() const;         // lines joined with newlines
  TemplateAst ast() const;          // parse_template(text(), "<zoo:" + kind + ">")
};

// A single attention head with {d,d} projections and no output projection (the
// PyNeuraLogic "Beyond Transformers" form): out(I) = sum_J softmax_J(q_I.k_J/sqrt(d)) v_J.
struct AttentionOptions {
  std::string prefix = "attn";
  std::string input = "input";   // queries (and keys/values unless key_input is set)
  std::string key_input;         // cross-attention: keys and values from this predicate
  std::string output;            // default: prefix
  Mask mask;
  bool bias = true;              // q/k/v/out biases as offsets (torch's bias=True)
};
Module attention(int embed_dim, const AttentionOptions& options = {});

// torch.nn.MultiheadAttention(embed_dim, num_heads) with per-head weight slices of
// in_proj_weight and an output projection (torch names: in_proj_weight, in_proj_bias,
// out_proj.weight, out_proj.bias).
Module multihead_attention(int embed_dim, int num_heads, const AttentionOptions& options = {});

struct EncoderLayerOptions {
  std::string prefix = "enc";
  std::string input = "input";
  std::string output;           // default: prefix
  Mask mask;                    // self-attention mask
  bool norm_first = false;      // pre-norm (torch's norm_first=True)
  bool norm_affine = false;     // learnable layer-norm gain/bias (torch's default affine
                                // parameters are 1 and 0, which plain `norm` equals)
  std::string torch_prefix;     // prepended to torch names ("layers.0.")
};
// torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0,
// activation=relu, norm_first) with layer_norm_eps 1e-5.
Module transformer_encoder_layer(int d_model, int nhead, int dim_feedforward,
                                 const EncoderLayerOptions& options = {});
// torch.nn.TransformerEncoder(layer, num_layers) (no final norm): layer k has prefix
// "<prefix>l<k>" and torch prefix "layers.<k>.".
Module transformer_encoder(int d_model, int nhead, int dim_feedforward, int num_layers,
                           const EncoderLayerOptions& options = {});

struct DecoderLayerOptions {
  std::string prefix = "dec";
  std::string input = "target";   // decoder input sequence
  std::string memory = "memory";  // encoder output sequence
  std::string output;             // default: prefix
  Mask self_mask;                 // tgt_mask (Mask::causal() for autoregressive decoding)
  Mask memory_mask;
  bool norm_first = false;
  bool norm_affine = false;
  std::string torch_prefix;
};
// torch.nn.TransformerDecoderLayer: self-attention, cross-attention over the memory,
// ReLU MLP, each with residual and layer norm (torch names self_attn.*, multihead_attn.*,
// linear1/2.*, norm1/2/3.*).
Module transformer_decoder_layer(int d_model, int nhead, int dim_feedforward,
                                 const DecoderLayerOptions& options = {});

struct TransformerOptions {
  std::string prefix = "tf";
  std::string source = "source";  // encoder input sequence
  std::string target = "target";  // decoder input sequence
  std::string output;             // default: prefix
  Mask src_mask, tgt_mask, memory_mask;
  bool norm_first = false;
  bool norm_affine = false;
};
// torch.nn.Transformer(d_model, nhead, num_encoder_layers, num_decoder_layers,
// dim_feedforward, dropout=0, batch_first=True): an encoder stack whose output goes
// through encoder.norm (the memory, `<prefix>_memory`), a decoder stack reading it in every
// layer's cross-attention, and decoder.norm (torch names encoder.layers.<k>.*,
// encoder.norm.*, decoder.layers.<k>.*, decoder.norm.*).
Module transformer(int d_model, int nhead, int num_encoder_layers, int num_decoder_layers, int dim_feedforward,
                   const TransformerOptions& options = {});

// A sequence-to-sequence model of "Attention Is All You Need" over a vocabulary of V
// tokens: token t at position i of the source is the example fact `<[one-hot t]> src(i)`
// (a V-vector; `<[V|t:1]> src(i)` in the sparse form), of the decoder's input
// `<[one-hot t]> tgt(i)`. One embedding table, the learnable template fact
// `$<p>_emb={V,d} <p>_table.` (torch's nn.Embedding(V, d).weight), embeds both:
//     <p>_src_e(I) :- <p>_table^T, src(I). [combination=product]      (row t of the table)
//     <p>_source(I) :- <sqrt(d)> <p>_src_e(I), <p>_pos(I).             (target alike)
// with the sinusoidal encoding of each position i < max_len as a fixed template fact
// `<[pe_i]> <p>_pos(i)`. The transformer (prefix <p>_tf, torch names under "transformer.")
// runs the decoder under a causal mask; the logits of every target position are
//     <p>_out(I) :- <p>_table, <p>_tf(I). [combination=product]        (tied: table x h)
// or, untied, `$<p>_out_w={V,d} <p>_tf(I), $<p>_out_b={V}` (torch's out: nn.Linear(d, V)).
// A query `<t> <p>_out(i)` (the class index t) trains it with cross-entropy.
struct Seq2SeqOptions {
  std::string prefix = "s2s";
  std::string source = "src";  // one-hot source tokens, predicate/1 over positions
  std::string target = "tgt";  // one-hot decoder inputs (shifted right: BOS first)
  int max_len = 64;            // positions with an encoding (longer sequences have no atoms)
  bool tie_output = true;      // the output projection is the embedding table
  bool norm_first = false;
  bool norm_affine = true;     // trained layer norms (torch's LayerNorm weights learn)
};
// Module::input is the source predicate, Module::memory the decoder's input predicate and
// Module::output `<p>_out` (V logits per target position).
Module seq2seq(int vocab, int d_model, int nhead, int num_encoder_layers, int num_decoder_layers,
               int dim_feedforward, const Seq2SeqOptions& options = {});
// The same model cut at the encoder's output, to decode with the memory computed once: the
// encoder (embedding, positions, encoder stack and encoder.norm; output `<p>_tf_memory`, the
// memory rows) and the decoder (embedding, positions, the decoder stack reading the memory
// as input facts `<[row j]> <p>_tf_memory(j)`, the logits; output `<p>_out`). Their weights
// are seq2seq's, by the same names and torch mapping.
struct Seq2SeqParts {
  Module encoder, decoder;
};
Seq2SeqParts seq2seq_parts(int vocab, int d_model, int nhead, int num_encoder_layers, int num_decoder_layers,
                           int dim_feedforward, const Seq2SeqOptions& options = {});


// ---- the registry: every module by name ------------------------------------------------
// Each module of src/zoo/ registers itself in its own file with
//     LRNN_ZOO_MODULE(my_module) { return ModuleSpec{"<doc>", {<parameters>}, <generator>}; }
// (inside namespace lrnn::zoo), and is then generated by name: module_rules(name, params) is
// all the Python binding (one generic function) and the CLI need, so a new module is its
// generator file and its Python class (docs/architecture.md "How to add a zoo module in C++").
// The C++ functions above stay for C++ callers that prefer typed options.

enum class ParamType { Int, Bool, String, Mask };
const char* to_string(ParamType type);  // "int", "bool", "string", "mask"

// A parameter's value: a flag, an integer, a name, or a mask as its body literals in the text
// format (empty: no mask), e.g. {"@leq(J, I)"}; a mask is checked by parsing (Mask::custom).
using ParamValue = std::variant<bool, int64_t, std::string, std::vector<std::string>>;

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::Int;
  std::optional<ParamValue> default_value;  // none: the parameter is required
  std::string doc;                          // one line
  int64_t min = 0;                          // Int: the smallest value accepted
};

// Declarations in one line each: a required int (no default) or one with a default, and
// flags, names and masks (default: no mask).
inline ParamSpec int_param(std::string name, std::string doc, std::optional<int64_t> def = {}, int64_t min = 1) {
  ParamSpec p{std::move(name), ParamType::Int, {}, std::move(doc), min};
  if (def) p.default_value = ParamValue(*def);
  return p;
}
inline ParamSpec bool_param(std::string name, bool def, std::string doc) {
  return {std::move(name), ParamType::Bool, ParamValue(def), std::move(doc)};
}
inline ParamSpec string_param(std::string name, std::string def, std::string doc) {
  return {std::move(name), ParamType::String, ParamValue(std::move(def)), std::move(doc)};
}
inline ParamSpec mask_param(std::string name, std::string doc) {
  return {std::move(name), ParamType::Mask, ParamValue(std::vector<std::string>{}), std::move(doc)};
}

// The checked arguments of one module_rules call: every declared parameter has a value of its
// type (given or its default). Reading a parameter the module did not declare, or as another
// type, is a bug in the module's file and throws naming it.
class ModuleParams {
 public:
  ModuleParams(std::string module, std::map<std::string, ParamValue> values);
  int integer(const std::string& name) const;
  bool flag(const std::string& name) const;
  const std::string& text(const std::string& name) const;
  Mask mask(const std::string& name) const;
  const std::string& module() const { return module_; }

 private:
  const ParamValue& value(const std::string& name) const;
  std::string module_;
  std::map<std::string, ParamValue> values_;
};

struct ModuleSpec {
  using Generator = std::function<Module(const ModuleParams&)>;
  ModuleSpec(std::string doc, std::vector<ParamSpec> params, Generator generate)
      : doc(std::move(doc)), params(std::move(params)), generate(std::move(generate)) {}
  std::string doc;  // one line: what it generates (the torch.nn counterpart, if any)
  std::vector<ParamSpec> params;
  Generator generate;
  std::string name;  // set by the registry: the name given to LRNN_ZOO_MODULE
};

// Every registered module, sorted by name.
const std::vector<ModuleSpec>& modules();
// The module called `name`; an unknown name is refused naming it and the nearest module.
const ModuleSpec& module_spec(const std::string& name);
// Generates module `name` from `params` given by name (the others take their defaults).
// Refused with an lrnn::Error naming the module and the parameter at fault: an unknown module
// or parameter (suggesting the nearest name), a value of another type, an integer below its
// minimum or beyond int, a required parameter left out, a malformed mask.
Module module_rules(const std::string& name, const std::map<std::string, ParamValue>& params = {});

// Registers module NAME (a lower-case identifier, written at the start of a line inside
// namespace lrnn::zoo, followed by the body of a function returning its ModuleSpec). The build
// finds every such line in src/zoo/*.cpp and the registry calls each function: a call, not a
// static registrar object, because the linker drops an archive member nothing refers to.
#define LRNN_ZOO_MODULE(NAME) ModuleSpec registered_module_##NAME()

// ---- data --------------------------------------------------------------------------
// Sinusoidal positional encoding (Vaswani et al., base 10000), [n, d] row-major:
// pe[p][2i] = sin(p / 10000^(2i/d)), pe[p][2i+1] = cos(p / 10000^(2i/d)).
std::vector<double> positional_encoding(int n, int d);

// Facts `<[x_i]> predicate(i)` for the rows of a row-major [n, d] array.
std::vector<Literal> sequence_facts(const std::string& predicate, const double* x, int n, int d);
// One example holding one sequence.
ExampleAst sequence_example(const std::string& predicate, const double* x, int n, int d);
// Queries `predicate(0)`, ..., `predicate(n-1)` (no targets).
std::vector<Literal> sequence_queries(const std::string& predicate, int n);

// ---- running a module on sequences ---------------------------------------------------
// One named input sequence: rows of a row-major [n, d] array become `<[row i]> predicate(i)`.
struct SequenceInput {
  std::string predicate;
  const double* data = nullptr;
  int n = 0, d = 0;
};

// A torch tensor flattened row-major (1-D tensors: rows = size, cols = 1).
struct TorchTensor {
  std::vector<double> data;
  int rows = 0, cols = 1;
};

// Runs a Module (or any template whose output is predicate/1 over positions) on sequences
// with the lrnn engine. Grounding depends only on the sequence lengths and the extra
// facts (edges, mask facts), never on the values, so one grounded plan is kept per
// distinct (input lengths, extra facts) and later calls only write the new values into it:
// after the first pass over a dataset of equal-length sequences no grounding happens.
class SequenceModel {
 public:
  explicit SequenceModel(const Module& module, uint64_t seed = 1);
  SequenceModel(const TemplateAst& ast, std::string input, std::string output, uint64_t seed = 1);
  ~SequenceModel();
  SequenceModel(SequenceModel&&) noexcept;
  SequenceModel& operator=(SequenceModel&&) noexcept;

  // Parameters by weight name (without '$'), values row-major.
  std::vector<std::string> parameter_names() const;
  std::pair<int, int> parameter_shape(const std::string& name) const;
  std::vector<double> parameter(const std::string& name) const;
  void set_parameter(const std::string& name, const std::vector<double>& values);
  // Copies every weight from a torch state_dict (keys as in Module::torch); throws
  // lrnn::Error naming a missing key or a shape that does not fit.
  void load_torch(const std::vector<TorchSlice>& mapping, const std::map<std::string, TorchTensor>& state);

  // Forward pass: output(0..out_n-1) as a row-major [out_n, d_out] array. extra_facts are
  // added to the example as written (e.g. `<[..]> edge(0, 1)` or mask facts). The plans of
  // the 128 most recently used structures (lengths and extra facts) are kept.
  std::vector<double> forward(const std::vector<SequenceInput>& inputs, int out_n,
                              const std::vector<Literal>& extra_facts = {});
  std::vector<double> forward(const double* x, int n, int d);  // input = module input
  // After forward: propagates dL/d(output) ([out_n, d_out]); returns dL/d(input) per input
  // sequence (same order and shapes as forward's inputs) and ACCUMULATES parameter
  // gradients (read with parameter_grad, reset with zero_grad).
  std::vector<std::vector<double>> backward(const std::vector<double>& grad_output);
  std::vector<double> parameter_grad(const std::string& name) const;
  void zero_grad();
  // The scalar type of forward and backward (default float64). In float32 the passes read
  // a float copy of the parameters taken at each forward; parameters, their gradients and
  // the values handed in and out stay double.
  void set_dtype(Dtype dtype);
  Dtype dtype() const;

  struct Stats {
    size_t groundings = 0;   // examples grounded (plan cache misses)
    size_t cache_hits = 0;   // forward calls served by a cached plan
    size_t ground_rules = 0; // ground rules of the last plan used
    // Process CPU seconds the last new structure took to ground, neuralize and plan (the
    // first call on a new length, besides its pass).
    double build_cpu_seconds = 0;
  };
  Stats stats() const;
  int output_dim() const;  // rows of an output value (after the first forward)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lrnn::zoo
