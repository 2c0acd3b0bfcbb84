#include "cli/allocator.hpp"

#include <cstdlib>

#ifdef LRNN_MIMALLOC
#include <mimalloc.h>
#endif

namespace lrnn::cli {

// Why the command brings its own allocator: building a graph of millions of edges allocates
// and frees arrays of tens to hundreds of MB (the grounder's, the network's, the plan's).
// The C library's malloc maps each one afresh and unmaps it on free, so every such array's
// pages are faulted in and zeroed by the kernel again: on the 2M-node / 20M-edge graph of
// bench/big_graph.py, 11 GB of page faults for a peak of 4.8 GB, a third of the build.
// mimalloc keeps freed memory for the next allocation, and on 2 MB pages the network's
// random reads miss the TLB less (docs/big_graphs.md "The command's allocator" has the
// measurements).
void configure_allocator() {
#ifdef LRNN_MIMALLOC
  if (!std::getenv("MIMALLOC_LARGE_OS_PAGES")) mi_option_enable(mi_option_large_os_pages);
#endif
}

std::string allocator_name() {
#ifdef LRNN_MIMALLOC
  const int v = mi_version();
  std::string name = "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." + std::to_string(v % 10);
  if (mi_option_is_enabled(mi_option_large_os_pages)) name += " (large OS pages)";
  return name;
#else
  return "the C library's malloc";
#endif
}

}  // namespace lrnn::cli
