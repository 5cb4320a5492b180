// The port of Go's sort.Sort (src/base/go_sort.hpp) leaves equal elements where Go
// leaves them. Expected permutations were computed by Go 1.26's sort.Sort on
// the same keys (an index permutation sorted by key), kept as FNV-1a hashes.
#include "src/base/go_sort.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

namespace {

std::vector<int> Keys(int n, int distinct, std::uint64_t seed, std::string_view shape) {
  std::vector<int> keys(static_cast<std::size_t>(n));
  std::uint64_t x = seed;
  for (int i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    int& k = keys[static_cast<std::size_t>(i)];
    if (shape == "random") k = static_cast<int>((x >> 33) % static_cast<std::uint64_t>(distinct));
    if (shape == "descending") k = n - i;
    if (shape == "ascending") k = i / 2;
    if (shape == "organ") k = i < n / 2 ? i : n - i;
  }
  return keys;
}

std::vector<int> SortedIndices(const std::vector<int>& keys) {
  std::vector<int> idx(keys.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  devshare::internal::GoSort(
      static_cast<std::int64_t>(idx.size()),
      [&](std::int64_t i, std::int64_t j) {
        return keys[static_cast<std::size_t>(idx[static_cast<std::size_t>(i)])] <
               keys[static_cast<std::size_t>(idx[static_cast<std::size_t>(j)])];
      },
      [&](std::int64_t i, std::int64_t j) {
        std::swap(idx[static_cast<std::size_t>(i)], idx[static_cast<std::size_t>(j)]);
      });
  return idx;
}

std::uint64_t Fnv(const std::vector<int>& v) {
  std::uint64_t h = 14695981039346656037ULL;
  for (int x : v) {
    h ^= static_cast<std::uint64_t>(x);
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

TEST_CASE("GoSort: the permutations Go's sort.Sort makes") {
  struct Row {
    int n, distinct;
    std::uint64_t seed;
    std::string_view shape;
    std::uint64_t fnv;  // of Go's permutation
  };
  const Row rows[] = {
      {13, 3, 1u, "random", 8006604370062432399u},
      {16, 2, 2u, "random", 6258503672277069059u},
      {20, 4, 3u, "random", 8608324087365995855u},
      {33, 5, 4u, "random", 2338207628251608349u},
      {64, 3, 5u, "random", 29246961489400441u},
      {100, 7, 6u, "random", 11277569703783152837u},
      {1000, 10, 7u, "random", 12459499500832079853u},
      {60, 0, 0u, "descending", 15952287858154565113u},
      {60, 0, 0u, "ascending", 3065964913635348201u},
      {200, 0, 0u, "organ", 2105404903202812317u},
      {5000, 2, 8u, "random", 9954306275742997535u},
  };
  for (const Row& row : rows) {
    CAPTURE(row.n);
    CAPTURE(row.shape);
    const std::vector<int> keys = Keys(row.n, row.distinct, row.seed, row.shape);
    const std::vector<int> idx = SortedIndices(keys);
    CHECK(std::is_sorted(idx.begin(), idx.end(), [&](int a, int b) {
      return keys[static_cast<std::size_t>(a)] < keys[static_cast<std::size_t>(b)];
    }));
    CHECK(Fnv(idx) == row.fnv);
  }
}

TEST_CASE("GoSort: up to 12 elements it is an insertion sort, hence stable") {
  const std::vector<int> keys = Keys(12, 2, 9, "random");
  std::vector<int> stable(keys.size());
  for (std::size_t i = 0; i < stable.size(); ++i) stable[i] = static_cast<int>(i);
  std::stable_sort(stable.begin(), stable.end(), [&](int a, int b) {
    return keys[static_cast<std::size_t>(a)] < keys[static_cast<std::size_t>(b)];
  });
  CHECK(SortedIndices(keys) == stable);
}
