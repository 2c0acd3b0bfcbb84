#include "cli/allocator.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <string>

#ifdef LRNN_MIMALLOC
#include <mimalloc.h>
#endif

namespace lrnn::cli {

namespace {

// The size of the file an argument names: `FILE`, `--option=FILE` or a dataset spec
// `FORMAT:FILE` (`npz:graph.npz`); 0 when it names no regular file.
uint64_t named_file_bytes(const std::string& argument) {
  auto size_of = [](const std::string& path) -> uint64_t {
    struct stat st {};
    return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? uint64_t(st.st_size) : 0;
  };
  if (const uint64_t bytes = size_of(argument)) return bytes;
  for (const char separator : {'=', ':'})
    if (const auto at = argument.find(separator); at != std::string::npos)
      if (const uint64_t bytes = size_of(argument.substr(at + 1))) return bytes;
  return 0;
}

}  // namespace

uint64_t input_bytes_named(int argc, char** argv) {
  uint64_t total = 0;
  for (int i = 1; i < argc; ++i) total += named_file_bytes(argv[i]);
  return total;
}

// Why the command brings its own allocator: building a graph of millions of edges allocates
// and frees arrays of tens to hundreds of MB (the grounder's, the network's, the plan's).
// The C library's malloc maps each one afresh and unmaps it on free, so every such array's
// pages are faulted in and zeroed by the kernel again: on the 2M-node / 20M-edge graph of
// bench/big_graph.py, 11 GB of page faults for a peak of 4.8 GB, a third of the build.
// mimalloc keeps freed memory for the next allocation.
//
// Its 2 MB pages pay only for big inputs. On the 2M-node graph (470 MB of arrays) they
// take a fifth off the build and more off the first epoch (fewer faults, fewer TLB misses).
// On the 200k-node graph (77 MB of text) and on NCI1 they cost time instead: each 2 MB page
// is a whole block of free memory the kernel must find, which a virtual machine's host has
// often reclaimed, while 4 KB pages come from memory freed a moment ago
// (docs/big_graphs.md "The command's allocator" has the measurements).
//
// On 4 KB pages mimalloc hands freed memory back to the kernel after 25 ms by default, and
// a training run that allocates a batch's workspace again and again faults it in again each
// time (NCI1's GIN with batch norm, 10 folds: 1.6-1.8 s of system time and a 10% longer
// epoch). The command keeps it instead, as mimalloc does for 2 MB pages anyway, unless the
// input is a big graph's (kDecommitFromInputBytes): there the memory freed by reading and
// grounding (the text, the store, the other ranks' ground rules) is no use to training,
// whose workspace is allocated once, and kept it took the 200k-node graph's peak from 707
// to 797 MB (session 41; its epochs, full batch or in query batches, the same either way).
void configure_allocator(int argc, char** argv) {
#ifdef LRNN_MIMALLOC
  const uint64_t input_bytes = input_bytes_named(argc, argv);
  if (!std::getenv("MIMALLOC_LARGE_OS_PAGES") && input_bytes >= kLargePagesFromInputBytes)
    mi_option_enable(mi_option_large_os_pages);
  if (!std::getenv("MIMALLOC_ALLOW_DECOMMIT") && input_bytes < kDecommitFromInputBytes)
    mi_option_disable(mi_option_allow_decommit);
#else
  (void)argc;
  (void)argv;
#endif
}

std::string allocator_name() {
#ifdef LRNN_MIMALLOC
  const int v = mi_version();
  std::string name = "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." + std::to_string(v % 10);
  if (mi_option_is_enabled(mi_option_large_os_pages)) name += " (large OS pages)";
  if (mi_option_is_enabled(mi_option_allow_decommit)) name += " (gives freed memory back)";
  return name;
#else
  return "the C library's malloc";
#endif
}

}  // namespace lrnn::cli
