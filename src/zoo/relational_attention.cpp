// Relational attention over graph edges (Diao & Loynd 2022, node update), registered as the
// zoo module `relational_attention`: for an edge edge(I, J) with embedding e_IJ (J sends to I),
//   q_IJ = Wqn x_I + Wqe e_IJ + bq,  k_IJ = Wkn x_J + Wke e_IJ + bk,  v_IJ = Wvn x_J + Wve e_IJ + bv,
//   out_I = Wo concat_h(sum_J softmax_J(q_IJ.k_IJ / sqrt(hd)) v_IJ) + bo.
// The whole module is this file and python/lrnn/nn/zoo/relational_attention.py: the registry
// makes it reachable by name (docs/architecture.md "How to add a zoo module in C++").
#include <cmath>

#include "lrnn/diagnostics.hpp"
#include "zoo/text.hpp"

namespace lrnn::zoo {

namespace {

using detail::dims;

struct Options {
  std::string prefix, node, edge, output;  // node(I): [node_dim]; edge(I, J): [edge_dim]
  Mask mask;
};

Options options(const ModuleParams& p) {
  return {p.text("prefix"), p.text("node"), p.text("edge"), p.text("output"), p.mask("mask")};
}

Module relational_attention(const ModuleParams& params) {
  const Options o = options(params);
  const int E = params.integer("node_dim"), De = params.integer("edge_dim"), H = params.integer("num_heads");
  if (E <= 0 || De <= 0 || H <= 0 || E % H != 0)
    throw Error(ErrorKind::Semantic, "node_dim (" + std::to_string(E) + ") must be a positive multiple of num_heads (" +
                                          std::to_string(H) + ") and edge_dim positive");
  const int hd = E / H;
  Module m;
  m.kind = "RelationalAttention";
  m.prefix = o.prefix;
  m.input = o.node;
  m.edge = o.edge;
  m.output = o.output.empty() ? o.prefix : o.output;
  m.input_dim = m.output_dim = E;
  const std::string& p = o.prefix;
  std::string mask;
  for (const auto& l : o.mask.literals) mask += ", " + l;
  m.lines.push_back("<" + detail::number(1.0 / std::sqrt(double(hd))) + "> " + p + "_d_k.");
  std::string out_body;
  for (int h = 0; h < H; ++h) {
    const std::string hs = std::to_string(h);
    // The query reads the receiving node I, keys and values the sending node J; all three
    // add a projection of the edge embedding e_IJ.
    const char* names[3] = {"q", "k", "v"};
    for (int which = 0; which < 3; ++which) {
      const std::string n = names[which];
      const std::string node_var = which == 0 ? "I" : "J";
      m.lines.push_back(p + "_" + n + hs + "(I, J) :- $" + p + "_w" + n + "n" + hs + "=" + dims(hd, E) + " " + o.node +
                        "(" + node_var + "), $" + p + "_w" + n + "e" + hs + "=" + dims(hd, De) + " " + o.edge +
                        "(I, J), $" + p + "_b" + n + hs + "=" + dims(hd) + ".");
    }
    m.lines.push_back(p + "_w" + hs + "(I, J) :- " + p + "_d_k, " + p + "_k" + hs + "(I, J)^T, " + p + "_q" + hs +
                      "(I, J)" + mask + ". [combination=product, aggregation=softmax(" +
                      detail::softmax_over(o.mask) + ")]");
    m.lines.push_back(p + "_a" + hs + "(I) :- " + p + "_w" + hs + "(I, J), " + p + "_v" + hs +
                      "(I, J). [combination=product, aggregation=sum]");
    out_body += (h ? ", $" : "$") + p + "_wo" + hs + "=" + dims(E, hd) + " " + p + "_a" + hs + "(I)";
  }
  m.lines.push_back(m.output + "(I) :- " + out_body + ", $" + p + "_bo=" + dims(E) + ".");
  return m;
}

}  // namespace

LRNN_ZOO_MODULE(relational_attention) {
  return {"relational attention over graph edges (Diao & Loynd 2022, node update)",
          {int_param("node_dim", "size of a node's embedding (E)"),
           int_param("edge_dim", "size of an edge's embedding"),
           int_param("num_heads", "attention heads (E is a multiple)", 1),
           string_param("prefix", "rel", "prefix of every predicate and weight"),
           string_param("node", "node", "predicate/1 of the node embeddings"),
           string_param("edge", "edge", "predicate/2 of the edge embeddings, edge(I, J): J sends to I"),
           string_param("output", "", "predicate/1 of the output (default: the prefix)"),
           mask_param("mask", "body literals restricting the senders J of a node I")},
          relational_attention};
}

}  // namespace lrnn::zoo
