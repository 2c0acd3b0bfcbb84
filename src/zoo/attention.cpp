// Attention generators: masks, the shared head emission, Attention and MultiheadAttention.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "syntax/number_text.hpp"
#include "zoo/text.hpp"

namespace lrnn::zoo {

// ---- masks -----------------------------------------------------------------------------
Mask Mask::causal() { return Mask{{"@leq(J, I)"}, "causal"}; }

Mask Mask::sliding_window(int w) {
  if (w < 0) throw Error(ErrorKind::Semantic, "sliding window width must be >= 0, got " + std::to_string(w));
  return Mask{{"@sub(I, J, D)", "@geq(D, 0)", "@leq(D, " + std::to_string(w) + ")"},
              "window(" + std::to_string(w) + ")"};
}

Mask Mask::strided(int s) {
  if (s <= 0) throw Error(ErrorKind::Semantic, "stride must be > 0, got " + std::to_string(s));
  return Mask{{"@sub(I, J, D)", "@mod(D, " + std::to_string(s) + ", 0)"},
              "strided(" + std::to_string(s) + ")"};
}

Mask Mask::custom(const std::string& literals) {
  // Parsed as the body of a rule so a malformed mask fails here, with its own span.
  Rule r = parse_rule("mask(I, J) :- " + literals, "<mask>");
  Mask m;
  for (const Literal& l : r.body) m.literals.push_back(print_literal(l));
  if (r.offset) throw Error(ErrorKind::Semantic, r.offset->span, "a mask holds literals, not an offset");
  m.label = "custom";
  return m;
}

Mask Mask::operator&(const Mask& other) const {
  Mask m = *this;
  for (const auto& l : other.literals) {
    bool seen = false;
    for (const auto& k : m.literals) seen = seen || k == l;
    if (!seen) m.literals.push_back(l);
  }
  m.label = label.empty() ? other.label : other.label.empty() ? label : label + "&" + other.label;
  return m;
}

// ---- Module ----------------------------------------------------------------------------
std::string Module::text() const {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TemplateAst Module::ast() const { return parse_template(text(), "<zoo:" + kind + ">"); }

namespace detail {

std::string number(double v) { return shortest_number(v); }

std::string filled_vector(int n, double v) {
  std::string s = "[";
  std::string x = number(v);
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + x;
  return s + "]";
}

std::string dims(int rows, int cols) { return "{" + std::to_string(rows) + "," + std::to_string(cols) + "}"; }
std::string dims(int rows) { return "{" + std::to_string(rows) + "}"; }

std::string mask_suffix(const Mask& mask) {
  std::string s;
  for (const auto& l : mask.literals) s += ", " + l;
  return s;
}

std::string softmax_over(const Mask& mask) {
  // softmax(J) normalises across the groundings that differ only in J; a mask's helper
  // variables (D = I - J) differ together with J, so they join the normalised variables:
  // the softmax then runs over every key J allowed for one query I.
  std::string over = "J";
  if (mask.empty()) return over;
  std::string body;
  for (const auto& l : mask.literals) body += (body.empty() ? "" : ", ") + l;
  Rule r = parse_rule("mask(I, J) :- " + body, "<mask>");
  std::vector<std::string> seen = {"I", "J"};
  for (const Literal& l : r.body)
    for (const Term& t : l.args)
      if (t.is_variable() && t.text != "_" && std::find(seen.begin(), seen.end(), t.text) == seen.end()) {
        seen.push_back(t.text);
        over += ", " + t.text;
      }
  return over;
}

std::string emit_heads(Module& m, const HeadsSpec& spec) {
  const int E = spec.embed_dim, H = spec.heads;
  if (E <= 0 || H <= 0 || E % H != 0)
    throw Error(ErrorKind::Semantic, "embed_dim (" + std::to_string(E) + ") must be a positive multiple of num_heads (" +
                                          std::to_string(H) + ")");
  const int hd = E / H;
  const std::string& p = spec.prefix;
  m.lines.push_back("<" + number(1.0 / std::sqrt(double(hd))) + "> " + p + "_d_k.");
  const char* names[3] = {"q", "k", "v"};
  for (int h = 0; h < H; ++h) {
    const std::string hs = std::to_string(h);
    for (int which = 0; which < 3; ++which) {
      const std::string n = names[which];
      const std::string& in = which == 0 ? spec.query_input : spec.key_input;
      std::string line = p + "_" + n + hs + "(I) :- $" + p + "_w" + n + hs + "=" + dims(hd, E) + " " + in + "(I)";
      if (spec.bias) line += ", $" + p + "_b" + n + hs + "=" + dims(hd);
      m.lines.push_back(line + ".");
      if (spec.project) {
        const int row0 = which * E + h * hd;
        m.torch.push_back({p + "_w" + n + hs, spec.torch_prefix + "in_proj_weight", row0, row0 + hd, 0, E, false});
        if (spec.bias)
          m.torch.push_back({p + "_b" + n + hs, spec.torch_prefix + "in_proj_bias", row0, row0 + hd, 0, 1, true});
      }
    }
    m.lines.push_back(p + "_w" + hs + "(I, J) :- " + p + "_d_k, " + p + "_k" + hs + "(J)^T, " + p + "_q" + hs + "(I)" +
                      mask_suffix(spec.mask) + ". [combination=product, aggregation=softmax(" +
                      softmax_over(spec.mask) + ")]");
    m.lines.push_back(p + "_a" + hs + "(I) :- " + p + "_w" + hs + "(I, J), " + p + "_v" + hs +
                      "(J). [combination=product, aggregation=sum]");
  }
  if (!spec.project) {
    std::string body;
    for (int h = 0; h < H; ++h) body += (h ? ", " : "") + p + "_a" + std::to_string(h) + "(I)";
    return body;
  }
  std::string body;
  for (int h = 0; h < H; ++h) {
    const std::string hs = std::to_string(h);
    body += (h ? ", $" : "$") + p + "_wo" + hs + "=" + dims(E, hd) + " " + p + "_a" + hs + "(I)";
    m.torch.push_back({p + "_wo" + hs, spec.torch_prefix + "out_proj.weight", 0, E, h * hd, (h + 1) * hd, false});
  }
  if (spec.bias) {
    body += ", $" + p + "_bo=" + dims(E);
    m.torch.push_back({p + "_bo", spec.torch_prefix + "out_proj.bias", 0, E, 0, 1, true});
  }
  return body;
}

void emit_norm(Module& m, const std::string& name, const std::string& body, int dim, bool affine,
               const std::string& torch_name) {
  if (!affine) {
    m.lines.push_back(name + "(I) :- " + body + ". [activation=norm]");
    return;
  }
  m.lines.push_back(name + "_ln(I) :- " + body + ". [activation=norm]");
  m.lines.push_back(name + "(I) :- $" + name + "_g=" + filled_vector(dim, 1.0) + " " + name + "_ln(I), $" + name +
                    "_b=" + filled_vector(dim, 0.0) + ".");
  m.torch.push_back({name + "_g", torch_name + ".weight", 0, dim, 0, 1, true});
  m.torch.push_back({name + "_b", torch_name + ".bias", 0, dim, 0, 1, true});
}

}  // namespace detail

using detail::dims;
using detail::emit_heads;
using detail::HeadsSpec;

Module attention(int embed_dim, const AttentionOptions& o) {
  Module m;
  m.kind = "Attention";
  m.prefix = o.prefix;
  m.input = o.input;
  m.memory = o.key_input;
  m.output = o.output.empty() ? o.prefix : o.output;
  m.input_dim = m.output_dim = embed_dim;
  HeadsSpec spec{o.prefix, o.input, o.key_input.empty() ? o.input : o.key_input, embed_dim, 1, o.mask, o.bias, false, ""};
  std::string heads = emit_heads(m, spec);
  m.lines.push_back(m.output + "(I) :- " + heads + ".");
  return m;
}

Module multihead_attention(int embed_dim, int num_heads, const AttentionOptions& o) {
  Module m;
  m.kind = "MultiheadAttention";
  m.prefix = o.prefix;
  m.input = o.input;
  m.memory = o.key_input;
  m.output = o.output.empty() ? o.prefix : o.output;
  m.input_dim = m.output_dim = embed_dim;
  HeadsSpec spec{o.prefix, o.input, o.key_input.empty() ? o.input : o.key_input, embed_dim, num_heads,
                 o.mask,   o.bias,  true,                                            ""};
  std::string body = emit_heads(m, spec);
  m.lines.push_back(m.output + "(I) :- " + body + ".");
  return m;
}

// ---- registrations -----------------------------------------------------------------------
namespace {

// The parameters Attention and MultiheadAttention share, defaults from AttentionOptions.
std::vector<ParamSpec> attention_params(bool heads) {
  const AttentionOptions d;
  std::vector<ParamSpec> ps = {int_param("embed_dim", "size of a token's embedding (E)")};
  if (heads) ps.push_back(int_param("num_heads", "attention heads (E is a multiple)", 1));
  for (ParamSpec p : {string_param("prefix", d.prefix, "prefix of every predicate and weight"),
                      string_param("input", d.input, "predicate/1 of the queries (and keys and values)"),
                      string_param("key_input", d.key_input, "cross-attention: predicate/1 of the keys and values"),
                      string_param("output", d.output, "predicate/1 of the output (default: the prefix)"),
                      mask_param("mask", "body literals restricting the keys J of a query I"),
                      bool_param("bias", d.bias, "q/k/v/out biases (torch's bias=True)")})
    ps.push_back(std::move(p));
  return ps;
}

AttentionOptions attention_options(const ModuleParams& p) {
  return {p.text("prefix"), p.text("input"), p.text("key_input"), p.text("output"), p.mask("mask"), p.flag("bias")};
}

}  // namespace

LRNN_ZOO_MODULE(attention) {
  return {"one head with {E,E} q/k/v projections and no output projection (PyNeuraLogic's form)",
          attention_params(false),
          [](const ModuleParams& p) { return attention(p.integer("embed_dim"), attention_options(p)); }};
}

LRNN_ZOO_MODULE(multihead_attention) {
  return {"torch.nn.MultiheadAttention(embed_dim, num_heads), dropout 0", attention_params(true),
          [](const ModuleParams& p) {
            return multihead_attention(p.integer("embed_dim"), p.integer("num_heads"), attention_options(p));
          }};
}

}  // namespace lrnn::zoo
