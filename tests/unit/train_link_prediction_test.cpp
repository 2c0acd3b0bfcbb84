// Link prediction (docs/big_graphs.md "Link prediction"): training on true links with
// negatives drawn each epoch is exactly training the same template on those links with
// targets 1 and the negatives with targets 0; ranking is the filtered rank of the scores
// the template gives every corruption; and templates whose scores are not a function of the
// arguments' own atoms are refused, naming the literal.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli_test_support.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/lrnn.hpp"
#include "model_compare.hpp"
#include "api/dataset_impl.hpp"
#include "lrnn/syntax.hpp"
#include "train/config.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"
#include "train/link_prediction.hpp"

namespace {

using lrnn::QuerySplit;

constexpr int kNodes = 12;

const char* kTemplate =
    "h(X) :- {3,2} x(X). [activation=tanh]\n"
    "h(X) :- {3,2} x(Y), *edge(X, Y). [activation=tanh, aggregation=sum]\n"
    "link(X, Y) :- h(X)^T, {3,3} h(Y). [combination=product]\n";

double feature(int n, int k) { return std::sin(1.7 * n + 0.9 * k + 0.3); }

std::string node(int n) { return "n" + std::to_string(n); }

// A ring with chords; each edge once as a link (both directions as edge facts).
std::vector<std::pair<int, int>> edges() {
  std::vector<std::pair<int, int>> e;
  for (int n = 0; n < kNodes; ++n) {
    e.push_back({n, (n + 1) % kNodes});
    if (n % 3 == 0) e.push_back({n, (n + 5) % kNodes});
  }
  return e;
}

std::string graph_example() {
  std::string facts;
  for (int n = 0; n < kNodes; ++n)
    facts += (n ? ", " : "") + std::string("<[") + std::to_string(feature(n, 0)) + ", " +
             std::to_string(feature(n, 1)) + "]> x(" + node(n) + ")";
  for (auto [a, b] : edges()) facts += ", edge(" + node(a) + ", " + node(b) + "), edge(" + node(b) + ", " + node(a) + ")";
  return "g :- " + facts + ".\n";
}

std::string link_queries() {
  std::string q;
  for (auto [a, b] : edges()) q += "link(" + node(a) + ", " + node(b) + ").\n";
  return q;
}

lrnn::Settings link_settings(int epochs) {
  lrnn::Settings s;
  s.epochs = epochs;
  s.lr = 0.05;
  s.seed = 7;
  s.loss = "crossentropy";
  s.link_prediction = true;
  s.negatives = 2;
  s.link_chunk = 7;  // two links and their negatives per decoder pass: several passes, the last partial
  return s;
}

// The link queries' split (fixed), as parsed.
lrnn::Dataset split_links() {
  const lrnn::Dataset data = lrnn::Dataset::from_text(graph_example(), link_queries());
  std::vector<QuerySplit> parts(data.num_queries(), QuerySplit::Train);
  for (size_t q = 0; q < parts.size(); ++q)
    if (q % 5 == 1) parts[q] = QuerySplit::Validation;
    else if (q % 5 == 3) parts[q] = QuerySplit::Test;
  return data.with_query_splits(parts);
}

// Query lines: the training links with target 1, then `negatives` (flat args) with target 0.
std::string targeted(const lrnn::train::LinkTable& t, const std::vector<uint32_t>& train,
                     const std::vector<uint32_t>& negatives) {
  std::string q;
  for (uint32_t l : train) q += "1 link(" + t.constants[t.arg(l, 0)] + ", " + t.constants[t.arg(l, 1)] + ").\n";
  for (size_t i = 0; i < negatives.size(); i += 2)
    q += "0 link(" + t.constants[negatives[i]] + ", " + t.constants[negatives[i + 1]] + ").\n";
  return q;
}

}  // namespace

TEST(LinkPrediction, TrainsExactlyAsTheLinksAndTheirNegativesWithTargets) {
  const lrnn::Dataset data = split_links();
  const lrnn::Template t = lrnn::Template::from_string(kTemplate);
  const int epochs = 4;
  lrnn::Model links(t, link_settings(epochs));
  const lrnn::TrainReport a = links.train(data);
  ASSERT_EQ(a.history.size(), size_t(epochs));

  // The same negatives, drawn as the trainer draws them: one stream of the seed, epoch after epoch.
  std::vector<lrnn::Literal> queries;
  for (const auto& line : lrnn::parse_queries(link_queries(), "<q>")) queries.push_back(line.queries[0]);
  const lrnn::train::LinkTable table = lrnn::train::link_table(queries, data.query_splits());
  std::vector<uint32_t> train;
  for (uint32_t l = 0; l < table.size(); ++l)
    if (table.split[l] == QuerySplit::Train) train.push_back(l);
  lrnn::train::Rng rng(7 * 0x9E3779B97F4A7C15ULL);
  lrnn::Settings plain = link_settings(1);
  plain.link_prediction = false;
  lrnn::Model reference(t, plain);
  for (int e = 0; e < epochs; ++e) {
    std::vector<uint32_t> negatives;
    lrnn::train::draw_negatives(table, train, 2, lrnn::train::Corrupt::Tail, rng, negatives);
    // Each link followed by its negatives, as the trainer orders them (the same sums).
    std::string lines;
    for (size_t i = 0; i < train.size(); ++i)
      lines += targeted(table, {train[i]}, std::vector<uint32_t>(negatives.begin() + 4 * i, negatives.begin() + 4 * i + 4));
    const lrnn::TrainReport b = reference.train(lrnn::Dataset::from_text(graph_example(), lines));
    EXPECT_NEAR(a.history[e].train.loss, b.history[0].train.loss, 1e-12) << "epoch " << e + 1;
    EXPECT_EQ(a.history[e].train.count, train.size());
  }
  EXPECT_LT(lrnn_test::max_parameter_difference(links, reference), 1e-12);
  EXPECT_LT(a.history.back().train.loss, a.history.front().train.loss - 1e-3);  // it learned something
  EXPECT_TRUE(a.history.back().has_validation);
  EXPECT_TRUE(a.history.back().has_test);
  EXPECT_GE(a.history.back().test.auc, 0.0);
}

TEST(LinkPrediction, RankingIsTheFilteredRankOfTheTemplatesScores) {
  const lrnn::Dataset data = split_links();
  const lrnn::Template t = lrnn::Template::from_string(kTemplate);
  lrnn::Settings s = link_settings(1);
  s.ranking = true;
  s.corrupt = "both";
  lrnn::Model links(t, s);
  const lrnn::TrainReport a = links.train(data);
  ASSERT_TRUE(a.history[0].test.has_ranking);
  // The epoch's metrics are of its pass: the initial parameters, which a fresh model shares.
  lrnn::Settings plain = s;
  plain.link_prediction = false;
  lrnn::Model fresh(t, plain);
  const auto all = edges();
  const std::set<std::pair<int, int>> truth(all.begin(), all.end());
  const auto parts = data.query_splits();
  double mrr = 0, hits1 = 0;
  size_t count = 0;
  for (size_t q = 0; q < all.size(); ++q) {
    if (parts[q] != QuerySplit::Test) continue;
    for (int side : {1, 0}) {
      std::string lines;
      for (int e = 0; e < kNodes; ++e) {
        const std::pair<int, int> c = side == 1 ? std::make_pair(all[q].first, e) : std::make_pair(e, all[q].second);
        lines += "link(" + node(c.first) + ", " + node(c.second) + ").\n";
      }
      const auto values = fresh.forward(lrnn::Dataset::from_text(graph_example(), lines));
      const int true_entity = side == 1 ? all[q].second : all[q].first;
      const double score = values[true_entity][0];
      double greater = 0, equal = 0;
      for (int e = 0; e < kNodes; ++e) {
        const std::pair<int, int> c = side == 1 ? std::make_pair(all[q].first, e) : std::make_pair(e, all[q].second);
        if (e == true_entity || truth.count(c)) continue;
        greater += values[e][0] > score;
        equal += values[e][0] == score;
      }
      const double rank = 1 + greater + equal / 2;
      mrr += 1 / rank;
      hits1 += rank <= 1;
      ++count;
    }
  }
  ASSERT_EQ(a.history[0].test.ranking.count, count);
  EXPECT_NEAR(a.history[0].test.ranking.mrr, mrr / count, 1e-12);
  EXPECT_NEAR(a.history[0].test.ranking.hits1, hits1 / count, 1e-12);
}

TEST(LinkPrediction, FloatRunsTrainAsDouble) {
  const lrnn::Dataset data = split_links();
  const lrnn::Template t = lrnn::Template::from_string(kTemplate);
  lrnn::Settings s32 = link_settings(3);
  s32.dtype = lrnn::Dtype::Float32;
  lrnn::Model a(t, link_settings(3)), b(t, s32);
  const auto ra = a.train(data), rb = b.train(data);
  for (size_t e = 0; e < ra.history.size(); ++e) EXPECT_NEAR(ra.history[e].train.loss, rb.history[e].train.loss, 1e-5);
  EXPECT_LT(lrnn_test::max_parameter_difference(a, b), 1e-4);
}

TEST(LinkPrediction, RefusesWhatIsNotAScoreOfTheArgumentsAtoms) {
  const lrnn::Dataset data = split_links();
  auto message = [&](const std::string& tmpl) {
    try {
      lrnn::Model m(lrnn::Template::from_string(tmpl), link_settings(1));
      m.train(data);
    } catch (const lrnn::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string h = "h(X) :- {3,2} x(X).\n";
  EXPECT_NE(message(h + "link(X, Y) :- h(X)^T, h(Y), edge(X, Y). [combination=product]\n").find("edge(X, Y)"),
            std::string::npos);
  EXPECT_NE(message(h + "link(X, Y) :- h(X)^T, h(Z), *edge(Y, Z). [combination=product]\n").find("link prediction"),
            std::string::npos);
  EXPECT_NE(message(h + "link(X, Y) :- h(X)^T, h(Y), @neq(X, Y). [combination=product]\n").find("@neq"),
            std::string::npos);
  EXPECT_NE(message(h + "other(X, Y) :- h(X)^T, h(Y). [combination=product]\n").find("no rule"), std::string::npos);
  // An atom the encoder does not derive for some node.
  EXPECT_NE(message("h(X) :- {3,2} x(X), *edge(X, n3).\nlink(X, Y) :- h(X)^T, h(Y). [combination=product]\n")
                .find("does not derive"),
            std::string::npos);
  // Targets other than 1, and more than one example.
  lrnn::Model m(lrnn::Template::from_string(kTemplate), link_settings(1));
  EXPECT_THROW(m.train(lrnn::Dataset::from_text(graph_example(), "0 link(n1, n2).\n")), lrnn::Error);
  EXPECT_THROW(m.train(lrnn::Dataset::from_text(graph_example() + graph_example(), link_queries())), lrnn::Error);
}

TEST(LinkPrediction, CommandLineTrainsAndReportsTheHeldOutLinks) {
  const auto dir = std::filesystem::temp_directory_path() / "lrnn_link_cli";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((dir / name).string()) << text;
    return (dir / name).string();
  };
  const std::string t = write("t.lrnn", kTemplate), e = write("e.txt", graph_example());
  std::string train, test;
  const auto all = edges();
  for (size_t i = 0; i < all.size(); ++i)
    (i % 4 == 0 ? test : train) += "link(" + node(all[i].first) + ", " + node(all[i].second) + ").\n";
  const std::string q = write("train.txt", train), tq = write("test.txt", test);
  const lrnn_test::CliRun ok = lrnn_test::run_lrnn("train " + t + " -e " + e + " -q " + q + " --test-queries " + tq +
                                                   " --link-prediction --corrupt both --ranking --loss crossentropy "
                                                   "--epochs 3 --json");
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("\"test\":{\"accuracy\""), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("\"auc\""), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("\"mrr\""), std::string::npos) << ok.out;
  // Link options without --link-prediction, and a misspelled corruption, are usage errors.
  const lrnn_test::CliRun alone = lrnn_test::run_lrnn("train " + t + " -e " + e + " -q " + q + " --negatives 2");
  EXPECT_EQ(alone.code, 2) << alone.out;
  EXPECT_NE(alone.out.find("--link-prediction"), std::string::npos) << alone.out;
  const lrnn_test::CliRun bad =
      lrnn_test::run_lrnn("train " + t + " -e " + e + " -q " + q + " --link-prediction --corrupt sideways");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("sideways"), std::string::npos) << bad.out;
}

// ---- the decoder's multilinear form (train/link_multilinear.hpp) ----------------------------

namespace {

// Templates whose scores are sums of element-wise products of the arguments' rows, over the
// graph of split_links(): a dot product, a DistMult-like triple product through an
// intermediate atom, and ComplEx-like terms with a fixed sign, a repeated argument and a
// transposed sum.
const char* kEncoder =
    "h(X) :- {3,2} x(X). [activation=tanh]\n"
    "h(X) :- {3,2} x(Y), *edge(X, Y). [activation=tanh, aggregation=sum]\n"
    "g(X) :- {3,2} x(X).\n";
const std::vector<std::string> kMultilinearDecoders = {
    "link(X, Y) :- h(X)^T, h(Y). [combination=product]\n",
    "link__p(X, Y) :- h(X), g(Y). [combination=elproduct]\n"
    "link(X, Y) :- link__p(X, Y)^T, h(Y). [combination=product]\n",
    "link__a(X, Y) :- h(X), h(Y). [combination=elproduct]\n"
    "link__b(X, Y) :- g(X), h(Y), g(X). [combination=elproduct]\n"
    "link(X, Y) :- link__a(X, Y)^T, g(Y). [combination=product]\n"
    "link(X, Y) :- <-1.5> link__b(X, Y)^T, h(X). [combination=product]\n"
    "link(X, Y) :- h(X)^T, h(X). [combination=product]\n",
};

struct EngineRun {
  lrnn::train::TrainResult result;
  std::vector<double> params;
};

EngineRun engine_links(const std::string& text, const lrnn::Settings& s, lrnn::train::LinkConfig::Decoder decoder) {
  const lrnn::Dataset data = split_links();
  lrnn::train::Engine engine(lrnn::parse_template(text, "t"), lrnn::train::Initializer{}, s.seed);
  lrnn::train::LinkConfig link = lrnn::train::link_config(s);
  link.decoder = decoder;
  EngineRun run;
  run.result = engine.train_links(data.impl().samples, lrnn::train::make_train_config(s, 0), link,
                                  s.max_ground_rules, nullptr);
  run.params = engine.model().params.values;
  return run;
}

}  // namespace

TEST(LinkPrediction, MultilinearScoresTrainAsTheDecoderPlan) {
  using Decoder = lrnn::train::LinkConfig::Decoder;
  for (const std::string& decoder : kMultilinearDecoders) {
    for (bool margin : {false, true}) {
      lrnn::Settings s = link_settings(4);
      s.ranking = true;
      if (margin) s.margin = 1.0;
      const EngineRun fast = engine_links(kEncoder + decoder, s, Decoder::Multilinear);
      const EngineRun plan = engine_links(kEncoder + decoder, s, Decoder::Plan);
      ASSERT_EQ(fast.result.history.size(), 4u);
      for (size_t e = 0; e < 4; ++e) {
        const lrnn::EpochInfo &a = fast.result.history[e], &b = plan.result.history[e];
        EXPECT_NEAR(a.train.loss, b.train.loss, 1e-12) << decoder << " epoch " << e + 1;
        EXPECT_NEAR(a.validation.loss, b.validation.loss, 1e-12) << decoder;
        EXPECT_NEAR(a.test.auc, b.test.auc, 1e-12) << decoder;
        EXPECT_NEAR(a.test.ranking.mrr, b.test.ranking.mrr, 1e-12) << decoder;
        EXPECT_EQ(a.train.accuracy, b.train.accuracy) << decoder;
      }
      ASSERT_EQ(fast.params.size(), plan.params.size());
      double worst = 0;
      for (size_t p = 0; p < fast.params.size(); ++p) worst = std::max(worst, std::abs(fast.params[p] - plan.params[p]));
      EXPECT_LT(worst, 1e-12) << decoder;
      EXPECT_GT(std::abs(fast.result.history[3].train.loss - fast.result.history[0].train.loss), 1e-4) << decoder;
      lrnn::Settings s32 = s;
      s32.dtype = lrnn::Dtype::Float32;
      const EngineRun single = engine_links(kEncoder + decoder, s32, Decoder::Multilinear);
      for (size_t e = 0; e < 4; ++e)
        EXPECT_NEAR(single.result.history[e].train.loss, fast.result.history[e].train.loss, 1e-5) << decoder;
    }
  }
}

TEST(LinkPrediction, DecodersOfOtherFormsRunThroughTheirPlan) {
  using Decoder = lrnn::train::LinkConfig::Decoder;
  const std::vector<std::string> others = {
      "link(X, Y) :- h(X)^T, {3,3} h(Y). [combination=product]\n",          // a learnable weight
      "link(X, Y) :- h(X)^T, h(Y). [combination=product, activation=tanh]\n",  // an activation
      "link(X, Y) :- h(X)^T, h(Y). [combination=product]\nlink/2 [0.5]\n",     // an offset
      "link(X, Y) :- h(X), h(Y). [combination=cossim]\n",                     // not a product
      "link(X, Y) :- h(X)^T, ~h(Y). [combination=product]\n",                  // a soft negation
  };
  for (const std::string& decoder : others) {
    const lrnn::Settings s = link_settings(2);
    EXPECT_THROW(engine_links(kEncoder + decoder, s, Decoder::Multilinear), lrnn::Error) << decoder;
    const EngineRun a = engine_links(kEncoder + decoder, s, Decoder::Auto);
    const EngineRun b = engine_links(kEncoder + decoder, s, Decoder::Plan);
    EXPECT_EQ(a.result.history[1].train.loss, b.result.history[1].train.loss) << decoder;
  }
}

// Early stopping (train/early_stopping.hpp) in the link loop: the model ends with the
// parameters the best validation epoch was computed with, those before its step, which are
// the parameters after one epoch fewer of the same run.
TEST(LinkPrediction, EarlyStoppingRestoresTheBestValidationEpochsParameters) {
  using Decoder = lrnn::train::LinkConfig::Decoder;
  lrnn::Settings s = link_settings(80);
  s.lr = 0.3;  // a rate at which the validation loss turns up soon
  s.patience = 3;
  const std::string text = std::string(kEncoder) + kMultilinearDecoders[0];
  const EngineRun stopped = engine_links(text, s, Decoder::Auto);
  ASSERT_TRUE(stopped.result.stopped_early);
  const int best = stopped.result.best_epoch;
  ASSERT_GE(best, 2);
  EXPECT_EQ(int(stopped.result.history.size()), best + 3);  // three epochs without improvement
  lrnn::Settings shorter = link_settings(best - 1);
  shorter.lr = 0.3;
  const EngineRun before_best = engine_links(text, shorter, Decoder::Auto);
  EXPECT_EQ(stopped.params, before_best.params);
}
