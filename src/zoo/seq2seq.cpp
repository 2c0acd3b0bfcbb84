// The sequence-to-sequence transformer of "Attention Is All You Need" as one template:
// token embeddings (one table for source, target and, tied, the output projection),
// sinusoidal positions, the encoder-decoder of zoo::transformer, logits per target position.
#include <cmath>

#include "lrnn/diagnostics.hpp"
#include "zoo/text.hpp"

namespace lrnn::zoo {

Module seq2seq(int vocab, int d_model, int nhead, int num_encoder_layers, int num_decoder_layers, int dim_feedforward,
               const Seq2SeqOptions& o) {
  if (vocab < 2) throw Error(ErrorKind::Semantic, "seq2seq: vocab must be at least 2, got " + std::to_string(vocab));
  if (o.max_len < 1) throw Error(ErrorKind::Semantic, "seq2seq: max_len must be positive, got " + std::to_string(o.max_len));
  if (o.source.empty() || o.target.empty() || o.source == o.target)
    throw Error(ErrorKind::Semantic, "seq2seq: the source and target predicates must be two different names");
  const std::string& p = o.prefix;
  const int V = vocab, d = d_model;
  Module m;
  m.kind = "Seq2Seq";
  m.prefix = p;
  m.input = o.source;
  m.memory = o.target;
  m.output = p + "_out";
  m.input_dim = V;
  m.output_dim = V;
  // The table as a learnable fact, so that one parameter is read as V x d (embedding:
  // its transpose times a one-hot column) and as the output projection (times h).
  m.lines.push_back("$" + p + "_emb=" + detail::dims(V, d) + " " + p + "_table.");
  m.torch.push_back({p + "_emb", "embedding.weight", 0, V, 0, d, false});
  const std::vector<double> pe = positional_encoding(o.max_len, d);
  for (int i = 0; i < o.max_len; ++i) {
    std::string row = "<[";
    for (int k = 0; k < d; ++k) row += (k ? ", " : "") + detail::number(pe[size_t(i) * d + k]);
    m.lines.push_back(row + "]> " + p + "_pos(" + std::to_string(i) + ").");
  }
  // torch scales the embedding by sqrt(d_model) before adding the positions.
  const std::string scale = "<" + detail::number(std::sqrt(static_cast<double>(d))) + "> ";
  for (const auto& [in, name] : {std::pair{o.source, p + "_source"}, std::pair{o.target, p + "_target"}}) {
    m.lines.push_back(name + "_e(I) :- " + p + "_table^T, " + in + "(I). [combination=product]");
    m.lines.push_back(name + "(I) :- " + scale + name + "_e(I), " + p + "_pos(I).");
  }
  TransformerOptions to;
  to.prefix = p + "_tf";
  to.source = p + "_source";
  to.target = p + "_target";
  to.tgt_mask = Mask::causal();
  to.norm_first = o.norm_first;
  to.norm_affine = o.norm_affine;
  Module tf = transformer(d_model, nhead, num_encoder_layers, num_decoder_layers, dim_feedforward, to);
  m.lines.insert(m.lines.end(), tf.lines.begin(), tf.lines.end());
  for (TorchSlice s : tf.torch) {
    s.torch_name = "transformer." + s.torch_name;
    m.torch.push_back(s);
  }
  if (o.tie_output) {
    m.lines.push_back(m.output + "(I) :- " + p + "_table, " + tf.output + "(I). [combination=product]");
  } else {
    m.lines.push_back(m.output + "(I) :- $" + p + "_out_w=" + detail::dims(V, d) + " " + tf.output + "(I), $" + p +
                      "_out_b=" + detail::dims(V) + ".");
    m.torch.push_back({p + "_out_w", "out.weight", 0, V, 0, d, false});
    m.torch.push_back({p + "_out_b", "out.bias", 0, V, 0, 1, true});
  }
  return m;
}

}  // namespace lrnn::zoo
