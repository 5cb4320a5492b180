// `devshare top`: what every GPU node holds, device by device.
#ifndef DEVSHARE_CLI_TOP_HPP_
#define DEVSHARE_CLI_TOP_HPP_

#include <CLI/CLI.hpp>

namespace devshare::cli {

// Adds the `top` subcommand; its exit code goes to `exit_code` (0 when the
// cluster was read; 1 when it could not be).
void AddTopCommand(CLI::App& app, int& exit_code);

}  // namespace devshare::cli

#endif  // DEVSHARE_CLI_TOP_HPP_
