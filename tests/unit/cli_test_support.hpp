// Running the built `lrnn` command from a test: exit code and combined stdout/stderr.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace lrnn_test {

struct CliRun {
  int code;
  std::string out;
};

// `lrnn ARGS 2>&1` through the shell (ARGS may hold quotes and redirections).
inline CliRun run_lrnn(const std::string& args) {
  const std::string cmd = std::string(LRNN_CLI_PATH) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace lrnn_test
