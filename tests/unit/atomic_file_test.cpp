// Saves never corrupt (issue 14, "Data loss"): special files refused, links followed,
// permissions kept, and a save killed at any moment leaves the old or the new file, whole.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "lrnn/atomic_file.hpp"
#include "lrnn/diagnostics.hpp"

namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lrnn_atomic_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t entries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

std::string error_of(const std::string& path) {
  try {
    lrnn::write_file_atomically(path, "x");
  } catch (const lrnn::Error& e) {
    return e.what();
  }
  return "";
}

TEST(AtomicFile, RefusesFilesThatAreNotRegular) {
  EXPECT_NE(error_of("/dev/full").find("character device"), std::string::npos);
  EXPECT_TRUE(fs::is_character_file("/dev/full"));  // still the device
  const fs::path dir = fresh_dir("special");
  EXPECT_NE(error_of(dir.string()).find("directory"), std::string::npos);
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of(fifo.string()).find("FIFO"), std::string::npos);
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_NE(error_of((dir / "missing" / "x.json").string()).find("cannot create a file"), std::string::npos);
  EXPECT_THROW(lrnn::check_can_write_atomically("/dev/full"), lrnn::Error);
  fs::remove_all(dir);
}

TEST(AtomicFile, FollowsLinksKeepsModesAndLeavesNoTemporaries) {
  const fs::path dir = fresh_dir("modes");
  const fs::path target = dir / "model.json", link = dir / "link.json";
  { std::ofstream(target) << "old"; }
  ::chmod(target.c_str(), 0640);
  fs::create_symlink(target, link);
  lrnn::write_file_atomically(link.string(), "new");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read(target), "new");
  struct stat st{};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  const mode_t mask = ::umask(022);
  lrnn::write_file_atomically((dir / "fresh.json").string(), "data");
  ::umask(mask);
  ASSERT_EQ(::stat((dir / "fresh.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(entries(dir), 3u);  // model.json, link.json, fresh.json: nothing else
  fs::remove_all(dir);
}

// Issue 32: a dangling link (its target not yet written) was replaced by a regular file;
// the save now writes the file the link names, as `> link` does, and the link stays.
TEST(AtomicFile, ADanglingLinkIsFollowedNotReplaced) {
  const fs::path dir = fresh_dir("dangling");
  fs::create_directories(dir / "models");
  const fs::path link = dir / "link.json", relative = dir / "relative.json";
  fs::create_symlink(dir / "models" / "model.json", link);
  fs::create_symlink("models/other.json", relative);
  lrnn::write_file_atomically(link.string(), "saved");
  lrnn::write_file_atomically(relative.string(), "relative");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::is_symlink(relative));
  EXPECT_EQ(read(dir / "models" / "model.json"), "saved");
  EXPECT_EQ(read(dir / "models" / "other.json"), "relative");
  fs::create_symlink(dir / "loop_b", dir / "loop_a");
  fs::create_symlink(dir / "loop_a", dir / "loop_b");
  EXPECT_NE(error_of((dir / "loop_a").string()), "");
  fs::remove_all(dir);
}

// A child process saves alternately two big contents forever; it is killed (SIGKILL) at
// random moments. After every kill the file is one of the two contents, whole. A writer
// killed in the instant between naming its finished temporary and renaming it leaves that
// name behind; the next save removes it, so after a final save the folder holds the file only.
TEST(AtomicFile, ASaveKilledAtRandomMomentsLeavesTheOldOrTheNewFileWhole) {
  const fs::path dir = fresh_dir("kill");
  const fs::path target = dir / "model.json";
  const std::string a(3 << 20, 'a'), b(3 << 20, 'b');
  lrnn::write_file_atomically(target.string(), a);
  std::mt19937 rng(12345);
  for (int round = 0; round < 20; ++round) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (int i = 0;; ++i) lrnn::write_file_atomically(target.string(), i % 2 ? a : b);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(200, 20000)(rng)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    const std::string now = read(target);
    EXPECT_TRUE(now == a || now == b) << "round " << round << ": " << now.size() << " bytes";
  }
  lrnn::write_file_atomically(target.string(), "final");
  EXPECT_EQ(read(target), "final");
  EXPECT_EQ(entries(dir), 1u);
  fs::remove_all(dir);
}

}  // namespace
