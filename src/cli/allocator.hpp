// The allocator of the lrnn command (not of liblrnn or the Python package, which keep the
// allocator of the program that loads them): docs/big_graphs.md "The command's allocator".
#pragma once

#include <string>

namespace lrnn::cli {

// Sets the command's allocator up before the first big allocation: where the command is
// linked with mimalloc (LRNN_MIMALLOC), its large OS pages (2 MB, transparent huge pages)
// unless MIMALLOC_LARGE_OS_PAGES is set in the environment. Elsewhere it does nothing.
void configure_allocator();

// "mimalloc 2.0.9 (large OS pages)", "mimalloc 2.0.9" or "the C library's malloc", for
// `lrnn --version`.
std::string allocator_name();

}  // namespace lrnn::cli
