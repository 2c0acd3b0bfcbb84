// How much of the current thread's stack is left: the RASP evaluator recurses on the C stack
// (a def calling itself, at run time inside map/zipmap), and a thread's stack may be far
// smaller than the default 8 MB (`ulimit -s 256`, a Python thread with threading.stack_size),
// so a fixed call limit alone would still let it overflow.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>

namespace lrnn::rasp {

// The lowest address of this thread's stack (it grows down on every platform lrnn builds
// on), found once per thread; 0 when the system does not say.
inline uintptr_t stack_low_end() {
  thread_local const uintptr_t low = [] {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return uintptr_t{0};
    void* addr = nullptr;
    size_t size = 0;
    const bool ok = pthread_attr_getstack(&attr, &addr, &size) == 0;
    pthread_attr_destroy(&attr);
    return ok ? reinterpret_cast<uintptr_t>(addr) : uintptr_t{0};
  }();
  return low;
}

// Bytes of stack below the caller's frame (SIZE_MAX when unknown).
inline size_t stack_headroom() {
  const uintptr_t low = stack_low_end();
  const uintptr_t here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (low == 0 || here <= low) return low == 0 ? SIZE_MAX : 0;
  return static_cast<size_t>(here - low);
}

}  // namespace lrnn::rasp
