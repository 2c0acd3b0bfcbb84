// SVG and PNG through Graphviz's `dot` program: the DOT text goes to its standard input
// through a temporary file and the picture comes back from its standard output, so
// nothing is written next to the user's file unless the whole picture was made.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "lrnn/atomic_file.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/draw.hpp"

extern char** environ;

namespace lrnn {

namespace {

bool executable(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string extension(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// A temporary file that removes itself.
struct TempFile {
  std::string path;
  int fd = -1;
  TempFile() {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/lrnn-draw-XXXXXX";
    fd = mkstemp(path.data());
    if (fd < 0) throw Error(ErrorKind::Io, "cannot create a temporary file in " + path + ": " + std::strerror(errno));
  }
  ~TempFile() {
    if (fd >= 0) close(fd);
    unlink(path.c_str());
  }
  std::string read() const {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }
};

}  // namespace

std::string picture_format(const std::string& path) {
  const std::string ext = extension(path);
  if (ext == "dot" || ext == "gv") return "dot";
  if (ext == "svg" || ext == "png") return ext;
  throw Error(ErrorKind::Semantic, "cannot tell the picture format of '" + path +
                                       "': the file name must end in .dot, .svg or .png");
}

std::string find_graphviz(const std::string& dot_program) {
  if (!dot_program.empty()) {
    if (dot_program.find('/') != std::string::npos) return executable(dot_program) ? dot_program : "";
  }
  const std::string name = dot_program.empty() ? "dot" : dot_program;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (executable(candidate)) return candidate;
  }
  return "";
}

std::string render_dot(const std::string& dot, const std::string& format, const std::string& dot_program) {
  if (format == "dot") return dot;
  if (format != "svg" && format != "png")
    throw Error(ErrorKind::Semantic, "picture format '" + format + "' is not dot, svg or png");
  const std::string program = find_graphviz(dot_program);
  if (program.empty())
    throw Error(ErrorKind::Runtime,
                "drawing " + format + " needs Graphviz's `dot` program" +
                    (dot_program.empty() ? std::string(", which is not on PATH") : ", not found at '" + dot_program + "'") +
                    ": install graphviz (apt-get install graphviz) or write the picture as .dot");
  TempFile in, out, err;
  if (write(in.fd, dot.data(), dot.size()) != static_cast<ssize_t>(dot.size()))
    throw Error(ErrorKind::Io, "cannot write the temporary file " + in.path + ": " + std::strerror(errno));
  lseek(in.fd, 0, SEEK_SET);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.fd, 0);
  posix_spawn_file_actions_adddup2(&actions, out.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err.fd, 2);
  const std::string flag = "-T" + format;
  std::vector<char*> argv = {const_cast<char*>(program.c_str()), const_cast<char*>(flag.c_str()), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw Error(ErrorKind::Runtime, "cannot run " + program + ": " + std::strerror(spawned));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string picture = out.read();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || picture.empty()) {
    std::string message = err.read();
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    throw Error(ErrorKind::Runtime, program + " -T" + format + " failed" +
                                        (message.empty() ? std::string() : ": " + message));
  }
  return picture;
}

void save_picture(const std::string& dot, const std::string& path, const std::string& dot_program) {
  const std::string format = picture_format(path);
  check_can_write_atomically(path);
  write_file_atomically(path, render_dot(dot, format, dot_program));
}

}  // namespace lrnn
