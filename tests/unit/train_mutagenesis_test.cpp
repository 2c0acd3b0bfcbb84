// Mutagenesis (188 molecules) with the message-passing template of
// examples/templates/mutagenesis.lrnn: training accuracy >= 0.88, test accuracy reported on
// a seeded held-out fifth. Takes a few seconds of CPU (full-batch Adam, 300 epochs).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "lrnn/syntax.hpp"
#include "train/engine.hpp"
#include "train/sample_split.hpp"
#include "shared_datasets.hpp"

namespace {

using namespace lrnn;

class TrainMutagenesis : public lrnn::test::SharedDatasetsTest {};

TEST_F(TrainMutagenesis, MessagePassingReachesTrainingAccuracy) {
  const std::string dir = std::string(LRNN_DATASETS_DIR) + "/neuralogic/molecules/mutagenesis/";
  std::vector<train::Sample> all =
      train::pair_samples(load_examples(dir + "examples.txt"), load_queries(dir + "queries.txt"));
  ASSERT_EQ(all.size(), 188u);
  train::TrainConfig cfg;
  cfg.epochs = 300;
  cfg.optimizer.lr = 0.03;
  cfg.seed = 1;
  std::vector<train::Sample> train_samples, test_samples;
  train::split_samples(all, 0.2, cfg.seed, train_samples, test_samples);
  ASSERT_EQ(train_samples.size(), 150u);
  ASSERT_EQ(test_samples.size(), 38u);

  train::Engine engine(load_template(std::string(LRNN_SOURCE_DIR) + "/examples/templates/mutagenesis.lrnn"),
                       cfg.initializer, cfg.seed);
  train::PreparedSet train_set = engine.prepare(std::move(train_samples));
  train::PreparedSet test_set = engine.prepare(std::move(test_samples));
  ASSERT_EQ(train_set.outputs.size(), 150u);
  train::TrainResult result = engine.train(train_set, nullptr, cfg);
  EXPECT_EQ(result.epochs, 300);
  // Training loss goes down.
  EXPECT_LT(result.history.back().train.loss, result.history.front().train.loss * 0.6);
  train::Evaluation ev = engine.evaluate(train_set, cfg.loss);
  train::Evaluation test = engine.evaluate(test_set, cfg.loss);
  std::cout << "mutagenesis: train accuracy " << ev.metrics.accuracy << ", test accuracy " << test.metrics.accuracy
            << ", epoch " << result.train_seconds / result.epochs << " s\n";
  EXPECT_GE(ev.metrics.accuracy, 0.88);
  EXPECT_TRUE(std::isfinite(test.metrics.accuracy));
  EXPECT_GT(test.metrics.accuracy, 0.6);
}

}  // namespace
