// lrnn::FactRows (include/lrnn/model.hpp): one sample run for rows of its facts' values gives
// what that sample written with each row's values gives (Model::forward, Model::network's
// vector-Jacobian product), and refuses what it cannot run.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "lrnn/lrnn.hpp"

namespace {

const char* kTemplate =
    "hidden(X) :- {3,2} f(X), {3}. [activation=tanh]\n"
    "{1,3} out :- hidden(X), g. [aggregation=max]\n"
    "out/0 [activation=sigmoid]\n";

std::string example(const std::vector<double>& v) {
  auto num = [](double x) { return std::to_string(x); };
  return "[" + num(v[0]) + ", " + num(v[1]) + "] f(a), [" + num(v[2]) + ", " + num(v[3]) + "] f(b), " + num(v[4]) +
         " g.";
}

TEST(FactRows, RowsGiveTheOutputsAndGradientsOfTheirOwnSamples) {
  lrnn::Model model(lrnn::Template::from_string(kTemplate));
  const std::vector<std::vector<double>> rows = {{0.5, -1, 1, 2, 0.3}, {-0.25, 0.75, 0.1, -2, 1.5}};
  lrnn::FactRows fr = model.fact_rows(lrnn::Dataset::from_text(example(rows[0]), "out."));
  ASSERT_EQ(fr.facts(), (std::vector<std::string>{"f(a)", "f(b)", "g"}));
  ASSERT_EQ(fr.fact_sizes(), (std::vector<size_t>{2, 2, 1}));
  ASSERT_EQ(fr.row_size(), 5u);
  ASSERT_EQ(fr.output_size(), 1u);
  std::vector<double> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  const std::vector<double> out = fr.forward(flat.data(), 2);
  const std::vector<double> seed = {0.7, -1.3};
  std::vector<lrnn::Parameter> param_grads;
  const std::vector<double> grads = fr.backward(flat.data(), seed.data(), 2, param_grads);
  std::vector<double> summed(model.num_parameter_values(), 0.0);
  for (size_t r = 0; r < 2; ++r) {
    lrnn::Dataset one = lrnn::Dataset::from_text(example(rows[r]), "out.");
    EXPECT_NEAR(out[r], model.forward(one)[0][0], 1e-14);
    lrnn::GroundNetwork net = model.network(one, 0, std::vector<std::vector<double>>{{seed[r]}});
    for (const auto& atom : net.atoms) {
      size_t begin = atom.text == "f(a)" ? 0 : atom.text == "f(b)" ? 2 : atom.text == "g" ? 4 : 99;
      if (begin == 99) continue;
      for (size_t k = 0; k < atom.gradient.size(); ++k)
        EXPECT_NEAR(grads[r * 5 + begin + k], atom.gradient[k], 1e-14) << atom.text;
    }
    ASSERT_EQ(net.parameter_gradients.size(), param_grads.size());
  }
  // Parameter gradients are the sums of the rows' own.
  for (size_t p = 0; p < param_grads.size(); ++p) {
    std::vector<double> want(param_grads[p].values.size(), 0.0);
    for (size_t r = 0; r < 2; ++r) {
      lrnn::GroundNetwork net = model.network(lrnn::Dataset::from_text(example(rows[r]), "out."), 0,
                                              std::vector<std::vector<double>>{{seed[r]}});
      for (size_t k = 0; k < want.size(); ++k) want[k] += net.parameter_gradients[p].values[k];
    }
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(param_grads[p].values[k], want[k], 1e-14);
  }
  EXPECT_GT(std::abs(grads[0]) + std::abs(grads[4]), 1e-6);  // real gradients, not zeros
}

TEST(FactRows, RefusesDatasetsOfOtherThanOneSampleAndOneOutput) {
  lrnn::Model model(lrnn::Template::from_string(kTemplate));
  EXPECT_THROW(model.fact_rows(lrnn::Dataset::from_text("[1, 2] f(a), g.\n[1, 2] f(b), g.", "out.\nout.")),
               lrnn::Error);
  EXPECT_THROW(model.fact_rows(lrnn::Dataset::from_text("[1, 2] f(a), [3, 4] f(b), g.", "hidden(X).")), lrnn::Error);
}

}  // namespace
