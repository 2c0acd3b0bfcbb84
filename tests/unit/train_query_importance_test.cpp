// Weighted queries (`0.25 id :- 1.0 q.`, PyNeuraLogic's `R.id[0.25] <= R.q[1.0]`): the
// line's importance scales its queries' loss and gradient, it reads and prints back, and a
// query's target written as a list marks its output as a vector.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lrnn/lrnn.hpp"

namespace {

const char* kTemplate =
    "hidden(X) :- {2,2} f(X). [activation=tanh]\n"
    "{1,2} out(X) :- hidden(X).\n"
    "out/1 [activation=sigmoid]\n";
const char* kExamples = "s0 :- [0.5, -1] f(x), [2, 0.25] f(y).\n";

std::vector<double> gradient(const lrnn::Model& model, const std::string& queries) {
  const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples, queries);
  const lrnn::GroundNetwork net = model.network(data, 0, true);
  std::vector<double> g;
  for (const lrnn::Parameter& p : net.parameter_gradients) g.insert(g.end(), p.values.begin(), p.values.end());
  return g;
}

lrnn::Model make_model() {
  lrnn::Settings s;
  s.seed = 7;
  return lrnn::Model(lrnn::Template::from_string(kTemplate), s);
}

TEST(QueryImportance, ParsesAndPrintsBack) {
  const auto lines = lrnn::parse_queries("0.25 s0 :- 1.0 out(x).\ns1 :- 0 out(y).\n");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].importance, 0.25);
  EXPECT_EQ(lines[0].id, "s0");
  EXPECT_EQ(lines[1].importance, 1.0);
  EXPECT_EQ(lrnn::print_query_line(lines[0]), "0.25 s0 :- 1 out(x).");
  EXPECT_EQ(lrnn::print_query_line(lines[1]), "s1 :- 0 out(y).");
  const auto again = lrnn::parse_queries(lrnn::print_query_line(lines[0]));
  EXPECT_EQ(again[0].importance, 0.25);
  EXPECT_EQ(again[0].queries, lines[0].queries);
}

TEST(QueryImportance, RefusesWhatIsNotOneNumber) {
  for (const char* bad : {"[1, 2] s0 :- 1 out(x).", "-0.5 s0 :- 1 out(x).", "$w s0 :- 1 out(x)."}) {
    EXPECT_THROW(lrnn::parse_queries(bad), lrnn::Error) << bad;
  }
  try {
    lrnn::parse_queries("-0.5 s0 :- 1 out(x).");
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("importance"), std::string::npos) << e.what();
  }
}

TEST(QueryImportance, GradientIsImportanceTimesUnweighted) {
  const lrnn::Model model = make_model();
  const std::vector<double> plain = gradient(model, "s0 :- 1.0 out(x).\n");
  const std::vector<double> weighted = gradient(model, "0.25 s0 :- 1.0 out(x).\n");
  ASSERT_EQ(plain.size(), weighted.size());
  double largest = 0;
  for (size_t k = 0; k < plain.size(); ++k) {
    EXPECT_NEAR(weighted[k], 0.25 * plain[k], 1e-15) << k;
    largest = std::max(largest, std::abs(plain[k]));
  }
  EXPECT_GT(largest, 1e-3);  // the comparison is not between zeros
}

TEST(QueryImportance, TrainingStepAndLossScale) {
  // One SGD step (lr 1, one sample): every weight moves by importance x the unweighted step.
  lrnn::Settings s;
  s.seed = 7;
  s.optimizer = "sgd";
  s.lr = 1.0;
  s.epochs = 1;
  auto step = [&](const std::string& queries, double* loss) {
    lrnn::Model model(lrnn::Template::from_string(kTemplate), s);
    const lrnn::Dataset data = lrnn::Dataset::from_text(kExamples, queries);
    *loss = model.evaluate(data).metrics.loss;
    const std::vector<lrnn::Parameter> before = model.parameters();
    model.train(data);
    std::vector<double> moved;
    for (const lrnn::Parameter& p : before) {
      const lrnn::Parameter after = model.parameter(p.name);
      for (size_t e = 0; e < p.values.size(); ++e) moved.push_back(after.values[e] - p.values[e]);
    }
    return moved;
  };
  double plain_loss = 0, weighted_loss = 0;
  const std::vector<double> plain = step("s0 :- 1.0 out(x).\n", &plain_loss);
  const std::vector<double> weighted = step("0.4 s0 :- 1.0 out(x).\n", &weighted_loss);
  for (size_t k = 0; k < plain.size(); ++k) EXPECT_NEAR(weighted[k], 0.4 * plain[k], 1e-15) << k;
  EXPECT_NEAR(weighted_loss, 0.4 * plain_loss, 1e-15);
  EXPECT_GT(plain_loss, 1e-3);
}

TEST(QueryImportance, OneExampleServesLinesOfDifferentImportance) {
  // Both lines join the single example (one sample): each output keeps its own line's
  // importance, and the gradient is the importance-weighted sum of the two.
  const lrnn::Model model = make_model();
  const lrnn::Dataset data =
      lrnn::Dataset::from_text("e :- [0.5, -1] f(x), [2, 0.25] f(y).\n", "0.25 e :- 1.0 out(x).\n0.75 e :- 0 out(y).\n");
  const lrnn::Evaluation ev = model.evaluate(data);
  ASSERT_EQ(ev.outputs.size(), 2u);
  EXPECT_EQ(ev.outputs[0].importance, 0.25);
  EXPECT_EQ(ev.outputs[1].importance, 0.75);
  const lrnn::Dataset x = lrnn::Dataset::from_text("[0.5, -1] f(x), [2, 0.25] f(y).\n", "1.0 out(x).\n");
  const lrnn::Dataset y = lrnn::Dataset::from_text("[0.5, -1] f(x), [2, 0.25] f(y).\n", "0 out(y).\n");
  const lrnn::GroundNetwork both = model.network(data, 0, true), gx = model.network(x, 0, true),
                            gy = model.network(y, 0, true);
  for (size_t p = 0; p < both.parameter_gradients.size(); ++p)
    for (size_t e = 0; e < both.parameter_gradients[p].values.size(); ++e) {
      // each network's loss is a mean over its targeted outputs: two here, one alone
      const double expected =
          (0.25 * gx.parameter_gradients[p].values[e] + 0.75 * gy.parameter_gradients[p].values[e]) / 2;
      EXPECT_NEAR(both.parameter_gradients[p].values[e], expected, 1e-15);
    }
}

TEST(QueryImportance, ListedTargetMarksAVectorOutput) {
  const lrnn::Model model = make_model();
  const lrnn::Evaluation listed = model.evaluate(lrnn::Dataset::from_text(kExamples, "s0 :- [1.0] out(x).\n"));
  const lrnn::Evaluation scalar = model.evaluate(lrnn::Dataset::from_text(kExamples, "s0 :- 1.0 out(x).\n"));
  ASSERT_EQ(listed.outputs.size(), 1u);
  EXPECT_TRUE(listed.outputs[0].listed_target);
  EXPECT_FALSE(scalar.outputs[0].listed_target);
  EXPECT_EQ(listed.outputs[0].value, scalar.outputs[0].value);
}

}  // namespace
