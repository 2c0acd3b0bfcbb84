// The zoo's templates run by the engine equal the torch.nn computations they claim to be,
// checked against an independent dense reference (Eigen) written from PyTorch's
// definitions: MultiheadAttention (1, 2, 4 heads, with and without masks),
// TransformerEncoderLayer (post-norm, pre-norm, affine layer norms) and
// TransformerDecoderLayer. Outputs within 1e-10; gradients of the inputs and of every
// weight against central finite differences of the reference within 1e-6. Also: the plan
// cache (no grounding for a seen length) and ground-rule counts of masked attention.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include "exec/scalar.hpp"  // Eigen, with its GCC 12 intrinsics warnings off
#include "lrnn/zoo.hpp"

namespace {

using namespace lrnn;
using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using State = std::map<std::string, zoo::TorchTensor>;

Mat as_mat(const zoo::TorchTensor& t) {
  return Eigen::Map<const Mat>(t.data.data(), t.rows, t.cols);
}
Eigen::RowVectorXd as_row(const zoo::TorchTensor& t) {
  return Eigen::Map<const Eigen::RowVectorXd>(t.data.data(), t.rows);
}

// ---- the reference: PyTorch's definitions, densely ---------------------------------------
using Allowed = std::function<bool(int, int)>;

// torch.nn.MultiheadAttention forward (batch_first, need_weights irrelevant, dropout 0).
Mat ref_mha(const State& s, const std::string& p, const Mat& q_in, const Mat& kv_in, int heads, const Allowed& allowed) {
  const int E = int(q_in.cols()), hd = E / heads;
  Mat W = as_mat(s.at(p + "in_proj_weight"));
  Eigen::RowVectorXd b = as_row(s.at(p + "in_proj_bias"));
  Mat Q = (q_in * W.topRows(E).transpose()).rowwise() + b.head(E);
  Mat K = (kv_in * W.middleRows(E, E).transpose()).rowwise() + b.segment(E, E);
  Mat V = (kv_in * W.bottomRows(E).transpose()).rowwise() + b.tail(E);
  Mat O(q_in.rows(), E);
  for (int h = 0; h < heads; ++h) {
    Mat S = Q.middleCols(h * hd, hd) * K.middleCols(h * hd, hd).transpose() / std::sqrt(double(hd));
    for (int i = 0; i < S.rows(); ++i) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int j = 0; j < S.cols(); ++j)
        if (allowed(i, j)) mx = std::max(mx, S(i, j));
      double z = 0;
      for (int j = 0; j < S.cols(); ++j) z += S(i, j) = allowed(i, j) ? std::exp(S(i, j) - mx) : 0.0;
      S.row(i) /= z;
    }
    O.middleCols(h * hd, hd) = S * V.middleCols(h * hd, hd);
  }
  return (O * as_mat(s.at(p + "out_proj.weight")).transpose()).rowwise() + as_row(s.at(p + "out_proj.bias"));
}

Mat ref_norm(const State& s, const std::string& name, const Mat& x) {
  Mat y(x.rows(), x.cols());
  for (int i = 0; i < x.rows(); ++i) {
    const double mean = x.row(i).mean();
    const double var = (x.row(i).array() - mean).square().mean();
    y.row(i) = (x.row(i).array() - mean) / std::sqrt(var + 1e-5);
  }
  if (s.count(name + ".weight"))
    y = (y.array().rowwise() * as_row(s.at(name + ".weight")).array()).rowwise() + as_row(s.at(name + ".bias")).array();
  return y;
}

Mat ref_ff(const State& s, const Mat& x) {
  Mat h = ((x * as_mat(s.at("linear1.weight")).transpose()).rowwise() + as_row(s.at("linear1.bias"))).cwiseMax(0.0);
  return (h * as_mat(s.at("linear2.weight")).transpose()).rowwise() + as_row(s.at("linear2.bias"));
}

Mat ref_encoder_layer(const State& s, const Mat& x, int heads, bool norm_first, const Allowed& allowed) {
  if (!norm_first) {
    Mat x1 = ref_norm(s, "norm1", x + ref_mha(s, "self_attn.", x, x, heads, allowed));
    return ref_norm(s, "norm2", x1 + ref_ff(s, x1));
  }
  Mat n1 = ref_norm(s, "norm1", x);
  Mat x1 = x + ref_mha(s, "self_attn.", n1, n1, heads, allowed);
  return x1 + ref_ff(s, ref_norm(s, "norm2", x1));
}

Mat ref_decoder_layer(const State& s, const Mat& x, const Mat& mem, int heads, const Allowed& self_allowed) {
  const Allowed all = [](int, int) { return true; };
  Mat x1 = ref_norm(s, "norm1", x + ref_mha(s, "self_attn.", x, x, heads, self_allowed));
  Mat x2 = ref_norm(s, "norm2", x1 + ref_mha(s, "multihead_attn.", x1, mem, heads, all));
  return ref_norm(s, "norm3", x2 + ref_ff(s, x2));
}

// ---- helpers ------------------------------------------------------------------------------
std::mt19937 rng(7);
zoo::TorchTensor random_tensor(int rows, int cols, double scale = 0.5) {
  std::normal_distribution<double> g(0.0, scale);
  zoo::TorchTensor t;
  t.rows = rows;
  t.cols = cols;
  t.data.resize(size_t(rows) * cols);
  for (auto& v : t.data) v = g(rng);
  return t;
}
Mat random_mat(int rows, int cols) {
  zoo::TorchTensor t = random_tensor(rows, cols, 1.0);
  return as_mat(t);
}

State mha_state(const std::string& p, int E) {
  return {{p + "in_proj_weight", random_tensor(3 * E, E)},
          {p + "in_proj_bias", random_tensor(3 * E, 1)},
          {p + "out_proj.weight", random_tensor(E, E)},
          {p + "out_proj.bias", random_tensor(E, 1)}};
}

State layer_state(int E, int F, int norms, bool affine, bool cross) {
  State s = mha_state("self_attn.", E);
  if (cross) s.merge(mha_state("multihead_attn.", E));
  s["linear1.weight"] = random_tensor(F, E);
  s["linear1.bias"] = random_tensor(F, 1);
  s["linear2.weight"] = random_tensor(E, F);
  s["linear2.bias"] = random_tensor(E, 1);
  for (int k = 1; affine && k <= norms; ++k) {
    zoo::TorchTensor g = random_tensor(E, 1, 0.3);
    for (auto& v : g.data) v += 1.0;
    s["norm" + std::to_string(k) + ".weight"] = g;
    s["norm" + std::to_string(k) + ".bias"] = random_tensor(E, 1, 0.3);
  }
  return s;
}

std::vector<double> flat(const Mat& m) { return std::vector<double>(m.data(), m.data() + m.size()); }

// Checks forward, input gradients and every mapped weight's gradient of `model` against
// the reference `f(state, inputs)` with loss sum(out .* G).
void check_against_reference(zoo::SequenceModel& model, const zoo::Module& module, State state,
                             std::vector<Mat> inputs, const std::vector<std::string>& predicates,
                             const std::function<Mat(const State&, const std::vector<Mat>&)>& f) {
  model.load_torch(module.torch, state);
  std::vector<zoo::SequenceInput> seq;
  for (size_t k = 0; k < inputs.size(); ++k)
    seq.push_back({predicates[k], inputs[k].data(), int(inputs[k].rows()), int(inputs[k].cols())});
  const int n = int(inputs[0].rows());
  std::vector<double> out = model.forward(seq, n);
  Mat expected = f(state, inputs);
  ASSERT_EQ(out.size(), size_t(expected.size()));
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expected.data()[i], 1e-10) << "output entry " << i;

  Mat G = random_mat(int(expected.rows()), int(expected.cols()));
  model.zero_grad();
  std::vector<std::vector<double>> grads = model.backward(flat(G));
  auto loss = [&](const State& s, const std::vector<Mat>& in) { return (f(s, in).array() * G.array()).sum(); };
  const double h = 1e-6;
  for (size_t k = 0; k < inputs.size(); ++k)
    for (int e = 0; e < inputs[k].size(); ++e) {
      std::vector<Mat> plus = inputs, minus = inputs;
      plus[k].data()[e] += h;
      minus[k].data()[e] -= h;
      const double fd = (loss(state, plus) - loss(state, minus)) / (2 * h);
      ASSERT_NEAR(grads[k][e], fd, 1e-6) << predicates[k] << " entry " << e;
    }
  for (const zoo::TorchSlice& sl : module.torch) {
    std::vector<double> g = model.parameter_grad(sl.weight);
    const int cols = sl.col_end - sl.col_begin;
    zoo::TorchTensor& t = state.at(sl.torch_name);
    for (int r = sl.row_begin; r < sl.row_end; ++r)
      for (int c = sl.col_begin; c < sl.col_end; ++c) {
        double& w = t.data[size_t(r) * t.cols + c];
        const double w0 = w;
        w = w0 + h;
        const double lp = loss(state, inputs);
        w = w0 - h;
        const double lm = loss(state, inputs);
        w = w0;
        ASSERT_NEAR(g[size_t(r - sl.row_begin) * cols + (c - sl.col_begin)], (lp - lm) / (2 * h), 1e-6)
            << "$" << sl.weight << " = " << sl.torch_name << "[" << r << "," << c << "]";
      }
  }
}

struct MhaCase {
  int heads;
  zoo::Mask mask;
  Allowed allowed;
};

TEST(ZooExactness, MultiheadAttentionEqualsTorchDefinition) {
  const int E = 8, n = 6;
  std::vector<MhaCase> cases = {
      {1, zoo::Mask::none(), [](int, int) { return true; }},
      {2, zoo::Mask::none(), [](int, int) { return true; }},
      {4, zoo::Mask::none(), [](int, int) { return true; }},
      {1, zoo::Mask::causal(), [](int i, int j) { return j <= i; }},
      {2, zoo::Mask::causal(), [](int i, int j) { return j <= i; }},
      {4, zoo::Mask::causal(), [](int i, int j) { return j <= i; }},
      {2, zoo::Mask::sliding_window(2), [](int i, int j) { return i - j >= 0 && i - j <= 2; }},
      {2, zoo::Mask::strided(2), [](int i, int j) { return (i - j) % 2 == 0; }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("heads " + std::to_string(c.heads) + " mask " + c.mask.label);
    zoo::Module m = zoo::multihead_attention(E, c.heads, {.mask = c.mask});
    zoo::SequenceModel model(m);
    check_against_reference(model, m, mha_state("", E), {random_mat(n, E)}, {"input"},
                            [&](const State& s, const std::vector<Mat>& in) {
                              return ref_mha(s, "", in[0], in[0], c.heads, c.allowed);
                            });
  }
}

TEST(ZooExactness, EncoderLayerEqualsTorchDefinition) {
  const int E = 8, F = 12, n = 5;
  const Allowed all = [](int, int) { return true; };
  for (bool norm_first : {false, true})
    for (bool affine : {false, true}) {
      SCOPED_TRACE(std::string(norm_first ? "pre" : "post") + "-norm, affine " + (affine ? "yes" : "no"));
      zoo::Module m = zoo::transformer_encoder_layer(E, 2, F, {.norm_first = norm_first, .norm_affine = affine});
      zoo::SequenceModel model(m);
      check_against_reference(model, m, layer_state(E, F, 2, affine, false), {random_mat(n, E)}, {"input"},
                              [&](const State& s, const std::vector<Mat>& in) {
                                return ref_encoder_layer(s, in[0], 2, norm_first, all);
                              });
    }
}

TEST(ZooExactness, EncoderStackAndCausalEncoderLayer) {
  const int E = 4, F = 8, n = 4;
  const Allowed causal = [](int i, int j) { return j <= i; };
  zoo::Module m = zoo::transformer_encoder(E, 2, F, 2, {.mask = zoo::Mask::causal()});
  State s0 = layer_state(E, F, 2, false, false), s1 = layer_state(E, F, 2, false, false), state;
  for (auto& [k, v] : s0) state["layers.0." + k] = v;
  for (auto& [k, v] : s1) state["layers.1." + k] = v;
  zoo::SequenceModel model(m);
  check_against_reference(model, m, state, {random_mat(n, E)}, {"input"}, [&](const State& s, const std::vector<Mat>& in) {
    State a, b;
    for (auto& [k, v] : s) (k.rfind("layers.0.", 0) == 0 ? a : b)[k.substr(9)] = v;
    return ref_encoder_layer(b, ref_encoder_layer(a, in[0], 2, false, causal), 2, false, causal);
  });
}

TEST(ZooExactness, DecoderLayerEqualsTorchDefinition) {
  const int E = 4, F = 6, n = 4, mlen = 5;
  const Allowed causal = [](int i, int j) { return j <= i; };
  zoo::Module m = zoo::transformer_decoder_layer(E, 2, F, {.self_mask = zoo::Mask::causal()});
  zoo::SequenceModel model(m);
  check_against_reference(model, m, layer_state(E, F, 3, false, true), {random_mat(n, E), random_mat(mlen, E)},
                          {"target", "memory"}, [&](const State& s, const std::vector<Mat>& in) {
                            return ref_decoder_layer(s, in[0], in[1], 2, causal);
                          });
}

TEST(ZooPlanCache, EqualLengthsReuseOnePlanAndNeverGroundAgain) {
  const int E = 4;
  zoo::Module m = zoo::multihead_attention(E, 2, {.mask = zoo::Mask::causal()});
  zoo::SequenceModel model(m);
  Mat a = random_mat(6, E), b = random_mat(6, E), c = random_mat(9, E);
  std::vector<double> ya = model.forward(a.data(), 6, E);
  std::vector<double> yb = model.forward(b.data(), 6, E);
  EXPECT_EQ(model.stats().groundings, 1u);
  EXPECT_EQ(model.stats().cache_hits, 1u);
  EXPECT_NE(ya, yb);  // the new values went into the cached plan
  model.forward(c.data(), 9, E);
  EXPECT_EQ(model.stats().groundings, 2u);
  EXPECT_EQ(model.forward(a.data(), 6, E), ya);  // back to the first plan: same numbers
  EXPECT_EQ(model.stats().groundings, 2u);
  EXPECT_EQ(model.stats().cache_hits, 2u);
}

// A layer called on ever new structures (a GNN on shuffled batches) keeps the plans of the
// 128 most recently used ones: the oldest is grounded again, a recent one is not.
TEST(ZooPlanCache, KeepsTheMostRecentlyUsedPlans) {
  const int E = 2;
  zoo::SequenceModel model(zoo::multihead_attention(E, 1, {}));
  std::vector<Mat> inputs;
  for (int n = 1; n <= 130; ++n) inputs.push_back(random_mat(n, E));
  const std::vector<double> first = model.forward(inputs[0].data(), 1, E);
  for (int n = 2; n <= 130; ++n) model.forward(inputs[n - 1].data(), n, E);
  EXPECT_EQ(model.stats().groundings, 130u);
  model.forward(inputs[129].data(), 130, E);  // recent: cached
  EXPECT_EQ(model.stats().groundings, 130u);
  EXPECT_EQ(model.forward(inputs[0].data(), 1, E), first);  // dropped, grounded again: same numbers
  EXPECT_EQ(model.stats().groundings, 131u);
  model.backward(std::vector<double>(first.size(), 1.0));  // the plan of the last forward
}

TEST(ZooPlanCache, MaskedAttentionGroundsOnlyAllowedPairs) {
  const int E = 4, H = 2, n = 12, w = 3;
  Mat x = random_mat(n, E);
  auto ground_rules = [&](const zoo::Mask& mask) {
    zoo::SequenceModel model(zoo::multihead_attention(E, H, {.mask = mask}));
    model.forward(x.data(), n, E);
    return model.stats().ground_rules;
  };
  // per head: q, k, v (n each), one score and one weighted value per allowed pair; plus
  // the n output projections.
  auto expected = [&](size_t pairs) { return size_t(H) * (3 * n + 2 * pairs) + n; };
  EXPECT_EQ(ground_rules(zoo::Mask::none()), expected(size_t(n) * n));
  EXPECT_EQ(ground_rules(zoo::Mask::causal()), expected(size_t(n) * (n + 1) / 2));
  EXPECT_EQ(ground_rules(zoo::Mask::sliding_window(w)), expected(size_t(n) * (w + 1) - size_t(w) * (w + 1) / 2));
}

TEST(ZooPlanCache, LoadTorchRejectsMissingAndMisshapenTensors) {
  zoo::Module m = zoo::multihead_attention(4, 2);
  zoo::SequenceModel model(m);
  State s = mha_state("", 4);
  State missing = s;
  missing.erase("out_proj.bias");
  EXPECT_THROW(model.load_torch(m.torch, missing), Error);
  State wrong = s;
  wrong["in_proj_weight"] = random_tensor(6, 4);
  EXPECT_THROW(model.load_torch(m.torch, wrong), Error);
  EXPECT_NO_THROW(model.load_torch(m.torch, s));
  EXPECT_EQ(model.parameter("attn_bo"), s["out_proj.bias"].data);
}

}  // namespace
