// A compiled RASP transformer as an lrnn template: the same weights as attention and MLP
// rules (the zoo's form), so the engine runs it, trains it and draws it. Exact: the
// engine's forward of the template equals CompiledModel::forward (tests compare them).
//
// Input: one fact per position, `<[k|...]> rasp_input(p)`, a one-hot of the token (or of
// BOS at p = 0) and of the position; `res0(P)` embeds it. Layer l: one attention rule per
// head (`att<l>_<h>(Q, K)`, softmax over K, `@leq(K, Q)` when causal), its value rule
// (`head<l>_<h>(Q)`), the residual sum (`mid<l>(P)`), the MLP (`hid<l>(P)`, relu) and the
// residual after it (`res<l>(P)`). `residual(P)` is the last residual, read by the queries.
#include <sstream>

#include "lrnn/rasp.hpp"
#include "syntax/number_text.hpp"

namespace lrnn::rasp {

size_t compiled_input_count(size_t vocab, int max_len);
std::vector<Value> compiled_input(const std::vector<Value>& vocab, int max_len, size_t k);

namespace {

// A rows x cols row-major matrix in the template syntax ([[..], [..]]).
std::string matrix(const std::vector<double>& m, int rows, int cols) {
  std::string out = "[";
  for (int r = 0; r < rows; ++r) {
    out += r ? ", [" : "[";
    for (int c = 0; c < cols; ++c) out += (c ? ", " : "") + shortest_number(m[static_cast<size_t>(r) * cols + c]);
    out += "]";
  }
  return out + "]";
}

std::string vector_text(const std::vector<double>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + shortest_number(v[i]);
  return out + "]";
}

}  // namespace

int CompiledModel::input_width() const { return static_cast<int>(vocab.size()) + 1 + max_len; }

namespace {

// A named weight as the options write it: its values (learnable), fixed, or its shape only.
std::string weight(const CompiledTemplateOptions& o, const std::string& name, const std::string& values, int rows,
                   int cols) {
  if (o.random) return "$" + name + "={" + std::to_string(rows) + (cols > 0 ? "," + std::to_string(cols) : "") + "}";
  return "$" + name + "=" + (o.fixed ? "<" + values + ">" : values);
}

}  // namespace

std::string CompiledModel::template_text(const CompiledTemplateOptions& o) const {
  if (o.fixed && o.random)
    throw Error(ErrorKind::Semantic, "a compiled template's weights are either fixed or randomly initialised, not both");
  const int d = d_model, v = static_cast<int>(vocab.size()), width = input_width();
  // The embedding's columns: the tokens, BOS, then the positions.
  std::vector<double> embedding(static_cast<size_t>(d) * width, 0.0);
  for (int r = 0; r < d; ++r) {
    for (int t = 0; t < v; ++t) embedding[static_cast<size_t>(r) * width + t] = token_embedding[static_cast<size_t>(t) * d + r];
    embedding[static_cast<size_t>(r) * width + v] = bos_embedding[r];
    for (int p = 0; p < max_len; ++p)
      embedding[static_cast<size_t>(r) * width + v + 1 + p] = position_embedding[static_cast<size_t>(p) * d + r];
  }
  std::ostringstream t;
  t << "% A RASP program compiled to a transformer (lrnn rasp compile): " << layers.size() << " layers, d_model "
    << d << ", max_len " << max_len << (causal ? ", causal" : "") << ".\n"
    << "% Input facts: rasp_input(0) is BOS, rasp_input(p) token p-1 (CompiledModel::example_text).\n"
    << "% residual(P) is the final residual stream; its subspaces are listed by `lrnn rasp compile` (table).\n";
  t << "res0(P) :- " << weight(o, "embedding", matrix(embedding, d, width), d, width) << " rasp_input(P).\n";
  for (size_t li = 0; li < layers.size(); ++li) {
    const CompiledLayer& layer = layers[li];
    const std::string l = std::to_string(li + 1), prev = "res" + std::to_string(li);
    std::string mid_body = prev + "(P)";
    for (size_t h = 0; h < layer.heads.size(); ++h) {
      const CompiledHead& head = layer.heads[h];
      const std::string id = l + "_" + std::to_string(h);
      t << "% layer " << l << ", head " << h << ": " << head.output << " attending with " << head.selector << "\n";
      t << "att" << id << "(Q, K) :- " << prev << "(Q)^T, " << weight(o, "qk" + id, matrix(head.qk, d, d), d, d) << " " << prev
        << "(K)" << (causal ? ", @leq(K, Q)" : "") << ". [combination=product, aggregation=softmax(K)]\n";
      t << "head" << id << "(Q) :- att" << id << "(Q, K), " << weight(o, "ov" + id, matrix(head.ov, d, d), d, d) << " " << prev
        << "(K). [combination=product, aggregation=sum]\n";
      mid_body += ", head" + id + "(P)";
    }
    // the residual after attention (the heads' outputs summed into it)
    std::string mid = "mid" + l;
    if (layer.heads.empty()) {
      mid = prev;
    } else {
      t << mid << "(P) :- " << mid_body << ".\n";
    }
    const CompiledMlp& mlp = layer.mlp;
    if (mlp.hidden == 0) {
      t << "res" << l << "(P) :- " << mid << "(P).\n";
      continue;
    }
    t << "% layer " << l << ", MLP computing";
    for (const auto& o : mlp.outputs) t << " " << o;
    t << "\n";
    t << "hid" << l << "(P) :- " << weight(o, "w1_" + l, matrix(mlp.w1, mlp.hidden, d), mlp.hidden, d) << " " << mid
      << "(P), " << weight(o, "b1_" + l, vector_text(mlp.b1), mlp.hidden, 0) << ". [activation=relu]\n";
    t << "res" << l << "(P) :- " << mid << "(P), " << weight(o, "w2_" + l, matrix(mlp.w2, d, mlp.hidden), d, mlp.hidden)
      << " hid" << l << "(P).\n";
  }
  t << "residual(P) :- res" << layers.size() << "(P).\n";
  if (o.readout_scale > 0) {
    const ResidualSpace& out = readout_space();
    const int classes = static_cast<int>(out.values.size());
    std::vector<double> readout(static_cast<size_t>(classes) * d, 0.0);
    for (int c = 0; c < classes; ++c) readout[static_cast<size_t>(c) * d + out.offset + c] = o.readout_scale;
    CompiledTemplateOptions learnable = o;
    learnable.fixed = false;  // the readout always learns
    t << "% the readout: class logits over the values of " << out.name << "\n";
    t << "rasp_out(P) :- " << weight(learnable, "readout", matrix(readout, classes, d), classes, d) << " residual(P).\n";
  }
  return t.str();
}

const ResidualSpace& CompiledModel::readout_space() const {
  const ResidualSpace& out = spaces.at(output_space);
  if (out.numerical || out.width != static_cast<int>(out.values.size()) || out.values.empty())
    throw Error(ErrorKind::Semantic, "the output " + out.name +
                                         " is not categorical: a readout of class logits needs one dimension per value");
  return out;
}

std::string CompiledModel::readout_query_text(const std::vector<Value>& outputs) const {
  const ResidualSpace& out = readout_space();
  std::string q;
  for (size_t p = 0; p < outputs.size(); ++p) {
    size_t cls = out.values.size();
    for (size_t c = 0; c < out.values.size() && cls == out.values.size(); ++c)
      if (type_name(out.values[c]) == type_name(outputs[p]) && repr(out.values[c]) == repr(outputs[p])) cls = c;
    if (cls == out.values.size())
      throw Error(ErrorKind::Semantic, "the target " + repr(outputs[p]) + " at position " + std::to_string(p) +
                                           " is not a value of the output " + out.name + " (the readout's classes)");
    std::string onehot = "[";
    for (size_t c = 0; c < out.values.size(); ++c) onehot += std::string(c ? ", " : "") + (c == cls ? "1" : "0");
    q += (p ? ", " : "") + onehot + "] rasp_out(" + std::to_string(p + 1) + ")";
  }
  return q;
}

std::string CompiledModel::example_text(const std::vector<Value>& input) const {
  const std::vector<size_t> tokens = token_indices(input);
  const size_t v = vocab.size();
  const int width = input_width();
  std::ostringstream e;
  e << "<[" << width << "|" << v << ":1]> rasp_input(0)";
  for (size_t i = 0; i < tokens.size(); ++i)
    e << ", <[" << width << "|" << tokens[i] << ":1, " << v + 1 + i << ":1]> rasp_input(" << i + 1 << ")";
  return e.str();
}

std::string CompiledModel::query_text(const std::vector<Value>& input) const {
  std::string q;
  for (size_t p = 0; p <= input.size(); ++p) q += (p ? ", " : "") + std::string("residual(") + std::to_string(p) + ")";
  return q;
}

}  // namespace lrnn::rasp

namespace lrnn::rasp {

CompiledModel::ReadoutData CompiledModel::readout_data(size_t max_inputs) const {
  const size_t total = compiled_input_count(vocab.size(), max_len);
  if (total > max_inputs)
    throw Error(ErrorKind::Semantic, "the program's pairs are " + (total == SIZE_MAX ? std::string("too many") : std::to_string(total)) +
                                         " inputs, more than the limit " + std::to_string(max_inputs));
  ReadoutData data;
  for (size_t k = 0; k < total; ++k) {
    const std::vector<Value> input = compiled_input(vocab, max_len, k);
    const std::string id = "s" + std::to_string(k);
    data.examples += id + " :- " + example_text(input) + ".\n";
    data.queries += id + " :- " + readout_query_text(run(program, input, convention)) + ".\n";
  }
  data.count = total;
  return data;
}

}  // namespace lrnn::rasp
