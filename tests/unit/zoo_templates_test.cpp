// The zoo generators: their templates parse and print back unchanged, ground on sequences
// to exactly the (query, key) pairs their masks allow (counted here from the mask
// definitions), and map every weight onto the torch parameters without gaps or overlaps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <map>
#include <set>
#include <random>
#include <string>

#include "logic/grounder.hpp"
#include "logic/program.hpp"
#include "lrnn/syntax.hpp"
#include "lrnn/zoo.hpp"

namespace {

using namespace lrnn;

// Relational attention is reached through the registry only (it has no typed function).
zoo::Module relational_attention(int node_dim, int edge_dim, int num_heads) {
  return zoo::module_rules("relational_attention",
                           {{"node_dim", int64_t(node_dim)}, {"edge_dim", int64_t(edge_dim)}, {"num_heads", int64_t(num_heads)}});
}

std::vector<double> random_sequence(int n, int d, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> g;
  std::vector<double> x(size_t(n) * d);
  for (auto& v : x) v = g(rng);
  return x;
}

// Ground rules per head predicate of the template's rules.
std::map<std::string, size_t> ground_counts(const TemplateAst& t, const ExampleAst& ex, const std::vector<Literal>& q) {
  logic::Program program(t);
  logic::GroundSample s = logic::ground(program, ex, q);
  std::map<std::string, size_t> out;
  for (const auto& set : s.rules) out[t.rules[set.rule].head.predicate] += set.size();
  return out;
}

// Pairs (i, j), i < n queries, j < m keys, satisfying `allowed`.
template <class F>
size_t count_pairs(int n, int m, F allowed) {
  size_t c = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) c += allowed(i, j) ? 1 : 0;
  return c;
}

long floor_mod(long a, long b) { return ((a % b) + b) % b; }

void expect_round_trip(const zoo::Module& m) {
  TemplateAst t = m.ast();
  std::string printed = print_template(t);
  EXPECT_EQ(parse_template(printed), t) << printed;
  EXPECT_EQ(print_template(parse_template(printed)), printed);
}

TEST(ZooTemplates, MultiheadAttentionPrintsTheDocumentedRules) {
  zoo::Module m = zoo::multihead_attention(4, 2);
  const std::string text = m.text();
  EXPECT_NE(text.find("<0.7071067811865475> attn_d_k."), std::string::npos) << text;
  EXPECT_NE(text.find("attn_q0(I) :- $attn_wq0={2,4} input(I), $attn_bq0={2}."), std::string::npos) << text;
  EXPECT_NE(text.find("attn_w1(I, J) :- attn_d_k, attn_k1(J)^T, attn_q1(I). [combination=product, "
                      "aggregation=softmax(J)]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("attn_a1(I) :- attn_w1(I, J), attn_v1(J). [combination=product, aggregation=sum]"),
            std::string::npos);
  EXPECT_NE(text.find("attn(I) :- $attn_wo0={4,2} attn_a0(I), $attn_wo1={4,2} attn_a1(I), $attn_bo={4}."),
            std::string::npos)
      << text;
  TemplateAst t = m.ast();
  EXPECT_EQ(t.rules.size(), 2u * 5u + 1u);
  EXPECT_EQ(t.facts.size(), 1u);
  expect_round_trip(m);
}

TEST(ZooTemplates, EveryGeneratorRoundTrips) {
  expect_round_trip(zoo::attention(6));
  expect_round_trip(zoo::multihead_attention(8, 4, {.mask = zoo::Mask::causal()}));
  expect_round_trip(zoo::transformer_encoder_layer(8, 2, 16));
  expect_round_trip(zoo::transformer_encoder_layer(8, 2, 16, {.norm_first = true, .norm_affine = true}));
  expect_round_trip(zoo::transformer_encoder(8, 2, 16, 3));
  expect_round_trip(zoo::transformer_decoder_layer(8, 2, 16, {.self_mask = zoo::Mask::causal()}));
  expect_round_trip(zoo::transformer_decoder_layer(8, 2, 16, {.norm_first = true, .norm_affine = true}));
  expect_round_trip(relational_attention(8, 3, 2));
  expect_round_trip(zoo::transformer(8, 2, 2, 2, 16, {.tgt_mask = zoo::Mask::causal()}));
  expect_round_trip(zoo::transformer(8, 2, 1, 3, 16, {.norm_first = true, .norm_affine = true}));
}

// Issue 35: torch.nn.Transformer's parameters are every layer's, named under encoder. and
// decoder., and the two final norms.
TEST(ZooTemplates, TransformerMapsTorchsParameterNames) {
  const zoo::Module m = zoo::transformer(8, 2, 2, 3, 16, {.norm_affine = true});
  std::set<std::string> names;
  for (const auto& s : m.torch) names.insert(s.torch_name);
  for (const char* name : {"encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.1.linear2.bias",
                           "encoder.norm.weight", "encoder.norm.bias", "decoder.layers.2.multihead_attn.out_proj.weight",
                           "decoder.layers.0.norm3.bias", "decoder.norm.weight", "decoder.norm.bias"})
    EXPECT_TRUE(names.count(name)) << name;
  // per encoder layer 12 tensors, per decoder layer 18, and 2 per final norm
  EXPECT_EQ(names.size(), size_t(2 * 12 + 3 * 18 + 4));
  EXPECT_THROW(zoo::transformer(8, 2, 0, 1, 16), Error);
}

struct MaskCase {
  zoo::Mask mask;
  std::function<bool(int, int)> allowed;
};

TEST(ZooTemplates, MasksGroundExactlyTheAllowedPairs) {
  const int n = 9, d = 4, heads = 2;
  std::vector<MaskCase> cases = {
      {zoo::Mask::none(), [](int, int) { return true; }},
      {zoo::Mask::causal(), [](int i, int j) { return j <= i; }},
      {zoo::Mask::sliding_window(2), [](int i, int j) { return i - j >= 0 && i - j <= 2; }},
      {zoo::Mask::sliding_window(0), [](int i, int j) { return i == j; }},
      {zoo::Mask::strided(3), [](int i, int j) { return floor_mod(i - j, 3) == 0; }},
      {zoo::Mask::causal() & zoo::Mask::strided(4), [](int i, int j) { return j <= i && (i - j) % 4 == 0; }},
      {zoo::Mask::custom("@neq(I, J)"), [](int i, int j) { return i != j; }},
  };
  std::vector<double> x = random_sequence(n, d, 1);
  ExampleAst ex = zoo::sequence_example("input", x.data(), n, d);
  for (const auto& c : cases) {
    zoo::Module m = zoo::multihead_attention(d, heads, {.mask = c.mask});
    auto counts = ground_counts(m.ast(), ex, zoo::sequence_queries(m.output, n));
    const size_t pairs = count_pairs(n, n, c.allowed);
    for (int h = 0; h < heads; ++h) {
      EXPECT_EQ(counts["attn_w" + std::to_string(h)], pairs) << c.mask.label;
      EXPECT_EQ(counts["attn_a" + std::to_string(h)], pairs) << c.mask.label;  // one product per pair
      EXPECT_EQ(counts["attn_q" + std::to_string(h)], size_t(n));
    }
    EXPECT_EQ(counts["attn"], size_t(n));
  }
}

TEST(ZooTemplates, SlidingWindowGroundingGrowsLinearly) {
  const int d = 2, w = 16;
  for (int n : {64, 256}) {
    std::vector<double> x = random_sequence(n, d, 2);
    zoo::Module m = zoo::attention(d, {.mask = zoo::Mask::sliding_window(w)});
    auto counts = ground_counts(m.ast(), zoo::sequence_example("input", x.data(), n, d), zoo::sequence_queries(m.output, n));
    // n (w + 1) pairs minus the triangle the sequence start cuts off.
    EXPECT_EQ(counts["attn_w0"], size_t(n) * (w + 1) - size_t(w) * (w + 1) / 2);
  }
}

TEST(ZooTemplates, EncoderAndDecoderGroundEveryLayer) {
  const int n = 5, m_len = 7, d = 4;
  std::vector<double> x = random_sequence(n, d, 3), mem = random_sequence(m_len, d, 4);
  {
    zoo::Module enc = zoo::transformer_encoder(d, 2, 8, 2, {.mask = zoo::Mask::causal()});
    auto counts = ground_counts(enc.ast(), zoo::sequence_example("input", x.data(), n, d), zoo::sequence_queries(enc.output, n));
    for (const char* layer : {"encl0", "encl1"}) {
      EXPECT_EQ(counts[std::string(layer) + "_sa_w1"], size_t(n * (n + 1) / 2));
      EXPECT_EQ(counts[std::string(layer) + "_n1"], size_t(n));
      EXPECT_EQ(counts[std::string(layer) + "_ff"], size_t(n));
    }
    EXPECT_EQ(counts["enc"], size_t(n));
  }
  {
    zoo::Module dec = zoo::transformer_decoder_layer(d, 2, 8, {.self_mask = zoo::Mask::causal()});
    ExampleAst ex = zoo::sequence_example("target", x.data(), n, d);
    auto memory = zoo::sequence_facts("memory", mem.data(), m_len, d);
    ex.facts.insert(ex.facts.end(), memory.begin(), memory.end());
    auto counts = ground_counts(dec.ast(), ex, zoo::sequence_queries(dec.output, n));
    EXPECT_EQ(counts["dec_sa_w0"], size_t(n * (n + 1) / 2));
    EXPECT_EQ(counts["dec_ca_w0"], size_t(n * m_len));  // every target token sees all memory
    EXPECT_EQ(counts["dec_ca_k1"], size_t(m_len));
    EXPECT_EQ(counts["dec"], size_t(n));
  }
}

TEST(ZooTemplates, RelationalAttentionGroundsOnePairPerEdge) {
  const int nodes = 6, d = 4, de = 3;
  std::vector<double> x = random_sequence(nodes, d, 5);
  ExampleAst ex = zoo::sequence_example("node", x.data(), nodes, d);
  // A directed cycle plus chords: edge(I, J) means J sends to I.
  std::vector<std::pair<int, int>> edges;
  for (int i = 0; i < nodes; ++i) edges.push_back({i, (i + 1) % nodes});
  edges.push_back({0, 3});
  edges.push_back({2, 5});
  std::vector<double> e = random_sequence(int(edges.size()), de, 6);
  for (size_t k = 0; k < edges.size(); ++k) {
    Literal l;
    l.predicate = "edge";
    l.args = {Term::number(std::to_string(edges[k].first)), Term::number(std::to_string(edges[k].second))};
    ValueSpec v;
    v.kind = ValueSpec::Kind::Vector;
    v.rows = de;
    v.data.assign(e.begin() + k * de, e.begin() + (k + 1) * de);
    v.fixed = true;
    l.weight = v;
    ex.facts.push_back(l);
  }
  zoo::Module m = relational_attention(d, de, 2);
  auto counts = ground_counts(m.ast(), ex, zoo::sequence_queries(m.output, nodes));
  EXPECT_EQ(counts["rel_w0"], edges.size());
  EXPECT_EQ(counts["rel_q1"], edges.size());
  EXPECT_EQ(counts["rel_a1"], edges.size());
  EXPECT_EQ(counts["rel"], size_t(nodes));
}

// Every entry of every mapped torch tensor is covered by exactly one lrnn weight, and each
// slice has the shape of the weight it fills.
TEST(ZooTemplates, TorchMappingCoversEveryParameterOnce) {
  const int E = 8, H = 4, F = 16;
  zoo::Module m = zoo::transformer_encoder_layer(E, H, F, {.norm_affine = true});
  std::map<std::string, std::pair<int, int>> torch_shapes = {
      {"self_attn.in_proj_weight", {3 * E, E}}, {"self_attn.in_proj_bias", {3 * E, 1}},
      {"self_attn.out_proj.weight", {E, E}},    {"self_attn.out_proj.bias", {E, 1}},
      {"linear1.weight", {F, E}},               {"linear1.bias", {F, 1}},
      {"linear2.weight", {E, F}},               {"linear2.bias", {E, 1}},
      {"norm1.weight", {E, 1}},                 {"norm1.bias", {E, 1}},
      {"norm2.weight", {E, 1}},                 {"norm2.bias", {E, 1}}};
  std::map<std::string, std::vector<int>> covered;
  for (auto& [name, shape] : torch_shapes) covered[name].assign(shape.first * shape.second, 0);
  // The declared shape of each named weight in the template.
  std::map<std::string, std::pair<int, int>> weight_shapes;
  TemplateAst t = m.ast();
  auto note = [&](const std::optional<ValueSpec>& v) {
    if (v && !v->name.empty()) weight_shapes[v->name] = {v->rows, v->kind == ValueSpec::Kind::Dims && v->dims_is_vector ? 1 : v->cols};
  };
  for (const Rule& r : t.rules) {
    note(r.offset);
    for (const Literal& l : r.body) note(l.weight);
  }
  for (const auto& s : m.torch) {
    ASSERT_TRUE(torch_shapes.count(s.torch_name)) << s.torch_name;
    ASSERT_TRUE(weight_shapes.count(s.weight)) << s.weight;
    EXPECT_EQ(weight_shapes[s.weight], std::make_pair(s.row_end - s.row_begin, s.col_end - s.col_begin)) << s.weight;
    const int cols = torch_shapes[s.torch_name].second;
    for (int r = s.row_begin; r < s.row_end; ++r)
      for (int c = s.col_begin; c < s.col_end; ++c) covered[s.torch_name][r * cols + c] += 1;
  }
  for (auto& [name, cov] : covered)
    for (int c : cov) ASSERT_EQ(c, 1) << name;
  EXPECT_EQ(weight_shapes.size(), m.torch.size());  // no lrnn weight without a torch source
}

TEST(ZooTemplates, MasksRejectBadInput) {
  EXPECT_THROW(zoo::Mask::sliding_window(-1), Error);
  EXPECT_THROW(zoo::Mask::strided(0), Error);
  EXPECT_THROW(zoo::Mask::custom("@leq(J, I"), Error);
  EXPECT_THROW(zoo::multihead_attention(6, 4), Error);
  EXPECT_EQ(zoo::Mask::custom("allowed(I, J), @neq(I, J)").literals,
            (std::vector<std::string>{"allowed(I, J)", "@neq(I, J)"}));
}

TEST(ZooData, PositionalEncodingIsSinusoidalBase10000) {
  const int n = 5, d = 6;
  auto pe = zoo::positional_encoding(n, d);
  ASSERT_EQ(pe.size(), size_t(n * d));
  for (int p = 0; p < n; ++p) {
    EXPECT_DOUBLE_EQ(pe[p * d + 0], std::sin(p));
    EXPECT_DOUBLE_EQ(pe[p * d + 1], std::cos(p));
    EXPECT_DOUBLE_EQ(pe[p * d + 4], std::sin(p / std::pow(10000.0, 4.0 / 6.0)));
    EXPECT_DOUBLE_EQ(pe[p * d + 5], std::cos(p / std::pow(10000.0, 4.0 / 6.0)));
  }
  EXPECT_DOUBLE_EQ(pe[3 * d + 2], std::sin(3 / std::pow(10000.0, 2.0 / 6.0)));
}

TEST(ZooData, SequenceExamplesPrintAsValuedFacts) {
  double x[] = {0.5, -1, 2, 0.25};
  ExampleAst e = zoo::sequence_example("input", x, 2, 2);
  EXPECT_EQ(print_example(e), "<[0.5, -1]> input(0), <[2, 0.25]> input(1).");
  EXPECT_EQ(parse_examples(print_example(e)).at(0), e);
}

}  // namespace

namespace {

// The sequence-task example: one-hot tokens tok(I) embedded to 16 dimensions, one encoder
// layer (2 heads, feed-forward 32), and 6 class logits hist(I) (the count of the token).
lrnn::zoo::Module histogram_model() {
  using namespace lrnn;
  zoo::Module m = zoo::transformer_encoder_layer(16, 2, 32, {.input = "emb"});
  m.kind = "TransformerEncoderLayer, histogram task";
  m.input = "tok";
  m.output = "hist";
  m.lines.insert(m.lines.begin(), "emb(I) :- $emb={16,4} tok(I).");
  m.lines.push_back("hist(I) :- $out_w={6,16} enc(I), $out_b={6}.");
  return m;
}

// The template files under examples/transformers/ are the generators' output (so the CLI
// can use them directly). LRNN_UPDATE_ZOO_EXAMPLES=1 rewrites them.
TEST(ZooExamples, TemplateFilesMatchTheGenerators) {
  using namespace lrnn;
  std::vector<std::pair<std::string, zoo::Module>> files = {
      {"multihead_attention_16_4.lrnn", zoo::multihead_attention(16, 4)},
      {"multihead_attention_16_4_causal.lrnn", zoo::multihead_attention(16, 4, {.mask = zoo::Mask::causal()})},
      {"attention_window16.lrnn", zoo::attention(64, {.mask = zoo::Mask::sliding_window(16)})},
      {"attention_strided4.lrnn", zoo::attention(16, {.mask = zoo::Mask::causal() & zoo::Mask::strided(4)})},
      {"encoder_layer_16_4_32.lrnn", zoo::transformer_encoder_layer(16, 4, 32)},
      {"decoder_layer_16_4_32.lrnn", zoo::transformer_decoder_layer(16, 4, 32, {.self_mask = zoo::Mask::causal()})},
      {"relational_attention_16_4_2.lrnn", relational_attention(16, 4, 2)},
      {"histogram.lrnn", histogram_model()},
  };
  const std::string dir = std::string(LRNN_SOURCE_DIR) + "/examples/transformers/";
  const bool update = std::getenv("LRNN_UPDATE_ZOO_EXAMPLES") != nullptr;
  for (const auto& [file, module] : files) {
    const std::string text = "% Generated by lrnn::zoo (" + module.kind + "); input predicate " + module.input +
                             "/1, output " + module.output + "/1. See docs/transformers.md.\n" + module.text();
    if (update) {
      std::ofstream(dir + file) << text;
      continue;
    }
    std::ifstream in(dir + file);
    ASSERT_TRUE(in) << dir + file << " missing (run with LRNN_UPDATE_ZOO_EXAMPLES=1)";
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(), text) << file;
    EXPECT_NO_THROW(load_template(dir + file));
  }
}

}  // namespace
