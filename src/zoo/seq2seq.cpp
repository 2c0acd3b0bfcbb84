// The sequence-to-sequence transformer of "Attention Is All You Need" as one template:
// token embeddings (one table for source, target and, tied, the output projection),
// sinusoidal positions, the encoder-decoder of zoo::transformer, logits per target position;
// and the same model cut at the encoder's output, for decoding with the memory computed once.
#include <cmath>

#include "lrnn/diagnostics.hpp"
#include "zoo/text.hpp"

namespace lrnn::zoo {

namespace {

struct Spec {
  int vocab, d_model, nhead, num_encoder_layers, num_decoder_layers, dim_feedforward;
  const Seq2SeqOptions& o;
  const std::string& p() const { return o.prefix; }
  TransformerOptions transformer() const {
    TransformerOptions to;
    to.prefix = o.prefix + "_tf";
    to.source = o.prefix + "_source";
    to.target = o.prefix + "_target";
    to.tgt_mask = Mask::causal();
    to.norm_first = o.norm_first;
    to.norm_affine = o.norm_affine;
    return to;
  }
};

void check(const Spec& s) {
  if (s.vocab < 2) throw Error(ErrorKind::Semantic, "seq2seq: vocab must be at least 2, got " + std::to_string(s.vocab));
  if (s.o.max_len < 1)
    throw Error(ErrorKind::Semantic, "seq2seq: max_len must be positive, got " + std::to_string(s.o.max_len));
  if (s.o.source.empty() || s.o.target.empty() || s.o.source == s.o.target)
    throw Error(ErrorKind::Semantic, "seq2seq: the source and target predicates must be two different names");
  if (s.num_encoder_layers <= 0 || s.num_decoder_layers <= 0)
    throw Error(ErrorKind::Semantic, "seq2seq: num_encoder_layers and num_decoder_layers must be positive, got " +
                                         std::to_string(s.num_encoder_layers) + " and " +
                                         std::to_string(s.num_decoder_layers));
  if (s.d_model <= 0 || s.nhead <= 0 || s.dim_feedforward <= 0 || s.d_model % s.nhead != 0)
    throw Error(ErrorKind::Semantic, "seq2seq: d_model (" + std::to_string(s.d_model) +
                                         ") must be a positive multiple of nhead (" + std::to_string(s.nhead) +
                                         ") and dim_feedforward (" + std::to_string(s.dim_feedforward) + ") positive");
}

Module start(const Spec& s, const std::string& kind) {
  Module m;
  m.kind = kind;
  m.prefix = s.p();
  m.input_dim = s.vocab;
  // The table as a learnable fact, so that one parameter is read as V x d (embedding: its
  // transpose times a one-hot column) and as the output projection (times h).
  m.lines.push_back("$" + s.p() + "_emb=" + detail::dims(s.vocab, s.d_model) + " " + s.p() + "_table.");
  m.torch.push_back({s.p() + "_emb", "embedding.weight", 0, s.vocab, 0, s.d_model, false});
  const std::vector<double> pe = positional_encoding(s.o.max_len, s.d_model);
  for (int i = 0; i < s.o.max_len; ++i) {
    std::string row = "<[";
    for (int k = 0; k < s.d_model; ++k) row += (k ? ", " : "") + detail::number(pe[size_t(i) * s.d_model + k]);
    m.lines.push_back(row + "]> " + s.p() + "_pos(" + std::to_string(i) + ").");
  }
  return m;
}

// `<name>(I)`: the embedding of the one-hot `in(I)`, times sqrt(d_model) (as torch scales it)
// plus the position's encoding.
void embed(Module& m, const Spec& s, const std::string& in, const std::string& name) {
  // Appended, not "<" + number(...): GCC 12 warns (-Wrestrict, a false positive) on the
  // literal + temporary string form here.
  std::string scale = "<";
  scale += detail::number(std::sqrt(static_cast<double>(s.d_model)));
  scale += "> ";
  m.lines.push_back(name + "_e(I) :- " + s.p() + "_table^T, " + in + "(I). [combination=product]");
  m.lines.push_back(name + "(I) :- " + scale + name + "_e(I), " + s.p() + "_pos(I).");
}

// The logits of every target position from the decoder's output.
void emit_logits(Module& m, const Spec& s, const std::string& decoded) {
  if (s.o.tie_output) {
    m.lines.push_back(m.output + "(I) :- " + s.p() + "_table, " + decoded + "(I). [combination=product]");
    return;
  }
  m.lines.push_back(m.output + "(I) :- $" + s.p() + "_out_w=" + detail::dims(s.vocab, s.d_model) + " " + decoded +
                    "(I), $" + s.p() + "_out_b=" + detail::dims(s.vocab) + ".");
  m.torch.push_back({s.p() + "_out_w", "out.weight", 0, s.vocab, 0, s.d_model, false});
  m.torch.push_back({s.p() + "_out_b", "out.bias", 0, s.vocab, 0, 1, true});
}

// The transformer's torch names sit under "transformer." in TorchSeq2Seq.
void append_transformer(Module& m, Module&& part) {
  for (TorchSlice& t : part.torch) t.torch_name = "transformer." + t.torch_name;
  detail::append(m, part);
}

}  // namespace

Module seq2seq(int vocab, int d_model, int nhead, int num_encoder_layers, int num_decoder_layers, int dim_feedforward,
               const Seq2SeqOptions& o) {
  const Spec s{vocab, d_model, nhead, num_encoder_layers, num_decoder_layers, dim_feedforward, o};
  check(s);
  Module m = start(s, "Seq2Seq");
  m.input = o.source;
  m.memory = o.target;
  m.output = s.p() + "_out";
  m.output_dim = vocab;
  embed(m, s, o.source, s.p() + "_source");
  embed(m, s, o.target, s.p() + "_target");
  const TransformerOptions to = s.transformer();
  append_transformer(m, transformer(d_model, nhead, num_encoder_layers, num_decoder_layers, dim_feedforward, to));
  emit_logits(m, s, to.prefix);
  return m;
}

Seq2SeqParts seq2seq_parts(int vocab, int d_model, int nhead, int num_encoder_layers, int num_decoder_layers,
                           int dim_feedforward, const Seq2SeqOptions& o) {
  const Spec s{vocab, d_model, nhead, num_encoder_layers, num_decoder_layers, dim_feedforward, o};
  check(s);
  const TransformerOptions to = s.transformer();
  Seq2SeqParts parts{start(s, "Seq2SeqEncoder"), start(s, "Seq2SeqDecoder")};
  Module& enc = parts.encoder;
  enc.input = o.source;
  enc.output = to.prefix + "_memory";
  enc.output_dim = d_model;
  embed(enc, s, o.source, s.p() + "_source");
  Module encoder_half;
  detail::emit_transformer_encoder(encoder_half, d_model, nhead, num_encoder_layers, dim_feedforward, to);
  append_transformer(enc, std::move(encoder_half));
  Module& dec = parts.decoder;
  dec.input = o.target;
  dec.memory = to.prefix + "_memory";  // input facts here: the encoder part's output
  dec.output = s.p() + "_out";
  dec.output_dim = vocab;
  embed(dec, s, o.target, s.p() + "_target");
  Module decoder_half;
  detail::emit_transformer_decoder(decoder_half, d_model, nhead, num_decoder_layers, dim_feedforward, to);
  append_transformer(dec, std::move(decoder_half));
  emit_logits(dec, s, to.prefix);
  return parts;
}

LRNN_ZOO_MODULE(seq2seq) {
  const Seq2SeqOptions d;
  return {"the sequence-to-sequence transformer of \"Attention Is All You Need\" over a vocabulary",
          {int_param("vocab", "tokens of the vocabulary (V)", {}, 2),
           int_param("d_model", "size of a token's embedding (E)"),
           int_param("nhead", "attention heads (E is a multiple)"),
           int_param("num_encoder_layers", "layers of the encoder stack"),
           int_param("num_decoder_layers", "layers of the decoder stack"),
           int_param("dim_feedforward", "width of the ReLU MLP"),
           string_param("prefix", d.prefix, "prefix of every predicate and weight"),
           string_param("source", d.source, "predicate/1 of the one-hot source tokens"),
           string_param("target", d.target, "predicate/1 of the one-hot decoder inputs"),
           int_param("max_len", "positions with an encoding", d.max_len),
           bool_param("tie_output", d.tie_output, "the output projection is the embedding table"),
           bool_param("norm_first", d.norm_first, "pre-norm (torch's norm_first=True)"),
           bool_param("norm_affine", d.norm_affine, "learnable layer-norm gain and bias")},
          [](const ModuleParams& p) {
            const Seq2SeqOptions o{p.text("prefix"),     p.text("source"),     p.text("target"),
                                   p.integer("max_len"), p.flag("tie_output"), p.flag("norm_first"),
                                   p.flag("norm_affine")};
            return seq2seq(p.integer("vocab"), p.integer("d_model"), p.integer("nhead"),
                           p.integer("num_encoder_layers"), p.integer("num_decoder_layers"),
                           p.integer("dim_feedforward"), o);
          }};
}

}  // namespace lrnn::zoo
