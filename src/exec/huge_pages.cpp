#include "exec/plan.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace lrnn::exec {

// A hint only: where transparent huge pages are off ("never") or refused, the buffer keeps
// its 4 KB pages and nothing else changes.
void advise_huge_pages(void* p, size_t bytes) noexcept {
#ifdef MADV_HUGEPAGE
  madvise(p, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

// Memory already written (a big network's arrays) is moved onto huge pages now, where the
// kernel can (Linux 6.1's MADV_COLLAPSE): only the whole 2 MB pages inside the range. A
// hint as well: elsewhere, or when the kernel has no free huge page, nothing changes.
void collapse_huge_pages(const void* p, size_t bytes) noexcept {
  constexpr int kCollapse = 25;  // MADV_COLLAPSE (asm-generic/mman-common.h), absent from glibc 2.36's headers
  const auto begin = (reinterpret_cast<uintptr_t>(p) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const auto end = (reinterpret_cast<uintptr_t>(p) + bytes) / kHugePageBytes * kHugePageBytes;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, kCollapse);
}

}  // namespace lrnn::exec
