// Damaged model files are refused with a message naming what is wrong (issue 14): an
// unknown or missing version, missing, repeated or non-numeric parameters; and a diverged
// model (NaN weights) is not saved as `null`s that could never load back.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const fs::path kDir = fs::temp_directory_path();

lrnn::Model small_model() {
  return lrnn::Model(lrnn::Template::from_string("h :- {2,2} x, {2}. [activation=tanh]\nq :- {1,2} h.\n"));
}

std::string load_error(const std::function<void(json&)>& damage) {
  const fs::path good = kDir / "lrnn_model_file_good.json", bad = kDir / "lrnn_model_file_bad.json";
  small_model().save(good.string());
  json j = json::parse(std::ifstream(good));
  damage(j);
  std::ofstream(bad) << j.dump();
  try {
    lrnn::Model::load(bad.string());
  } catch (const lrnn::Error& e) {
    return e.what();
  }
  return "loaded";
}

TEST(ModelFile, UnknownOrMissingVersionsAreRefused) {
  EXPECT_NE(load_error([](json& j) { j["version"] = 99; }).find("version 99 is not supported"), std::string::npos);
  EXPECT_NE(load_error([](json& j) { j["version"] = 0; }).find("version 0"), std::string::npos);
  EXPECT_NE(load_error([](json& j) { j.erase("version"); }).find("version null"), std::string::npos);
  EXPECT_NE(load_error([](json& j) { j["version"] = nullptr; }).find("version null"), std::string::npos);
}

TEST(ModelFile, ParametersMustAllBeThereOnceAndBeNumbers) {
  EXPECT_NE(load_error([](json& j) { j["parameters"] = json::array(); }).find("of the template is missing"),
            std::string::npos);
  EXPECT_NE(load_error([](json& j) { j["parameters"].push_back(j["parameters"][0]); }).find("is given twice"),
            std::string::npos);
  EXPECT_NE(load_error([](json& j) { j["parameters"][0]["values"][0] = nullptr; }).find("holds null, not a number"),
            std::string::npos);
  EXPECT_EQ(load_error([](json&) {}), "loaded");
}

TEST(ModelFile, ADivergedModelIsNotSaved) {
  lrnn::Model model = small_model();
  const lrnn::Parameter p = model.parameters().front();
  std::vector<double> values = p.values;
  values[0] = std::nan("");
  model.set_parameter(p.name, values);
  const fs::path path = kDir / "lrnn_model_file_nan.json";
  fs::remove(path);
  try {
    model.save(path.string());
    FAIL() << "saved a NaN weight";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("diverged"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
