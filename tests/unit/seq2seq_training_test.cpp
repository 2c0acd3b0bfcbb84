// What training a sequence-to-sequence model needs beyond the other losses and schedules:
// cross-entropy with label smoothing (torch's nn.CrossEntropyLoss(label_smoothing=)) and
// the warm-up schedule of "Attention Is All You Need" (noam), changed every optimizer step.
// The torch numbers were printed by PyTorch 2.13 (float64).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "lrnn/lrnn.hpp"
#include "train/config.hpp"
#include "train/numerics.hpp"

namespace {

using lrnn::train::LossKind;
using Vec = std::vector<double>;

LossKind smoothed(double e) { return LossKind(LossKind::CrossEntropy, e); }

double loss_of(LossKind kind, const Vec& y, const Vec& t, Vec* grad = nullptr) {
  Vec g(y.size());
  const double l = lrnn::train::loss(kind, y, t, g);
  if (grad) *grad = g;
  return l;
}

TEST(LabelSmoothing, ValuesMatchTorch) {
  // nn.CrossEntropyLoss(label_smoothing=e)(logits [[1, 2, 3]], target)
  EXPECT_NEAR(loss_of(smoothed(0.1), {1, 2, 3}, {2}), 0.5076059644443804, 1e-14);
  EXPECT_NEAR(loss_of(smoothed(1.0), {1, 2, 3}, {2}), 1.4076059644443806, 1e-14);
  EXPECT_NEAR(loss_of(smoothed(0.1), {1, 2, 3}, {0.2, 0.3, 0.5}), 1.1376059644443806, 1e-14);
  // A target that does not sum to 1 is smoothed with e / n all the same, as torch does.
  EXPECT_NEAR(loss_of(smoothed(0.1), {1, 2, 3}, {0.4, 0.6, 0.8}), 2.0610822588443343, 1e-14);
  // The one-hot vector of a class index gives the same loss.
  EXPECT_NEAR(loss_of(smoothed(0.1), {1, 2, 3}, {0, 0, 1}), 0.5076059644443804, 1e-14);
  Vec g;
  EXPECT_NEAR(loss_of(smoothed(0.1), {1, 2, 3}, {0}, &g), 2.3076059644443805, 1e-14);
  const Vec torch_grad = {-0.84330276016295291, 0.21139513772146432, 0.63190762244148846};
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(g[i], torch_grad[i], 1e-15) << i;
  // Smoothing 0 is the plain loss.
  EXPECT_EQ(loss_of(smoothed(0.0), {1, 2, 3}, {2}), loss_of(LossKind::CrossEntropy, {1, 2, 3}, {2}));
}

TEST(LabelSmoothing, GradientsMatchFiniteDifferences) {
  const std::vector<std::pair<Vec, Vec>> cases = {
      {{0.1, -0.4, 1.3, 0.0}, {2}}, {{0.1, -0.4, 1.3, 0.0}, {0}}, {{0.1, -0.4, 1.3, 0.0}, {0.1, 0.2, 0.3, 0.4}},
      {{5.0, -3.0}, {1}},           {{0.5, 0.25, -2.0}, {0, 1, 0}},  {{0.5, 0.25, -2.0}, {0.4, 0.6, 0.8}}};
  for (double e : {0.1, 0.35, 1.0})
    for (auto [y, t] : cases) {
      Vec grad;
      loss_of(smoothed(e), y, t, &grad);
      for (size_t i = 0; i < y.size(); ++i) {
        const double saved = y[i], h = 1e-6;
        y[i] = saved + h;
        const double up = loss_of(smoothed(e), y, t);
        y[i] = saved - h;
        const double down = loss_of(smoothed(e), y, t);
        y[i] = saved;
        EXPECT_NEAR(grad[i], (up - down) / (2 * h), 1e-7) << "smoothing " << e << " entry " << i;
      }
    }
}

TEST(LabelSmoothing, RefusesASingleEntryOutputAndBadSettings) {
  EXPECT_THROW(loss_of(smoothed(0.1), {0.3}, {1}), lrnn::Error);
  lrnn::Settings s;
  s.loss = "crossentropy";
  for (double bad : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    s.label_smoothing = bad;
    try {
      lrnn::train::make_train_config(s, 0);
      ADD_FAILURE() << "accepted label_smoothing " << bad;
    } catch (const lrnn::Error& e) {
      EXPECT_NE(std::string(e.what()).find("'label_smoothing' must be in [0, 1]"), std::string::npos) << e.what();
    }
  }
  s.label_smoothing = 0.1;
  EXPECT_DOUBLE_EQ(lrnn::train::make_train_config(s, 0).loss.label_smoothing, 0.1);
  EXPECT_DOUBLE_EQ(lrnn::train::settings_of(lrnn::train::make_train_config(s, 0)).label_smoothing, 0.1);
  s.loss = "mse";
  try {
    lrnn::train::make_train_config(s, 0);
    ADD_FAILURE() << "accepted label smoothing of mse";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("crossentropy loss only"), std::string::npos) << e.what();
  }
}

TEST(NoamSchedule, EqualsTorchLambdaLRStepByStep) {
  // LambdaLR(SGD(lr=2), lambda s: 32**-0.5 * min((s+1)**-0.5, (s+1) * 4**-1.5)), the rate
  // of each optimizer.step() with scheduler.step() after it.
  const Vec torch_lr = {0.04419417382415922, 0.08838834764831845, 0.13258252147247768, 0.1767766952966369,
                        0.15811388300841897, 0.14433756729740646, 0.1336306209562122,  0.12500000000000003};
  lrnn::train::Schedule noam;
  noam.kind = lrnn::train::Schedule::parse("noam");
  noam.warmup = 4;
  noam.model_size = 32;
  ASSERT_TRUE(noam.per_step());
  for (size_t k = 0; k < torch_lr.size(); ++k) EXPECT_NEAR(noam.step_lr(2.0, k + 1), torch_lr[k], 1e-16) << k;
  noam.model_size = 0;  // no d_model factor
  EXPECT_DOUBLE_EQ(noam.step_lr(1.0, 4), 0.5);
  lrnn::Settings s;
  s.warmup = 0;
  EXPECT_THROW(lrnn::train::make_train_config(s, 0), lrnn::Error);
  s.warmup = 10;
  s.d_model = 0;
  EXPECT_THROW(lrnn::train::make_train_config(s, 0), lrnn::Error);
}

// SGD under noam: every step (here one sample per step, three steps an epoch, over two
// calls of train) moves the weights by minus that step's rate times the gradient.
TEST(NoamSchedule, EveryOptimizerStepTakesItsOwnRate) {
  lrnn::Settings s;
  s.optimizer = "sgd";
  s.lr = 3.0;
  s.schedule = "noam";
  s.warmup = 2;
  s.d_model = 4;
  s.epochs = 1;
  s.batch_size = 1;
  s.shuffle = false;
  lrnn::Model model(lrnn::Template::from_string("{1,2} out :- f(X).\nout/0 [activation=tanh]\n"), s);
  const char* rows[] = {"<0.5> out :- <[2.5, -1]> f(a).\n", "<-0.3> out :- <[1, 2]> f(b).\n",
                        "<0.9> out :- <[-1, 0.5]> f(c).\n"};
  lrnn::Dataset data = lrnn::Dataset::from_text(std::string(rows[0]) + rows[1] + rows[2]);
  uint64_t step = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    // What the epoch should do, sample by sample with the rate of each step.
    Vec w = model.parameter(model.parameters()[0].name).values;
    for (const char* row : rows) {
      ++step;
      const double rate = 3.0 / 2.0 * std::min(1.0 / std::sqrt(step), step * std::pow(2.0, -1.5));
      lrnn::Model probe(lrnn::Template::from_string("{1,2} out :- f(X).\nout/0 [activation=tanh]\n"), s);
      probe.set_parameter(model.parameters()[0].name, w);
      const lrnn::GroundNetwork net = probe.network(lrnn::Dataset::from_text(row), 0, true);
      const Vec& g = net.parameter_gradients[0].values;
      for (size_t k = 0; k < w.size(); ++k) w[k] -= rate * g[k];
    }
    const lrnn::TrainReport report = model.train(data);
    const Vec got = model.parameter(model.parameters()[0].name).values;
    for (size_t k = 0; k < w.size(); ++k) EXPECT_NEAR(got[k], w[k], 1e-13) << "epoch " << epoch << " entry " << k;
    EXPECT_DOUBLE_EQ(report.history.back().lr, 3.0 / 2.0 * std::min(1.0 / std::sqrt(step), step * std::pow(2.0, -1.5)));
  }
}

}  // namespace
