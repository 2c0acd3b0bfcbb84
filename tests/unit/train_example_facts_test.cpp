// Learnable example facts (Dataset::with_learnable_facts, PyNeuraLogic's
// build_dataset(learnable_facts=True)): the data's own parameters take the gradient of the
// loss at the fact and step with the model's weights; a weight name shares one parameter;
// an ambiguous literal is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lrnn/lrnn.hpp"

namespace {

// out(X) = w . emb(X) with identity everywhere: dL/d emb = 2 (y - t) w under the summed MSE.
const char* kTemplate =
    "out/1 [activation=identity]\n"
    "$w=[[0.5, -0.5]] out(X) :- emb(X). [activation=identity, combination=sum]\n";

lrnn::Model sgd_model(double lr) {
  lrnn::Settings s;
  s.optimizer = "sgd";
  s.lr = lr;
  s.loss = "mse_sum";
  s.epochs = 1;
  s.batch_size = 0;
  return lrnn::Model(lrnn::Template::from_string(kTemplate), s);
}

std::vector<double> fact_value(const lrnn::Model& m, const lrnn::Dataset& d, const std::string& literal) {
  for (const lrnn::ExampleParameter& p : m.example_parameters(d))
    if (p.literal == literal) return p.value.values;
  ADD_FAILURE() << "no learnable fact " << literal;
  return {};
}

TEST(TrainExampleFacts, OneSgdStepMovesFactAndWeightByTheirGradients) {
  lrnn::Model model = sgd_model(0.5);
  const lrnn::Dataset data =
      lrnn::Dataset::from_text("<1.0> out(a) :- [0.3, 0.7] emb(a).\n").with_learnable_facts();
  ASSERT_EQ(model.example_parameters(data).size(), 1u);
  EXPECT_EQ(fact_value(model, data, "emb(a)"), (std::vector<double>{0.3, 0.7}));
  model.train(data);
  // y = 0.15 - 0.35 = -0.2, dL/dy = 2 (y - 1) = -2.4:
  // emb(a) -= 0.5 * (-2.4) * w  ->  [0.9, 0.1];  w -= 0.5 * (-2.4) * emb(a)  ->  [0.86, 0.34].
  const std::vector<double> e = fact_value(model, data, "emb(a)");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_NEAR(e[0], 0.9, 1e-12);
  EXPECT_NEAR(e[1], 0.1, 1e-12);
  const lrnn::Parameter w = model.parameter("$w");
  EXPECT_NEAR(w.values[0], 0.86, 1e-12);
  EXPECT_NEAR(w.values[1], 0.34, 1e-12);
  // The forward pass reads the trained value: 0.86 * 0.9 + 0.34 * 0.1.
  EXPECT_NEAR(model.evaluate(data).outputs[0].value[0], 0.86 * 0.9 + 0.34 * 0.1, 1e-12);
}

TEST(TrainExampleFacts, ConstantFactsStayWhatTheExampleWrote) {
  lrnn::Model model = sgd_model(0.5);
  const lrnn::Dataset data = lrnn::Dataset::from_text("<1.0> out(a) :- [0.3, 0.7] emb(a).\n");
  EXPECT_TRUE(model.example_parameters(data).empty());
  model.train(data);
  const lrnn::Parameter w = model.parameter("$w");
  EXPECT_NEAR(model.evaluate(data).outputs[0].value[0], w.values[0] * 0.3 + w.values[1] * 0.7, 1e-12);
}

TEST(TrainExampleFacts, NamedWeightIsOneParameterWithTheSummedGradient) {
  lrnn::Model model = sgd_model(0.5);
  const lrnn::Dataset data = lrnn::Dataset::from_text(
                                 "<1.0> out(a) :- $e=[0.3, 0.7] emb(a).\n"
                                 "<0.0> out(b) :- $e=[0.3, 0.7] emb(b).\n")
                                 .with_learnable_facts();
  const auto params = model.example_parameters(data);
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].index, params[1].index);
  EXPECT_EQ(params[0].value.name, "$e");
  model.train(data);
  // y = -0.2 for both: dL/de = 2 (-0.2 - 1) w + 2 (-0.2 - 0) w = -2.8 w.
  const std::vector<double> e = fact_value(model, data, "emb(b)");
  EXPECT_NEAR(e[0], 0.3 + 0.5 * 2.8 * 0.5, 1e-12);
  EXPECT_NEAR(e[1], 0.7 - 0.5 * 2.8 * 0.5, 1e-12);
  EXPECT_EQ(fact_value(model, data, "emb(a)"), e);
}

TEST(TrainExampleFacts, AnUnnamedLiteralLearnableInTwoSamplesIsRefused) {
  lrnn::Model model = sgd_model(0.5);
  const lrnn::Dataset data = lrnn::Dataset::from_text(
                                 "<1.0> out(a) :- [0.3, 0.7] emb(a).\n"
                                 "<0.0> out(a) :- [0.1, 0.2] emb(a).\n")
                                 .with_learnable_facts();
  try {
    model.example_parameters(data);
    FAIL() << "expected an error";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("emb(a)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sample 0"), std::string::npos) << e.what();
  }
}

TEST(TrainExampleFacts, DimensionsOnlyAreDrawnAndRefusedWithoutLearnableFacts) {
  lrnn::Model model = sgd_model(0.5);
  const lrnn::Dataset plain = lrnn::Dataset::from_text("<1.0> out(a) :- {2} emb(a).\n");
  EXPECT_THROW(model.evaluate(plain), lrnn::Error);
  const lrnn::Dataset learnable = plain.with_learnable_facts();
  const std::vector<double> drawn = fact_value(model, learnable, "emb(a)");
  ASSERT_EQ(drawn.size(), 2u);
  EXPECT_TRUE(drawn[0] != 0.0 || drawn[1] != 0.0);
  EXPECT_THROW(model.network(learnable, 0), lrnn::Error);  // would show written values
}

}  // namespace
