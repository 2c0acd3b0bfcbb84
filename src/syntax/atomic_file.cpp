#include "lrnn/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "lrnn/diagnostics.hpp"

namespace lrnn {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw Error(ErrorKind::Io, "cannot save '" + path + "': " + what + (err ? std::string(" (") + std::strerror(err) + ")" : ""));
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The file the path names once symbolic links are followed (it may not exist yet).
// weakly_canonical stops at a dangling link (its target does not exist yet), which the
// rename would then replace by a regular file: such a link is followed by hand, as the
// shell's `> link` does, so the save creates the file the link names.
fs::path resolve_target(const std::string& path) {
  std::error_code ec;
  fs::path target = fs::weakly_canonical(fs::absolute(path), ec);
  std::error_code missing;  // a target that does not exist is no link (and no error here)
  for (int hops = 0; !ec && fs::is_symlink(fs::symlink_status(target, missing)); ++hops) {
    if (hops == 40) fail(path, "too many levels of symbolic links", ELOOP);
    const fs::path next = fs::read_symlink(target, ec);
    if (!ec) target = fs::weakly_canonical(next.is_absolute() ? next : target.parent_path() / next, ec);
  }
  if (ec) fail(path, "cannot resolve the path", ec.value());
  return target;
}

mode_t new_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

void write_all(int fd, std::string_view content, const std::string& path) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(path, "write failed", n < 0 ? errno : ENOSPC);
    p += n;
    left -= size_t(n);
  }
  if (::fsync(fd) != 0 && errno != EINVAL) fail(path, "write failed", errno);
}

std::string unique_name(const fs::path& target) {
  std::random_device rd;
  return (target.parent_path() / ("." + target.filename().string() + ".lrnn-" + std::to_string(::getpid()) + "-" +
                                  std::to_string(rd())))
      .string();
}

// Named temporary files of this target left by writers that were killed in the instant
// between naming the finished file and renaming it (`.NAME.lrnn-PID-N` with a dead PID).
void remove_stale_temporaries(const fs::path& target) {
  const std::string prefix = "." + target.filename().string() + ".lrnn-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(target.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str() + prefix.size(), nullptr, 10));
    if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) fs::remove(entry.path(), ec);
  }
}

// Closes the descriptor and removes a named temporary file unless released.
struct TempFile {
  int fd = -1;
  std::string name;  // empty while unnamed (O_TMPFILE)
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!name.empty()) ::unlink(name.c_str());
  }
};

// The file a save would replace: resolved, checked (a regular file or none, in a writable
// folder), and the permissions the new file gets (the old file's, else 0666 - umask).
struct Target {
  fs::path path;
  mode_t mode = 0;
};

Target inspect_target(const std::string& path) {
  Target t{resolve_target(path)};
  struct stat st{};
  const bool exists = ::stat(t.path.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode))
    fail(path, std::string("it is ") + kind_of(st.st_mode) + "; models and outputs are written only to regular files", 0);
  t.mode = exists ? (st.st_mode & 07777) : new_file_mode();
  const std::string dir = t.path.parent_path().string();
  if (::access(dir.c_str(), W_OK | X_OK) != 0) fail(path, "cannot create a file in '" + dir + "'", errno);
  return t;
}

}  // namespace

void check_can_write_atomically(const std::string& path) { inspect_target(path); }

void write_file_atomically(const std::string& path, std::string_view content) {
  const Target t = inspect_target(path);
  const fs::path& target = t.path;
  const std::string dir = target.parent_path().string();
  remove_stale_temporaries(target);

  TempFile tmp;
#ifdef O_TMPFILE
  tmp.fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
#endif
  if (tmp.fd < 0) {  // the file system has no unnamed files: a unique, hidden name
    tmp.name = unique_name(target);
    tmp.fd = ::open(tmp.name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (tmp.fd < 0) {
      const int err = errno;
      tmp.name.clear();
      fail(path, "cannot create a file in '" + dir + "'", err);
    }
  }
  write_all(tmp.fd, content, path);
  if (::fchmod(tmp.fd, t.mode) != 0) fail(path, "cannot set the file's permissions", errno);
  if (tmp.name.empty()) {
    // Give the finished file a name for the rename; only this short step can leave one.
    const std::string name = unique_name(target);
    const std::string proc = "/proc/self/fd/" + std::to_string(tmp.fd);
    if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) != 0)
      fail(path, "cannot create a file in '" + dir + "'", errno);
    tmp.name = name;
  }
  if (::close(tmp.fd) != 0) {
    tmp.fd = -1;
    fail(path, "write failed", errno);
  }
  tmp.fd = -1;
  if (::rename(tmp.name.c_str(), target.c_str()) != 0) fail(path, "cannot replace the file", errno);
  tmp.name.clear();  // renamed: nothing to remove
}

}  // namespace lrnn
