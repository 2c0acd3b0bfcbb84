#include "exec/plan.hpp"

#include <sys/mman.h>

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

}  // namespace lrnn::exec
