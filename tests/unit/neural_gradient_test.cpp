// Whole-network gradient checks on hand-built ground samples: vector and matrix weights,
// offsets, named (shared) weights, soft negation, product with a transposed literal,
// softmax(J) aggregation, learnable template facts, and cycle breaking.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "exec/plan.hpp"
#include "neural/network.hpp"
#include "neural/template_model.hpp"

namespace {

using namespace lrnn;

Term var(const std::string& n) { return Term::variable(n); }
Term con(const std::string& n) { return Term::constant(n); }

Literal lit(const std::string& pred, std::vector<Term> args) {
  Literal l;
  l.predicate = pred;
  l.args = std::move(args);
  return l;
}

ValueSpec dims(int r, int c, const std::string& name = "") {
  ValueSpec v;
  v.kind = ValueSpec::Kind::Dims;
  v.rows = r;
  v.cols = c;
  v.dims_is_vector = c == 1;
  v.name = name;
  return v;
}

ValueSpec vec(std::vector<double> d) {
  ValueSpec v;
  v.kind = ValueSpec::Kind::Vector;
  v.rows = static_cast<int>(d.size());
  v.cols = 1;
  v.data = std::move(d);
  return v;
}

ValueSpec ref(const std::string& name) {
  ValueSpec v;
  v.kind = ValueSpec::Kind::Reference;
  v.name = name;
  return v;
}

Literal weighted(Literal l, ValueSpec w) {
  l.weight = std::move(w);
  return l;
}

MetaEntry meta(const std::string& key, const std::string& value, std::vector<std::string> args = {}) {
  MetaEntry m;
  m.key = key;
  m.value.name = value;
  m.value.args = std::move(args);
  m.value.has_parens = !m.value.args.empty();
  return m;
}

// A tiny ground-sample builder: atoms by text, ground rules appended per rule.
struct SampleBuilder {
  logic::GroundSample g;
  std::map<std::string, uint32_t> atoms;
  uint32_t atom(const std::string& text, uint32_t example_fact = logic::kNone,
                uint32_t template_fact = logic::kNone) {
    auto it = atoms.find(text);
    if (it != atoms.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(g.atom_pred.size());
    atoms[text] = id;
    g.atom_pred.push_back(0);
    if (g.atom_args_begin.empty()) g.atom_args_begin.push_back(0);
    g.atom_args_begin.push_back(0);
    g.atom_example_fact.push_back(example_fact);
    g.atom_template_fact.push_back(template_fact);
    return id;
  }
  void ground(uint32_t rule, uint32_t n_inputs, uint32_t n_vars, const std::string& head,
              std::vector<std::string> inputs, std::vector<uint32_t> bindings = {}) {
    logic::GroundRuleSet* rs = nullptr;
    for (auto& r : g.rules)
      if (r.rule == rule) rs = &r;
    if (!rs) {
      g.rules.push_back({});
      rs = &g.rules.back();
      rs->rule = rule;
      rs->n_inputs = n_inputs;
      rs->n_vars = n_vars;
    }
    rs->head.push_back(atom(head));
    for (auto& i : inputs) rs->inputs.push_back(atom(i));
    for (auto b : bindings) rs->bindings.push_back(b);
  }
};

struct Harness {
  neural::TemplateModel model;
  std::vector<neural::SampleNetwork> nets;
  std::vector<ExampleAst> examples;
  std::vector<double> output_weights;  // loss = sum_o <c_o, y_o>

  double loss(exec::Workspace& ws, const exec::Plan& plan) {
    exec::forward(plan, model.params, ws);
    double L = 0;
    size_t k = 0;
    for (size_t o = 0; o < plan.outputs.size(); ++o)
      for (double y : exec::output_value(plan, ws, o)) L += output_weights[k++] * y;
    return L;
  }

  exec::Plan plan() {
    std::vector<const neural::SampleNetwork*> ptrs;
    for (auto& n : nets) ptrs.push_back(&n);
    return exec::build_plan(model, ptrs);
  }

  // Compares analytic gradients with central differences for every parameter entry.
  void check(double tol = 1e-6) {
    exec::Plan p = plan();
    exec::Workspace ws;
    // Forward must write every value before reading it: NaN garbage would show.
    ws.values.assign(p.num_values, std::nan(""));
    exec::forward(p, model.params, ws);
    size_t total = 0;
    for (size_t o = 0; o < p.outputs.size(); ++o) total += p.outputs[o].shape.size();
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    output_weights.resize(total);
    for (double& c : output_weights) c = u(rng);
    ws.grads.assign(p.num_values, 0.0);
    size_t k = 0;
    for (size_t o = 0; o < p.outputs.size(); ++o) {
      if (p.outputs[o].offset == exec::kNoValue) {
        ++k;
        continue;
      }
      for (int e = 0; e < p.outputs[o].shape.size(); ++e) ws.grads[p.outputs[o].offset + e] += output_weights[k++];
    }
    std::vector<double> grads(model.params.size(), 0.0);
    exec::backward(p, model.params, ws, grads);
    double max_abs = 0;
    for (size_t i = 0; i < model.params.size(); ++i) {
      const double saved = model.params.values[i];
      const double h = 1e-6;
      model.params.values[i] = saved + h;
      const double lp = loss(ws, p);
      model.params.values[i] = saved - h;
      const double lm = loss(ws, p);
      model.params.values[i] = saved;
      const double fd = (lp - lm) / (2 * h);
      EXPECT_NEAR(grads[i], fd, tol * std::max(1.0, std::abs(fd))) << "parameter entry " << i;
      max_abs = std::max(max_abs, std::abs(grads[i]));
    }
    EXPECT_GT(max_abs, 1e-4) << "gradients must not all vanish";
  }
};

void randomize(neural::Parameters& params, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-0.9, 0.9);
  for (double& x : params.values) x = u(rng);
}

// hid(X) :- W0{3,2} f(X), W1{3} ~g(X), offset{3}   [activation=tanh]
// out    :- W2{1,3} hid(X), 0.7 g(X)               [activation=sigmoid, aggregation=avg]
// {3,2} out2 :- W{4,3} m^T  [activation=tanh]   (m is a 3x2 matrix: (W m)^T is 2x4)
// out/0 has a scalar offset and a sigmoid.
TEST(NeuralGradient, VectorAndMatrixWeightsOffsetsSoftNegation) {
  TemplateAst ast;
  Rule r0;
  r0.head = lit("hid", {var("X")});
  r0.body = {weighted(lit("f", {var("X")}), dims(3, 2)), weighted(lit("g", {var("X")}), dims(3, 1))};
  r0.body[1].soft_negated = true;
  r0.offset = dims(3, 1);
  r0.meta = {meta("activation", "tanh")};
  Rule r1;
  r1.head = lit("out", {});
  r1.body = {weighted(lit("hid", {var("X")}), dims(1, 3)), weighted(lit("g", {var("X")}), ValueSpec::scalar(0.7))};
  r1.meta = {meta("activation", "sigmoid")};
  Rule r2;  // a matrix value through a transposed literal and a head weight
  r2.head = weighted(lit("out2", {}), dims(3, 2));
  r2.body = {weighted(lit("m", {}), dims(4, 3))};
  r2.body[0].transposed = true;
  r2.meta = {meta("activation", "tanh")};
  ast.rules = {r0, r1, r2};
  PredicateDecl d;
  d.name = "out";
  d.arity = 0;
  d.offset = ValueSpec::scalar(0.1);
  d.meta = {meta("activation", "sigmoid")};
  ast.predicates = {d};

  Harness H;
  H.model = neural::TemplateModel::compile(ast, {{"X"}, {"X"}, {}});
  randomize(H.model.params, 1);

  ExampleAst ex;
  ex.facts = {weighted(lit("f", {con("a")}), vec({0.3, -0.2})), weighted(lit("f", {con("b")}), vec({0.8, 0.1})),
              weighted(lit("g", {con("a")}), ValueSpec::scalar(0.4)), weighted(lit("g", {con("b")}), ValueSpec::scalar(0.9))};
  ValueSpec mat;
  mat.kind = ValueSpec::Kind::Matrix;
  mat.rows = 3;
  mat.cols = 2;
  mat.data = {0.1, 0.2, -0.3, 0.4, 0.5, -0.6};
  ex.facts.push_back(weighted(lit("m", {}), mat));
  SampleBuilder b;
  b.atom("f(a)", 0);
  b.atom("f(b)", 1);
  b.atom("g(a)", 2);
  b.atom("g(b)", 3);
  b.atom("m", 4);
  b.ground(0, 2, 1, "hid(a)", {"f(a)", "g(a)"});
  b.ground(0, 2, 1, "hid(b)", {"f(b)", "g(b)"});
  b.ground(1, 2, 1, "out", {"hid(a)", "g(a)"});
  b.ground(1, 2, 1, "out", {"hid(b)", "g(b)"});
  b.ground(2, 1, 0, "out2", {"m"});
  b.g.query_atoms = {{b.atom("out")}, {b.atom("out2")}};
  H.examples = {ex};
  H.nets.push_back(neural::neuralize(H.model, ex, b.g));
  exec::Plan p = H.plan();
  ASSERT_EQ(p.outputs.size(), 2u);
  EXPECT_EQ(p.outputs[0].shape, (exec::Shape{1, 1}));
  EXPECT_EQ(p.outputs[1].shape, (exec::Shape{3, 4}));  // {3,2} * (W{4,3} m)^T
  H.check();
}

// Attention as rules: softmax(J) normalises across heads att(I, *) (a segment spans
// several heads), product with a transposed literal, one named weight used twice, and an
// atom out(I) derived by two rules for one constant and by one for the other.
TEST(NeuralGradient, SoftmaxProductTransposedNamedWeightsTemplateFacts) {
  TemplateAst ast;
  Rule r0;
  r0.head = lit("att", {var("I"), var("J")});
  r0.body = {weighted(lit("k", {var("J")}), dims(2, 2, "w")), weighted(lit("q", {var("I")}), ref("w"))};
  r0.body[0].transposed = true;
  r0.meta = {meta("combination", "product"), meta("aggregation", "softmax", {"J"})};
  Rule r1;
  r1.head = lit("out", {var("I")});
  r1.body = {lit("att", {var("I"), var("J")}), weighted(lit("v", {var("J")}), dims(2, 2))};
  r1.meta = {meta("combination", "product"), meta("aggregation", "sum")};
  Rule r2;
  r2.head = weighted(lit("out", {var("I")}), ValueSpec::scalar(0.5));
  r2.body = {lit("t", {var("I")}), weighted(lit("v", {var("J")}), dims(2, 2))};
  r2.meta = {meta("aggregation", "max")};
  ast.rules = {r0, r1, r2};
  ast.facts = {weighted(lit("t", {con("a")}), dims(2, 1))};
  PredicateDecl d;
  d.name = "out";
  d.arity = 1;
  d.meta = {meta("activation", "tanh")};
  d.offset = dims(2, 1);
  ast.predicates = {d};

  Harness H;
  H.model = neural::TemplateModel::compile(ast, {{"I", "J"}, {"I", "J"}, {"I", "J"}});
  ASSERT_NE(H.model.params.find("$w"), neural::kNoParam);
  EXPECT_EQ(H.model.params.count(), 6u);  // $w, rule1 v, rule2 head, rule2 v, t(a), out offset
  randomize(H.model.params, 3);

  ExampleAst ex;
  std::vector<std::string> c = {"a", "b", "c"};
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  SampleBuilder b;
  for (const char* p : {"k", "v"})
    for (auto& x : c) {
      b.atom(std::string(p) + "(" + x + ")", static_cast<uint32_t>(ex.facts.size()));
      ex.facts.push_back(weighted(lit(p, {con(x)}), vec({u(rng), u(rng)})));
    }
  for (auto& x : {"a", "b"}) {
    b.atom(std::string("q(") + x + ")", static_cast<uint32_t>(ex.facts.size()));
    ex.facts.push_back(weighted(lit("q", {con(x)}), vec({u(rng), u(rng)})));
  }
  b.atom("t(a)", logic::kNone, 0);
  for (uint32_t i = 0; i < 2; ++i)
    for (uint32_t j = 0; j < 3; ++j) {
      std::string att = "att(" + c[i] + "," + c[j] + ")";
      b.ground(0, 2, 2, att, {"k(" + c[j] + ")", "q(" + c[i] + ")"}, {i, j});
      b.ground(1, 2, 2, "out(" + c[i] + ")", {att, "v(" + c[j] + ")"}, {i, j});
    }
  for (uint32_t j = 0; j < 3; ++j) b.ground(2, 2, 2, "out(a)", {"t(a)", "v(" + c[j] + ")"}, {0, j});
  b.g.query_atoms = {{b.atom("out(a)"), b.atom("out(b)")}, {b.atom("att(a,b)")}};
  H.nets.push_back(neural::neuralize(H.model, ex, b.g));
  H.examples = {ex};
  // A second copy of the sample exercises merging (and distinct softmax segments).
  H.nets.push_back(H.nets[0]);
  exec::Plan p = H.plan();
  ASSERT_EQ(p.outputs.size(), 6u);

  // Attention weights of one query sum to 1 across its heads att(a, *).
  exec::Workspace ws;
  exec::forward(p, H.model.params, ws);
  const auto& net = H.nets[0];
  double total = 0;
  for (uint32_t l = 0; l < net.num_atoms(); ++l) {
    const uint32_t ground = net.atom_ground_id[l];
    for (auto& j : c)
      if (b.atom("att(a," + j + ")") == ground) total += ws.values[p.atom_offsets[0][l]];
  }
  EXPECT_NEAR(total, 1.0, 1e-12);
  H.check();
}

// A recursive template on a cyclic graph: p(X) :- e(X, Y), p(Y).  p(X) :- b(X).
// The ground graph a -> b -> a is cyclic; neuralization drops the ground rule closing the
// cycle (found by DFS from the query) and terminates.
TEST(NeuralGradient, CyclesAreBrokenDeterministically) {
  TemplateAst ast;
  Rule r0;
  r0.head = lit("p", {var("X")});
  r0.body = {weighted(lit("e", {var("X"), var("Y")}), ValueSpec::scalar(0.5)), weighted(lit("p", {var("Y")}), dims(1, 1))};
  r0.meta = {meta("activation", "sigmoid")};
  Rule r1;
  r1.head = lit("p", {var("X")});
  r1.body = {weighted(lit("b", {var("X")}), dims(1, 1))};
  ast.rules = {r0, r1};
  Harness H;
  H.model = neural::TemplateModel::compile(ast, {{"X", "Y"}, {"X"}});
  randomize(H.model.params, 4);
  ExampleAst ex;
  ex.facts = {lit("e", {con("a"), con("b")}), lit("e", {con("b"), con("a")}), lit("b", {con("a")}), lit("b", {con("b")})};
  SampleBuilder b;
  b.atom("e(a,b)", 0);
  b.atom("e(b,a)", 1);
  b.atom("b(a)", 2);
  b.atom("b(b)", 3);
  b.ground(0, 2, 2, "p(a)", {"e(a,b)", "p(b)"});
  b.ground(0, 2, 2, "p(b)", {"e(b,a)", "p(a)"});
  b.ground(1, 1, 1, "p(a)", {"b(a)"});
  b.ground(1, 1, 1, "p(b)", {"b(b)"});
  b.g.query_atoms = {{b.atom("p(a)")}};
  H.nets.push_back(neural::neuralize(H.model, ex, b.g));
  EXPECT_EQ(H.nets[0].dropped_cycle_rules, 1u);  // p(b) :- e(b,a), p(a) closes the cycle
  EXPECT_EQ(H.nets[0].num_ground_rules(), 3u);
  const auto again = neural::neuralize(H.model, ex, b.g);
  EXPECT_EQ(again.structure_hash, H.nets[0].structure_hash);
  H.check();
}

// Values by hand: h :- 2 a, 3 b, offset 1 [sigmoid] and h :- 1 c over two groundings
// (avg); h/0 has offset -1 and tanh.
TEST(NeuralForward, ValuesMatchTheDefinition) {
  TemplateAst ast;
  Rule r0;
  r0.head = lit("h", {});
  r0.body = {weighted(lit("a", {}), ValueSpec::scalar(2)), weighted(lit("b", {}), ValueSpec::scalar(3))};
  r0.offset = ValueSpec::scalar(1);
  r0.meta = {meta("activation", "sigmoid")};
  Rule r1;
  r1.head = lit("h", {});
  r1.body = {weighted(lit("c", {var("X")}), ValueSpec::scalar(1))};
  ast.rules = {r0, r1};
  PredicateDecl d;
  d.name = "h";
  d.offset = ValueSpec::scalar(-1);
  d.meta = {meta("activation", "tanh")};
  ast.predicates = {d};
  auto model = neural::TemplateModel::compile(ast, {{}, {"X"}});
  ExampleAst ex;
  ex.facts = {weighted(lit("a", {}), ValueSpec::scalar(0.5)), lit("b", {}),
              weighted(lit("c", {con("x")}), ValueSpec::scalar(0.2)), weighted(lit("c", {con("y")}), ValueSpec::scalar(0.6))};
  SampleBuilder b;
  b.atom("a", 0);
  b.atom("b", 1);
  b.atom("c(x)", 2);
  b.atom("c(y)", 3);
  b.atom("unused", logic::kNone);
  b.ground(0, 2, 0, "h", {"a", "b"});
  b.ground(1, 1, 1, "h", {"c(x)"});
  b.ground(1, 1, 1, "h", {"c(y)"});
  b.g.query_atoms = {{b.atom("h")}, {}};
  auto net = neural::neuralize(model, ex, b.g);
  EXPECT_EQ(net.num_atoms(), 5u);  // "unused" is pruned: no query depends on it
  auto plan = exec::build_plan(model, {&net});
  exec::Workspace ws;
  exec::forward(plan, model.params, ws);
  const double expected = std::tanh(1.0 / (1.0 + std::exp(-(1 + 2 * 0.5 + 3 * 1.0))) + (0.2 + 0.6) / 2 - 1);
  ASSERT_EQ(plan.outputs.size(), 2u);
  EXPECT_NEAR(exec::output_value(plan, ws, 0)[0], expected, 1e-12);
  EXPECT_EQ(exec::output_value(plan, ws, 1)[0], 0.0);  // underivable query: no neuron, 0
}

TEST(NeuralForward, ShapeMismatchNamesRuleLiteralAndShapes) {
  TemplateAst ast;
  Rule r0;
  r0.head = lit("h", {});
  r0.body = {weighted(lit("a", {}), dims(2, 3))};
  ast.rules = {r0};
  auto model = neural::TemplateModel::compile(ast, {{}});
  ExampleAst ex;
  ex.facts = {weighted(lit("a", {}), vec({1, 2}))};
  SampleBuilder b;
  b.atom("a", 0);
  b.ground(0, 1, 0, "h", {"a"});
  b.g.query_atoms = {{b.atom("h")}};
  auto net = neural::neuralize(model, ex, b.g);
  try {
    exec::build_plan(model, {&net});
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Shape);
    EXPECT_NE(e.message().find("rule 1"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("literal a"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("2x3"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("2x1"), std::string::npos) << e.message();
  }
}

}  // namespace
