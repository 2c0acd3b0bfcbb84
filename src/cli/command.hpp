// Subcommands register themselves here (one file per subcommand under src/cli/), so the
// command files stay independent of each other and of main.cpp.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

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

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;   // runtime failure (I/O, limit reached)
inline constexpr int kExitBadInput = 2;  // the user's input is malformed (parse errors)

}  // namespace lrnn::cli
