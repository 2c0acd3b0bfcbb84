// A growable array of trivially copyable elements for the sample store's big arrays (a
// graph's facts, terms and spans: hundreds of megabytes each). A std::vector grows by
// allocating anew and copying, and each copy writes fresh pages, which cost ~3-5 ms per MB
// on a VM that backs a guest's pages lazily. So a block of 1 MB or more is mapped from the
// kernel here and grown with mremap, which moves its pages instead of copying them: nothing
// copied, no page touched. (Before, the array grew with realloc, which does that for glibc's
// big blocks; mimalloc, the `lrnn` command's allocator since session 28, copies them, and the
// 2M-node graph's store spent 13 s of system time on the copies' fresh pages.) Smaller
// blocks stay on malloc. Its capacities are std::vector's (libstdc++'s growth, reserve to
// the size asked, shrink to the size), so what the store reports and holds against the
// memory budget is unchanged.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace lrnn::train {

// The block of `bytes` at `block` (null, or what these functions gave for `bytes`) resized
// to `new_bytes` (0: freed, null returned), its first `used` bytes kept: on malloc below
// kMappedBlockBytes, mapped pages at or above (flat_array.cpp). Null when the memory
// cannot be had, the old block then untouched.
inline constexpr size_t kMappedBlockBytes = size_t{1} << 20;
void* resize_flat_block(void* block, size_t bytes, size_t new_bytes, size_t used) noexcept;

template <class T>
class FlatArray {
  static_assert(std::is_trivially_copyable_v<T>, "FlatArray moves its elements as bytes (realloc, mremap)");
  static_assert(alignof(T) <= alignof(std::max_align_t), "FlatArray's memory comes from malloc or mmap");

 public:
  FlatArray() = default;
  // A copy's capacity is its size, as a std::vector's.
  FlatArray(const FlatArray& other) { append(other.begin(), other.end()); }
  FlatArray(FlatArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  FlatArray& operator=(const FlatArray& other) {
    if (this != &other) {
      FlatArray copy(other);
      swap(copy);
    }
    return *this;
  }
  FlatArray& operator=(FlatArray&& other) noexcept {
    FlatArray moved(std::move(other));
    swap(moved);
    return *this;
  }
  ~FlatArray() { resize_flat_block(data_, capacity_ * sizeof(T), 0, 0); }
  void swap(FlatArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  void push_back(const T& x) {
    if (size_ == capacity_) [[unlikely]] {
      const T copy = x;  // x may be one of the elements moved
      grow_for(1);
      data_[size_++] = copy;
      return;
    }
    data_[size_++] = x;
  }
  // [first, last) appended (not a range of this array).
  void append(const T* first, const T* last) {
    const size_t n = static_cast<size_t>(last - first);
    if (n == 0) return;
    if (n > capacity_ - size_) grow_for(n);
    std::memcpy(data_ + size_, first, n * sizeof(T));
    size_ += n;
  }
  // Capacity at least n: exactly n when it grows.
  void reserve(size_t n) {
    if (n > capacity_) reallocate(n);
  }
  // Capacity the size: in place (realloc gives the tail back, or keeps the block).
  void shrink_to_fit() {
    if (capacity_ > size_) reallocate(size_);
  }

 private:
  static constexpr size_t max_size() { return PTRDIFF_MAX / sizeof(T); }
  // libstdc++'s growth for n more: the size plus the larger of the size and n.
  void grow_for(size_t n) {
    if (max_size() - size_ < n) throw std::length_error("FlatArray: too many elements");
    size_t capacity = size_ + std::max(size_, n);
    if (capacity < size_ || capacity > max_size()) capacity = max_size();
    reallocate(capacity);
  }
  void reallocate(size_t capacity) {
    if (capacity > max_size()) throw std::length_error("FlatArray: too many elements");
    void* p = resize_flat_block(data_, capacity_ * sizeof(T), capacity * sizeof(T), size_ * sizeof(T));
    if (!p && capacity > 0) throw std::bad_alloc();  // the old block is still ours
    data_ = static_cast<T*>(p);
    capacity_ = capacity;
  }

  T* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace lrnn::train
