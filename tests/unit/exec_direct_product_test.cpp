// Direct products (exec/direct_product.hpp): product rules whose unweighted inputs are
// read where they live instead of being gathered per grounding, and summed per head
// without being stored when nothing else comes between. Checked two ways: the outputs
// equal the gathered path's (the same template with a fixed <1.0> weight on one input,
// which forces the gather), and every parameter gradient equals central finite
// differences of the loss. The templates cover each kind: scalar factors only, a scaled
// vector or matrix, a dot product (a transposed column or a real row vector, and the same
// atom on both sides), with softmax(J) in between, fused sums and averages, and an
// activation that keeps the products stored.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "exec/direct_product.hpp"
#include "lrnn/lrnn.hpp"
#include "model_gradient_check.hpp"

namespace {

// Self-attention over three positions: the score is a dot product scaled by a fixed and a
// learnable scalar fact, normalised by softmax(J) (causal mask), and the values are summed
// weighted by it (a fused sum).
const char* kAttention =
    "q(I) :- $wq={3,2} x(I).\n"
    "k(I) :- $wk={3,2} x(I).\n"
    "v(I) :- $wv={4,2} x(I).\n"
    "<0.57> s.\n"
    "$t=0.8 t.\n"
    "w(I, J) :- s, K_LITERAL, q(I), t MASK. [combination=product, aggregation=softmax(J)]\n"
    "out(I) :- w(I, J), V_LITERAL. [combination=product, aggregation=sum]\n"
    "o :- $wo={1,4} out(I).\n";

// The other kinds: h(I)^T h(I) (one atom on both sides, fused avg), scalars times a vector
// averaged over J (fused avg), an activated scaled vector (stored), scalar factors only
// (fused sum), a scaled matrix (fused sum) and a row vector times a column (fused avg).
const char* kKinds =
    "h(I) :- $wh={3,2} x(I).\n"
    "mat(I) :- $wmat={2,3} sc(I).\n"
    "sq(I) :- H_LITERAL, h(I). [combination=product]\n"
    "g(I) :- sc(J), h(J), sc(I). [combination=product, aggregation=avg]\n"
    "z(I) :- sc(I), h(I). [combination=product, activation=tanh]\n"
    "p(I) :- sc(I), sc(J). [combination=product, aggregation=sum]\n"
    "mm(I) :- sc(J), mat(J). [combination=product, aggregation=sum]\n"
    "mr(I) :- $wr={1,2} mm(I).\n"
    "ms(I) :- mr(I), h(I). [combination=product]\n"
    "o :- $o1={1,3} g(I), $o2={1,3} z(I), sq(I), p(I), ms(I).\n";

const char* kExamples =
    "<0.3> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[-0.75, 0.4]> x(3), "
    "<0.9> sc(1), <-0.6> sc(2), <1.3> sc(3).\n";

std::string with(std::string text, const std::string& key, const std::string& value) {
  text.replace(text.find(key), key.size(), value);
  return text;
}

lrnn::Model model_of(const std::string& text) {
  lrnn::Settings s;
  s.seed = 7;
  return lrnn::Model(lrnn::Template::from_string(text), s);
}

// Copies every learnable named parameter of `from` into `to`.
void copy_named(const lrnn::Model& from, lrnn::Model& to) {
  for (const lrnn::Parameter& p : from.parameters())
    if (p.name.rfind('$', 0) == 0) to.set_parameter(p.name, p.values);
}

// a's atoms are b's: the same texts, values and gradients (to 1e-12). Returns how many
// values were compared.
size_t expect_same_atoms(const lrnn::GroundNetwork& a, const lrnn::GroundNetwork& b) {
  EXPECT_EQ(a.atoms.size(), b.atoms.size());
  size_t compared = 0;
  for (size_t i = 0; i < std::min(a.atoms.size(), b.atoms.size()); ++i) {
    EXPECT_EQ(a.atoms[i].text, b.atoms[i].text);
    EXPECT_EQ(a.atoms[i].value.size(), b.atoms[i].value.size()) << a.atoms[i].text;
    for (size_t e = 0; e < std::min(a.atoms[i].value.size(), b.atoms[i].value.size()); ++e, ++compared) {
      EXPECT_NEAR(a.atoms[i].value[e], b.atoms[i].value[e], 1e-12) << a.atoms[i].text;
      EXPECT_NEAR(a.atoms[i].gradient[e], b.atoms[i].gradient[e], 1e-12) << a.atoms[i].text;
    }
  }
  return compared;
}

void expect_gradients_match_finite_differences(lrnn::Model& model, const lrnn::Dataset& data) {
  lrnn_test::GradientCheck check;
  lrnn_test::expect_gradients_match_finite_differences(model, data, &check);
  EXPECT_GT(check.checked, 10u);
}

// The attention template with `mask` (causal: ", @leq(J, I)"; full: ""); without a mask
// every (I, J) pair is grounded and the scores and weighted sums are dense blocks.
std::string attention(const std::string& mask, bool gathered) {
  std::string t = with(kAttention, "MASK", mask);
  t = with(t, "K_LITERAL", gathered ? "<1.0> k(J)^T" : "k(J)^T");
  return with(t, "V_LITERAL", gathered ? "<1.0> v(J)" : "v(J)");
}

class DirectAttention : public ::testing::TestWithParam<bool> {};  // causal?

TEST_P(DirectAttention, EqualsGatheredPathAndDefinition) {
  const bool causal = GetParam();
  const std::string mask = causal ? ", @leq(J, I)" : "";
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  lrnn::Model direct = model_of(attention(mask, false));
  lrnn::Model gathered = model_of(attention(mask, true));
  copy_named(direct, gathered);
  const double o_direct = direct.forward(data)[0][0];
  EXPECT_NEAR(o_direct, gathered.forward(data)[0][0], 1e-12);

  // From the definition: o = avg_I wo . sum_{J (<= I)} softmax_J(s t k_J . q_I) v_J.
  auto param = [&](const char* name) { return direct.parameter(name).values; };
  const auto wq = param("$wq"), wk = param("$wk"), wv = param("$wv"), wo = param("$wo");
  const double t = param("$t")[0];
  const double x[3][2] = {{0.5, -1.0}, {1.0, 0.25}, {-0.75, 0.4}};
  auto project = [&](const std::vector<double>& w, int rows, int i) {
    std::vector<double> y(rows);
    for (int r = 0; r < rows; ++r) y[r] = w[r * 2] * x[i][0] + w[r * 2 + 1] * x[i][1];
    return y;
  };
  double o = 0;
  for (int i = 0; i < 3; ++i) {
    const auto q = project(wq, 3, i);
    const int last = causal ? i : 2;
    std::vector<double> score(last + 1);
    double z = 0;
    for (int j = 0; j <= last; ++j) {
      const auto k = project(wk, 3, j);
      score[j] = std::exp(0.57 * t * (k[0] * q[0] + k[1] * q[1] + k[2] * q[2]));
      z += score[j];
    }
    std::vector<double> out(4, 0.0);
    for (int j = 0; j <= last; ++j) {
      const auto v = project(wv, 4, j);
      for (int r = 0; r < 4; ++r) out[r] += score[j] / z * v[r];
    }
    for (int r = 0; r < 4; ++r) o += wo[r] * out[r] / 3.0;
  }
  EXPECT_NEAR(o_direct, o, 1e-12);
}

TEST_P(DirectAttention, GradientsMatchFiniteDifferences) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  lrnn::Model direct = model_of(attention(GetParam() ? ", @leq(J, I)" : "", false));
  expect_gradients_match_finite_differences(direct, data);
}

INSTANTIATE_TEST_SUITE_P(CausalAndFull, DirectAttention, ::testing::Bool());

// Unnormalised scores (no softmax): the weights w(I, J) stay in grounding order, which
// stores them column by column for the weighted sum (a transposed dense block).
TEST(DirectProduct, UnnormalisedFullAttentionEqualsGatheredPath) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  auto unnormalised = [](bool gathered) {
    return with(attention("", gathered), "aggregation=softmax(J)", "aggregation=sum");
  };
  lrnn::Model direct = model_of(unnormalised(false));
  lrnn::Model gathered = model_of(unnormalised(true));
  copy_named(direct, gathered);
  EXPECT_NEAR(direct.forward(data)[0][0], gathered.forward(data)[0][0], 1e-12);
  expect_gradients_match_finite_differences(direct, data);
}

// A constant factor of a dense weighted sum that is 0: its gradient is the sum it scales,
// not 0 / 0.
TEST(DirectProduct, DenseSumWithAZeroConstantFactor) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  const std::string text =
      "$u=0.0 u.\n" + with(attention("", false), "v(J). [", "v(J), u. [");
  lrnn::Model direct = model_of(text);
  EXPECT_EQ(direct.forward(data)[0][0], 0.0);
  expect_gradients_match_finite_differences(direct, data);
  const auto grads = direct.network(data, 0, true).parameter_gradients;
  bool found = false;
  for (const auto& p : grads)
    if (p.name == "$u") {
      found = true;
      EXPECT_GT(std::abs(p.values[0]), 1e-6);
    }
  EXPECT_TRUE(found);
}

TEST(DirectProduct, EveryKindEqualsGatheredPath) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  lrnn::Model direct = model_of(with(kKinds, "H_LITERAL", "h(I)^T"));
  lrnn::Model gathered = model_of(with(kKinds, "H_LITERAL", "<1.0> h(I)^T"));
  copy_named(direct, gathered);
  const double o = direct.forward(data)[0][0];
  EXPECT_NEAR(o, gathered.forward(data)[0][0], 1e-12);
  EXPECT_GT(std::abs(o), 1e-3);  // every branch contributes something
  // The other kinds agree too: compare atom by atom with a network whose every product is
  // gathered (a fixed unit weight on the first input of each product rule).
  std::string all_gathered = kKinds;
  for (const char* from : {"sc(J), h(J)", "sc(I), h(I)", "sc(I), sc(J)", "sc(J), mat(J)", "mr(I), h(I)"})
    all_gathered = with(all_gathered, from, std::string("<1.0> ") + from);
  lrnn::Model reference = model_of(with(all_gathered, "H_LITERAL", "<1.0> h(I)^T"));
  copy_named(direct, reference);
  expect_same_atoms(direct.network(data, 0, true), reference.network(data, 0, true));
}

// Rules of one unweighted input whose combination is the identity on one value (a GIN
// layer's neighbour sum): products of one factor, read in place and summed per head (sum,
// avg; vector and scalar inputs; sum, max, min and elproduct combinations) or stored under
// an activation. Atom by atom equal to the gathered path (a fixed <1.0> weight), values and
// gradients.
const char* kOneInput =
    "h(I) :- $wh={3,2} x(I).\n"
    "a(I) :- A h(J), *edge(J, I). [aggregation=sum]\n"
    "b(I) :- B h(J), *edge(J, I). [aggregation=avg, combination=max]\n"
    "c(I) :- C sc(J), *edge(I, J). [aggregation=avg, combination=min]\n"
    "d(I) :- D h(I). [combination=elproduct, activation=tanh]\n"
    "e(I) :- E sc(I). [activation=sigmoid]\n"
    "o :- $o1={1,3} a(I), $o2={1,3} b(I), $o3={1,3} d(I), c(I), e(I).\n";

std::string one_input(bool gathered) {
  std::string t = kOneInput;
  for (const char* key : {"A ", "B ", "C ", "D ", "E "}) t = with(t, key, gathered ? "<1.0> " : "");
  return t;
}

const char* kEdges =
    "<0.3> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[-0.75, 0.4]> x(3), "
    "<0.9> sc(1), <-0.6> sc(2), <1.3> sc(3), edge(1, 2), edge(2, 1), edge(3, 1), edge(2, 3), edge(3, 3).\n";

TEST(DirectProduct, OneInputRulesEqualGatheredPath) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kEdges);
  lrnn::Model direct = model_of(one_input(false));
  lrnn::Model reference = model_of(one_input(true));
  copy_named(direct, reference);
  const lrnn::GroundNetwork a = direct.network(data, 0, true);
  const lrnn::GroundNetwork b = reference.network(data, 0, true);
  EXPECT_GT(std::abs(a.loss), 1e-3);
  EXPECT_NEAR(a.loss, b.loss, 1e-12);
  expect_same_atoms(a, b);
  size_t derived = 0;
  for (const auto& atom : a.atoms) derived += std::string("abcde").find(atom.text[0]) != std::string::npos;
  EXPECT_EQ(derived, 15u);  // a, b, c, d, e of nodes 1-3
  // Inspection shows every rule neuron as the gathered path does: a fused sum stores no row
  // per grounding (rules a, b, c), its rule neurons show their input's value and their
  // head's gradient (over the groundings for an average).
  ASSERT_EQ(a.rule_neurons.size(), b.rule_neurons.size());
  size_t with_gradients = 0;
  for (size_t i = 0; i < a.rule_neurons.size(); ++i) {
    const auto& x = a.rule_neurons[i];
    const auto& y = b.rule_neurons[i];
    ASSERT_EQ(x.rule, y.rule);
    ASSERT_EQ(x.value.size(), y.value.size()) << "rule neuron " << i;
    ASSERT_EQ(x.gradient.size(), y.gradient.size()) << "rule neuron " << i;
    for (size_t e = 0; e < x.value.size(); ++e) EXPECT_NEAR(x.value[e], y.value[e], 1e-12) << "rule neuron " << i;
    for (size_t e = 0; e < x.gradient.size(); ++e)
      EXPECT_NEAR(x.gradient[e], y.gradient[e], 1e-12) << "rule neuron " << i;
    with_gradients += !x.gradient.empty();
  }
  EXPECT_GE(with_gradients, 15u);  // at least the fused sums' (five groundings of a, b and c)
}

TEST(DirectProduct, OneInputRulesGradientsMatchFiniteDifferences) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kEdges);
  lrnn::Model direct = model_of(one_input(false));
  expect_gradients_match_finite_differences(direct, data);
}

TEST(DirectProduct, EveryKindGradientsMatchFiniteDifferences) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  lrnn::Model direct = model_of(with(kKinds, "H_LITERAL", "h(I)^T"));
  expect_gradients_match_finite_differences(direct, data);
}

}  // namespace

namespace {

// A GNN's neighbour sum and average with the weight on the head: every member is its
// input row alone, summed by the plain row sums (direct_product.cpp), compiled for the
// widths 8, 10, 16, 32 and 64 and run-time for the others. Atom by atom equal to the
// gathered path (a fixed <1.0> weight), values and gradients, and gradients equal to
// finite differences.
std::string plain_sums(int width, bool gathered) {
  const std::string w = std::to_string(width), one = gathered ? "<1.0> " : "";
  return "h(I) :- $wh={" + w + ",2} x(I).\n" +                                   //
         "{" + w + "," + w + "} a(I) :- " + one + "h(J), *edge(J, I). [aggregation=sum]\n" +
         "{" + w + "," + w + "} b(I) :- " + one + "h(J), *edge(J, I). [aggregation=avg]\n" +
         "a/1 [activation=tanh]\n" +                                             //
         "o :- $o1={1," + w + "} a(I), $o2={1," + w + "} b(I).\n";
}

class PlainRowSums : public ::testing::TestWithParam<int> {};  // the row width

TEST_P(PlainRowSums, EqualGatheredPathAndFiniteDifferences) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kEdges);
  lrnn::Model direct = model_of(plain_sums(GetParam(), false));
  lrnn::Model reference = model_of(plain_sums(GetParam(), true));
  copy_named(direct, reference);
  for (const lrnn::Parameter& p : direct.parameters())  // the head weights too
    reference.set_parameter(p.name, p.values);
  const lrnn::GroundNetwork a = direct.network(data, 0, true);
  const lrnn::GroundNetwork b = reference.network(data, 0, true);
  EXPECT_GT(std::abs(a.loss), 1e-3);
  EXPECT_NEAR(a.loss, b.loss, 1e-12);
  EXPECT_GE(expect_same_atoms(a, b), size_t(9 * GetParam()));  // h, a and b of three nodes
  expect_gradients_match_finite_differences(direct, data);
}

INSTANTIATE_TEST_SUITE_P(Widths, PlainRowSums, ::testing::Values(3, 8, 10, 16, 32));

// The order a plain row sum's forward visits its heads (RuleGroup::head_order): by their
// count of members, heads of one count in head order; none when the counts are all equal
// or the group's members are not their input rows alone. (kEdges' in-degrees are 2, 1 and
// 2: the PlainRowSums plans above run their forward in that order.)
TEST(DirectProduct, HeadOrderSortsHeadsByTheirCountOfMembers) {
  lrnn::exec::RuleGroup G;
  G.direct.kind = lrnn::exec::DirectProduct::Kind::Scale;
  G.direct.fused_sum = true;
  G.direct.a = 0;
  G.inputs.resize(1);
  G.inputs[0].src = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  G.n = 9;
  G.m = 5;
  G.head_segments = {0, 2, 3, 6, 7, 9};  // counts 2, 1, 3, 1, 2
  lrnn::exec::order_heads_by_count(G);
  EXPECT_EQ(G.head_order, (std::vector<uint32_t>{1, 3, 0, 4, 2}));
  G.head_segments = {0, 2, 4, 6, 8, 10};  // all 2
  lrnn::exec::order_heads_by_count(G);
  EXPECT_TRUE(G.head_order.empty());
  G.head_segments = {0, 2, 3, 6, 7, 9};
  G.direct.scalars = {1};  // a scalar factor: not a plain row sum
  lrnn::exec::order_heads_by_count(G);
  EXPECT_TRUE(G.head_order.empty());
}

}  // namespace
