// `devshare serve`: the scheduler extender and admission webhook in a real
// cluster (lib/kube).
#ifndef DEVSHARE_CLI_SERVE_HPP_
#define DEVSHARE_CLI_SERVE_HPP_

#include <CLI/CLI.hpp>

namespace devshare::cli {

// Adds the `serve` subcommand; its exit code goes to `exit_code`.
void AddServeCommand(CLI::App& app, int& exit_code);

}  // namespace devshare::cli

#endif  // DEVSHARE_CLI_SERVE_HPP_
