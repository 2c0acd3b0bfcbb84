// The allocator of the lrnn command (not of liblrnn or the Python package, which keep the
// allocator of the program that loads them): docs/big_graphs.md "The command's allocator".
#pragma once

#include <cstdint>
#include <string>

namespace lrnn::cli {

// Inputs of at least this many bytes (the files named on the command line together) put
// the allocator on 2 MB pages.
inline constexpr uint64_t kLargePagesFromInputBytes = uint64_t(256) << 20;
// Below this many bytes of input the allocator keeps the memory it frees; from it on (a big
// graph) it gives it back to the kernel as mimalloc does by default.
inline constexpr uint64_t kDecommitFromInputBytes = uint64_t(16) << 20;

// The bytes of the regular files that the command's arguments name (`FILE`,
// `--option=FILE`, `FORMAT:FILE`), counted before the arguments are parsed.
uint64_t input_bytes_named(int argc, char** argv);

// Sets the command's allocator up before the first big allocation: where the command is
// linked with mimalloc (LRNN_MIMALLOC), its large OS pages (2 MB, transparent huge pages)
// when the input files add up to kLargePagesFromInputBytes or more, unless
// MIMALLOC_LARGE_OS_PAGES in the environment decides, and freed memory kept below
// kDecommitFromInputBytes, unless MIMALLOC_ALLOW_DECOMMIT decides. Elsewhere it does nothing.
void configure_allocator(int argc, char** argv);

// "mimalloc 2.0.9", with " (large OS pages)" and " (gives freed memory back)" as set up,
// or "the C library's malloc", for `lrnn --version`.
std::string allocator_name();

}  // namespace lrnn::cli
