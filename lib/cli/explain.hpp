// `devshare explain`: why a pod fits or not, node by node.
#ifndef DEVSHARE_CLI_EXPLAIN_HPP_
#define DEVSHARE_CLI_EXPLAIN_HPP_

#include <CLI/CLI.hpp>

namespace devshare::cli {

// Adds the `explain` subcommand; its exit code goes to `exit_code` (0 when
// the inputs were read, whether or not the pod fits; 1 on bad input).
void AddExplainCommand(CLI::App& app, int& exit_code);

}  // namespace devshare::cli

#endif  // DEVSHARE_CLI_EXPLAIN_HPP_
