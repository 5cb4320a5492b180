// The --hami-exact option that `explain` and `serve` share.
#ifndef DEVSHARE_CLI_HAMI_EXACT_OPTION_HPP_
#define DEVSHARE_CLI_HAMI_EXACT_OPTION_HPP_

#include <CLI/CLI.hpp>
#include <string>

#include "devshare/hami_exact.hpp"

namespace devshare::cli {

// Adds --hami-exact ROWS to `sub`, parsed into `out`; an unknown row is a
// usage error naming it.
inline void AddHamiExactOption(CLI::App* sub, HamiExact& out) {
  sub->add_option_function<std::string>(
         "--hami-exact",
         [&out](const std::string& rows) {
           Result<HamiExact> parsed = ParseHamiExact(rows);
           if (!parsed.ok())
             throw CLI::ValidationError("--hami-exact", std::string(parsed.status().message()));
           out = *parsed;
         },
         "decide as HAMi v2.10 does on these rows of docs/compatibility.md: all, none, or a list "
         "such as W1,W2")
      ->default_str("none");
}

}  // namespace devshare::cli

#endif  // DEVSHARE_CLI_HAMI_EXACT_OPTION_HPP_
