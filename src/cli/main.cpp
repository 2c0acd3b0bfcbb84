// The lrnn command: subcommands live in their own files and register themselves.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/allocator.hpp"
#include "cli/command.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/distributed.hpp"
#include "lrnn/suggest.hpp"

namespace {

// A misspelled subcommand (`lrnn trian`): CLI11 says only "A subcommand is required", so the
// words before the first option are walked down the subcommand tree first, and the first
// one that names no subcommand where one is required is reported with the closest name.
// Returns the message, or "" when every word names a subcommand (or the command takes
// positionals there).
std::string unknown_subcommand_message(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string path = at->get_name();
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') return "";
    // Only where a subcommand is required (elsewhere the word is a positional: lrnn train
    // TEMPLATE); CLI11 keeps option groups among the subcommands, and they are no commands.
    const auto subcommands =
        at->get_subcommands([](CLI::App* sub) { return dynamic_cast<CLI::Option_group*>(sub) == nullptr; });
    if (subcommands.empty() || at->get_require_subcommand_min() == 0) return "";
    CLI::App* next = nullptr;
    std::vector<std::string> names;
    for (CLI::App* sub : subcommands) {
      names.push_back(sub->get_name());
      if (sub->get_name() == word) next = sub;
    }
    if (!next) {
      const std::string near = lrnn::closest_name(word, names);
      return path + ": unknown command '" + word + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?") +
             "\nRun '" + path + " --help' for the list of commands.";
    }
    at = next;
    path += " " + word;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  lrnn::cli::configure_allocator(argc, argv);
  // The default memory budget is a fraction of the memory available now, at start, before
  // this run takes any (docs/cli.md "Memory budget").
  lrnn::default_memory_limit();
  CLI::App app{"lrnn: differentiable logic programs (Lifted Relational Neural Networks)", "lrnn"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "lrnn 0.1.0\nallocator: " + lrnn::cli::allocator_name());
  auto& commands = lrnn::cli::CommandRegistry::all();
  std::stable_sort(commands.begin(), commands.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [order, setup] : commands) setup(app);
  lrnn::cli::refuse_empty_values(app);
  if (const std::string unknown = unknown_subcommand_message(app, argc, argv); !unknown.empty()) {
    std::cerr << unknown << "\n";
    return lrnn::cli::kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with code 0; every real usage error (unknown flag,
    // missing option or file, a value out of range) exits 2, as documented.
    return app.exit(e) == 0 ? lrnn::cli::kExitOk : lrnn::cli::kExitBadInput;
  } catch (const lrnn::Error& e) {
    // In an MPI job the other ranks may wait in a collective: end them all (docs/distributed.md).
    if (lrnn::process_group().size > 1) lrnn::abort_job(e.what());
    std::cerr << e.what() << "\n";
    return e.kind() == lrnn::ErrorKind::Parse ? lrnn::cli::kExitBadInput : lrnn::cli::kExitFailure;
  } catch (const std::exception& e) {
    if (lrnn::process_group().size > 1) lrnn::abort_job(e.what());
    std::cerr << "error: " << e.what() << "\n";
    return lrnn::cli::kExitFailure;
  }
  // Output that never reached its destination (a full disk behind `> file`, a closed pipe)
  // is a failure, not a success with a truncated result.
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::cerr << "error: cannot write the output to standard output (" << std::strerror(errno ? errno : EIO) << ")\n";
    return lrnn::cli::kExitFailure;
  }
  return lrnn::cli::kExitOk;
}
