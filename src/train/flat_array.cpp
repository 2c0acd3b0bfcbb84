#include "train/flat_array.hpp"

#include <cstdlib>
#include <cstring>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace lrnn::train {

namespace {

#ifdef __linux__
constexpr bool kMapsBlocks = true;

size_t page_rounded(size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

void* map_block(size_t bytes) {
  void* p = mmap(nullptr, page_rounded(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
#ifdef MADV_HUGEPAGE
  // A hint, as for the networks' buffers: 2 MB pages where the kernel has them, 512 times
  // fewer faults to fill the block.
  madvise(p, page_rounded(bytes), MADV_HUGEPAGE);
#endif
  return p;
}

void unmap_block(void* block, size_t bytes) { munmap(block, page_rounded(bytes)); }

void* remap_block(void* block, size_t bytes, size_t new_bytes) {
  void* p = mremap(block, page_rounded(bytes), page_rounded(new_bytes), MREMAP_MAYMOVE);
  return p == MAP_FAILED ? nullptr : p;
}
#else
// Elsewhere every block is malloc's (mapped() is never true).
constexpr bool kMapsBlocks = false;
void* map_block(size_t) { return nullptr; }
void unmap_block(void*, size_t) {}
void* remap_block(void*, size_t, size_t) { return nullptr; }
#endif

bool mapped(size_t bytes) { return kMapsBlocks && bytes >= kMappedBlockBytes; }

}  // namespace

void* resize_flat_block(void* block, size_t bytes, size_t new_bytes, size_t used) noexcept {
  if (!block) bytes = 0;  // nothing held: nothing to free or copy
  if (mapped(bytes) && mapped(new_bytes)) return remap_block(block, bytes, new_bytes);
  if (!mapped(bytes) && !mapped(new_bytes)) {
    if (new_bytes == 0) {
      std::free(block);
      return nullptr;
    }
    return std::realloc(block, new_bytes);
  }
  // Between malloc and mapped pages: a new block, the used bytes copied (below 1 MB one way,
  // a shrink the other), the old one given back.
  void* fresh = new_bytes == 0 ? nullptr : mapped(new_bytes) ? map_block(new_bytes) : std::malloc(new_bytes);
  if (!fresh && new_bytes > 0) return nullptr;
  if (used > 0) std::memcpy(fresh, block, used);
  if (mapped(bytes)) unmap_block(block, bytes);
  else std::free(block);
  return fresh;
}

}  // namespace lrnn::train
