#include "sched/filter_reasons.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace devshare::internal {

// "<count>/<devices> <Reason>" pieces sorted as whole strings, joined by
// ", " (HAMi's GenReason). Pieces are formatted on the stack; the result is
// the only allocation.
std::string GenReason(const ReasonCounts& counts, std::size_t devices) {
  struct Piece {
    std::array<char, 64> text;
    std::size_t size;
    std::string_view view() const { return {text.data(), size}; }
  };
  std::array<Piece, kReasonCount> pieces;
  std::size_t n = 0;
  std::size_t total = 0;
  for (std::size_t r = 0; r < kReasonCount; ++r) {
    if (counts[r] <= 0) continue;
    Piece& p = pieces[n++];
    auto end = fmt::format_to_n(p.text.data(), p.text.size(), "{}/{} {}", counts[r], devices,
                                kReasonNames[r]);
    p.size = std::min(end.size, p.text.size());
    total += p.size + 2;
  }
  std::sort(pieces.begin(), pieces.begin() + static_cast<std::ptrdiff_t>(n),
            [](const Piece& a, const Piece& b) { return a.view() < b.view(); });
  std::string out;
  out.reserve(total);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += ", ";
    out += pieces[i].view();
  }
  return out;
}

}  // namespace devshare::internal
