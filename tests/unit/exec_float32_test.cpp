// The float32 mode (docs/float32.md): the same plans run in float and in double give the
// same outputs and parameter gradients up to float rounding (about 1e-5 relative per
// value), for templates covering every kernel family: gathered rules with matrix and
// vector weights, offsets, soft negation and each activation, combination and
// aggregation; transform-sum rules (a GCN); direct products and softmax(J) (attention);
// learnable example facts; the zoo's attention and encoder modules. A float32 training
// run reaches the float64 run's accuracy. Finite-difference gradient checks stay float64
// (the other tests).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <string>

#include "lrnn/lrnn.hpp"
#include "lrnn/syntax.hpp"
#include "lrnn/zoo.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"
#include "train/example_facts.hpp"

namespace {

using namespace lrnn;

struct Pass {
  std::vector<double> values;  // every output entry, in output order
  std::vector<double> grads;   // the batch gradient of the parameters
  std::vector<double> example_grads;
  double loss = 0;
};

// One batch of every sample of `set` (forward, loss, backward) in `dtype`.
Pass run_batch(train::Engine& engine, const train::PreparedSet& set, Dtype dtype) {
  train::SampleSteps steps;
  std::vector<uint32_t> all(set.size());
  std::iota(all.begin(), all.end(), 0u);
  size_t targets = 0;
  for (const auto& o : set.outputs) targets += !o.target.empty();
  Pass p;
  p.grads.assign(engine.parameters().size(), 0.0);
  steps.run(
      engine.model(), set, all, train::LossKind::Mse, targets, false, true,
      [&](size_t, const train::SampleGradient& s) {
        s.add_to(p.grads, false);
        if (p.example_grads.size() < s.example_grads.size()) p.example_grads.resize(s.example_grads.size(), 0.0);
        for (size_t i = 0; i < s.example_grads.size(); ++i) p.example_grads[i] += s.example_grads[i];
        for (const auto& v : s.values) p.values.insert(p.values.end(), v.begin(), v.end());
        p.loss += s.loss.sum;
      },
      dtype);
  return p;
}

// float32 against float64 entry by entry: |f32 - f64| <= rtol * max(|f64|, floor * largest)
// with `largest` the vector's largest |f64|. Outputs use floor 1e-2 (1e-5 relative per
// value unless a sum cancelled); gradients floor 1, i.e. 1e-5 of the vector's largest
// entry, since a gradient entry that is a sum of terms cancelling to a small value keeps
// the float rounding of those terms. Also requires the two to differ somewhere: the float
// pass really ran in float.
void expect_float_close(const std::vector<double>& f32, const std::vector<double>& f64, double rtol, double floor,
                        const std::string& what) {
  ASSERT_EQ(f32.size(), f64.size()) << what;
  ASSERT_FALSE(f64.empty()) << what;
  double largest = 0;
  for (double x : f64) largest = std::max(largest, std::fabs(x));
  ASSERT_GT(largest, 1e-6) << what << ": all values vanish, the comparison would prove nothing";
  double worst = 0;
  for (size_t i = 0; i < f64.size(); ++i) {
    const double scale = std::max(std::fabs(f64[i]), floor * largest);
    EXPECT_NEAR(f32[i], f64[i], rtol * scale) << what << "[" << i << "]";
    worst = std::max(worst, std::fabs(f32[i] - f64[i]) / scale);
  }
  EXPECT_GT(worst, 1e-12) << what << ": float32 gave the float64 bits (not run in float?)";
}
constexpr double kOutputs = 1e-2, kGradients = 1.0;

// "[x1, ..., xn]" with entries drawn from U(-1, 1).
std::string random_vector(std::mt19937& rng, int n) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::string text = "[";
  for (int k = 0; k < n; ++k) text += (k ? ", " : "") + std::to_string(u(rng));
  return text + "]";
}

void expect_dtypes_agree(const std::string& template_text, const std::string& examples, double rtol = 1e-5,
                         bool learnable_facts = false) {
  train::Engine engine(parse_template(template_text, "t"), train::Initializer{}, 3);
  const train::PreparedSet set = engine.prepare(train::pair_samples(parse_examples(examples, "e"), {}),
                                                kDefaultMaxGroundRules, learnable_facts);
  const Pass f64 = run_batch(engine, set, Dtype::Float64);
  const Pass f32 = run_batch(engine, set, Dtype::Float32);
  expect_float_close(f32.values, f64.values, rtol, kOutputs, "outputs");
  expect_float_close(f32.grads, f64.grads, rtol, kGradients, "parameter gradients");
  EXPECT_NEAR(f32.loss, f64.loss, rtol * std::fabs(f64.loss));
  if (learnable_facts) expect_float_close(f32.example_grads, f64.example_grads, rtol, kGradients, "example fact gradients");
}

// Gathered rules: matrix, vector and scalar weights, offsets, soft negation, transposes,
// and the activations, combinations and aggregations of docs/language.md.
TEST(Float32, GatheredRulesEveryFunctionFamily) {
  const char* t =
      "a(X) :- {4,3} f(X), {4}. [activation=tanh]\n"
      "a(X) :- {4,3} f(Y), g(X, Y). [aggregation=max, activation=sigmoid]\n"
      "b(X) :- {4,3} f(X), {4,3} ~f(X). [activation=relu]\n"
      "b(X) :- {4,3} f(Y), g(Y, X). [aggregation=min, activation=leakyrelu]\n"
      "c(X) :- a(X), b(X). [combination=elproduct, activation=softmax]\n"
      "d(X) :- a(X), b(X). [combination=cossim]\n"
      "e(X) :- a(X), b(X). [combination=concat, activation=norm]\n"
      "k(X) :- a(X), b(X). [combination=max, activation=sparsemax]\n"
      "m(X) :- {2,4} c(X), {2,8} e(X). [combination=crosssum]\n"
      "p(X) :- {4} a(X)^T, b(X). [combination=product]\n"
      "s(X) :- a(Y), g(X, Y). [aggregation=softmax(Y), combination=sum]\n"
      "{1,4} out :- m(X). [aggregation=avg]\n"
      "out :- {1,8} e(X), d(X), p(X). [aggregation=sum]\n"
      "out :- {1,4} k(X), {1,4} s(X). [aggregation=avg]\n"
      "out/0 [activation=sigmoid]\n";
  const char* ex =
      "<1> out :- <[0.5, -1, 0.2]> f(a), <[1, 2, -0.4]> f(b), <[0.3, 0.1, 0.9]> f(c), g(a, b), g(b, c), g(c, a), "
      "g(a, c).\n"
      "<0> out :- <[-1, 0.3, 0.6]> f(a), <[0.7, -0.2, 0.1]> f(b), g(a, b), g(b, a).\n"
      "<1> out :- <[2, 1, -1]> f(a), <[0, 1, 0.5]> f(c), <[1, 1, 1]> f(d), g(c, d), g(d, a), g(a, a).\n";
  expect_dtypes_agree(t, ex);
}

// Weights of one column or one row (`{4,1}` on scalar inputs, `{1,4}` readouts), on the
// inputs and on the heads, where the float mirror keeps every weight's transpose beside it
// (exec::ParamView::transposed), vectors too.
TEST(Float32, VectorWeightsUnderTheGemms) {
  const char* t =
      "a(X) :- {4,1} s(X).\n"
      "a(X) :- {4,1} s(Y), g(X, Y). [aggregation=sum]\n"
      "a/1 [activation=tanh]\n"
      "{4,1} b(X) :- s(X).\n"
      "{4,1} b(X) :- s(Y), g(X, Y). [aggregation=avg]\n"
      "c(X) :- {1,4} a(X), {1,4} b(X).\n"
      "out :- c(X). [aggregation=sum]\n"
      "out/0 [activation=sigmoid]\n";
  const char* ex =
      "<1> out :- <0.5> s(a), <-1> s(b), <0.3> s(c), g(a, b), g(b, c), g(c, a), g(a, c).\n"
      "<0> out :- <-0.7> s(a), <0.2> s(b), g(a, b), g(b, a).\n";
  expect_dtypes_agree(t, ex);
}

// The remaining activations, aggregations and combinations, on positive inputs where the
// function needs them (log, sqrt, inverse). The targets lie far from the outputs: an
// output close to its target leaves dL/dy = y - t to float's cancellation, not the kernels'.
TEST(Float32, GatheredRulesRemainingFunctions) {
  const char* t =
      "a(X) :- {3,2} f(X), {3}. [activation=tanh]\n"
      "c(X) :- {3,2} f(X). [activation=softmax]\n"
      "r1(X) :- a(Y), g(X, Y). [aggregation=count]\n"
      "r2(X) :- a(Y), g(X, Y). [aggregation=product]\n"
      "r3(X) :- a(X). [activation=exp]\n"
      "r4(X) :- c(X). [activation=log]\n"
      "r5(X) :- c(X). [activation=sqrt]\n"
      "r6(X) :- c(X). [activation=inverse]\n"
      "r7(X) :- a(X). [activation=reverse]\n"
      "r8(X) :- a(X). [activation=lukasiewicz]\n"
      "r9(X) :- a(X), c(X). [combination=avg]\n"
      "r10(X) :- a(X), c(X). [combination=min]\n"
      "r11(X) :- a(X), c(X). [combination=softmax]\n"
      "out :- {1,3} r2(X), {1,3} r3(X), {1,3} r4(X), {1,3} r5(X), {1,3} r6(X). [aggregation=avg]\n"
      "out :- {1,3} r7(X), {1,3} r8(X), {1,3} r9(X), {1,3} r10(X), r1(X). [aggregation=sum]\n"
      "out :- {1,6} r11(X). [aggregation=max]\n"
      "out/0 [activation=sigmoid]\n";
  const char* ex =
      "<5> out :- <[0.5, -1]> f(a), <[1, 2]> f(b), <[0.3, 0.1]> f(c), g(a, b), g(b, c), g(c, a), g(a, c).\n"
      "<-5> out :- <[-1, 0.3]> f(a), <[0.7, -0.2]> f(b), g(a, b), g(b, a), g(b, b).\n";
  expect_dtypes_agree(t, ex);
}

// A GCN: transform-sum rules (one GEMM over distinct nodes, rows summed per head), self
// and neighbour rules sharing their rows, relu, mean readout; random graphs.
TEST(Float32, GcnTransformSum) {
  const char* t =
      "h1(X) :- $w1={16,7} x(X).\n"
      "h1(X) :- $w1={16,7} x(Y), *edge(X, Y). [aggregation=sum]\n"
      "h1/1 {16,1} [activation=relu]\n"
      "h2(X) :- $w2={16,16} h1(X).\n"
      "h2(X) :- $w2={16,16} h1(Y), *edge(X, Y). [aggregation=sum]\n"
      "h2/1 {16,1} [activation=relu]\n"
      "out :- {1,16} h2(X). [aggregation=avg]\n"
      "out/0 [activation=sigmoid]\n";
  std::mt19937 rng(5);
  std::string ex;
  for (int g = 0; g < 6; ++g) {
    const int n = 5 + g;
    ex += std::string("<") + (g % 2 ? "1" : "0") + "> out :- ";
    for (int i = 0; i < n; ++i) ex += "<" + random_vector(rng, 7) + "> x(n" + std::to_string(i) + "), ";
    for (int i = 0; i < n; ++i) {
      const int j = (i + 1 + g) % n;
      ex += "edge(n" + std::to_string(i) + ", n" + std::to_string(j) + "), edge(n" + std::to_string(j) + ", n" +
            std::to_string(i) + ")" + (i + 1 < n ? ", " : ".\n");
    }
  }
  expect_dtypes_agree(t, ex);
}

// Attention as rules: scores as direct products (dot of rows), softmax(J) over them, the
// weighted values summed per head; learnable example facts (the tokens) get float
// gradients too.
TEST(Float32, AttentionDirectProductsAndLearnableFacts) {
  const char* t =
      "q(I) :- $wq={4,4} x(I).\nk(I) :- $wk={4,4} x(I).\nv(I) :- $wv={4,4} x(I).\n"
      "w(I, J) :- q(I)^T, k(J). [combination=product, aggregation=softmax(J)]\n"
      "o(I) :- w(I, J), v(J). [combination=product, aggregation=sum]\n"
      "out :- {1,4} o(I). [aggregation=avg]\n";
  // Learnable tokens are written without <...> (fixed values are inside it).
  auto examples = [](bool learnable) {
    std::mt19937 rng(9);
    std::string ex;
    for (int s = 0; s < 3; ++s) {
      const std::string target = random_vector(rng, 1);  // "[t]"
      ex += "<" + target.substr(1, target.size() - 2) + "> out :- ";
      for (int i = 0; i < 6; ++i) {
        const std::string v = random_vector(rng, 4);
        ex += (learnable ? v : "<" + v + ">") + " x(t" + std::to_string(s) + "_" + std::to_string(i) + ")" +
              (i < 5 ? ", " : ".\n");
      }
    }
    return ex;
  };
  expect_dtypes_agree(t, examples(false));
  expect_dtypes_agree(t, examples(true), 1e-5, true);
}

// The zoo's modules through SequenceModel: outputs, input gradients and weight gradients.
void expect_zoo_dtypes_agree(const zoo::Module& module, int n, int d) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> x(size_t(n) * d);
  for (double& v : x) v = u(rng);
  zoo::SequenceModel f64(module, 2), f32(module, 2);
  f32.set_dtype(Dtype::Float32);
  EXPECT_EQ(f32.dtype(), Dtype::Float32);
  const std::vector<double> y64 = f64.forward(x.data(), n, d), y32 = f32.forward(x.data(), n, d);
  expect_float_close(y32, y64, 1e-5, kOutputs, "zoo outputs");
  std::vector<double> gy(y64.size());
  for (double& v : gy) v = u(rng);
  const auto gx64 = f64.backward(gy), gx32 = f32.backward(gy);
  expect_float_close(gx32[0], gx64[0], 1e-5, kGradients, "zoo input gradients");
  for (const std::string& name : f64.parameter_names()) {
    const std::vector<double> g64 = f64.parameter_grad(name), g32 = f32.parameter_grad(name);
    // The key biases' gradients are 0 up to rounding (softmax ignores a shift of all scores).
    if (name.find("_bk") != std::string::npos) {
      for (size_t i = 0; i < g64.size(); ++i) EXPECT_NEAR(g32[i], 0.0, 1e-5) << name;
      continue;
    }
    expect_float_close(g32, g64, 1e-5, kGradients, "zoo $" + name);
  }
}

TEST(Float32, ZooMultiheadAttention) { expect_zoo_dtypes_agree(zoo::multihead_attention(8, 2), 10, 8); }

// Causal masks run as dense triangular tiles (exec/dense_tiles.cpp) at this length.
TEST(Float32, ZooCausalAttentionTiles) {
  zoo::AttentionOptions causal;
  causal.mask = zoo::Mask::causal();
  expect_zoo_dtypes_agree(zoo::multihead_attention(8, 2, causal), 100, 8);
}

TEST(Float32, ZooEncoderLayer) { expect_zoo_dtypes_agree(zoo::transformer_encoder_layer(8, 2, 16), 9, 8); }

TEST(Float32, SwitchingDtypeNeedsANewForward) {
  zoo::SequenceModel m(zoo::multihead_attention(4, 1), 1);
  std::vector<double> x(12, 0.5);
  const auto y = m.forward(x.data(), 3, 4);
  m.set_dtype(Dtype::Float32);
  EXPECT_THROW(m.backward(std::vector<double>(y.size(), 1.0)), Error);
}

// Training: float32 reaches the float64 run's accuracy (and nearly its loss).
TEST(Float32, TrainingReachesTheFloat64Accuracy) {
  const char* t =
      "hidden(X) :- {6,2} f(X), {6}. [activation=tanh]\n"
      "hidden(X) :- {6,2} f(Y), g(X, Y). [aggregation=sum, activation=tanh]\n"
      "{1,6} out :- hidden(X). [aggregation=avg]\n"
      "out/0 [activation=sigmoid]\n";
  std::mt19937 rng(21);
  std::uniform_real_distribution<double> u(-1, 1);
  std::string ex;  // the label: the two features' signs agree
  for (int s = 0; s < 40; ++s) {
    const double a = u(rng), b = u(rng);
    ex += std::string("<") + (a * b > 0 ? "1" : "0") + "> out :- <[" + std::to_string(a) + ", " + std::to_string(b) +
          "]> f(p), <[" + std::to_string(u(rng) * 0.1) + ", 0.0]> f(q), g(p, q).\n";
  }
  Settings s;
  s.epochs = 150;
  s.lr = 0.05;
  s.seed = 4;
  const Dataset data = Dataset::from_text(ex);
  Model m64(Template::from_string(t), s);
  s.dtype = Dtype::Float32;
  Model m32(Template::from_string(t), s);
  const TrainReport r64 = m64.train(data), r32 = m32.train(data);
  const Metrics e64 = m64.evaluate(data).metrics, e32 = m32.evaluate(data).metrics;
  EXPECT_GE(e64.accuracy, 0.85);
  EXPECT_GE(e32.accuracy, e64.accuracy);
  EXPECT_NEAR(e32.loss, e64.loss, 1e-3);
  EXPECT_NE(r32.history.back().train.loss, r64.history.back().train.loss);  // really two dtypes
}

TEST(Float32, DtypeNamesAndTheModelFile) {
  EXPECT_EQ(parse_dtype("float32"), Dtype::Float32);
  EXPECT_EQ(parse_dtype("float64"), Dtype::Float64);
  EXPECT_STREQ(to_string(Dtype::Float32), "float32");
  try {
    parse_dtype("flaot32");
    FAIL() << "a misspelled dtype must be refused";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("did you mean 'float32'"), std::string::npos) << e.message();
  }
  try {
    parse_dtype("double64");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("did you mean 'float64'"), std::string::npos) << e.message();
  }
  Settings s;
  s.dtype = Dtype::Float32;
  s.epochs = 1;
  Model m(Template::from_string("out :- {1,2} f(X).\n"), s);
  m.train(Dataset::from_text("<1> out :- <[1, 2]> f(a).\n"));
  const std::string path = ::testing::TempDir() + "lrnn_float32_model.json";
  m.save(path);
  EXPECT_EQ(Model::load(path).settings().dtype, Dtype::Float32);
}

}  // namespace
