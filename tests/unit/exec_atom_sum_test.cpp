// Fused atom sums (exec/atom_sum.hpp): an atom group whose rule inputs are summed (or
// averaged) in place, with an offset and a ReLU or identity activation, runs forward and
// backward in one pass each. Checked against the unfused kernels, which the same template
// takes with leaky_relu(0) (the same function, not fusable): outputs, loss and every
// parameter gradient equal (== : the same additions in the same order; only the sign of a
// zero may differ), over widths with and without a compile-time row loop, sum and avg,
// vector and scalar offsets, an atom with no input; and gradients against finite
// differences.
#include <gtest/gtest.h>

#include <string>

#include "lrnn/lrnn.hpp"
#include "model_gradient_check.hpp"

namespace {

const char* kExamples =
    "<0.3> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[-0.75, 0.4]> x(3), <[0.2, 0.6]> x(4), "
    "edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2), edge(3, 1), edge(1, 3), edge(4, 1).\n"
    "<0.8> o :- <[0.1, 0.9]> x(1), <[-0.4, 0.3]> x(2), edge(1, 2), edge(2, 1).\n";

// A GCN layer's atoms h (self + neighbours, `combination` of the two rules), an offset of
// `offset` shape, activation `activation`; g averages h over in-edges (node 4 has none).
std::string layer_template(int width, const std::string& activation, const std::string& combination,
                           const std::string& offset) {
  const std::string w = std::to_string(width);
  return "h(X) :- $w={" + w + ",2} x(X).\n"
         "h(X) :- $w={" + w + ",2} x(Y), *edge(X, Y). [aggregation=sum]\n"
         "h/1 " + offset + " [activation=" + activation + ", combination=" + combination + "]\n"
         "g(X) :- $u={3," + w + "} h(Y), *edge(Y, X). [aggregation=avg]\n"
         "g/1 [activation=" + activation + "]\n"
         "o :- {1,3} g(X). [aggregation=avg]\n";
}

lrnn::Model model_of(const std::string& text) {
  lrnn::Settings s;
  s.seed = 5;
  return lrnn::Model(lrnn::Template::from_string(text), s);
}

TEST(FusedAtomSum, EqualsUnfusedKernels) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  for (int width : {5, 16, 32, 64})
    for (const std::string combination : {"sum", "avg"})
      for (const bool scalar_offset : {false, true})
        for (const std::string activation : {"relu", "identity"}) {
          const std::string w = std::to_string(width);
          const std::string offset = scalar_offset ? "{1}" : "{" + w + ",1}";
          const std::string unfused = activation == "relu" ? "leaky_relu(0)" : "leaky_relu(1)";
          lrnn::Model fused = model_of(layer_template(width, activation, combination, offset));
          lrnn::Model plain = model_of(layer_template(width, unfused, combination, offset));
          lrnn_test::copy_parameters(fused, plain);
          const std::string where = "width " + w + " " + combination + " " + activation +
                                    (scalar_offset ? " scalar offset" : " vector offset");
          for (size_t s = 0; s < data.size(); ++s) {
            const lrnn::GroundNetwork a = fused.network(data, s, true), b = plain.network(data, s, true);
            EXPECT_NE(a.loss, 0.0) << where;
            EXPECT_EQ(a.loss, b.loss) << where << " sample " << s;
            ASSERT_EQ(a.parameter_gradients.size(), b.parameter_gradients.size());
            for (size_t i = 0; i < a.parameter_gradients.size(); ++i)
              for (size_t e = 0; e < a.parameter_gradients[i].values.size(); ++e)
                EXPECT_EQ(a.parameter_gradients[i].values[e], b.parameter_gradients[i].values[e])
                    << where << " " << a.parameter_gradients[i].name << "[" << e << "] sample " << s;
          }
        }
}

// Training and evaluation plans keep a fused ReLU or identity atom sum's outputs in its
// sums' slot (PlanOptions::in_place_atoms; inspection, above, does not): training with them
// ends with the parameters of the unfused kernels, to the bit, in both dtypes.
TEST(FusedAtomSum, TrainingInPlaceEqualsUnfused) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  for (const lrnn::Dtype dtype : {lrnn::Dtype::Float64, lrnn::Dtype::Float32})
    for (const std::string activation : {"relu", "identity"}) {
      lrnn::Settings s;
      s.seed = 5;
      s.epochs = 4;
      s.batch_size = 1;
      s.lr = 0.05;
      s.dtype = dtype;
      const std::string unfused = activation == "relu" ? "leaky_relu(0)" : "leaky_relu(1)";
      // g stays linear (a ReLU after the average left this small network dead at this seed).
      auto with_linear_g = [](std::string t) {
        const size_t at = t.find("g/1 [activation=");
        return t.substr(0, at) + "g/1 [activation=identity]\n" + t.substr(t.find('\n', at) + 1);
      };
      lrnn::Model fused(lrnn::Template::from_string(with_linear_g(layer_template(32, activation, "avg", "{32,1}"))), s);
      lrnn::Model plain(lrnn::Template::from_string(with_linear_g(layer_template(32, unfused, "avg", "{32,1}"))), s);
      lrnn_test::copy_parameters(fused, plain);
      const std::vector<lrnn::Parameter> before = fused.parameters();
      const double loss_fused = fused.train(data).history.back().train.loss;
      const double loss_plain = plain.train(data).history.back().train.loss;
      EXPECT_EQ(loss_fused, loss_plain) << activation;
      const std::vector<lrnn::Parameter> a = fused.parameters(), b = plain.parameters();
      ASSERT_EQ(a.size(), b.size());
      size_t moved = 0;
      for (size_t i = 0; i < a.size(); ++i)
        for (size_t e = 0; e < a[i].values.size(); ++e) {
          EXPECT_EQ(a[i].values[e], b[i].values[e]) << activation << " " << a[i].name << "[" << e << "]";
          moved += a[i].values[e] != before[i].values[e];
        }
      EXPECT_GT(moved, 100u) << activation;  // training really stepped the weights
    }
}

TEST(FusedAtomSum, GradientsMatchFiniteDifferences) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples);
  for (const std::string combination : {"sum", "avg"}) {
    lrnn::Model model = model_of(layer_template(4, "relu", combination, "{4,1}"));
    lrnn_test::GradientCheck check;
    lrnn_test::expect_gradients_match_finite_differences(model, data, &check);
    EXPECT_EQ(check.checked, 8u + 4u + 12u + 3u) << combination;  // $w, h/1's offset, $u, o's weight
    EXPECT_GT(check.largest, 1e-3);
  }
}

}  // namespace
