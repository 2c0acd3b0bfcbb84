// Training numerics: portable random numbers and initialisers (hard-coded values from an
// independent mt19937_64 in Python), losses (values against PyTorch, FD gradients),
// optimizers (PyTorch update sequences and hand-written recurrences), schedules, metrics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "lrnn/diagnostics.hpp"
#include "train/numerics.hpp"

namespace {

using namespace lrnn::train;
using lrnn::Error;
using lrnn::ErrorKind;
using Vec = std::vector<double>;

// ---- random numbers and initialisers ------------------------------------------------------

TEST(NumericsRandom, GeneratorIsTheStandardMt19937_64) {
  Rng rng(5489);
  rng.discard(9999);
  EXPECT_EQ(rng(), 9981545732273789042ull);  // required by the C++ standard
}

TEST(NumericsRandom, UniformAndNormalDrawsAreHardCoded) {
  // Computed by an independent Python mt19937_64 with the documented formulas.
  Rng rng(42);
  const Vec uniform = {0.755155532954539, 0.6390313938546974, 0.7521452007480266, 0.13627268363243705};
  for (double u : uniform) EXPECT_EQ(uniform01(rng), u);
  Rng rng2(42);
  const Vec normal = {-1.0771745442782885, 1.0945198485006107, 1.7947316657951717, -0.912125155644141};
  for (double z : normal) EXPECT_NEAR(standard_normal(rng2), z, 1e-15);
}

TEST(NumericsRandom, InitialisersReproduceHardCodedValues) {
  Rng rng(7);
  Vec w(6);
  initialize(Initializer{InitKind::Glorot}, 3, 2, w, rng);
  const Vec glorot = {0.5573302775293317, 0.9843696157540264, -0.838203313826906,
                      0.8586387498757264, -0.7859346274074089, -0.9747420523030634};
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], glorot[i], 1e-15) << i;
  Rng rng2(7);
  Vec h(4);
  initialize(Initializer{InitKind::He}, 2, 4, h, rng2);
  const Vec he = {1.1252896436493913, 0.2749961144855415, 0.3671102996153142, 1.0849527885175014};
  for (size_t i = 0; i < h.size(); ++i) EXPECT_NEAR(h[i], he[i], 1e-15) << i;
}

TEST(NumericsRandom, SameSeedSameValuesDifferentSeedDifferentValues) {
  for (auto kind : {InitKind::Uniform, InitKind::Normal, InitKind::Glorot, InitKind::He}) {
    Vec a(50), b(50), c(50);
    Rng r1(123), r2(123), r3(124);
    initialize(Initializer{kind, 0.3}, 5, 10, a, r1);
    initialize(Initializer{kind, 0.3}, 5, 10, b, r2);
    initialize(Initializer{kind, 0.3}, 5, 10, c, r3);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
  }
  Vec k(4);
  Rng r(1);
  initialize(Initializer{InitKind::Constant, 0.5}, 2, 2, k, r);
  EXPECT_EQ(k, Vec(4, 0.5));
}

struct Moments {
  double mean, var, max_abs;
};
Moments moments(const Vec& w) {
  double mean = std::accumulate(w.begin(), w.end(), 0.0) / w.size(), var = 0, max_abs = 0;
  for (double x : w) {
    var += (x - mean) * (x - mean);
    max_abs = std::max(max_abs, std::abs(x));
  }
  return {mean, var / w.size(), max_abs};
}

TEST(NumericsRandom, InitialiserStatistics) {
  const size_t n = 100000;
  Rng rng(2024);
  {  // Glorot on a 200 x 500 weight: U(-a, a), a = sqrt(6 / 700), variance a^2 / 3.
    Vec w(n);
    initialize(Initializer{InitKind::Glorot}, 200, 500, w, rng);
    const double a = std::sqrt(6.0 / 700.0);
    Moments m = moments(w);
    EXPECT_LE(m.max_abs, a);
    EXPECT_GT(m.max_abs, 0.999 * a);
    EXPECT_NEAR(m.var, a * a / 3, 0.02 * a * a / 3);
    EXPECT_NEAR(m.mean, 0.0, 0.01 * a);
  }
  {  // He on fan_in 50: N(0, 2/50).
    Vec w(n);
    initialize(Initializer{InitKind::He}, 20, 50, w, rng);
    Moments m = moments(w);
    EXPECT_NEAR(m.var, 2.0 / 50, 0.02 * 2.0 / 50);
    EXPECT_NEAR(m.mean, 0.0, 0.01 * std::sqrt(2.0 / 50));
  }
  {  // Normal(scale 0.5) and Uniform(scale 2).
    Vec w(n);
    initialize(Initializer{InitKind::Normal, 0.5}, 1, 1, w, rng);
    EXPECT_NEAR(moments(w).var, 0.25, 0.02 * 0.25);
    initialize(Initializer{InitKind::Uniform, 2.0}, 1, 1, w, rng);
    Moments m = moments(w);
    EXPECT_LE(m.max_abs, 2.0);
    EXPECT_NEAR(m.var, 4.0 / 3, 0.02 * 4.0 / 3);
  }
}

TEST(NumericsRandom, UniformBelowAndShuffle) {
  Rng rng(9);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i) {
    uint64_t k = uniform_below(rng, 7);
    ASSERT_LT(k, 7u);
    ++counts[k];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
  std::vector<size_t> a(20), b(20);
  std::iota(a.begin(), a.end(), size_t{0});
  b = a;
  Rng s1(5), s2(5);
  shuffle(std::span<size_t>(a), s1);
  shuffle(std::span<size_t>(b), s2);
  EXPECT_EQ(a, b);
  std::vector<size_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> identity(20);
  std::iota(identity.begin(), identity.end(), size_t{0});
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(a, identity);
}

TEST(NumericsRandom, InitializerNames) {
  EXPECT_EQ(Initializer::parse("Glorot").kind, InitKind::Glorot);
  EXPECT_EQ(Initializer::parse("xavier").kind, InitKind::Glorot);
  EXPECT_EQ(Initializer::parse("kaiming").kind, InitKind::He);
  Initializer u = Initializer::parse("uniform(0.1)");
  EXPECT_EQ(u.kind, InitKind::Uniform);
  EXPECT_EQ(u.scale, 0.1);
  EXPECT_EQ(to_string(u), "uniform(0.1)");
  EXPECT_EQ(to_string(Initializer::parse("he")), "he");
  EXPECT_EQ(Initializer::parse(to_string(Initializer{InitKind::Constant, -0.25})).scale, -0.25);
  try {
    Initializer::parse("orthogonal");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "unknown initializer 'orthogonal'; expected one of uniform, normal, glorot, he, constant, torch, longtail");
  }
  EXPECT_THROW(Initializer::parse("uniform(x)"), Error);
  EXPECT_THROW(Initializer::parse("uniform(0.1"), Error);
}

// ---- losses -----------------------------------------------------------------------------------

double loss_of(LossKind kind, const Vec& y, const Vec& t, Vec* grad = nullptr) {
  Vec g(y.size());
  double l = loss(kind, y, t, g);
  if (grad) *grad = g;
  return l;
}

void expect_loss_gradient(LossKind kind, Vec y, const Vec& t) {
  Vec grad;
  loss_of(kind, y, t, &grad);
  for (size_t i = 0; i < y.size(); ++i) {
    const double saved = y[i], h = 1e-6;
    y[i] = saved + h;
    const double up = loss_of(kind, y, t);
    y[i] = saved - h;
    const double down = loss_of(kind, y, t);
    y[i] = saved;
    const double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(grad[i], numeric, 1e-6 * std::max(1.0, std::abs(numeric))) << "entry " << i;
  }
}

TEST(NumericsLoss, ValuesMatchPyTorch) {
  // mse: mean of squares.
  EXPECT_DOUBLE_EQ(loss_of(LossKind::Mse, {1, 2, 3}, {1, 0, 4}), 5.0 / 3);
  // F.binary_cross_entropy_with_logits(2, 1), log 2 at logit 0.
  EXPECT_NEAR(loss_of(LossKind::CrossEntropy, {2.0}, {1.0}), 0.1269280110429725, 1e-15);
  EXPECT_NEAR(loss_of(LossKind::CrossEntropy, {0.0}, {0.0}), std::log(2.0), 1e-15);
  // F.cross_entropy(logits [1,2,3], class 2), with a one-hot and a probability target.
  EXPECT_NEAR(loss_of(LossKind::CrossEntropy, {1, 2, 3}, {2}), 0.4076059644443804, 1e-14);
  EXPECT_NEAR(loss_of(LossKind::CrossEntropy, {1, 2, 3}, {0, 0, 1}), 0.4076059644443804, 1e-14);
  EXPECT_NEAR(loss_of(LossKind::CrossEntropy, {1, 2, 3}, {0.2, 0.3, 0.5}), 1.1076059644443805, 1e-14);
}

TEST(NumericsLoss, CrossEntropyIsStableForLargeLogits) {
  Vec g;
  EXPECT_DOUBLE_EQ(loss_of(LossKind::CrossEntropy, {1000.0}, {0.0}, &g), 1000.0);
  EXPECT_DOUBLE_EQ(g[0], 1.0);
  EXPECT_DOUBLE_EQ(loss_of(LossKind::CrossEntropy, {-1000.0}, {1.0}, &g), 1000.0);
  EXPECT_DOUBLE_EQ(g[0], -1.0);
  EXPECT_DOUBLE_EQ(loss_of(LossKind::CrossEntropy, {1000.0}, {1.0}), 0.0);
  EXPECT_DOUBLE_EQ(loss_of(LossKind::CrossEntropy, {1000.0, 0.0}, {1}, &g), 1000.0);
  EXPECT_DOUBLE_EQ(g[0], 1.0);
  EXPECT_DOUBLE_EQ(g[1], -1.0);
}

TEST(NumericsLoss, GradientsMatchFiniteDifferences) {
  expect_loss_gradient(LossKind::Mse, {0.3, -1.2, 2.0}, {1.0, 0.0, 2.5});
  expect_loss_gradient(LossKind::Mse, {0.7}, {1.0});
  expect_loss_gradient(LossKind::CrossEntropy, {0.7}, {1.0});
  expect_loss_gradient(LossKind::CrossEntropy, {-2.3}, {0.0});
  expect_loss_gradient(LossKind::CrossEntropy, {1.5}, {0.3});
  expect_loss_gradient(LossKind::CrossEntropy, {0.1, -0.4, 1.3, 0.0}, {2});
  expect_loss_gradient(LossKind::CrossEntropy, {0.1, -0.4, 1.3, 0.0}, {0, 1, 0, 0});
  expect_loss_gradient(LossKind::CrossEntropy, {0.1, -0.4, 1.3, 0.0}, {0.1, 0.2, 0.3, 0.4});
  Vec g;
  loss_of(LossKind::Mse, {1, 2}, {0, 0}, &g);
  EXPECT_EQ(g, (Vec{1.0, 2.0}));  // 2 (y - t) / n
}

TEST(NumericsLoss, MismatchedTargetsAreErrors) {
  EXPECT_THROW(loss_of(LossKind::Mse, {1, 2}, {1}), Error);
  EXPECT_THROW(loss_of(LossKind::CrossEntropy, {1, 2, 3}, {1, 0}), Error);
  EXPECT_THROW(loss_of(LossKind::CrossEntropy, {1, 2, 3}, {3}), Error);
  EXPECT_THROW(loss_of(LossKind::CrossEntropy, {1, 2, 3}, {0.5}), Error);
  EXPECT_THROW(loss_of(LossKind::CrossEntropy, {1}, {1, 0}), Error);
}

TEST(NumericsLoss, PredictAndNames) {
  Vec p(1), q(3);
  predict(LossKind::CrossEntropy, Vec{0.0}, p);
  EXPECT_DOUBLE_EQ(p[0], 0.5);
  predict(LossKind::Mse, Vec{-3.0}, p);
  EXPECT_DOUBLE_EQ(p[0], -3.0);
  predict(LossKind::CrossEntropy, Vec{1, 2, 3}, q);
  EXPECT_NEAR(q[0], 0.09003057317038046, 1e-15);
  EXPECT_NEAR(q[2], 0.6652409557748219, 1e-15);
  EXPECT_EQ(parse_loss("MSE"), LossKind::Mse);
  EXPECT_EQ(parse_loss("cross_entropy"), LossKind::CrossEntropy);
  EXPECT_EQ(parse_loss("crossentropy"), LossKind::CrossEntropy);
  EXPECT_EQ(to_string(LossKind::CrossEntropy), "crossentropy");
  EXPECT_THROW(parse_loss("hinge"), Error);
}

// ---- optimizers ----------------------------------------------------------------------------------

// f(p) = sum_i a_i (p_i - c_i)^2 / 2 from p = (1, -2), lr 0.1 (the PyTorch script used
// for the reference sequences builds the same problem in float64).
const Vec kA = {1.0, 3.0}, kC = {0.5, 1.0}, kStart = {1.0, -2.0};
Vec quadratic_grad(const Vec& p) { return {kA[0] * (p[0] - kC[0]), kA[1] * (p[1] - kC[1])}; }

std::vector<Vec> run_optimizer(const OptimizerConfig& config, int steps) {
  Optimizer opt(config, 2);
  Vec p = kStart;
  std::vector<Vec> trace;
  for (int s = 0; s < steps; ++s) {
    opt.step(p, quadratic_grad(p), config.lr);
    trace.push_back(p);
  }
  return trace;
}

void expect_trace(const std::vector<Vec>& got, const std::vector<Vec>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < got.size(); ++s)
    for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(got[s][i], want[s][i], 1e-13) << "step " << s + 1 << " param " << i;
}

OptimizerConfig config(OptimizerKind kind, double lr, double wd = 0, double momentum = 0) {
  OptimizerConfig c = OptimizerConfig::defaults(kind);
  c.lr = lr;
  if (kind != OptimizerKind::AdamW || wd != 0) c.weight_decay = wd;
  c.momentum = momentum;
  return c;
}

TEST(NumericsOptimizer, AdamMatchesPyTorch) {
  // torch.optim.Adam([p], lr=0.1), 5 steps.
  expect_trace(run_optimizer(config(OptimizerKind::Adam, 0.1), 5),
               {{0.900000002, -1.900000000111111},
                {0.8011874237306403, -1.800102707302868},
                {0.7048712557394511, -1.7003815232817217},
                {0.6129154024398078, -1.6009135308289968},
                {0.5278144565307444, -1.5017794559421693}});
  // torch.optim.Adam([p], lr=0.1, weight_decay=0.1): L2 in the gradient.
  expect_trace(run_optimizer(config(OptimizerKind::Adam, 0.1, 0.1), 5),
               {{0.9000000016666666, -1.9000000001086956},
                {0.8010288770205514, -1.8001040029921747},
                {0.7041738954091029, -1.7003864005556302},
                {0.6109441530243911, -1.600925365829966},
                {0.5233394865757526, -1.5018028186465893}});
}

TEST(NumericsOptimizer, DivisionByTheBiasCorrectionIsTheDivisions) {
  // Adam divides sqrt(v) by sqrt(1 - beta2^t) through a reciprocal and one correction
  // (numerics_optimizers.cpp): it must give x / c's bits for every x and c it meets.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-500, 500);
  std::vector<double> cs;
  for (double beta2 : {0.999, 0.99, 0.9, 0.5, 0.9999})
    for (int t : {1, 2, 3, 7, 10, 100, 1000, 4110, 12330, 36000, 40000, 100000})
      cs.push_back(std::sqrt(1.0 - std::pow(beta2, t)));
  std::uniform_real_distribution<double> unit(std::numeric_limits<double>::min(), 1.0);
  for (int k = 0; k < 200; ++k) cs.push_back(unit(rng));
  cs.push_back(1.0);
  cs.push_back(std::nextafter(1.0, 0.0));
  const std::vector<double> edges = {0.0, -0.0, std::numeric_limits<double>::infinity(),
                                     std::numeric_limits<double>::quiet_NaN(),
                                     std::numeric_limits<double>::min(),
                                     std::sqrt(std::numeric_limits<double>::min()),
                                     std::sqrt(std::numeric_limits<double>::max()),
                                     1.0, std::nextafter(1.0, 2.0), std::nextafter(2.0, 1.0)};
  auto same_bits = [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; };
  size_t checked = 0;
  for (double c : cs) {
    for (double x : edges) {
      ASSERT_TRUE(same_bits(quotient_by_bias_correction(x, c), x / c)) << x << " / " << c;
      ++checked;
    }
    for (int k = 0; k < 5000; ++k) {
      // The square roots of second moments: sqrt of a normal number.
      const double x = std::sqrt(std::ldexp(mantissa(rng), exponent(rng)));
      ASSERT_TRUE(same_bits(quotient_by_bias_correction(x, c), x / c)) << std::hexfloat << x << " / " << c;
      // And a product of c: a quotient next to a double, where a wrong rounding would show.
      const double near = c * std::ldexp(mantissa(rng), exponent(rng) / 2);
      ASSERT_TRUE(same_bits(quotient_by_bias_correction(near, c), near / c)) << std::hexfloat << near << " / " << c;
      checked += 2;
    }
  }
  EXPECT_GT(checked, size_t(1000000));
}

TEST(NumericsOptimizer, AdamWMatchesPyTorchWithItsDefaultDecay) {
  EXPECT_EQ(OptimizerConfig::defaults(OptimizerKind::AdamW).weight_decay, 0.01);
  EXPECT_EQ(OptimizerConfig::defaults(OptimizerKind::Adam).weight_decay, 0.0);
  OptimizerConfig c = OptimizerConfig::defaults(OptimizerKind::AdamW);
  c.lr = 0.1;
  // torch.optim.AdamW([p], lr=0.1) (weight_decay defaults to 0.01), 5 steps.
  expect_trace(run_optimizer(c, 5), {{0.899000002, -1.898000000111111},
                                     {0.7993083054484684, -1.7962070944534796},
                                     {0.7022582905314819, -1.6946961373702292},
                                     {0.6097503732618459, -1.5935456325422352},
                                     {0.5243260096901005, -1.4928376834300308}});
}

TEST(NumericsOptimizer, AdamFollowsTheBiasCorrectedRecurrence) {
  // The textbook recurrence written out independently, with non-default hyper-parameters.
  OptimizerConfig c = config(OptimizerKind::Adam, 0.05);
  c.beta1 = 0.8, c.beta2 = 0.99, c.eps = 1e-6;
  const auto trace = run_optimizer(c, 6);
  Vec p = kStart, m(2, 0), v(2, 0);
  for (int t = 1; t <= 6; ++t) {
    Vec g = quadratic_grad(p);
    for (int i = 0; i < 2; ++i) {
      m[i] = 0.8 * m[i] + 0.2 * g[i];
      v[i] = 0.99 * v[i] + 0.01 * g[i] * g[i];
      const double mhat = m[i] / (1 - std::pow(0.8, t)), vhat = v[i] / (1 - std::pow(0.99, t));
      // PyTorch adds eps after dividing sqrt(v) by sqrt(1 - b2^t), i.e. to sqrt(vhat).
      p[i] -= 0.05 * mhat / (std::sqrt(vhat) + 1e-6);
    }
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(trace[t - 1][i], p[i], 1e-12) << "step " << t;
  }
}

TEST(NumericsOptimizer, AdamMovesEachOfManyParametersAsItsOwnOptimizerWould) {
  // The Adam loop is vectorised over the parameters: 37 of them run through the vector body
  // and the scalar remainder, one alone only through the remainder. Each parameter must
  // come out the same bits either way (Adam, Adam with L2, AdamW, and beta1 >= 0.5, where
  // the lerp of the first moment starts from the other end), over 4 steps.
  OptimizerConfig adam_l2 = config(OptimizerKind::Adam, 0.01, 0.05), adamw = OptimizerConfig::defaults(OptimizerKind::AdamW),
                  low_beta = config(OptimizerKind::Adam, 0.02);
  adamw.lr = 0.03;
  low_beta.beta1 = 0.3;
  for (const OptimizerConfig& c : {config(OptimizerKind::Adam, 0.01), adam_l2, adamw, low_beta}) {
    const size_t n = 37;
    Optimizer all(c, n);
    Vec p(n), g(n);
    for (size_t i = 0; i < n; ++i) p[i] = std::sin(1.0 + 0.7 * double(i));
    Vec alone = p;
    std::vector<Optimizer> each(n, Optimizer(c, 1));
    for (int step = 0; step < 4; ++step) {
      for (size_t i = 0; i < n; ++i) g[i] = std::cos(0.3 * double(i) + step) * (1.0 + double(i % 5));
      all.step(p, g, c.lr);
      for (size_t i = 0; i < n; ++i) {
        Vec one = {alone[i]};
        each[i].step(one, Vec{g[i]}, c.lr);
        alone[i] = one[0];
      }
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(p[i], alone[i]) << to_string(c.kind) << " beta1 " << c.beta1 << " step " << step + 1 << " param " << i;
    }
    EXPECT_NE(p[0], std::sin(1.0));  // it moved
  }
}

TEST(NumericsOptimizer, AMomentWithoutGradientEndsAtZeroNotStuckSubnormal) {
  // A parameter whose gradient stops (a node label no later graph has): PyTorch's recurrence,
  // written out with subnormals kept, shrinks the first moment by beta1 each step until
  // `m - 0.1 m` rounds to m at a few subnormal units, where it stays. lrnn's moment is 0
  // from the step it would turn subnormal; the parameter is the same bits all the way
  // (train/numerics_optimizers.cpp "flush_subnormal"). SGD's momentum buffer likewise.
  for (const OptimizerKind kind : {OptimizerKind::Adam, OptimizerKind::Sgd}) {
    const OptimizerConfig c = kind == OptimizerKind::Adam ? config(kind, 0.01) : config(kind, 0.01, 0, 0.9);
    Optimizer opt(c, 1);
    Vec p = {0.3};
    double ref_p = 0.3, m = 0, v = 0;
    bool stuck_subnormal = false;
    for (int t = 1; t <= 8000; ++t) {
      const double g = t == 1 ? 1e-3 : 0.0;
      opt.step(p, Vec{g}, c.lr);
      if (kind == OptimizerKind::Adam) {
        m = m + (1 - 0.9) * (g - m);  // torch.lerp from the start (weight 0.1 < 0.5)
        v = v * 0.999 + (1 - 0.999) * g * g;
        const double denom = std::sqrt(v) / std::sqrt(1 - std::pow(0.999, t)) + 1e-8;
        ref_p -= c.lr / (1 - std::pow(0.9, t)) * (m / denom);
      } else {
        m = t == 1 ? g : 0.9 * m + g;
        ref_p -= c.lr * m;
      }
      ASSERT_EQ(p[0], ref_p) << to_string(kind) << " step " << t;
      const double lrnn_m = opt.state()[1];
      ASSERT_TRUE(lrnn_m == 0 || std::abs(lrnn_m) >= std::numeric_limits<double>::min())
          << to_string(kind) << " step " << t << ": first moment " << lrnn_m;
      stuck_subnormal |= m != 0 && std::abs(m) < std::numeric_limits<double>::min();
    }
    EXPECT_TRUE(stuck_subnormal) << "the reference never reached a subnormal moment";
    EXPECT_NE(m, 0.0) << "the reference's moment is stuck at a subnormal";
    EXPECT_EQ(opt.state()[1], 0.0);
  }
}

TEST(NumericsOptimizer, SgdMatchesPyTorch) {
  // torch.optim.SGD([p], lr=0.1)
  expect_trace(run_optimizer(config(OptimizerKind::Sgd, 0.1), 5),
               {{0.95, -1.0999999999999999},
                {0.9049999999999999, -0.4699999999999999},
                {0.8644999999999999, -0.02899999999999988},
                {0.82805, 0.2797000000000001},
                {0.795245, 0.4957900000000001}});
  // torch.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.1)
  expect_trace(run_optimizer(config(OptimizerKind::Sgd, 0.1, 0.1, 0.9), 5),
               {{0.94, -1.08},
                {0.8326, 0.38280000000000003},
                {0.694354, 1.880652},
                {0.54355366, 2.9457166800000003},
                {0.3980424514, 3.2911027212000006}});
}

TEST(NumericsOptimizer, UsesTheScheduledRateNotTheConfiguredOne) {
  OptimizerConfig c = config(OptimizerKind::Sgd, 123.0);
  Optimizer opt(c, 1);
  Vec p = {1.0};
  opt.step(p, Vec{2.0}, 0.25);
  EXPECT_DOUBLE_EQ(p[0], 0.5);
}

TEST(NumericsOptimizer, StateRoundTripContinuesIdentically) {
  for (auto kind : {OptimizerKind::Sgd, OptimizerKind::Adam, OptimizerKind::AdamW}) {
    OptimizerConfig c = config(kind, 0.1, 0.01, 0.9);
    Optimizer a(c, 2);
    Vec pa = kStart;
    for (int s = 0; s < 3; ++s) a.step(pa, quadratic_grad(pa), 0.1);
    Optimizer b(c, 2);
    b.set_state(a.state());
    Vec pb = pa;
    for (int s = 0; s < 3; ++s) {
      a.step(pa, quadratic_grad(pa), 0.1);
      b.step(pb, quadratic_grad(pb), 0.1);
    }
    EXPECT_EQ(pa, pb) << to_string(kind);
    EXPECT_EQ(a.state(), b.state());
    EXPECT_EQ(a.state()[0], 6.0);
    EXPECT_THROW(b.set_state(Vec(2, 0.0)), Error);
  }
  Optimizer o(config(OptimizerKind::Adam, 0.1), 3);
  Vec p(2), g(2);
  EXPECT_THROW(o.step(p, g, 0.1), Error);
}

TEST(NumericsOptimizer, Names) {
  EXPECT_EQ(OptimizerConfig::parse("SGD"), OptimizerKind::Sgd);
  EXPECT_EQ(OptimizerConfig::parse("adam"), OptimizerKind::Adam);
  EXPECT_EQ(OptimizerConfig::parse("AdamW"), OptimizerKind::AdamW);
  EXPECT_EQ(to_string(OptimizerKind::AdamW), "adamw");
  EXPECT_THROW(OptimizerConfig::parse("rmsprop"), Error);
}

// ---- schedules ----------------------------------------------------------------------------------

TEST(NumericsSchedule, Values) {
  Schedule constant;
  EXPECT_EQ(constant.lr(0.1, 7), 0.1);
  Schedule step{ScheduleKind::Step, 2, 0.5};
  const Vec step_want = {0.1, 0.1, 0.05, 0.05, 0.025};
  for (int e = 0; e < 5; ++e) EXPECT_DOUBLE_EQ(step.lr(0.1, e), step_want[e]) << e;
  Schedule exponential{ScheduleKind::Exponential, 10, 0.9};
  EXPECT_DOUBLE_EQ(exponential.lr(0.1, 0), 0.1);
  EXPECT_DOUBLE_EQ(exponential.lr(0.1, 3), 0.1 * 0.9 * 0.9 * 0.9);
  Schedule cosine{ScheduleKind::Cosine, 10, 0.5, 10, 0.0};
  EXPECT_DOUBLE_EQ(cosine.lr(0.1, 0), 0.1);
  EXPECT_NEAR(cosine.lr(0.1, 5), 0.05, 1e-15);
  EXPECT_NEAR(cosine.lr(0.1, 3), 0.07938926261462366, 1e-15);
  EXPECT_NEAR(cosine.lr(0.1, 10), 0.0, 1e-15);
  EXPECT_NEAR(cosine.lr(0.1, 15), 0.0, 1e-15);  // stays at min_lr
  Schedule floor{ScheduleKind::Cosine, 10, 0.5, 4, 0.01};
  EXPECT_NEAR(floor.lr(0.1, 2), 0.055, 1e-15);
  EXPECT_NEAR(floor.lr(0.1, 4), 0.01, 1e-15);
  Schedule degenerate{ScheduleKind::Step, 0, 0.5, 0, 0.0};
  EXPECT_DOUBLE_EQ(degenerate.lr(1.0, 2), 0.25);  // step_size 0 behaves as 1, no division by zero
  EXPECT_EQ(Schedule::parse("Cosine"), ScheduleKind::Cosine);
  EXPECT_EQ(Schedule::parse("exponential"), ScheduleKind::Exponential);
  EXPECT_EQ(to_string(ScheduleKind::Step), "step");
  EXPECT_THROW(Schedule::parse("warmup"), Error);
}

// ---- metrics ------------------------------------------------------------------------------------

TEST(NumericsMetrics, Accuracy) {
  EXPECT_DOUBLE_EQ(accuracy({{0.2}, {0.7}, {0.9}, {0.4}}, {{0}, {1}, {0}, {0}}), 0.75);
  // +-1 targets: the sign of the prediction counts.
  EXPECT_DOUBLE_EQ(accuracy({{-0.3}, {0.2}, {0.5}}, {{-1}, {1}, {-1}}), 2.0 / 3);
  // Multi-class: argmax against a one-hot target or a class index.
  EXPECT_DOUBLE_EQ(accuracy({{0.1, 0.7, 0.2}, {0.5, 0.3, 0.2}, {0.2, 0.2, 0.6}},
                            {{0, 1, 0}, {2}, {0, 0, 1}}),
                   2.0 / 3);
  EXPECT_DOUBLE_EQ(accuracy({{0.5}}, {{0}}), 1.0);  // at the threshold: the negative class
  EXPECT_TRUE(std::isnan(accuracy({}, {})));
  EXPECT_THROW(accuracy({{0.5}}, {}), Error);
  EXPECT_THROW(accuracy({{0.5, 0.5}}, {{1, 0, 0}}), Error);
  // The same rules over plain numbers.
  EXPECT_DOUBLE_EQ(accuracy_of_scalars({0.2, 0.7, 0.9, 0.4}, {0, 1, 0, 0}), 0.75);
  EXPECT_DOUBLE_EQ(accuracy_of_scalars({-0.3, 0.2, 0.5}, {-1, 1, -1}), 2.0 / 3);
  EXPECT_DOUBLE_EQ(accuracy_of_scalars({0.5}, {0}), 1.0);
  EXPECT_TRUE(std::isnan(accuracy_of_scalars({}, {})));
  EXPECT_THROW(accuracy_of_scalars({0.5}, {}), Error);
}

TEST(NumericsMetrics, Auc) {
  EXPECT_DOUBLE_EQ(auc({0.1, 0.4, 0.35, 0.8}, {0, 0, 1, 1}), 0.75);
  EXPECT_DOUBLE_EQ(auc({0.1, 0.2, 0.3}, {0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(auc({0.3, 0.2, 0.1}, {0, 1, 1}), 0.0);
  EXPECT_DOUBLE_EQ(auc({0.5, 0.5}, {0, 1}), 0.5);  // ties count half
  // Ties across classes: positives {0.5, 0.9}, negatives {0.5, 0.1}: (0.5 + 1 + 1 + 1) / 4.
  EXPECT_DOUBLE_EQ(auc({0.5, 0.9, 0.5, 0.1}, {1, 1, 0, 0}), 0.875);
  EXPECT_DOUBLE_EQ(auc({-0.2, 0.3, 0.1}, {-1, 1, 1}), 1.0);  // +-1 targets
  EXPECT_TRUE(std::isnan(auc({0.1, 0.2}, {1, 1})));
  EXPECT_TRUE(std::isnan(auc({0.1, 0.2}, {0, 0})));
  EXPECT_TRUE(std::isnan(auc({}, {})));
  EXPECT_TRUE(std::isnan(auc({0.1, std::nan("")}, {0, 1})));
}

// On many scores with many ties (a sigmoid's saturated outputs), AUC is the share of
// (positive, negative) pairs ordered right, ties counting half, counted pair by pair.
TEST(NumericsMetrics, AucEqualsThePairCount) {
  std::mt19937 rng(7);
  std::vector<double> scores(3000), targets(3000);
  for (size_t i = 0; i < scores.size(); ++i) {
    targets[i] = rng() % 3 == 0;
    scores[i] = static_cast<double>(rng() % 50) / 50.0 + 0.1 * targets[i];  // ties within and across classes
  }
  double ordered = 0, pairs = 0;
  for (size_t p = 0; p < scores.size(); ++p)
    for (size_t q = 0; q < scores.size(); ++q)
      if (targets[p] == 1 && targets[q] == 0) {
        ordered += scores[p] > scores[q] ? 1.0 : scores[p] == scores[q] ? 0.5 : 0.0;
        ++pairs;
      }
  EXPECT_NEAR(auc(scores, targets), ordered / pairs, 1e-12);
}

// Past the comparison sort's size (radix-sorted keys): the same value, to the bit, as the
// mid-ranks of sorted (score, positive) pairs, with negative scores and -0 tying with 0.
TEST(NumericsMetrics, AucOfManyScoresIsTheSortedPairsMidRankSum) {
  std::mt19937 rng(11);
  std::vector<double> scores(40000), targets(40000);
  for (size_t i = 0; i < scores.size(); ++i) {
    targets[i] = rng() % 4 == 0;
    const int r = static_cast<int>(rng() % 2001) - 1000;
    scores[i] = r == 0 ? (rng() % 2 ? -0.0 : 0.0) : static_cast<double>(r) / 300.0 + 0.05 * targets[i];
  }
  std::vector<std::pair<double, bool>> ranked;
  for (size_t i = 0; i < scores.size(); ++i) ranked.push_back({scores[i], targets[i] > 0.5});
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum = 0, positives = 0;
  for (size_t i = 0; i < ranked.size();) {
    size_t j = i, tied = 0;
    for (; j < ranked.size() && ranked[j].first == ranked[i].first; ++j) tied += ranked[j].second;
    for (size_t k = 0; k < tied; ++k) rank_sum += 0.5 * static_cast<double>(i + 1 + j);
    positives += static_cast<double>(tied);
    i = j;
  }
  const double negatives = static_cast<double>(scores.size()) - positives;
  EXPECT_EQ(auc(scores, targets), (rank_sum - positives * (positives + 1) / 2) / (positives * negatives));
}

}  // namespace
