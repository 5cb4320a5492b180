// `devshare simulate`: policies compared on a simulated cluster.
#ifndef DEVSHARE_CLI_SIMULATE_HPP_
#define DEVSHARE_CLI_SIMULATE_HPP_

#include <CLI/CLI.hpp>

namespace devshare::cli {

// Adds the `simulate` subcommand; its exit code goes to `exit_code`.
void AddSimulateCommand(CLI::App& app, int& exit_code);

}  // namespace devshare::cli

#endif  // DEVSHARE_CLI_SIMULATE_HPP_
