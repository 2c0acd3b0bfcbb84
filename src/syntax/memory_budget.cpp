// The process's memory budget (lrnn/memory.hpp): a limit and the bytes reservations hold,
// both atomics, so stages on several threads (grounding in parallel, Python threads)
// share one budget without a lock.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <locale>
#include <sstream>

#include "lrnn/memory.hpp"

namespace lrnn {

namespace {

constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

// A number read from the first line of `path`, or kNoLimit ("max", absent, unreadable).
uint64_t read_number_file(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text)) return kNoLimit;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() ? v : kNoLimit;
}

// MemAvailable of /proc/meminfo in bytes, kNoLimit where there is none.
uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return kNoLimit;
}

// The memory limit of this process's cgroup (v2: memory.max of its own group; v1: the
// memory controller's limit_in_bytes), kNoLimit without one. v1 writes "no limit" as a
// number near 2^63, which the min() below ignores as it is past any machine's memory.
uint64_t cgroup_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  uint64_t limit = kNoLimit;
  while (std::getline(in, line)) {
    const size_t c1 = line.find(':'), c2 = line.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1), path = line.substr(c2 + 1);
    if (line.compare(0, c1, "0") == 0 && controllers.empty())
      limit = std::min(limit, read_number_file("/sys/fs/cgroup" + path + "/memory.max"));
    else if (controllers == "memory") {
      limit = std::min(limit, read_number_file("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes"));
      limit = std::min(limit, read_number_file("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
    }
  }
  return limit;
}

std::atomic<uint64_t> g_limit{0};  // 0: the default
std::atomic<uint64_t> g_held{0};

Error over_budget(uint64_t bytes, uint64_t held, uint64_t limit, const std::string& what, const Span& span) {
  const bool by_default = g_limit.load(std::memory_order_relaxed) == 0;
  std::string message = what + " needs " + format_memory_size(bytes) + " more";
  if (held > 0) message += " beside the " + format_memory_size(held) + " lrnn already holds";
  message += ", past the memory budget of " + format_memory_size(limit) +
             (by_default ? " (the default: 80% of the memory available at start)" : "") +
             "; raise it with --max-memory SIZE (Python: Settings(max_memory=...)) if the machine has the memory";
  return span.file ? Error(ErrorKind::Limit, span, message) : Error(ErrorKind::Limit, message);
}

// Adds `bytes` to what is held unless that passes the limit (then holds nothing: false).
bool try_hold(uint64_t bytes) {
  const uint64_t limit = memory_limit();
  uint64_t held = g_held.load(std::memory_order_relaxed);
  do {
    if (bytes > limit || held > limit - bytes) return false;
  } while (!g_held.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  return true;
}

}  // namespace

uint64_t parse_memory_size(const std::string& text, const std::string& option) {
  auto refuse = [&]() -> uint64_t {
    throw Error(ErrorKind::Parse, (option.empty() ? "" : option + ": ") + "'" + text +
                                      "' is not a memory size: write a number of bytes > 0 with an optional unit "
                                      "K, M, G or T (binary: 1K = 1024), e.g. 4G, 512M, 0.5T");
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string number = text.substr(0, i);
  std::string unit = text.substr(i);
  if (number.empty() || number.front() == '.' || number.back() == '.' ||
      number.find('.') != number.rfind('.'))
    return refuse();
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (!unit.empty()) {
    const std::string units = "KMGT";
    const size_t u = units.find(unit[0]);
    if (u != std::string::npos) {
      shift = 10 * static_cast<int>(u + 1);
      unit.erase(0, 1);
      if (unit == "IB") unit.clear();
    }
    if (unit == "B") unit.clear();
    if (!unit.empty()) return refuse();
  }
  double value = 0;
  std::istringstream in(number);
  in.imbue(std::locale::classic());
  if (!(in >> value) || !in.eof()) return refuse();
  const double bytes = std::ldexp(value, shift);
  if (!(bytes >= 1) || bytes >= 0x1p64) return refuse();
  return static_cast<uint64_t>(bytes);
}

std::string format_memory_size(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1023.95 && u < 5) v /= 1024, ++u;  // what would print as "1024 MiB" is "1 GiB"
  char text[32];
  // One decimal below 100 (2.5 GiB), whole numbers above; a trailing ".0" is dropped.
  std::snprintf(text, sizeof text, v < 100 ? "%.1f" : "%.0f", v);
  std::string s = text;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s + " " + units[u];
}

// Read once: the lrnn command and the Python module call this as they start (before the
// run takes memory of its own), anything else on first use.
uint64_t default_memory_limit() {
  static const uint64_t limit = [] {
    const uint64_t machine = std::min(mem_available(), cgroup_limit());
    return machine == kNoLimit ? kNoLimit : machine / 5 * 4;
  }();
  return limit;
}

void set_memory_limit(uint64_t bytes) { g_limit.store(bytes, std::memory_order_relaxed); }

uint64_t memory_limit() {
  const uint64_t set = g_limit.load(std::memory_order_relaxed);
  return set ? set : default_memory_limit();
}

uint64_t memory_held() { return g_held.load(std::memory_order_relaxed); }

bool memory_fits(uint64_t bytes) {
  const uint64_t limit = memory_limit(), held = memory_held();
  return bytes <= limit && held <= limit - bytes;
}

void check_memory(uint64_t bytes, const std::string& what, const Span& span) {
  const uint64_t limit = memory_limit(), held = memory_held();
  if (bytes > limit || held > limit - bytes) MemoryReservation::refuse(bytes, what, span);
}

// Copies are made in passing (a model's parameters copied for a step): the message is only
// written when the copy does not fit.
MemoryReservation::MemoryReservation(const MemoryReservation& other) {
  if (!try_grow(other.bytes_)) refuse(other.bytes_, "a copy of " + format_memory_size(other.bytes_) + " of arrays");
}

MemoryReservation& MemoryReservation::operator=(const MemoryReservation& other) {
  if (this == &other) return *this;
  if (other.bytes_ > bytes_ && !try_grow(other.bytes_ - bytes_))
    refuse(other.bytes_ - bytes_, "a copy of " + format_memory_size(other.bytes_) + " of arrays");
  resize(other.bytes_, "");  // now at most what is held: releases any excess
  return *this;
}

MemoryReservation& MemoryReservation::operator=(MemoryReservation&& other) noexcept {
  if (this != &other) {
    reset();
    bytes_ = other.bytes_;
    other.bytes_ = 0;
  }
  return *this;
}

void MemoryReservation::grow(uint64_t more, const std::string& what, const Span& span) {
  if (!try_grow(more)) refuse(more, what, span);
}

bool MemoryReservation::try_grow(uint64_t more) {
  if (more != 0 && !try_hold(more)) return false;
  bytes_ += more;
  return true;
}

void MemoryReservation::refuse(uint64_t more, const std::string& what, const Span& span) {
  throw over_budget(more, memory_held(), memory_limit(), what, span);
}

void MemoryReservation::resize(uint64_t total, const std::string& what, const Span& span) {
  if (total > bytes_) {
    grow(total - bytes_, what, span);
  } else if (total < bytes_) {
    g_held.fetch_sub(bytes_ - total, std::memory_order_relaxed);
    bytes_ = total;
  }
}

void MemoryReservation::reset() noexcept {
  if (bytes_) g_held.fetch_sub(bytes_, std::memory_order_relaxed);
  bytes_ = 0;
}

}  // namespace lrnn
