// The lrnn command: subcommands live in their own files and register themselves.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/command.hpp"
#include "lrnn/diagnostics.hpp"
#include "train/distributed.hpp"

int main(int argc, char** argv) {
  CLI::App app{"lrnn: differentiable logic programs (Lifted Relational Neural Networks)", "lrnn"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("lrnn 0.1.0"));
  auto& commands = lrnn::cli::CommandRegistry::all();
  std::stable_sort(commands.begin(), commands.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [order, setup] : commands) setup(app);
  lrnn::cli::refuse_empty_values(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with code 0; every real usage error (unknown flag,
    // missing option or file, a value out of range) exits 2, as documented.
    return app.exit(e) == 0 ? lrnn::cli::kExitOk : lrnn::cli::kExitBadInput;
  } catch (const lrnn::Error& e) {
    // In an MPI job the other ranks may wait in a collective: end them all (docs/distributed.md).
    if (lrnn::train::dist::world().size > 1) lrnn::train::dist::abort_job(e.what());
    std::cerr << e.what() << "\n";
    return e.kind() == lrnn::ErrorKind::Parse ? lrnn::cli::kExitBadInput : lrnn::cli::kExitFailure;
  } catch (const std::exception& e) {
    if (lrnn::train::dist::world().size > 1) lrnn::train::dist::abort_job(e.what());
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
