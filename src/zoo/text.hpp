// Small text helpers shared by the zoo generators: numbers written so that they parse
// back to the same double, value vectors, and the emission of attention heads, layer
// norms and output projections that every transformer generator is made of.
#pragma once

#include <string>
#include <vector>

#include "lrnn/zoo.hpp"

namespace lrnn::zoo::detail {

std::string number(double v);                       // shortest round-trip form
std::string filled_vector(int n, double v);          // "[v, v, ...]"
std::string dims(int rows, int cols);                // "{rows,cols}"
std::string dims(int rows);                          // "{rows}"

// ", lit1, lit2" (empty without a mask).
std::string mask_suffix(const Mask& mask);
// The variables of the score rule's softmax: J and every helper variable of the mask.
std::string softmax_over(const Mask& mask);

// The pieces of a group of attention heads, written into a Module.
struct HeadsSpec {
  std::string prefix;        // p: predicates p_q0, p_k0, p_v0, p_w0, p_a0, ..., weights $p_wq0, ...
  std::string query_input;   // predicate/1 of the queries
  std::string key_input;     // predicate/1 of the keys and values
  int embed_dim = 0;
  int heads = 1;
  Mask mask;
  bool bias = true;
  bool project = true;       // torch MultiheadAttention (in_proj slices + out_proj); false:
                             // one {E,E} head per projection and no out_proj mapping
  std::string torch_prefix;  // "self_attn." etc.; mapping only when project is set
};

// Emits the d_k fact and, per head, the q/k/v, score and attention rules. Returns the
// body (without the trailing '.') that sums the heads through the output projection:
// "$p_wo0={E,hd} p_a0(I), ..., $p_bo={E}" (or "p_a0(I)" without projection).
std::string emit_heads(Module& m, const HeadsSpec& spec);

// Emits `name(I) :- body. [activation=norm]` (layer norm without affine parameters), or
// with `affine` the normalisation into name_ln followed by a learnable element-wise gain
// and bias `$name_g`, `$name_b` (initialised 1 and 0), mapped to torch's `torch_name`.
void emit_norm(Module& m, const std::string& name, const std::string& body, int dim,
               bool affine, const std::string& torch_name);

// Appends a part's lines and torch mapping to m.
void append(Module& m, const Module& part);
// The two halves of zoo::transformer (its dimensions checked by the caller): the encoder
// stack over o.source and encoder.norm into `<prefix>_memory`; the decoder stack over
// o.target reading `<prefix>_memory`, and decoder.norm into o.output (default: the prefix).
void emit_transformer_encoder(Module& m, int d_model, int nhead, int num_encoder_layers, int dim_feedforward,
                              const TransformerOptions& o);
void emit_transformer_decoder(Module& m, int d_model, int nhead, int num_decoder_layers, int dim_feedforward,
                              const TransformerOptions& o);

}  // namespace lrnn::zoo::detail
