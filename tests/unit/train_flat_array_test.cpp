// train/flat_array.hpp: the sample store's realloc-grown arrays hold what a std::vector
// would, with a std::vector's capacities (what the store reports and holds against the
// memory budget), through growth, appends, copies, moves and shrinking.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "train/flat_array.hpp"

namespace {

using lrnn::train::FlatArray;

struct Item {
  uint32_t a = 0, b = 0, c = 0, d = 0;
};

template <class A, class B>
void expect_same(const A& got, const B& want) {
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got.capacity(), want.capacity());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i].a, want[i].a) << i;
}

TEST(FlatArray, GrowsAsAVector) {
  FlatArray<Item> flat;
  std::vector<Item> vec;
  EXPECT_TRUE(flat.empty());
  EXPECT_EQ(flat.data(), nullptr);
  for (uint32_t i = 0; i < 5000; ++i) {
    flat.push_back({i, 2 * i, 0, 0});
    vec.push_back({i, 2 * i, 0, 0});
    ASSERT_EQ(flat.capacity(), vec.capacity()) << i;
  }
  expect_same(flat, vec);
  flat.reserve(20000);
  vec.reserve(20000);
  flat.reserve(10);  // never shrinks
  expect_same(flat, vec);
  flat.shrink_to_fit();
  vec.shrink_to_fit();
  expect_same(flat, vec);
  // An element of the array pushed while it grows.
  flat.push_back(flat[7]);
  vec.push_back(vec[7]);
  expect_same(flat, vec);
}

TEST(FlatArray, AppendsCopiesAndMoves) {
  std::vector<Item> source(300);
  for (uint32_t i = 0; i < source.size(); ++i) source[i].a = i;
  FlatArray<Item> flat;
  std::vector<Item> vec;
  for (size_t first : {0, 10, 0, 299, 5}) {
    flat.append(source.data() + first, source.data() + source.size());
    vec.insert(vec.end(), source.begin() + static_cast<ptrdiff_t>(first), source.end());
    ASSERT_EQ(flat.capacity(), vec.capacity());
  }
  flat.append(source.data(), source.data());  // nothing
  expect_same(flat, vec);

  const FlatArray<Item> copy = flat;  // capacity its size
  expect_same(copy, std::vector<Item>(vec));
  FlatArray<Item> assigned;
  assigned.push_back({});
  assigned = copy;
  expect_same(assigned, std::vector<Item>(vec));

  const Item* data = flat.data();
  FlatArray<Item> moved = std::move(flat);
  EXPECT_EQ(moved.data(), data);
  EXPECT_EQ(flat.size(), 0u);
  EXPECT_EQ(flat.capacity(), 0u);
  expect_same(moved, vec);
  flat = std::move(moved);
  expect_same(flat, vec);
  size_t n = 0;
  for (const Item& x : flat) EXPECT_EQ(x.a, vec[n++].a);
  EXPECT_EQ(n, vec.size());

  FlatArray<Item> empty;
  empty.shrink_to_fit();
  EXPECT_EQ(empty.capacity(), 0u);
  empty.push_back({1});
  empty.reserve(0);
  EXPECT_EQ(empty.capacity(), 1u);
}

// Blocks of 1 MB or more are mapped pages grown with mremap (train/flat_array.cpp): the
// values and the capacities are a std::vector's through growth past the line, shrinking
// below it and above it, copies and moves.
TEST(FlatArray, KeepsItsValuesOnMappedPages) {
  FlatArray<Item> flat;
  std::vector<Item> vec;
  const uint32_t big = 3 * lrnn::train::kMappedBlockBytes / sizeof(Item);
  for (uint32_t i = 0; i < big; ++i) {
    flat.push_back({i, i ^ 0x5a5a5a5au, 0, 0});
    vec.push_back({i, i ^ 0x5a5a5a5au, 0, 0});
    ASSERT_EQ(flat.capacity(), vec.capacity()) << i;
  }
  expect_same(flat, vec);
  for (uint32_t i = 0; i < big; i += 997) ASSERT_EQ(flat[i].b, vec[i].b) << i;
  const FlatArray<Item> copy = flat;  // mapped too, capacity its size
  expect_same(copy, std::vector<Item>(vec));
  flat.reserve(4 * big);  // mapped to mapped
  vec.reserve(4 * big);
  expect_same(flat, vec);
  flat.shrink_to_fit();  // mapped to mapped, smaller
  vec.shrink_to_fit();
  expect_same(flat, vec);
  // Down below the line: the first values kept on malloc.
  FlatArray<Item> small = copy;
  std::vector<Item> small_vec(vec.begin(), vec.begin() + 1000);
  FlatArray<Item> head;
  head.append(copy.begin(), copy.begin() + 1000);
  head.reserve(big);  // malloc to mapped
  head.shrink_to_fit();  // mapped to malloc
  expect_same(head, small_vec);
  FlatArray<Item> moved = std::move(small);
  expect_same(moved, std::vector<Item>(vec));
}

TEST(FlatArray, RefusesWhatMallocCannotGive) {
  FlatArray<Item> flat;
  // Past what the address space holds: malloc says no, the array is as it was.
  flat.push_back({3});
  EXPECT_THROW(flat.reserve(size_t{1} << 58), std::bad_alloc);
  EXPECT_EQ(flat.size(), 1u);
  EXPECT_EQ(flat[0].a, 3u);
  EXPECT_THROW(flat.reserve(SIZE_MAX / 2), std::length_error);
}

}  // namespace
