// Models on disk: one JSON object with the template text, every parameter by name with its
// shape and values (doubles written with 17 significant digits, so they load bit-exact),
// the optimizer's state and the training settings. Written to a temporary file and renamed.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lrnn/diagnostics.hpp"
#include "syntax/atomic_file.hpp"
#include "lrnn/syntax.hpp"
#include "train/engine.hpp"

namespace lrnn::train {

using nlohmann::json;

namespace {

constexpr int64_t kModelFileVersion = 1;

json optimizer_json(const OptimizerConfig& c) {
  return {{"kind", to_string(c.kind)}, {"lr", c.lr},           {"beta1", c.beta1},
          {"beta2", c.beta2},          {"eps", c.eps},         {"weight_decay", c.weight_decay},
          {"momentum", c.momentum}};
}

OptimizerConfig optimizer_from(const json& j) {
  OptimizerConfig c = OptimizerConfig::defaults(OptimizerConfig::parse(j.at("kind").get<std::string>()));
  c.lr = j.at("lr").get<double>();
  c.beta1 = j.at("beta1").get<double>();
  c.beta2 = j.at("beta2").get<double>();
  c.eps = j.at("eps").get<double>();
  c.weight_decay = j.at("weight_decay").get<double>();
  c.momentum = j.at("momentum").get<double>();
  return c;
}

}  // namespace

std::string Engine::to_json(const TrainConfig& config) const {
  json params = json::array();
  for (uint32_t p = 0; p < model_.params.count(); ++p) {
    const neural::ParamInfo& info = model_.params.info(p);
    const double* data = model_.params.data(p);
    // JSON has no NaN or infinity (they would be written as null and never load back).
    for (int k = 0; k < info.shape.size(); ++k)
      if (!std::isfinite(data[k]))
        throw Error(ErrorKind::Runtime, "parameter '" + info.name + "' is " + std::to_string(data[k]) +
                                            ": the model diverged and is not saved");
    params.push_back({{"name", info.name},
                      {"rows", info.shape.rows},
                      {"cols", info.shape.cols},
                      {"learnable", info.learnable},
                      {"values", std::vector<double>(data, data + info.shape.size())}});
  }
  json training = {
      {"epochs_trained", epochs_trained_},
      {"epochs", config.epochs},
      {"loss", to_string(config.loss)},
      {"optimizer", optimizer_json(optimizer_ ? optimizer_->config() : config.optimizer)},
      {"optimizer_state", optimizer_ ? optimizer_->state() : optimizer_state_},
      {"batch_size", config.batch_size},
      {"seed", config.seed},
      {"initializer", to_string(config.initializer)},
      {"schedule",
       {{"kind", to_string(config.schedule.kind)},
        {"step_size", config.schedule.step_size},
        {"gamma", config.schedule.gamma},
        {"total_epochs", config.schedule.total_epochs},
        {"min_lr", config.schedule.min_lr}}},
      {"patience", config.patience},
      {"shuffle", config.shuffle},
      {"clip_grad_value", config.clip_grad_value},
      {"clip_grad_norm", config.clip_grad_norm},
      {"dtype", to_string(config.dtype)},
  };
  // Written only when set: files without them are the same as before query batches.
  if (config.query_batch_size > 0) training["query_batch_size"] = config.query_batch_size;
  if (config.fanout > 0) training["fanout"] = config.fanout;
  json j = {{"format", "lrnn-model"},
            {"version", kModelFileVersion},
            {"template", print_template(ast_)},
            {"parameters", params},
            {"training", training}};
  return j.dump(1);
}

std::unique_ptr<Engine> Engine::from_json(const std::string& text, TrainConfig& config, const std::string& name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::Parse, name + ": not a model file (" + e.what() + ")");
  }
  try {
    if (j.value("format", "") != "lrnn-model")
      throw Error(ErrorKind::Parse, name + ": not a model file (no \"format\": \"lrnn-model\")");
    const json version = j.value("version", json());
    if (!version.is_number_integer() || version.get<int64_t>() != kModelFileVersion)
      throw Error(ErrorKind::Parse, name + ": model file version " + version.dump() + " is not supported (this lrnn reads version " +
                                        std::to_string(kModelFileVersion) + ")");
    TemplateAst ast = parse_template(j.at("template").get<std::string>(), name + " (template)");
    auto engine = std::make_unique<Engine>(ast);
    neural::Parameters& params = engine->model_.params;
    std::vector<uint8_t> loaded(params.count(), 0);
    for (const json& p : j.at("parameters")) {
      const std::string pname = p.at("name").get<std::string>();
      const uint32_t id = params.find(pname);
      if (id == neural::kNoParam)
        throw Error(ErrorKind::Semantic, name + ": parameter '" + pname + "' does not exist in the template");
      if (loaded[id]++) throw Error(ErrorKind::Parse, name + ": parameter '" + pname + "' is given twice");
      const neural::ParamInfo& info = params.info(id);
      for (const json& v : p.at("values"))
        if (!v.is_number())
          throw Error(ErrorKind::Parse, name + ": parameter '" + pname + "' holds " + v.dump() + ", not a number");
      const std::vector<double> values = p.at("values").get<std::vector<double>>();
      if (p.at("rows").get<int>() != info.shape.rows || p.at("cols").get<int>() != info.shape.cols ||
          values.size() != static_cast<size_t>(info.shape.size()))
        throw Error(ErrorKind::Shape, name + ": parameter '" + pname + "' has a different shape in the template");
      std::copy(values.begin(), values.end(), params.data(id));
    }
    // Every weight must come from the file: one left out would silently keep a fresh
    // random initialisation.
    for (uint32_t id = 0; id < params.count(); ++id)
      if (!loaded[id])
        throw Error(ErrorKind::Parse, name + ": parameter '" + params.info(id).name + "' of the template is missing");
    const json& t = j.at("training");
    engine->epochs_trained_ = t.at("epochs_trained").get<int>();
    config.epochs = t.value("epochs", config.epochs);
    config.loss = parse_loss(t.at("loss").get<std::string>());
    config.optimizer = optimizer_from(t.at("optimizer"));
    config.batch_size = t.value("batch_size", size_t{0});
    config.seed = t.value("seed", uint64_t{1});
    config.initializer = Initializer::parse(t.value("initializer", std::string("glorot")));
    const json& s = t.at("schedule");
    config.schedule.kind = Schedule::parse(s.at("kind").get<std::string>());
    config.schedule.step_size = s.at("step_size").get<int>();
    config.schedule.gamma = s.at("gamma").get<double>();
    config.schedule.total_epochs = s.at("total_epochs").get<int>();
    config.schedule.min_lr = s.at("min_lr").get<double>();
    config.patience = t.value("patience", 0);
    config.shuffle = t.value("shuffle", true);
    config.clip_grad_value = t.value("clip_grad_value", 0.0);
    config.clip_grad_norm = t.value("clip_grad_norm", 0.0);
    // Files written before the float32 mode trained in float64.
    config.dtype = parse_dtype(t.value("dtype", std::string("float64")));
    config.query_batch_size = t.value("query_batch_size", size_t{0});
    config.fanout = t.value("fanout", size_t{0});
    engine->optimizer_config_ = config.optimizer;
    engine->optimizer_state_ = t.at("optimizer_state").get<std::vector<double>>();
    return engine;
  } catch (const json::exception& e) {
    throw Error(ErrorKind::Parse, name + ": malformed model file (" + e.what() + ")");
  }
}

void Engine::save(const std::string& path, const TrainConfig& config) const {
  write_file_atomically(path, to_json(config) + "\n");
}

std::unique_ptr<Engine> Engine::load(const std::string& path, TrainConfig& config) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, "cannot read model file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return from_json(ss.str(), config, path);
}

}  // namespace lrnn::train
