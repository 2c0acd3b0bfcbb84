// Pictures (include/lrnn/draw.hpp, `lrnn draw`): the DOT text of a known template and
// sample is parsed back and must hold exactly the expected nodes and edges; a big network
// is summarised within a size limit; SVG/PNG need Graphviz and say so when it is absent.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "cli_test_support.hpp"
#include "lrnn/draw.hpp"
#include "lrnn/lrnn.hpp"
#include "lrnn/report.hpp"
#include "shared_datasets.hpp"

namespace {

const char* kTemplate =
    "hidden(X) :- {3,2} f(X), {3}. [activation=tanh]\n"
    "{1,3} out :- hidden(X). [aggregation=max]\n"
    "out/0 [activation=sigmoid]\n";
const char* kExamples = "<1> out :- <[0.5, -1]> f(a), <[1, 2]> f(b).\n<0> out :- <[-1, 0.3]> f(a).\n";

// The nodes (id -> label) and edges ("from -> to" -> label) of DOT text as lrnn writes it.
struct ParsedDot {
  std::map<std::string, std::string> nodes;
  std::multimap<std::string, std::string> edges;
  std::string graph_label;
};

ParsedDot parse_dot(const std::string& dot) {
  ParsedDot p;
  static const std::regex edge(R"re(^\s*"([^"]+)" -> "([^"]+)"(?: \[label="((?:[^"\\]|\\.)*)")?)re");
  static const std::regex node(R"re(^\s*"([^"]+)" \[label="((?:[^"\\]|\\.)*)")re");
  static const std::regex graph_label(R"re(^\s*label="((?:[^"\\]|\\.)*)";)re");
  std::istringstream in(dot);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.find("style=invis") != std::string::npos) continue;  // layout only, not drawn
    if (std::regex_search(line, m, edge)) p.edges.emplace(m[1].str() + " -> " + m[2].str(), m[3].str());
    else if (std::regex_search(line, m, node)) p.nodes[m[1]] = m[2];
    else if (std::regex_search(line, m, graph_label)) p.graph_label = m[1];
  }
  return p;
}

// Node id of the node whose label starts with `text` + a line break (or is exactly it).
std::string id_of(const ParsedDot& p, const std::string& text) {
  for (const auto& [id, label] : p.nodes)
    if (label == text || label.rfind(text + "\\n", 0) == 0) return id;
  return "";
}

std::set<std::string> edge_set(const ParsedDot& p) {
  std::set<std::string> out;
  for (const auto& [e, label] : p.edges) out.insert(e);
  return out;
}

TEST(DrawPictures, TemplatePredicatesAndRuleEdges) {
  const ParsedDot p = parse_dot(lrnn::template_dot(lrnn::Template::from_string(kTemplate)));
  const std::map<std::string, std::string> nodes = {
      {"f/1", "f/1\\nexample facts"}, {"hidden/1", "hidden/1\\nidentity"}, {"out/0", "out/0\\nsigmoid"}};
  EXPECT_EQ(p.nodes, nodes);
  const std::multimap<std::string, std::string> edges = {
      {"f/1 -> hidden/1", "r0 3x2\\ntanh, avg\\noffset 3x1"},
      {"hidden/1 -> out/0", "r1\\nidentity, max\\nhead 1x3"}};
  EXPECT_EQ(p.edges, edges);
}

TEST(DrawPictures, TemplateFactsBuiltinsAndNamedWeights) {
  const char* text =
      "{2} emb(a).\n{2} emb(b).\n"
      "h(X) :- $w={2,2} emb(X), @neq(X, Y), *link(X, Y), ~emb(Y).\n";
  const ParsedDot p = parse_dot(lrnn::template_dot(lrnn::Template::from_string(text)));
  EXPECT_EQ(p.nodes.at("emb/1"), "emb/1\\n2 template facts");
  EXPECT_EQ(p.nodes.at("@neq/2"), "@neq/2");
  EXPECT_EQ(p.nodes.at("link/2"), "link/2\\nexample facts");
  EXPECT_EQ(p.edges.count("emb/1 -> h/1"), 2u);  // emb(X) and ~emb(Y)
  std::set<std::string> labels;
  for (auto [it, end] = p.edges.equal_range("emb/1 -> h/1"); it != end; ++it) labels.insert(it->second);
  // The engine's defaults (identity activation, avg aggregation) are shown, not only metadata.
  EXPECT_EQ(labels, (std::set<std::string>{"r0 $w 2x2\\nidentity, avg", "r0 ~\\nidentity, avg"}));
  EXPECT_EQ(p.edges.find("@neq/2 -> h/1")->second, "r0\\nlogic only");
  EXPECT_EQ(p.edges.find("link/2 -> h/1")->second, "r0\\nlogic only");
}

TEST(DrawPictures, GroundingOfOneSample) {
  lrnn::Model model(lrnn::Template::from_string(kTemplate));
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  const ParsedDot p = parse_dot(lrnn::ground_dot(model, data, 0));
  ASSERT_EQ(p.nodes.size(), 5u);
  const std::string fa = id_of(p, "f(a)"), fb = id_of(p, "f(b)"), ha = id_of(p, "hidden(a)"),
                    hb = id_of(p, "hidden(b)"), out = id_of(p, "out");
  EXPECT_EQ(p.nodes.at(fa), "f(a)\\nfact");
  EXPECT_EQ(p.nodes.at(out), "out");
  const std::set<std::string> edges = {fa + " -> " + ha, fb + " -> " + hb, ha + " -> " + out, hb + " -> " + out};
  EXPECT_EQ(edge_set(p), edges);
  EXPECT_EQ(p.edges.find(fa + " -> " + ha)->second, "r0");
  EXPECT_EQ(p.edges.find(ha + " -> " + out)->second, "r1");
  EXPECT_EQ(p.graph_label, "sample 0: 5 atoms, 4 ground rules");
  // Sample 1 has one fact: three atoms.
  EXPECT_EQ(parse_dot(lrnn::ground_dot(model, data, 1)).nodes.size(), 3u);
  EXPECT_THROW(lrnn::ground_dot(model, data, 2), lrnn::Error);
}

TEST(DrawPictures, NetworkNeuronsValuesAndGradients) {
  lrnn::Model model(lrnn::Template::from_string(kTemplate));
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  lrnn::DrawOptions options;
  options.values = options.gradients = true;
  options.value_detail = 2;
  const std::string dot = lrnn::network_dot(model, data, 0, options);
  const ParsedDot p = parse_dot(dot);
  // 5 atoms (2 facts), 4 rule neurons, 3 aggregation neurons.
  size_t atoms = 0, rules = 0, aggregations = 0;
  for (const auto& [id, label] : p.nodes) {
    atoms += id[0] == 'a';
    rules += id[0] == 'n' && label.rfind("rule r", 0) == 0;
    aggregations += id[0] == 'g' && label.rfind("aggregate r", 0) == 0;
  }
  EXPECT_EQ(atoms, 5u);
  EXPECT_EQ(rules, 4u);
  EXPECT_EQ(aggregations, 3u);
  EXPECT_EQ(p.edges.size(), 4u + 4u + 3u);  // input -> rule, rule -> aggregation, aggregation -> atom
  // The path f(a) -> rule r0 -> aggregate r0 -> hidden(a) -> rule r1 -> aggregate r1 -> out.
  const std::string fa = id_of(p, "f(a)"), ha = id_of(p, "hidden(a)"), out = id_of(p, "out");
  std::string r0, g0;
  for (const auto& [e, label] : p.edges)
    if (e.rfind(fa + " -> ", 0) == 0) r0 = e.substr(fa.size() + 4);
  for (const auto& [e, label] : p.edges)
    if (e.rfind(r0 + " -> ", 0) == 0) g0 = e.substr(r0.size() + 4);
  EXPECT_EQ(p.nodes.at(r0).substr(0, 7), "rule r0");
  EXPECT_EQ(p.edges.count(g0 + " -> " + ha), 1u);
  // Values and gradients are the API's own (Model::network), printed with 12 digits.
  const lrnn::GroundNetwork net = model.network(data, 0, true);
  for (const auto& a : net.atoms) {
    if (a.text != "out") continue;
    std::ostringstream expected;
    expected.precision(12);
    expected << "out\\nvalue " << a.value[0] << "\\ngrad " << a.gradient[0];
    EXPECT_EQ(p.nodes.at(out), expected.str());
  }
  // The max aggregation of out picks per entry the larger hidden value.
  ASSERT_EQ(net.aggregations.size(), 3u);
  const auto& top = net.aggregations[2];
  ASSERT_EQ(top.value.size(), 3u);
  const auto& hidden_a = net.atoms[net.rule_neurons[2].inputs[0]].value;
  const auto& hidden_b = net.atoms[net.rule_neurons[3].inputs[0]].value;
  for (int e = 0; e < 3; ++e) EXPECT_DOUBLE_EQ(top.value[e], std::max(hidden_a[e], hidden_b[e]));
  EXPECT_NE(p.graph_label.find("12 neurons"), std::string::npos);
}

// Neurons a network picture draws (nodes a*, n*, g*) and counts in its "... N more" nodes.
struct NeuronCount {
  size_t drawn = 0, counted = 0, summaries = 0;
};

NeuronCount count_neurons(const ParsedDot& p) {
  NeuronCount c;
  static const std::regex more(R"(^\.\.\. (\d+) more .*)");
  std::smatch m;
  for (const auto& [id, label] : p.nodes) {
    if (std::regex_match(label, m, more)) {
      c.counted += std::stoul(m[1]);
      ++c.summaries;
    } else {
      ++c.drawn;
    }
  }
  return c;
}

TEST(DrawPictures, BigNetworkIsSummarisedByGroupAndLayer) {
  // 3,000 facts: 3,000 f atoms, 3,000 hidden atoms, 3,000 rule and aggregation neurons
  // each for hidden, 3,000 rule neurons and one aggregation for out, and out: 15,002.
  std::string facts;
  for (int i = 0; i < 3000; ++i) facts += (i ? ", " : "") + std::string("<1> f(c") + std::to_string(i) + ")";
  const lrnn::Dataset data = lrnn::Dataset::from_text("<1> out :- " + facts + ".\n");
  lrnn::Model model(lrnn::Template::from_string("hidden(X) :- f(X).\nout :- hidden(X).\n"));
  lrnn::DrawOptions options;
  options.values = true;
  const std::string dot = lrnn::network_dot(model, data, 0, options);
  EXPECT_LT(dot.size(), 64u * 1024u);
  const ParsedDot p = parse_dot(dot);
  NeuronCount c = count_neurons(p);
  // Five layers of 3,000 neurons: 4 drawn (max_per_group) and one "... 2996 more" each; out's
  // aggregation and out.
  EXPECT_EQ(c.drawn, 5u * 4u + 2u);
  EXPECT_EQ(c.summaries, 5u);
  EXPECT_EQ(c.drawn + c.counted, 15002u);
  EXPECT_EQ(p.nodes.at("more 0 f/1"), "... 2996 more f/1 facts");
  EXPECT_EQ(p.nodes.at("more 1 rule r0"), "... 2996 more rule r0");
  EXPECT_NE(p.graph_label.find("15002 neurons"), std::string::npos);
  EXPECT_NE(p.graph_label.find("14980 counted in '...' nodes"), std::string::npos);
  EXPECT_NE(id_of(p, "out"), "");  // the output is kept first
  // A summary takes its members' edges, once: f's summary feeds rule r0's summary.
  EXPECT_EQ(p.edges.count("more 0 f/1 -> more 1 rule r0"), 1u);
  // The drawn f atoms feed drawn rule neurons of their own hidden atoms: the picture walks
  // from the output, so what is drawn is connected.
  for (const auto& [id, label] : p.nodes)
    if (label.rfind("f(", 0) == 0) {
      size_t out_edges = 0;
      for (const auto& [e, l] : p.edges) out_edges += e.rfind(id + " -> n", 0) == 0;
      EXPECT_EQ(out_edges, 1u) << label;
    }

  // --max-nodes cuts whole layers, the facts first, into one node each, connected upwards.
  options.max_nodes = 20;
  const ParsedDot cut = parse_dot(lrnn::network_dot(model, data, 0, options));
  c = count_neurons(cut);
  EXPECT_EQ(c.drawn + c.counted, 15002u);
  EXPECT_LE(c.drawn + c.summaries, 20u);
  ASSERT_EQ(cut.nodes.count("layer 0"), 1u);
  EXPECT_EQ(cut.nodes.at("layer 0"), "... 3000 more in layer 0 (facts)\\n3000 f/1");
  EXPECT_EQ(cut.nodes.count("layer 1"), 1u);
  EXPECT_EQ(cut.nodes.count("layer 2"), 0u);  // 5 x 5 + 1 + 1 = 27; one layer cut: 23; two: 19
  EXPECT_EQ(cut.edges.count("layer 0 -> layer 1"), 1u);
  EXPECT_EQ(cut.edges.count("layer 1 -> more 2 aggregate r0"), 1u);
  // The grounding picture is bounded by max_nodes too.
  EXPECT_LT(lrnn::ground_dot(model, data, 0, options).size(), 64u * 1024u);
}

// The width and height of an SVG (points) and of a PNG (pixels).
std::pair<double, double> svg_size(const std::string& svg) {
  std::smatch m;
  const std::regex size(R"re(<svg width="([0-9.]+)pt" height="([0-9.]+)pt")re");
  if (!std::regex_search(svg, m, size)) return {-1, -1};
  return {std::stod(m[1]), std::stod(m[2])};
}

std::pair<unsigned, unsigned> png_size(const std::string& png) {
  auto be32 = [&](size_t at) {
    return (unsigned(uint8_t(png[at])) << 24) | (unsigned(uint8_t(png[at + 1])) << 16) |
           (unsigned(uint8_t(png[at + 2])) << 8) | unsigned(uint8_t(png[at + 3]));
  };
  return {be32(16), be32(20)};  // IHDR
}

// One molecule of Mutagenesis (examples/templates/mutagenesis.lrnn): every neuron drawn or
// counted, and the picture within 4,000 px either way (issue 33).
TEST(DrawPictures, MutagenesisMoleculeFitsIn4000Pixels) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  const std::string dir = std::string(LRNN_DATASETS_DIR) + "/neuralogic/molecules/mutagenesis/";
  lrnn::Model model(lrnn::Template::from_file(std::string(LRNN_SOURCE_DIR) + "/examples/templates/mutagenesis.lrnn"));
  const lrnn::Dataset data = lrnn::Dataset::load(dir + "examples.txt", dir + "queries.txt");
  const lrnn::GroundNetwork net = model.network(data, 0);
  const size_t total = net.atoms.size() + net.rule_neurons.size() + net.aggregations.size();
  const std::string dot = lrnn::network_dot(model, data, 0);
  const NeuronCount c = count_neurons(parse_dot(dot));
  EXPECT_EQ(c.drawn + c.counted, total);
  EXPECT_GT(c.summaries, 0u);
  EXPECT_LE(c.drawn + c.summaries, 200u);
  if (lrnn::find_graphviz().empty()) GTEST_SKIP() << "Graphviz's dot is not installed: the size is not checked";
  const auto [width, height] = svg_size(lrnn::render_dot(dot, "svg"));
  EXPECT_GT(width, 0);
  EXPECT_LE(width, 4000);
  EXPECT_LE(height, 4000);
  const auto [png_width, png_height] = png_size(lrnn::render_dot(dot, "png"));
  EXPECT_GT(png_width, 0u);
  EXPECT_LE(png_width, 4000u);
  EXPECT_LE(png_height, 4000u);
}

TEST(DrawPictures, FormatsAndGraphviz) {
  EXPECT_EQ(lrnn::picture_format("a/b.SVG"), "svg");
  EXPECT_EQ(lrnn::picture_format("x.dot"), "dot");
  EXPECT_EQ(lrnn::picture_format("x.png"), "png");
  EXPECT_THROW(lrnn::picture_format("x.pdf"), lrnn::Error);
  EXPECT_THROW(lrnn::picture_format("dir.svg/x"), lrnn::Error);
  try {
    lrnn::render_dot("digraph{}", "svg", "/nonexistent/dot");
    FAIL() << "a missing dot program must be refused";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("install graphviz"), std::string::npos) << e.what();
  }
  const std::string dot = lrnn::template_dot(lrnn::Template::from_string(kTemplate));
  EXPECT_EQ(lrnn::render_dot(dot, "dot"), dot);
  if (lrnn::find_graphviz().empty()) GTEST_SKIP() << "Graphviz's dot is not installed: SVG/PNG not checked";
  const std::string svg = lrnn::render_dot(dot, "svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  for (const char* text : {"hidden/1", "out/0", "f/1", "tanh, avg"}) EXPECT_NE(svg.find(text), std::string::npos) << text;
  EXPECT_EQ(lrnn::render_dot(dot, "png").substr(1, 3), "PNG");
  EXPECT_THROW(lrnn::render_dot("digraph { broken", "svg"), lrnn::Error);
}

TEST(DrawPictures, CliWritesEachKind) {
  const std::string dir = testing::TempDir();
  const std::string tmpl = dir + "draw_t.lrnn", examples = dir + "draw_e.txt";
  std::ofstream(tmpl) << kTemplate;
  std::ofstream(examples) << kExamples;
  auto r = lrnn_test::run_lrnn("draw " + tmpl);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(parse_dot(r.out).nodes.size(), 3u);
  r = lrnn_test::run_lrnn("draw " + tmpl + " --what network -e " + examples + " --sample 1 -o " + dir + "draw_n.dot");
  EXPECT_EQ(r.code, 0) << r.out;
  std::stringstream written;
  written << std::ifstream(dir + "draw_n.dot").rdbuf();
  EXPECT_EQ(parse_dot(written.str()).nodes.size(), 3u + 2u + 2u);  // f(a), hidden(a), out; 2 rule; 2 aggregation
  r = lrnn_test::run_lrnn("draw " + tmpl + " --what ground");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--examples"), std::string::npos) << r.out;
  r = lrnn_test::run_lrnn("draw " + tmpl + " -o " + dir + "draw.pdf");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(".dot, .svg or .png"), std::string::npos) << r.out;
  r = lrnn_test::run_lrnn("draw " + tmpl + " --graphviz /nonexistent/dot -o " + dir + "draw_none.svg");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("install graphviz"), std::string::npos) << r.out;
  EXPECT_FALSE(std::ifstream(dir + "draw_none.svg").good());  // never an empty file
}

}  // namespace

namespace {

// Attention: the rule and aggregation neurons the pictures show are read from where the
// engine keeps them (softmax groups reordered, products summed in place). Checked against
// each other: the aggregates of w(I, J) are the softmax over J of its rule neurons' scores,
// and every atom equals its one aggregate (identity activations, no head weights).
TEST(DrawPictures, AttentionNeuronsMatchTheirAtoms) {
  const char* tmpl =
      "q(I) :- {2,2} x(I).\nk(I) :- {2,2} x(I).\n"
      "w(I, J) :- k(J)^T, q(I). [combination=product, aggregation=softmax(J)]\n"
      "a(I) :- w(I, J), x(J). [combination=product, aggregation=sum]\n";
  lrnn::Model model(lrnn::Template::from_string(tmpl));
  const lrnn::Dataset data =
      lrnn::Dataset::from_text("s :- <[1, 2]> x(0), <[-1, 0.5]> x(1), <[0.3, 0.3]> x(2).\n",
                               "s :- [1, 0] a(0), [0, 1] a(1).\n");
  const lrnn::GroundNetwork net = model.network(data, 0, true);
  std::map<std::string, size_t> atom_index;
  for (size_t l = 0; l < net.atoms.size(); ++l) atom_index[net.atoms[l].text] = l;
  ASSERT_EQ(net.aggregations.size(), 2u + 3u + 6u + 2u);  // q(0..1), k(0..2), w(0..1, 0..2), a(0..1)
  std::map<size_t, std::vector<size_t>> rules_of;
  for (size_t g = 0; g < net.rule_neurons.size(); ++g) rules_of[net.rule_neurons[g].aggregation].push_back(g);
  std::map<std::string, double> weight_sum;  // per I, over J
  std::map<std::string, double> exp_sum;
  for (size_t j = 0; j < net.aggregations.size(); ++j) {
    const auto& g = net.aggregations[j];
    const auto& head = net.atoms[g.head];
    ASSERT_EQ(g.value.size(), head.value.size()) << head.text;
    for (size_t e = 0; e < g.value.size(); ++e) EXPECT_NEAR(g.value[e], head.value[e], 1e-12) << head.text;
    for (size_t e = 0; e < g.gradient.size(); ++e) EXPECT_NEAR(g.gradient[e], head.gradient[e], 1e-12) << head.text;
    if (g.rule == 2) {
      ASSERT_EQ(rules_of[j].size(), 1u);
      const std::string i = head.text.substr(2, 1);
      weight_sum[i] += g.value[0];
      exp_sum[i] += std::exp(net.rule_neurons[rules_of[j][0]].value.at(0));
    }
  }
  ASSERT_EQ(weight_sum.size(), 2u);
  for (const auto& [i, s] : weight_sum) EXPECT_NEAR(s, 1.0, 1e-12) << "w(" << i << ", J)";
  // Each weight is exp(score) / sum over J of exp(scores): the scores sit with their heads.
  for (size_t j = 0; j < net.aggregations.size(); ++j) {
    const auto& g = net.aggregations[j];
    if (g.rule != 2) continue;
    const double score = net.rule_neurons[rules_of[j][0]].value.at(0);
    EXPECT_NEAR(g.value[0], std::exp(score) / exp_sum[net.atoms[g.head].text.substr(2, 1)], 1e-12);
  }
  // The picture of this network draws every neuron once, when no group is summarised.
  lrnn::DrawOptions options;
  options.values = true;
  options.max_per_group = 100;
  const ParsedDot p = parse_dot(lrnn::network_dot(model, data, 0, options));
  EXPECT_EQ(p.nodes.size(), net.atoms.size() + net.aggregations.size() + net.rule_neurons.size());
}

// The heat map: one cell per weight the engine computed, each cell's tooltip the same
// number as the atom w(i, j) of the network; masked pairs (never grounded) are grey cells,
// rows sum to 1; a template without softmax rules is an error, as is --what attention to PNG.
TEST(DrawPictures, AttentionHeatMapHoldsTheEnginesWeights) {
  const char* tmpl =
      "q(I) :- {2,2} x(I).\nk(I) :- {2,2} x(I).\n"
      "w(I, J) :- k(J)^T, q(I), @leq(J, I). [combination=product, aggregation=softmax(J)]\n"
      "a(I) :- w(I, J), x(J). [combination=product, aggregation=sum]\n";
  lrnn::Model model(lrnn::Template::from_string(tmpl));
  const lrnn::Dataset data =
      lrnn::Dataset::from_text("s :- <[1, 2]> x(0), <[-1, 0.5]> x(1), <[0.3, 0.3]> x(2).\n",
                               "s :- [1, 0] a(0), [0, 1] a(1), [1, 1] a(2).\n");
  const lrnn::GroundNetwork net = model.network(data, 0);
  std::map<std::string, double> atom_value;
  for (const auto& a : net.atoms)
    if (a.value.size() == 1) atom_value[a.text] = a.value[0];
  const std::string svg = lrnn::attention_svg(model, data, 0);
  EXPECT_NE(svg.find("w(I, J): softmax over J"), std::string::npos);
  static const std::regex cell(R"re(<rect class="weight"[^>]*><title>(\S+) \xE2\x86\x92 (\S+): ([-0-9.e]+)</title>)re");
  std::map<std::string, double> row_sum;
  size_t cells = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), cell); it != std::sregex_iterator(); ++it, ++cells) {
    const std::string atom = "w(" + (*it)[1].str() + ", " + (*it)[2].str() + ")";
    ASSERT_TRUE(atom_value.count(atom)) << atom;
    EXPECT_NEAR(std::stod((*it)[3].str()), atom_value[atom], 1e-5) << atom;
    row_sum[(*it)[1].str()] += std::stod((*it)[3].str());
  }
  EXPECT_EQ(cells, 6u);  // causal: 1 + 2 + 3 of the 9 pairs
  for (const auto& [i, total] : row_sum) EXPECT_NEAR(total, 1.0, 1e-5) << "row " << i;
  size_t masked = 0;
  for (size_t at = svg.find("class=\"masked\""); at != std::string::npos; at = svg.find("class=\"masked\"", at + 1))
    ++masked;
  EXPECT_EQ(masked, 3u);

  lrnn::Model plain(lrnn::Template::from_string(kTemplate));
  const lrnn::Dataset plain_data = lrnn::Dataset::from_text(kExamples, "");
  EXPECT_THROW(
      {
        try {
          lrnn::attention_svg(plain, plain_data, 0);
        } catch (const lrnn::Error& e) {
          EXPECT_NE(std::string(e.what()).find("no attention rule"), std::string::npos) << e.what();
          throw;
        }
      },
      lrnn::Error);
  const std::string dir = testing::TempDir();
  std::ofstream(dir + "att_t.lrnn") << tmpl;
  std::ofstream(dir + "att_e.txt") << "s :- <[1, 2]> x(0), <[-1, 0.5]> x(1).\n";
  std::ofstream(dir + "att_q.txt") << "s :- a(0), a(1).\n";
  auto r = lrnn_test::run_lrnn("draw " + dir + "att_t.lrnn --what attention -e " + dir + "att_e.txt -q " + dir +
                               "att_q.txt -o " + dir + "att.png");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--what attention writes SVG"), std::string::npos) << r.out;
  r = lrnn_test::run_lrnn("draw " + dir + "att_t.lrnn --what attention -e " + dir + "att_e.txt -q " + dir +
                          "att_q.txt -o " + dir + "att.svg");
  EXPECT_EQ(r.code, 0) << r.out;
  std::stringstream written;
  written << std::ifstream(dir + "att.svg").rdbuf();
  EXPECT_EQ(written.str().rfind("<svg", 0), 0u);
  EXPECT_NE(written.str().find("class=\"weight\""), std::string::npos);
}

}  // namespace

namespace {

// The page of `lrnn train --report`: one polyline per curve with one point per epoch
// (a missing test value is a gap, not a zero), no script, the settings and outputs.
TEST(DrawPictures, TrainingReportCurvesHaveOnePointPerEpoch) {
  std::vector<lrnn::EpochInfo> history(9);
  for (int e = 0; e < 9; ++e) {
    history[e].epoch = e + 1;
    history[e].train.loss = 1.0 / (e + 1);
    history[e].train.accuracy = 0.1 * e;
    history[e].has_test = e != 4;
    history[e].test.loss = e == 2 ? NAN : 2.0 / (e + 1);
    history[e].test.accuracy = 0.05 * e;
  }
  nlohmann::json run = {{"epochs", 9}, {"samples", 4}, {"parameters", 7}, {"loss", 0.1}, {"accuracy", 0.8}};
  run["history"] = lrnn::history_json(history);
  run["settings"] = lrnn::settings_json(lrnn::Settings{});
  run["outputs"] = {{{"example", 0}, {"query", "out<b>"}, {"target", 1.0}, {"output", 0.75}}};
  const std::string html = lrnn::training_report_html(run, "t.lrnn");
  const std::regex polyline(R"re(<polyline data-series="([^"]+)"[^>]*points="([^"]*)")re");
  std::map<std::string, size_t> points;
  for (std::sregex_iterator it(html.begin(), html.end(), polyline), end; it != end; ++it) {
    std::istringstream in((*it)[2].str());
    std::string p;
    while (in >> p) ++points[(*it)[1]];
  }
  const std::map<std::string, size_t> expected = {
      {"train loss", 9}, {"train accuracy", 9}, {"test loss", 7}, {"test accuracy", 8}};
  EXPECT_EQ(points, expected);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("out&lt;b&gt;"), std::string::npos);  // output texts are escaped
  EXPECT_NE(html.find("<th>optimizer</th><td>adam</td>"), std::string::npos);
  EXPECT_EQ(run["history"][4].contains("test"), false);
  EXPECT_TRUE(run["history"][2]["test"]["loss"].is_null());
}

}  // namespace
