// Private: Go's sort.Sort (pattern-defeating quicksort, Go 1.19 and later),
// step for step, so that devshare can put equal elements in the order HAMi's
// sort.Sort leaves them (HAMi-exact W10: above 12 elements Go's sort is not
// stable, but it is deterministic). A port of the algorithm of Go's
// src/sort/zsortinterface.go (BSD-style licence, Copyright The Go Authors).
//
// GoSort(n, less, swap) sorts positions 0..n-1 through the two callbacks,
// exactly as sort.Sort does through Interface.Less and Interface.Swap.
#ifndef DEVSHARE_SRC_GO_SORT_HPP_
#define DEVSHARE_SRC_GO_SORT_HPP_

#include <bit>
#include <cstdint>
#include <utility>

namespace devshare::internal {

template <typename Less, typename Swap>
class GoSorter {
 public:
  GoSorter(Less less, Swap swap) : less_(less), swap_(swap) {}

  void Sort(std::int64_t n) {
    if (n <= 1) return;
    PdqSort(0, n, std::bit_width(static_cast<std::uint64_t>(n)));
  }

 private:
  enum class Hint { kUnknown, kIncreasing, kDecreasing };

  void InsertionSort(std::int64_t a, std::int64_t b) {
    for (std::int64_t i = a + 1; i < b; ++i) {
      for (std::int64_t j = i; j > a && less_(j, j - 1); --j) swap_(j, j - 1);
    }
  }

  void SiftDown(std::int64_t lo, std::int64_t hi, std::int64_t first) {
    std::int64_t root = lo;
    while (true) {
      std::int64_t child = 2 * root + 1;
      if (child >= hi) return;
      if (child + 1 < hi && less_(first + child, first + child + 1)) ++child;
      if (!less_(first + root, first + child)) return;
      swap_(first + root, first + child);
      root = child;
    }
  }

  void HeapSort(std::int64_t a, std::int64_t b) {
    const std::int64_t first = a, hi = b - a;
    for (std::int64_t i = (hi - 1) / 2; i >= 0; --i) SiftDown(i, hi, first);
    for (std::int64_t i = hi - 1; i >= 0; --i) {
      swap_(first, first + i);
      SiftDown(0, i, first);
    }
  }

  void PdqSort(std::int64_t a, std::int64_t b, int limit) {
    constexpr std::int64_t kMaxInsertion = 12;
    bool was_balanced = true, was_partitioned = true;
    while (true) {
      const std::int64_t length = b - a;
      if (length <= kMaxInsertion) {
        InsertionSort(a, b);
        return;
      }
      if (limit == 0) {
        HeapSort(a, b);
        return;
      }
      if (!was_balanced) {
        BreakPatterns(a, b);
        --limit;
      }
      auto [pivot, hint] = ChoosePivot(a, b);
      if (hint == Hint::kDecreasing) {
        ReverseRange(a, b);
        pivot = (b - 1) - (pivot - a);
        hint = Hint::kIncreasing;
      }
      if (was_balanced && was_partitioned && hint == Hint::kIncreasing &&
          PartialInsertionSort(a, b)) {
        return;
      }
      if (a > 0 && !less_(a - 1, pivot)) {
        a = PartitionEqual(a, b, pivot);
        continue;
      }
      auto [mid, already_partitioned] = Partition(a, b, pivot);
      was_partitioned = already_partitioned;
      const std::int64_t left = mid - a, right = b - mid, threshold = length / 8;
      if (left < right) {
        was_balanced = left >= threshold;
        PdqSort(a, mid, limit);
        a = mid + 1;
      } else {
        was_balanced = right >= threshold;
        PdqSort(mid + 1, b, limit);
        b = mid;
      }
    }
  }

  std::pair<std::int64_t, bool> Partition(std::int64_t a, std::int64_t b, std::int64_t pivot) {
    swap_(a, pivot);
    std::int64_t i = a + 1, j = b - 1;
    while (i <= j && less_(i, a)) ++i;
    while (i <= j && !less_(j, a)) --j;
    if (i > j) {
      swap_(j, a);
      return {j, true};
    }
    swap_(i, j);
    ++i;
    --j;
    while (true) {
      while (i <= j && less_(i, a)) ++i;
      while (i <= j && !less_(j, a)) --j;
      if (i > j) break;
      swap_(i, j);
      ++i;
      --j;
    }
    swap_(j, a);
    return {j, false};
  }

  std::int64_t PartitionEqual(std::int64_t a, std::int64_t b, std::int64_t pivot) {
    swap_(a, pivot);
    std::int64_t i = a + 1, j = b - 1;
    while (true) {
      while (i <= j && !less_(a, i)) ++i;
      while (i <= j && less_(a, j)) --j;
      if (i > j) break;
      swap_(i, j);
      ++i;
      --j;
    }
    return i;
  }

  bool PartialInsertionSort(std::int64_t a, std::int64_t b) {
    constexpr int kMaxSteps = 5;
    constexpr std::int64_t kShortestShifting = 50;
    std::int64_t i = a + 1;
    for (int step = 0; step < kMaxSteps; ++step) {
      while (i < b && !less_(i, i - 1)) ++i;
      if (i == b) return true;
      if (b - a < kShortestShifting) return false;
      swap_(i, i - 1);
      if (i - a >= 2) {
        for (std::int64_t j = i - 1; j >= 1; --j) {
          if (!less_(j, j - 1)) break;
          swap_(j, j - 1);
        }
      }
      if (b - i >= 2) {
        for (std::int64_t j = i + 1; j < b; ++j) {
          if (!less_(j, j - 1)) break;
          swap_(j, j - 1);
        }
      }
    }
    return false;
  }

  void BreakPatterns(std::int64_t a, std::int64_t b) {
    const std::int64_t length = b - a;
    if (length < 8) return;
    std::uint64_t random = static_cast<std::uint64_t>(length);  // xorshift seeded with the length
    const std::uint64_t modulus = std::uint64_t{1}
                                  << std::bit_width(static_cast<std::uint64_t>(length));
    for (std::int64_t idx = a + (length / 4) * 2 - 1; idx <= a + (length / 4) * 2 + 1; ++idx) {
      random ^= random << 13;
      random ^= random >> 7;
      random ^= random << 17;
      auto other = static_cast<std::int64_t>(random & (modulus - 1));
      if (other >= length) other -= length;
      swap_(idx, a + other);
    }
  }

  std::pair<std::int64_t, Hint> ChoosePivot(std::int64_t a, std::int64_t b) {
    constexpr std::int64_t kShortestNinther = 50;
    constexpr int kMaxSwaps = 4 * 3;
    const std::int64_t l = b - a;
    int swaps = 0;
    std::int64_t i = a + l / 4 * 1, j = a + l / 4 * 2, k = a + l / 4 * 3;
    if (l >= 8) {
      if (l >= kShortestNinther) {
        i = MedianAdjacent(i, swaps);
        j = MedianAdjacent(j, swaps);
        k = MedianAdjacent(k, swaps);
      }
      j = Median(i, j, k, swaps);
    }
    if (swaps == 0) return {j, Hint::kIncreasing};
    if (swaps == kMaxSwaps) return {j, Hint::kDecreasing};
    return {j, Hint::kUnknown};
  }

  void Order2(std::int64_t& a, std::int64_t& b, int& swaps) {
    if (less_(b, a)) {
      ++swaps;
      std::swap(a, b);
    }
  }

  std::int64_t Median(std::int64_t a, std::int64_t b, std::int64_t c, int& swaps) {
    Order2(a, b, swaps);
    Order2(b, c, swaps);
    Order2(a, b, swaps);
    return b;
  }

  std::int64_t MedianAdjacent(std::int64_t a, int& swaps) { return Median(a - 1, a, a + 1, swaps); }

  void ReverseRange(std::int64_t a, std::int64_t b) {
    for (std::int64_t i = a, j = b - 1; i < j; ++i, --j) swap_(i, j);
  }

  Less less_;
  Swap swap_;
};

// Sorts positions 0..n-1 as Go's sort.Sort does with the same Less and Swap.
template <typename Less, typename Swap>
void GoSort(std::int64_t n, Less less, Swap swap) {
  GoSorter<Less, Swap>(less, swap).Sort(n);
}

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_GO_SORT_HPP_
