// Transformer layers as rules: encoder layer, encoder stack, decoder layer (post-norm and
// pre-norm, as torch.nn with dropout 0 and ReLU), and the sequence data helpers.
#include <cmath>

#include "lrnn/diagnostics.hpp"
#include "zoo/text.hpp"

namespace lrnn::zoo {

using detail::dims;
using detail::emit_heads;
using detail::emit_norm;
using detail::HeadsSpec;

namespace {

void check_dims(int d_model, int nhead, int dim_feedforward) {
  if (d_model <= 0 || nhead <= 0 || dim_feedforward <= 0 || d_model % nhead != 0)
    throw Error(ErrorKind::Semantic, "d_model (" + std::to_string(d_model) + ") must be a positive multiple of nhead (" +
                                         std::to_string(nhead) + ") and dim_feedforward (" +
                                         std::to_string(dim_feedforward) + ") positive");
}

// The ReLU MLP: p_ff(I) = relu(W1 x + b1); returns the residual body term W2 p_ff + b2.
std::string emit_feedforward(Module& m, const std::string& p, const std::string& in, int E, int F,
                             const std::string& torch_prefix) {
  m.lines.push_back(p + "_ff(I) :- $" + p + "_w1=" + dims(F, E) + " " + in + "(I), $" + p + "_b1=" + dims(F) +
                    ". [activation=relu]");
  m.torch.push_back({p + "_w1", torch_prefix + "linear1.weight", 0, F, 0, E, false});
  m.torch.push_back({p + "_b1", torch_prefix + "linear1.bias", 0, F, 0, 1, true});
  m.torch.push_back({p + "_w2", torch_prefix + "linear2.weight", 0, E, 0, F, false});
  m.torch.push_back({p + "_b2", torch_prefix + "linear2.bias", 0, E, 0, 1, true});
  return "$" + p + "_w2=" + dims(E, F) + " " + p + "_ff(I), $" + p + "_b2=" + dims(E);
}

}  // namespace

Module transformer_encoder_layer(int d_model, int nhead, int dim_feedforward, const EncoderLayerOptions& o) {
  check_dims(d_model, nhead, dim_feedforward);
  const int E = d_model, F = dim_feedforward;
  const std::string& p = o.prefix;
  const std::string& tp = o.torch_prefix;
  Module m;
  m.kind = "TransformerEncoderLayer";
  m.prefix = p;
  m.input = o.input;
  m.output = o.output.empty() ? p : o.output;
  m.input_dim = m.output_dim = E;
  HeadsSpec sa{p + "_sa", o.input, o.input, E, nhead, o.mask, true, true, tp + "self_attn."};
  if (!o.norm_first) {
    // x1 = norm1(x + SA(x)); out = norm2(x1 + FF(x1))
    std::string proj = emit_heads(m, sa);
    emit_norm(m, p + "_n1", o.input + "(I), " + proj, E, o.norm_affine, tp + "norm1");
    std::string ff = emit_feedforward(m, p, p + "_n1", E, F, tp);
    emit_norm(m, m.output, p + "_n1(I), " + ff, E, o.norm_affine, tp + "norm2");
  } else {
    // x1 = x + SA(norm1(x)); out = x1 + FF(norm2(x1))
    emit_norm(m, p + "_n1", o.input + "(I)", E, o.norm_affine, tp + "norm1");
    sa.query_input = sa.key_input = p + "_n1";
    std::string proj = emit_heads(m, sa);
    m.lines.push_back(p + "_r1(I) :- " + o.input + "(I), " + proj + ".");
    emit_norm(m, p + "_n2", p + "_r1(I)", E, o.norm_affine, tp + "norm2");
    std::string ff = emit_feedforward(m, p, p + "_n2", E, F, tp);
    m.lines.push_back(m.output + "(I) :- " + p + "_r1(I), " + ff + ".");
  }
  return m;
}

Module transformer_encoder(int d_model, int nhead, int dim_feedforward, int num_layers, const EncoderLayerOptions& o) {
  if (num_layers <= 0) throw Error(ErrorKind::Semantic, "num_layers must be positive, got " + std::to_string(num_layers));
  Module m;
  m.kind = "TransformerEncoder";
  m.prefix = o.prefix;
  m.input = o.input;
  m.output = o.output.empty() ? o.prefix : o.output;
  m.input_dim = m.output_dim = d_model;
  std::string in = o.input;
  for (int k = 0; k < num_layers; ++k) {
    EncoderLayerOptions lo = o;
    lo.prefix = o.prefix + "l" + std::to_string(k);
    lo.input = in;
    lo.output = k + 1 == num_layers ? m.output : lo.prefix;
    lo.torch_prefix = o.torch_prefix + "layers." + std::to_string(k) + ".";
    Module layer = transformer_encoder_layer(d_model, nhead, dim_feedforward, lo);
    m.lines.insert(m.lines.end(), layer.lines.begin(), layer.lines.end());
    m.torch.insert(m.torch.end(), layer.torch.begin(), layer.torch.end());
    in = lo.output;
  }
  return m;
}

Module transformer_decoder_layer(int d_model, int nhead, int dim_feedforward, const DecoderLayerOptions& o) {
  check_dims(d_model, nhead, dim_feedforward);
  const int E = d_model, F = dim_feedforward;
  const std::string& p = o.prefix;
  const std::string& tp = o.torch_prefix;
  Module m;
  m.kind = "TransformerDecoderLayer";
  m.prefix = p;
  m.input = o.input;
  m.memory = o.memory;
  m.output = o.output.empty() ? p : o.output;
  m.input_dim = m.output_dim = E;
  HeadsSpec sa{p + "_sa", o.input, o.input, E, nhead, o.self_mask, true, true, tp + "self_attn."};
  HeadsSpec ca{p + "_ca", "", o.memory, E, nhead, o.memory_mask, true, true, tp + "multihead_attn."};
  if (!o.norm_first) {
    // x1 = norm1(x + SA(x)); x2 = norm2(x1 + CA(x1, mem)); out = norm3(x2 + FF(x2))
    std::string sproj = emit_heads(m, sa);
    emit_norm(m, p + "_n1", o.input + "(I), " + sproj, E, o.norm_affine, tp + "norm1");
    ca.query_input = p + "_n1";
    std::string cproj = emit_heads(m, ca);
    emit_norm(m, p + "_n2", p + "_n1(I), " + cproj, E, o.norm_affine, tp + "norm2");
    std::string ff = emit_feedforward(m, p, p + "_n2", E, F, tp);
    emit_norm(m, m.output, p + "_n2(I), " + ff, E, o.norm_affine, tp + "norm3");
  } else {
    // x1 = x + SA(norm1(x)); x2 = x1 + CA(norm2(x1), mem); out = x2 + FF(norm3(x2))
    emit_norm(m, p + "_n1", o.input + "(I)", E, o.norm_affine, tp + "norm1");
    sa.query_input = sa.key_input = p + "_n1";
    std::string sproj = emit_heads(m, sa);
    m.lines.push_back(p + "_r1(I) :- " + o.input + "(I), " + sproj + ".");
    emit_norm(m, p + "_n2", p + "_r1(I)", E, o.norm_affine, tp + "norm2");
    ca.query_input = p + "_n2";
    std::string cproj = emit_heads(m, ca);
    m.lines.push_back(p + "_r2(I) :- " + p + "_r1(I), " + cproj + ".");
    emit_norm(m, p + "_n3", p + "_r2(I)", E, o.norm_affine, tp + "norm3");
    std::string ff = emit_feedforward(m, p, p + "_n3", E, F, tp);
    m.lines.push_back(m.output + "(I) :- " + p + "_r2(I), " + ff + ".");
  }
  return m;
}

namespace detail {

void append(Module& m, const Module& part) {
  m.lines.insert(m.lines.end(), part.lines.begin(), part.lines.end());
  m.torch.insert(m.torch.end(), part.torch.begin(), part.torch.end());
}

void emit_transformer_encoder(Module& m, int d_model, int nhead, int num_encoder_layers, int dim_feedforward,
                              const TransformerOptions& o) {
  const std::string& p = o.prefix;
  // The encoder stack, then encoder.norm: the memory every decoder layer attends to.
  EncoderLayerOptions eo;
  eo.prefix = p + "_e";
  eo.input = o.source;
  eo.output = p + "_encoded";
  eo.mask = o.src_mask;
  eo.norm_first = o.norm_first;
  eo.norm_affine = o.norm_affine;
  eo.torch_prefix = "encoder.";
  append(m, transformer_encoder(d_model, nhead, dim_feedforward, num_encoder_layers, eo));
  emit_norm(m, p + "_memory", eo.output + "(I)", d_model, o.norm_affine, "encoder.norm");
}

void emit_transformer_decoder(Module& m, int d_model, int nhead, int num_decoder_layers, int dim_feedforward,
                              const TransformerOptions& o) {
  const std::string& p = o.prefix;
  // The decoder stack over the target, then decoder.norm.
  std::string in = o.target;
  for (int k = 0; k < num_decoder_layers; ++k) {
    DecoderLayerOptions lo;
    lo.prefix = p + "_d" + std::to_string(k);
    lo.input = in;
    lo.memory = p + "_memory";
    lo.output = lo.prefix;
    lo.self_mask = o.tgt_mask;
    lo.memory_mask = o.memory_mask;
    lo.norm_first = o.norm_first;
    lo.norm_affine = o.norm_affine;
    lo.torch_prefix = "decoder.layers." + std::to_string(k) + ".";
    append(m, transformer_decoder_layer(d_model, nhead, dim_feedforward, lo));
    in = lo.output;
  }
  emit_norm(m, o.output.empty() ? p : o.output, in + "(I)", d_model, o.norm_affine, "decoder.norm");
}

}  // namespace detail

Module transformer(int d_model, int nhead, int num_encoder_layers, int num_decoder_layers, int dim_feedforward,
                   const TransformerOptions& o) {
  check_dims(d_model, nhead, dim_feedforward);
  if (num_encoder_layers <= 0 || num_decoder_layers <= 0)
    throw Error(ErrorKind::Semantic, "num_encoder_layers and num_decoder_layers must be positive, got " +
                                         std::to_string(num_encoder_layers) + " and " + std::to_string(num_decoder_layers));
  Module m;
  m.kind = "Transformer";
  m.prefix = o.prefix;
  m.input = o.source;
  m.memory = o.prefix + "_memory";
  m.output = o.output.empty() ? o.prefix : o.output;
  m.input_dim = m.output_dim = d_model;
  detail::emit_transformer_encoder(m, d_model, nhead, num_encoder_layers, dim_feedforward, o);
  detail::emit_transformer_decoder(m, d_model, nhead, num_decoder_layers, dim_feedforward, o);
  return m;
}

// ---- registrations -----------------------------------------------------------------------
namespace {

std::vector<ParamSpec> layer_sizes() {
  return {int_param("d_model", "size of a token's embedding (E)"),
          int_param("nhead", "attention heads (E is a multiple)"),
          int_param("dim_feedforward", "width of the ReLU MLP")};
}

// The norm flags every layer and stack has; defaults from the options structs (all false).
void add_norm_params(std::vector<ParamSpec>& ps, bool norm_first, bool norm_affine) {
  ps.push_back(bool_param("norm_first", norm_first, "pre-norm (torch's norm_first=True)"));
  ps.push_back(bool_param("norm_affine", norm_affine, "learnable layer-norm gain and bias"));
}

std::vector<ParamSpec> encoder_params(bool stack) {
  const EncoderLayerOptions d;
  std::vector<ParamSpec> ps = layer_sizes();
  if (stack) ps.push_back(int_param("num_layers", "layers of the stack"));
  ps.push_back(string_param("prefix", d.prefix, "prefix of every predicate and weight"));
  ps.push_back(string_param("input", d.input, "predicate/1 of the input sequence"));
  ps.push_back(string_param("output", d.output, "predicate/1 of the output (default: the prefix)"));
  ps.push_back(mask_param("mask", "self-attention mask"));
  add_norm_params(ps, d.norm_first, d.norm_affine);
  ps.push_back(string_param("torch_prefix", d.torch_prefix, "prepended to the torch parameter names"));
  return ps;
}

EncoderLayerOptions encoder_options(const ModuleParams& p) {
  return {p.text("prefix"),     p.text("input"),       p.text("output"),      p.mask("mask"),
          p.flag("norm_first"), p.flag("norm_affine"), p.text("torch_prefix")};
}

}  // namespace

LRNN_ZOO_MODULE(transformer_encoder_layer) {
  return {"torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward), dropout 0, ReLU", encoder_params(false),
          [](const ModuleParams& p) {
            return transformer_encoder_layer(p.integer("d_model"), p.integer("nhead"), p.integer("dim_feedforward"),
                                             encoder_options(p));
          }};
}

LRNN_ZOO_MODULE(transformer_encoder) {
  return {"torch.nn.TransformerEncoder(layer, num_layers) without a final norm", encoder_params(true),
          [](const ModuleParams& p) {
            return transformer_encoder(p.integer("d_model"), p.integer("nhead"), p.integer("dim_feedforward"),
                                       p.integer("num_layers"), encoder_options(p));
          }};
}

LRNN_ZOO_MODULE(transformer_decoder_layer) {
  const DecoderLayerOptions d;
  std::vector<ParamSpec> ps = layer_sizes();
  ps.push_back(string_param("prefix", d.prefix, "prefix of every predicate and weight"));
  ps.push_back(string_param("input", d.input, "predicate/1 of the decoder's input sequence"));
  ps.push_back(string_param("memory", d.memory, "predicate/1 of the encoder's output"));
  ps.push_back(string_param("output", d.output, "predicate/1 of the output (default: the prefix)"));
  ps.push_back(mask_param("self_mask", "self-attention mask (tgt_mask)"));
  ps.push_back(mask_param("memory_mask", "cross-attention mask"));
  add_norm_params(ps, d.norm_first, d.norm_affine);
  ps.push_back(string_param("torch_prefix", d.torch_prefix, "prepended to the torch parameter names"));
  return {"torch.nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward), dropout 0, ReLU", std::move(ps),
          [](const ModuleParams& p) {
            const DecoderLayerOptions o{p.text("prefix"),     p.text("input"),       p.text("memory"),
                                        p.text("output"),     p.mask("self_mask"),   p.mask("memory_mask"),
                                        p.flag("norm_first"), p.flag("norm_affine"), p.text("torch_prefix")};
            return transformer_decoder_layer(p.integer("d_model"), p.integer("nhead"), p.integer("dim_feedforward"), o);
          }};
}

LRNN_ZOO_MODULE(transformer) {
  const TransformerOptions d;
  std::vector<ParamSpec> ps = {int_param("d_model", "size of a token's embedding (E)"),
                               int_param("nhead", "attention heads (E is a multiple)"),
                               int_param("num_encoder_layers", "layers of the encoder stack"),
                               int_param("num_decoder_layers", "layers of the decoder stack"),
                               int_param("dim_feedforward", "width of the ReLU MLP"),
                               string_param("prefix", d.prefix, "prefix of every predicate and weight"),
                               string_param("source", d.source, "predicate/1 of the encoder's input"),
                               string_param("target", d.target, "predicate/1 of the decoder's input"),
                               string_param("output", d.output, "predicate/1 of the output (default: the prefix)"),
                               mask_param("src_mask", "encoder self-attention mask"),
                               mask_param("tgt_mask", "decoder self-attention mask"),
                               mask_param("memory_mask", "cross-attention mask")};
  add_norm_params(ps, d.norm_first, d.norm_affine);
  return {"torch.nn.Transformer(d_model, nhead, ...), dropout 0, ReLU, batch_first", std::move(ps),
          [](const ModuleParams& p) {
            TransformerOptions o;
            o.prefix = p.text("prefix");
            o.source = p.text("source");
            o.target = p.text("target");
            o.output = p.text("output");
            o.src_mask = p.mask("src_mask");
            o.tgt_mask = p.mask("tgt_mask");
            o.memory_mask = p.mask("memory_mask");
            o.norm_first = p.flag("norm_first");
            o.norm_affine = p.flag("norm_affine");
            return transformer(p.integer("d_model"), p.integer("nhead"), p.integer("num_encoder_layers"),
                               p.integer("num_decoder_layers"), p.integer("dim_feedforward"), o);
          }};
}

// ---- data ------------------------------------------------------------------------------
std::vector<double> positional_encoding(int n, int d) {
  std::vector<double> pe(size_t(n) * size_t(d), 0.0);
  for (int pos = 0; pos < n; ++pos)
    for (int i = 0; 2 * i < d; ++i) {
      const double angle = pos / std::pow(10000.0, 2.0 * i / d);
      pe[size_t(pos) * d + 2 * i] = std::sin(angle);
      if (2 * i + 1 < d) pe[size_t(pos) * d + 2 * i + 1] = std::cos(angle);
    }
  return pe;
}

std::vector<Literal> sequence_facts(const std::string& predicate, const double* x, int n, int d) {
  std::vector<Literal> facts(n);
  for (int i = 0; i < n; ++i) {
    Literal& l = facts[i];
    l.predicate = predicate;
    l.args.push_back(Term::number(std::to_string(i)));
    ValueSpec v;
    v.kind = d == 1 ? ValueSpec::Kind::Scalar : ValueSpec::Kind::Vector;
    v.rows = d;
    v.cols = 1;
    v.data.assign(x + size_t(i) * d, x + size_t(i + 1) * d);
    v.fixed = true;
    l.weight = std::move(v);
  }
  return facts;
}

ExampleAst sequence_example(const std::string& predicate, const double* x, int n, int d) {
  ExampleAst e;
  e.facts = sequence_facts(predicate, x, n, d);
  return e;
}

std::vector<Literal> sequence_queries(const std::string& predicate, int n) {
  std::vector<Literal> q(n);
  for (int i = 0; i < n; ++i) {
    q[i].predicate = predicate;
    q[i].args.push_back(Term::number(std::to_string(i)));
  }
  return q;
}

}  // namespace lrnn::zoo
