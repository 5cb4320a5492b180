#include "devshare/hami_exact.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "base/text.hpp"

namespace devshare {

Result<HamiExact> ParseHamiExact(std::string_view rows) {
  struct Row {
    std::string_view name;
    bool HamiExact::*flag;
  };
  static constexpr Row kRows[] = {{"W1", &HamiExact::container_padding_by_type},
                                  {"W2", &HamiExact::device_score_type_match},
                                  {"W4", &HamiExact::cleanup_restamps},
                                  {"W10", &HamiExact::go_device_sort}};
  const std::string_view trimmed = internal::TrimSpace(rows);
  if (trimmed == "all") return HamiExact::All();
  HamiExact exact;
  if (trimmed == "none" || trimmed.empty()) return exact;
  Status status;
  internal::ForEachSplit(trimmed, ',', [&](std::string_view word, std::size_t) {
    word = internal::TrimSpace(word);
    for (const Row& row : kRows) {
      if (word == row.name) {
        exact.*row.flag = true;
        return true;
      }
    }
    std::vector<std::string_view> names;
    for (const Row& row : kRows) names.push_back(row.name);
    status =
        Status::InvalidArgument(fmt::format("hami-exact: unknown row {} (rows: {}; or all, none)",
                                            internal::Quote(word), fmt::join(names, ", ")));
    return false;
  });
  if (!status.ok()) return status;
  return exact;
}

}  // namespace devshare
