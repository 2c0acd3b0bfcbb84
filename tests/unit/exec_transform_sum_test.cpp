// TransformSum (exec/transform_sum.hpp): a weighted input summed or averaged per head is
// transformed once per distinct input atom and summed from those rows; rules of one depth
// with the same weight and inputs share the rows (a GCN layer's self and neighbour rules).
// Checked two ways: the outputs equal the gathered path's (the same template with
// combination=max on each such rule, which is the identity on one input but takes the
// per-grounding path), and every parameter gradient equals central finite differences.
// The template covers shared rows (h), repeated back-to-back inputs averaged (g), inputs
// scattered among other facts (m, gathered before the GEMM) and a sum with an atom offset
// and activation added in place.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "lrnn/lrnn.hpp"
#include "model_gradient_check.hpp"

namespace {

const char* kGraph =
    "h(X) :- $w={3,2} x(X). [AGG_SELF]\n"
    "h(X) :- $w={3,2} x(Y), *edge(X, Y). [aggregation=sum MAX]\n"
    "h/1 {3,1} [activation=tanh]\n"
    "g(X) :- $u={2,3} h(Y), *edge(Y, X). [aggregation=avg MAX]\n"
    "m(X) :- $v={2,2} x(Y), *near(X, Y). [aggregation=sum MAX]\n"
    "o :- $o1={1,2} g(X), $o2={1,2} m(X). [aggregation=avg]\n";

const char* kExamples =
    "<0.3> o :- <[0.5, -1.0]> x(1), <2.0> near(1, 3), <[1.0, 0.25]> x(2), <1.0> near(2, 1), "
    "<[-0.75, 0.4]> x(3), <1.0> near(3, 3), <0.5> near(3, 2), <[0.2, 0.6]> x(4), <1.0> near(4, 2), "
    "edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2), edge(3, 1), edge(1, 3), edge(4, 1).\n"
    "<0.8> o :- <[0.1, 0.9]> x(1), <1.0> near(1, 2), <[-0.4, 0.3]> x(2), <1.0> near(2, 2), "
    "edge(1, 2), edge(2, 1).\n";

std::string graph_template(bool gathered) {
  std::string t = kGraph;
  auto set = [&](const std::string& key, const std::string& value) {
    for (size_t at = t.find(key); at != std::string::npos; at = t.find(key, at + value.size()))
      t.replace(at, key.size(), value);
  };
  set("[AGG_SELF]", gathered ? "[combination=max]" : "");
  set(" MAX]", gathered ? ", combination=max]" : "]");
  return t;
}

lrnn::Model model_of(const std::string& text) {
  lrnn::Settings s;
  s.seed = 11;
  return lrnn::Model(lrnn::Template::from_string(text), s);
}

TEST(TransformSum, EqualsGatheredPath) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  lrnn::Model direct = model_of(graph_template(false));
  lrnn::Model gathered = model_of(graph_template(true));
  lrnn_test::copy_parameters(direct, gathered);
  const auto a = direct.forward(data), b = gathered.forward(data);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_GT(std::abs(a[i][0]), 1e-3);
    EXPECT_NEAR(a[i][0], b[i][0], 1e-12) << "output " << i;
  }
  for (size_t s = 0; s < 2; ++s) {
    const lrnn::GroundNetwork na = direct.network(data, s, true), nb = gathered.network(data, s, true);
    EXPECT_NEAR(na.loss, nb.loss, 1e-12);
    ASSERT_EQ(na.parameter_gradients.size(), nb.parameter_gradients.size());
    for (size_t i = 0; i < na.parameter_gradients.size(); ++i)
      for (size_t e = 0; e < na.parameter_gradients[i].values.size(); ++e)
        EXPECT_NEAR(na.parameter_gradients[i].values[e], nb.parameter_gradients[i].values[e], 1e-12)
            << na.parameter_gradients[i].name << "[" << e << "] sample " << s;
  }
}

// The widths with a compile-time row loop (16, 32, 64) and one without (8) sum the rows
// as the gathered path does, to the bit. (One rule: a self rule through the same weight
// would be merged with it in training plans, PlanOptions::merge_shared_weight_rules,
// W (a + b) rather than W a + W b, the same values but not the same bits.)
TEST(TransformSum, EqualsGatheredPathAtVectorWidths) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  for (int width : {8, 16, 32, 64}) {
    const std::string w = std::to_string(width);
    std::string text = "h(X) :- $w={" + w + ",2} x(Y), *edge(X, Y). [aggregation=sum MAX]\n"
                       "h/1 {" + w + ",1} [activation=tanh]\n"
                       "o :- {1," + w + "} h(X). [aggregation=avg]\n";
    auto with = [&](const std::string& max) {
      std::string t = text;
      t.replace(t.find(" MAX]"), 5, max);
      return t;
    };
    lrnn::Model direct = model_of(with("]"));
    lrnn::Model gathered = model_of(with(", combination=max]"));
    lrnn_test::copy_parameters(direct, gathered);
    const auto a = direct.forward(data), b = gathered.forward(data);
    ASSERT_EQ(a.size(), 2u);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i][0], b[i][0]) << "width " << width << " output " << i;
  }
}

TEST(TransformSum, GradientsMatchFiniteDifferences) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  lrnn::Model model = model_of(graph_template(false));
  lrnn_test::GradientCheck check;
  lrnn_test::expect_gradients_match_finite_differences(model, data, &check);
  EXPECT_EQ(check.checked, 6u + 3u + 6u + 4u + 2u + 2u);  // $w, h/1 offset, $u, $v, $o1, $o2
  EXPECT_GT(check.largest, 1e-3);
}

// At a width of 16 the GEMMs take the small-GEMM kernels (exec/small_gemm.hpp): the first
// layer's weight gradient (16 x 2) through the kernel on its columns, the second layer's
// every product, its inputs' gradients (the first layer's rows) included.
TEST(TransformSum, GradientsMatchFiniteDifferencesAtKernelWidth) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  lrnn::Model model = model_of(
      "h(X) :- $w={16,2} x(X).\n"
      "h(X) :- $w={16,2} x(Y), *edge(X, Y). [aggregation=sum]\n"
      "h/1 {16,1} [activation=tanh]\n"
      "g(X) :- $u={16,16} h(X).\n"
      "g(X) :- $u={16,16} h(Y), *edge(Y, X). [aggregation=avg]\n"
      "g/1 [activation=tanh]\n"
      "o :- $o={1,16} g(X). [aggregation=avg]\n");
  lrnn_test::GradientCheck check;
  lrnn_test::expect_gradients_match_finite_differences(model, data, &check);
  EXPECT_EQ(check.checked, 32u + 16u + 256u + 16u);  // $w, h/1 offset, $u, $o
  EXPECT_GT(check.largest, 1e-3);
}

}  // namespace

// Inspection (Model::network) of the rules whose groundings are never stored: each rule
// neuron's value is its input's row of W x, equal to the gathered path's stored value (it
// read past the values before: AddressSanitizer's heap-buffer-overflow).
TEST(TransformSum, GroundNetworkShowsEveryRuleNeuronsValue) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  lrnn::Model direct = model_of(graph_template(false));
  lrnn::Model gathered = model_of(graph_template(true));
  lrnn_test::copy_parameters(direct, gathered);
  for (size_t sample = 0; sample < data.size(); ++sample) {
    const lrnn::GroundNetwork a = direct.network(data, sample, true);
    const lrnn::GroundNetwork b = gathered.network(data, sample, true);
    ASSERT_EQ(a.rule_neurons.size(), b.rule_neurons.size());
    size_t compared = 0;
    for (size_t i = 0; i < a.rule_neurons.size(); ++i) {
      const auto& x = a.rule_neurons[i];
      const auto& y = b.rule_neurons[i];
      ASSERT_EQ(x.rule, y.rule);
      if (x.value.empty()) continue;  // a fused direct product: not stored, not shown
      ASSERT_EQ(x.value.size(), y.value.size()) << "rule neuron " << i;
      for (size_t e = 0; e < x.value.size(); ++e) EXPECT_NEAR(x.value[e], y.value[e], 1e-12);
      ++compared;
    }
    EXPECT_EQ(compared, a.rule_neurons.size()) << "every rule neuron of this template has a value";
  }
}
