// `devshare decode`: annotation values as readable tables or JSON.
#ifndef DEVSHARE_CLI_DECODE_HPP_
#define DEVSHARE_CLI_DECODE_HPP_

#include <CLI/CLI.hpp>

namespace devshare::cli {

// Adds the `decode` subcommand and its kinds to `app`.
// The command stores its process exit code in `exit_code`: 0 on success, 1
// when the value does not decode (the error goes to stderr).
void AddDecodeCommand(CLI::App& app, int& exit_code);

}  // namespace devshare::cli

#endif  // DEVSHARE_CLI_DECODE_HPP_
