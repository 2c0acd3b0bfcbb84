// Models on disk: one JSON object with the template text, every parameter by name with its
// shape and values (doubles written with 17 significant digits, so they load bit-exact),
// the optimizer's state and the training settings, and a checksum of all that (a file
// edited or damaged after saving is refused rather than loaded as another model; removing the
// checksum accepts a deliberate edit: docs/semantics.md "Models on disk"). Written to a
// temporary file and renamed.
#include <unistd.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lrnn/diagnostics.hpp"
#include "lrnn/atomic_file.hpp"
#include "lrnn/syntax.hpp"
#include "train/engine.hpp"

namespace lrnn::train {

using nlohmann::json;

namespace {

constexpr int64_t kModelFileVersion = 1;

// FNV-1a (64 bits) of the file's content: the JSON object without its "checksum" field,
// written compactly (keys sorted, doubles in their shortest exact form), so re-indenting the
// file keeps the checksum while any changed value, name or digit of a weight changes it. It
// detects accidental damage and edits; it is not a signature.
std::string content_checksum(const json& without_checksum) {
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : without_checksum.dump()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char hex[32];
  std::snprintf(hex, sizeof hex, "fnv1a64:%016" PRIx64, h);
  return hex;
}

// A file with a checksum must match it; a file without one (saved before checksums, or with
// the field removed to accept a deliberate edit) loads as it is.
void check_checksum(json& j, const std::string& name) {
  const auto it = j.find("checksum");
  if (it == j.end()) return;
  const json written = *it;
  j.erase("checksum");
  const std::string computed = content_checksum(j);
  if (!written.is_string() || written.get<std::string>() != computed)
    throw Error(ErrorKind::Parse, name + ": the model file was changed after it was saved (its checksum is " +
                                      written.dump() + ", its content's is \"" + computed +
                                      "\"); if the edit is deliberate, delete the \"checksum\" line to load it");
}

// An integer field read with its range checked: JSON numbers past the C++ type (4294967299
// rows, 3.3e105, -1 for a count) are refused naming the field instead of being narrowed.
int64_t integer_field(const json& v, const std::string& field, int64_t lo, int64_t hi, const std::string& name) {
  const bool integral = v.is_number_integer() && (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(INT64_MAX));
  if (!integral || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw Error(ErrorKind::Parse, name + ": \"" + field + "\" is " + v.dump() + ", not an integer in [" +
                                      std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v.get<int64_t>();
}

int int_field(const json& v, const std::string& field, int lo, const std::string& name) {
  return static_cast<int>(integer_field(v, field, lo, INT32_MAX, name));
}

// The seed is a full 64-bit unsigned integer.
uint64_t seed_field(const json& v, const std::string& name) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    throw Error(ErrorKind::Parse, name + ": \"seed\" is " + v.dump() + ", not an integer in [0, 2^64 - 1]");
  return v.get<uint64_t>();
}

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
      {"label_smoothing", config.loss.label_smoothing},
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
        {"min_lr", config.schedule.min_lr},
        {"warmup", config.schedule.warmup},
        {"model_size", config.schedule.model_size}}},
      {"patience", config.patience},
      {"shuffle", config.shuffle},
      {"clip_grad_value", config.clip_grad_value},
      {"clip_grad_norm", config.clip_grad_norm},
      {"dtype", to_string(config.dtype)},
  };
  // Written only when set: files without them are the same as before query batches.
  if (config.query_batch_size > 0) training["query_batch_size"] = config.query_batch_size;
  if (!config.fanout.empty()) training["fanout"] = config.fanout;
  json j = {{"format", "lrnn-model"},
            {"version", kModelFileVersion},
            {"template", print_template(ast_)},
            {"parameters", params},
            {"training", training}};
  j["checksum"] = content_checksum(j);
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
    check_checksum(j, name);
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
      if (integer_field(p.at("rows"), "rows", 0, INT32_MAX, name) != info.shape.rows ||
          integer_field(p.at("cols"), "cols", 0, INT32_MAX, name) != info.shape.cols ||
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
    engine->epochs_trained_ = int_field(t.at("epochs_trained"), "epochs_trained", 0, name);
    if (t.contains("epochs")) config.epochs = int_field(t["epochs"], "epochs", 0, name);
    config.loss = parse_loss(t.at("loss").get<std::string>());
    config.loss.label_smoothing = t.value("label_smoothing", 0.0);  // files before it: none
    config.optimizer = optimizer_from(t.at("optimizer"));
    config.batch_size = t.contains("batch_size") ? integer_field(t["batch_size"], "batch_size", 0, INT64_MAX, name) : 0;
    config.seed = t.contains("seed") ? seed_field(t["seed"], name) : 1;
    config.initializer = Initializer::parse(t.value("initializer", std::string("glorot")));
    const json& s = t.at("schedule");
    config.schedule.kind = Schedule::parse(s.at("kind").get<std::string>());
    config.schedule.step_size = int_field(s.at("step_size"), "step_size", 1, name);
    config.schedule.gamma = s.at("gamma").get<double>();
    config.schedule.total_epochs = int_field(s.at("total_epochs"), "total_epochs", 0, name);
    config.schedule.min_lr = s.at("min_lr").get<double>();
    // Files written before the noam schedule have neither (and no use for them).
    config.schedule.warmup = s.contains("warmup") ? int_field(s["warmup"], "warmup", 1, name) : 4000;
    config.schedule.model_size = s.value("model_size", 0.0);
    config.patience = t.contains("patience") ? int_field(t["patience"], "patience", 0, name) : 0;
    config.shuffle = t.value("shuffle", true);
    config.clip_grad_value = t.value("clip_grad_value", 0.0);
    config.clip_grad_norm = t.value("clip_grad_norm", 0.0);
    // Files written before the float32 mode trained in float64.
    config.dtype = parse_dtype(t.value("dtype", std::string("float64")));
    config.query_batch_size = t.value("query_batch_size", size_t{0});
    // One number before the fan-out was per hop (0: none).
    if (t.contains("fanout") && t.at("fanout").is_number()) {
      const size_t f = t.at("fanout").get<size_t>();
      config.fanout = f ? std::vector<size_t>{f} : std::vector<size_t>{};
    } else {
      config.fanout = t.value("fanout", std::vector<size_t>{});
    }
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
  // A regular file is read whole; anything else (a pipe, a device such as /dev/zero, which
  // never ends) up to a bound.
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(path, ec);
  constexpr std::streamsize kMaxStreamedBytes = std::streamsize{1} << 30;
  std::string text;
  if (regular) {
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } else {
    std::vector<char> chunk(size_t{1} << 20);
    while (in.read(chunk.data(), std::streamsize(chunk.size())) || in.gcount() > 0) {
      text.append(chunk.data(), size_t(in.gcount()));
      const size_t first = text.find_first_not_of(" \t\r\n");
      if (first != std::string::npos && text[first] != '{')
        throw Error(ErrorKind::Parse, path + ": not a model file (it does not begin with '{')");
      if (std::streamsize(text.size()) > kMaxStreamedBytes)
        throw Error(ErrorKind::Limit, path + ": not a regular file, and more than 1 GiB read from it without an end");
    }
  }
  return from_json(text, config, path);
}

}  // namespace lrnn::train
