// End-to-end training on the NeuraLogic datasets with the templates of examples/templates:
// parse, ground, neuralize, train, evaluate; determinism; checkpoints; the CLI's JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lrnn/syntax.hpp"
#include "train/engine.hpp"
#include "train/sample_split.hpp"
#include "shared_datasets.hpp"

namespace {

using namespace lrnn;

const std::string kData = std::string(LRNN_DATASETS_DIR) + "/neuralogic/";
const std::string kTemplates = std::string(LRNN_SOURCE_DIR) + "/examples/templates/";

std::vector<train::Sample> samples(const std::string& examples, const std::string& queries = "") {
  std::vector<QueryLineAst> q;
  if (!queries.empty()) q = load_queries(kData + queries);
  return train::pair_samples(load_examples(kData + examples), q);
}

struct Trained {
  std::unique_ptr<train::Engine> engine;
  train::PreparedSet set;
  train::Evaluation ev;
};

Trained train_on(const std::string& tmpl, std::vector<train::Sample> s, train::TrainConfig cfg) {
  Trained t;
  t.engine = std::make_unique<train::Engine>(load_template(kTemplates + tmpl), cfg.initializer, cfg.seed);
  t.set = t.engine->prepare(std::move(s));
  t.engine->train(t.set, nullptr, cfg);
  t.ev = t.engine->evaluate(t.set, cfg.loss);
  return t;
}

train::TrainConfig config(int epochs, double lr) {
  train::TrainConfig c;
  c.epochs = epochs;
  c.optimizer.lr = lr;
  return c;
}

class TrainDatasets : public lrnn::test::SharedDatasetsTest {};

TEST_F(TrainDatasets, XorNaiveRoundsTo0110) {
  Trained t = train_on("xor.lrnn", samples("simple/xor/naive/trainExamples.txt"), config(300, 0.1));
  ASSERT_EQ(t.ev.outputs.size(), 4u);
  const double expected[] = {0, 1, 1, 0};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(std::round(t.ev.outputs[i].value[0]), expected[i]) << "output " << i;
  EXPECT_LT(t.ev.metrics.loss, 0.01);
}

TEST_F(TrainDatasets, XorVectorizedRoundsTo0110) {
  Trained t = train_on("xor_vectorized.lrnn", samples("simple/xor/vectorized/trainExamples.txt"), config(300, 0.1));
  ASSERT_EQ(t.ev.outputs.size(), 4u);
  const double expected[] = {0, 1, 1, 0};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(std::round(t.ev.outputs[i].value[0]), expected[i]) << "output " << i;
}

TEST_F(TrainDatasets, MinibatchPlansAreSharedByStructure) {
  // The four XOR examples have identical networks up to fact values: batch size 1 uses
  // one cached plan whose values are refreshed per step, and still learns XOR.
  train::TrainConfig c = config(300, 0.05);
  c.batch_size = 1;
  Trained t = train_on("xor.lrnn", samples("simple/xor/naive/trainExamples.txt"), c);
  EXPECT_EQ(t.engine->cached_batch_plans(), 1u);
  const double expected[] = {0, 1, 1, 0};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(std::round(t.ev.outputs[i].value[0]), expected[i]) << "output " << i;
}

TEST_F(TrainDatasets, FamilyReachesAccuracyOne) {
  Trained t = train_on("family.lrnn", samples("simple/family/examples.txt", "simple/family/queries.txt"), config(100, 0.1));
  ASSERT_EQ(t.set.outputs.size(), 2u);
  EXPECT_EQ(t.set.outputs[0].text, "foal(star)");
  EXPECT_EQ(t.ev.metrics.accuracy, 1.0);
  EXPECT_GT(t.ev.outputs[0].value[0], 0.9);
  EXPECT_LT(t.ev.outputs[1].value[0], 0.1);
}

TEST_F(TrainDatasets, TrainsReachAccuracyOne) {
  Trained t = train_on("trains.lrnn", samples("simple/trains/examples.txt", "simple/trains/queries.txt"), config(300, 0.05));
  ASSERT_EQ(t.set.outputs.size(), 20u);
  EXPECT_EQ(t.ev.metrics.accuracy, 1.0);
}

TEST_F(TrainDatasets, SameSeedGivesBitIdenticalResults) {
  auto run = [] {
    train::TrainConfig c = config(40, 0.05);
    c.batch_size = 7;  // shuffled minibatches
    c.seed = 42;
    Trained t = train_on("trains.lrnn", samples("simple/trains/examples.txt", "simple/trains/queries.txt"), c);
    return std::make_pair(t.engine->parameters().values, t.ev.outputs);
  };
  auto a = run();
  auto b = run();
  ASSERT_EQ(a.first.size(), b.first.size());
  for (size_t i = 0; i < a.first.size(); ++i) ASSERT_EQ(a.first[i], b.first[i]) << "parameter " << i;
  EXPECT_EQ(a.second, b.second);
  // A different seed gives different weights (the seed is really used).
  train::TrainConfig c = config(40, 0.05);
  c.seed = 43;
  Trained other = train_on("trains.lrnn", samples("simple/trains/examples.txt", "simple/trains/queries.txt"), c);
  EXPECT_NE(other.engine->parameters().values, a.first);
}

TEST_F(TrainDatasets, SaveLoadEvalGivesIdenticalOutputs) {
  train::TrainConfig c = config(50, 0.1);
  Trained t = train_on("xor.lrnn", samples("simple/xor/naive/trainExamples.txt"), c);
  const std::string path = (std::filesystem::temp_directory_path() / "lrnn_train_test_model.json").string();
  t.engine->save(path, c);
  train::TrainConfig loaded_config;
  auto loaded = train::Engine::load(path, loaded_config);
  EXPECT_EQ(loaded->parameters().values, t.engine->parameters().values);
  EXPECT_EQ(loaded->epochs_trained(), 50);
  EXPECT_EQ(loaded_config.optimizer.lr, 0.1);
  train::PreparedSet set = loaded->prepare(samples("simple/xor/naive/trainExamples.txt"));
  train::Evaluation ev = loaded->evaluate(set, loaded_config.loss);
  EXPECT_EQ(ev.outputs, t.ev.outputs);

  // Continuing from the checkpoint equals training straight through (optimizer state kept).
  train::TrainConfig more = c;
  more.epochs = 30;
  loaded->train(set, nullptr, more);
  Trained straight = train_on("xor.lrnn", samples("simple/xor/naive/trainExamples.txt"), config(80, 0.1));
  EXPECT_EQ(loaded->parameters().values, straight.engine->parameters().values);
  std::filesystem::remove(path);
}

TEST_F(TrainDatasets, CheckpointErrorsAreClear) {
  train::TrainConfig c;
  EXPECT_THROW(train::Engine::from_json("{not json", c), Error);
  EXPECT_THROW(train::Engine::from_json(R"({"format": "other"})", c), Error);
  EXPECT_THROW(train::Engine::load("/nonexistent/model.json", c), Error);
}

TEST_F(TrainDatasets, CliTrainJsonReportsMetricsTimingAndOutputs) {
  const std::string model = (std::filesystem::temp_directory_path() / "lrnn_cli_test_model.json").string();
  const std::string cmd = std::string(LRNN_CLI_PATH) + " train " + kTemplates + "xor.lrnn --examples " + kData +
                          "simple/xor/naive/trainExamples.txt --epochs 300 --lr 0.1 --json --save " + model +
                          " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["epochs"], 300);
  EXPECT_EQ(j["accuracy"], 1.0);
  EXPECT_TRUE(j["timing"]["build_s"].is_number());
  EXPECT_TRUE(j["timing"]["epoch_s"].is_number());
  EXPECT_TRUE(j["timing"]["train_s"].is_number());
  ASSERT_EQ(j["outputs"].size(), 4u);
  EXPECT_EQ(j["outputs"][1]["query"], "xor");
  EXPECT_EQ(j["outputs"][1]["target"], 1.0);

  const std::string eval = std::string(LRNN_CLI_PATH) + " eval " + model + " --examples " + kData +
                           "simple/xor/naive/trainExamples.txt --json";
  p = popen(eval.c_str(), "r");
  ASSERT_NE(p, nullptr);
  out.clear();
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << out;
  auto e = nlohmann::json::parse(out);
  ASSERT_EQ(e["outputs"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(e["outputs"][i]["output"], j["outputs"][i]["output"]);
  std::filesystem::remove(model);
}

}  // namespace
