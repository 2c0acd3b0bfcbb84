// The memory budget: one limit per process (memory is a process's resource) on the bytes
// lrnn's stages set aside for their large arrays. Every stage asks for its bytes BEFORE it
// allocates them (a template's weights and their optimizer state, a sample's ground atoms
// and rules, its network, plan and workspace, a dataset's stored facts, the arrays of a
// TU/npz data set, a RASP file), so an input too big for the machine ends with a Limit
// error naming the rule, literal or file at fault instead of std::bad_alloc, swapping, or
// the kernel's OOM killer. docs/cli.md "Memory budget" says what is and is not counted.
//
// Set by `--max-memory SIZE` on every command that grounds, builds or loads, by Python's
// `Settings(max_memory=...)` / `lrnn.set_max_memory(...)`, and in C++ by
// `Settings::max_memory` (applied when a Model is built or trained with it) or
// set_memory_limit(). Default: 80% of the smaller of MemAvailable (/proc/meminfo) and the
// cgroup's memory limit, read once when first needed.
#pragma once

#include <cstdint>
#include <string>

#include "lrnn/diagnostics.hpp"

namespace lrnn {

// "4G", "512M", "0.5T", "64k", "1048576" (bytes), with an optional "B" or "iB" after the
// unit; units are binary (1K = 1024). "", "0", "-1", "4X", "nan" and sizes past 2^64 are
// refused (ErrorKind::Parse) naming `option`.
uint64_t parse_memory_size(const std::string& text, const std::string& option);
// "512 MiB", "2.5 GiB", "100 bytes": how the budget's messages write sizes.
std::string format_memory_size(uint64_t bytes);

// The default limit (see above); UINT64_MAX where the machine's memory cannot be read.
uint64_t default_memory_limit();
// The process's limit; 0 restores the default. Thread-safe.
void set_memory_limit(uint64_t bytes);
uint64_t memory_limit();
// Bytes currently held by reservations.
uint64_t memory_held();

// Refuses (ErrorKind::Limit, at `span` when it is known) when `bytes` more than what is
// held would pass the limit; `what` names the thing being allocated ("the weight {8192,
// 8192} of this rule", "file x.rasp"). For an allocation freed before the next stage runs.
void check_memory(uint64_t bytes, const std::string& what, const Span& span = {});
// Whether `bytes` more fit beside what is held: for a check on a path that runs often, which
// builds check_memory's message only when they do not.
bool memory_fits(uint64_t bytes);

// Bytes held against the budget for as long as the reservation lives (moved with what it
// accounts for; a copy holds its own bytes, reserved again). Checked, then counted, once
// per array or chunk, never per element.
class MemoryReservation {
 public:
  MemoryReservation() = default;
  MemoryReservation(uint64_t bytes, const std::string& what, const Span& span = {}) { grow(bytes, what, span); }
  MemoryReservation(const MemoryReservation& other);
  MemoryReservation& operator=(const MemoryReservation& other);
  MemoryReservation(MemoryReservation&& other) noexcept : bytes_(other.bytes_) { other.bytes_ = 0; }
  MemoryReservation& operator=(MemoryReservation&& other) noexcept;
  ~MemoryReservation() { reset(); }

  // Holds `more` bytes more, or throws as check_memory does (holding nothing more).
  void grow(uint64_t more, const std::string& what, const Span& span = {});
  // grow() in two halves, for callers that name what they allocate only when it fails:
  // try_grow holds `more` bytes more and says true, or holds nothing and says false;
  // refuse throws the error grow() would have.
  bool try_grow(uint64_t more);
  [[noreturn]] static void refuse(uint64_t more, const std::string& what, const Span& span = {});
  // Holds `total` bytes: more is grow(), less releases the difference.
  void resize(uint64_t total, const std::string& what, const Span& span = {});
  void reset() noexcept;
  // Takes over what `other` holds (one reservation for several arrays built apart).
  void absorb(MemoryReservation& other) noexcept {
    bytes_ += other.bytes_;
    other.bytes_ = 0;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  uint64_t bytes_ = 0;
};

}  // namespace lrnn
