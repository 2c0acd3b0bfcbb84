// Subcommands register themselves here (one file per subcommand under src/cli/), so the
// command files stay independent of each other and of main.cpp.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lrnn/diagnostics.hpp"
#include "lrnn/memory.hpp"
#include "lrnn/model.hpp"
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

// An integer option in [lo, hi]. The whole text must be decimal digits, read exactly
// (std::from_chars): "" (which CLI11 would read as 0), "-1" into an unsigned option (which
// would wrap), "2.5", "1e3" and values past hi, 2^64 included, are usage errors naming the
// option instead of a silently different number.
inline CLI::Validator integer_in(uint64_t lo, uint64_t hi) {
  const std::string range = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        uint64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, v);
        const bool ok = !text.empty() && ec == std::errc() && stop == end && v >= lo && v <= hi;
        return ok ? std::string() : "'" + text + "' is not " + range;
      },
      range);
}

// A number option that must be finite and within [lo, hi] (hi may be infinity; `lo_open`
// excludes lo, `hi_open` hi). Checked on the text before conversion, so "", "nan", "inf",
// "-1" into an unsigned option and "1e400" are usage errors naming the option instead of
// being wrapped, clamped or silently replaced by a default (or by 0, CLI11's reading of "").
// `integer` options are integer_in's (read exactly, not through a double).
inline CLI::Validator finite_number(double lo, double hi = INFINITY, bool lo_open = false, bool integer = false,
                                    bool hi_open = false) {
  if (integer) return integer_in(static_cast<uint64_t>(std::max(lo, 0.0)), static_cast<uint64_t>(hi));
  auto describe = [=] {
    return std::string("a finite number in ") + (lo_open ? "(" : "[") + CLI::detail::to_string(lo) + ", " +
           (std::isinf(hi) ? std::string("inf)") : CLI::detail::to_string(hi) + (hi_open ? ")" : "]"));
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
        const bool ok = !text.empty() && used == text.size() && std::isfinite(v) && (lo_open ? v > lo : v >= lo) &&
                        (hi_open ? v < hi : v <= hi);
        return ok ? std::string() : "'" + text + "' is not " + describe();
      },
      describe());
}

// Every option that takes a value, in `app` and its subcommands, refuses an empty value
// (`--save ''`, `--lr ''`): CLI11 reads "" as 0 or as "not given", a silently different run.
// Called once by main() after every command has registered.
inline void refuse_empty_values(CLI::App& app) {
  const CLI::Validator non_empty(
      [](std::string& text) { return text.empty() ? std::string("an empty value is not allowed") : std::string(); },
      "");
  for (CLI::Option* opt : app.get_options())
    if (opt->get_items_expected_max() > 0) opt->check(non_empty);  // not a flag
  for (CLI::App* sub : app.get_subcommands(std::function<bool(CLI::App*)>{})) refuse_empty_values(*sub);
}

// A text option the library reads with `parse` (a dtype, an optimizer, a loss, ...): an
// unknown name is a usage error (exit 2) with the library's own message and suggestion,
// found while parsing the command line rather than later as a failed run (exit 1).
template <class Parse>
CLI::Validator parsed_by(Parse parse, std::string description) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        try {
          parse(text);
          return std::string();
        } catch (const Error& e) {
          return e.message();
        }
      },
      std::move(description));
}

// An option holding a setting's text (optimizer, loss, initializer, schedule, corrupt):
// checked as training would read it (lrnn::check_setting_text), a usage error otherwise.
inline CLI::Validator setting_text(const std::string& setting) {
  return parsed_by([setting](const std::string& text) { check_setting_text(setting, text); }, "");
}

// A --dtype option: float32 | float64, anything else a usage error naming the closest.
inline CLI::Validator dtype_name() {
  return parsed_by([](const std::string& text) { parse_dtype(text); }, "float32|float64");
}

// `--max-memory SIZE` on a command that grounds, builds or loads: the process's memory
// budget (lrnn/memory.hpp), set while the options are parsed, so it holds before the command
// reads anything. A bad size ("", "-1", "4X") is a usage error naming the option.
inline CLI::Option* add_max_memory(CLI::App* cmd) {
  return cmd
      ->add_option_function<std::string>(
          "--max-memory", [](const std::string& text) { set_memory_limit(parse_memory_size(text, "--max-memory")); },
          "Memory budget: stop with an error naming the rule, literal or file that would take lrnn's arrays "
          "past SIZE (4G, 512M, 0.5T; default 80% of the memory available at start; docs/cli.md \"Memory budget\")")
      ->type_name("SIZE")
      ->check(parsed_by([](const std::string& text) { parse_memory_size(text, ""); }, ""));
}

// `--max-ground-rules N` and `--max-atoms N`: the grounding limits per sample (a Limit
// error naming the rule past them), for commands that ground.
inline void add_grounding_limits(CLI::App* cmd, size_t& max_ground_rules, size_t& max_atoms) {
  cmd->add_option("--max-ground-rules", max_ground_rules,
                  "Stop with an error naming the rule when one sample (or the least model) exceeds this many ground "
                  "rules (default " + std::to_string(kDefaultMaxGroundRules) + ")")
      ->check(integer_in(1, 1'000'000'000'000'000));
  cmd->add_option("--max-atoms", max_atoms,
                  "Stop with an error naming the rule when one sample's least model exceeds this many atoms (default " +
                      std::to_string(kDefaultMaxAtoms) + ")")
      ->check(integer_in(1, 1'000'000'000'000'000));
}

// A usage error found after parsing (options that exclude or need each other): exit 2 with
// the message, as CLI11's own usage errors (docs/cli.md, "Exit codes").
[[noreturn]] inline void usage_error(const std::string& message) { throw CLI::ValidationError(message); }

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;   // runtime failure (I/O, limit reached)
inline constexpr int kExitBadInput = 2;  // the user's input is malformed (parse errors, usage errors)

}  // namespace lrnn::cli
