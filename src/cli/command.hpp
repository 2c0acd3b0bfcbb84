// Subcommands register themselves here (one file per subcommand under src/cli/), so the
// command files stay independent of each other and of main.cpp.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "lrnn/diagnostics.hpp"
#include "lrnn/training.hpp"

namespace lrnn::cli {

// setup() adds the subcommand (with its options and callback) to the app.
using CommandSetup = std::function<void(CLI::App& app)>;

struct CommandRegistry {
  static std::vector<std::pair<int, CommandSetup>>& all() {
    static std::vector<std::pair<int, CommandSetup>> commands;
    return commands;
  }
};

// `static lrnn::cli::RegisterCommand reg(order, [](CLI::App& app) { ... });`
// `order` fixes the listing order in --help.
struct RegisterCommand {
  RegisterCommand(int order, CommandSetup setup) {
    CommandRegistry::all().emplace_back(order, std::move(setup));
  }
};

// A number option that must be finite and within [lo, hi] (hi may be infinity; `lo_open`
// excludes lo). Checked on the text before conversion, so "nan", "inf", "-1" into an
// unsigned option and "1e400" are usage errors naming the option instead of being wrapped,
// clamped or silently replaced by a default.
inline CLI::Validator finite_number(double lo, double hi = INFINITY, bool lo_open = false, bool integer = false) {
  auto describe = [=] {
    std::string range = (lo_open ? "(" : "[") + CLI::detail::to_string(lo) + ", " +
                        (std::isinf(hi) ? std::string("inf)") : CLI::detail::to_string(hi) + "]");
    return std::string(integer ? "an integer" : "a finite number") + " in " + range;
  };
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        size_t used = 0;
        double v = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        const bool ok = used == text.size() && std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi &&
                        (!integer || v == std::floor(v));
        return ok ? std::string() : "'" + text + "' is not " + describe();
      },
      describe());
}

// A --dtype option: float32 | float64, anything else a usage error naming the closest.
inline CLI::Validator dtype_name() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_dtype(text);
          return std::string();
        } catch (const Error& e) {
          return e.message();
        }
      },
      "float32|float64");
}

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;   // runtime failure (I/O, limit reached)
inline constexpr int kExitBadInput = 2;  // the user's input is malformed (parse errors, usage errors)

}  // namespace lrnn::cli
