// The public checks of settings (include/lrnn/model.hpp), so a program over the public API
// (the `lrnn` command, the Python package) refuses a bad setting before it loads anything,
// with the message training itself would give.
#include <array>
#include <string>

#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"
#include "lrnn/suggest.hpp"
#include "train/config.hpp"
#include "train/dataset.hpp"
#include "train/link_prediction.hpp"
#include "train/numerics.hpp"

namespace lrnn {

void check_settings(const Settings& settings) { train::make_train_config(settings, 0); }

void check_setting_text(const std::string& setting, const std::string& text) {
  if (setting == "optimizer") {
    train::OptimizerConfig::parse(text);
  } else if (setting == "loss") {
    train::parse_loss(text);
  } else if (setting == "initializer") {
    train::Initializer::parse(text);
  } else if (setting == "schedule") {
    train::Schedule::parse(text);
  } else if (setting == "corrupt") {
    train::parse_corrupt(text);
  } else {
    const std::array<std::string, 5> names = {"optimizer", "loss", "initializer", "schedule", "corrupt"};
    const std::string closest = closest_name(setting, names);
    throw Error(ErrorKind::Semantic, "check_setting_text: unknown setting '" + setting + "'" +
                                         (closest.empty() ? "" : " (did you mean '" + closest + "'?)") +
                                         "; expected optimizer, loss, initializer, schedule or corrupt");
  }
}

void check_query_split(double train, double val, double test) { train::random_query_split(0, train, val, test, 1); }

}  // namespace lrnn
