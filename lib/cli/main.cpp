// The devshare command line: one subcommand per front-end job.
#include <CLI/CLI.hpp>

#include "decode.hpp"
#include "devshare/version.hpp"
#include "explain.hpp"
#include "serve.hpp"
#include "simulate.hpp"
#include "top.hpp"

int main(int argc, char** argv) {
  CLI::App app{"devshare: scheduling core for shared accelerators (HAMi/Volcano compatible)"};
  app.set_version_flag("--version", DEVSHARE_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  devshare::cli::AddDecodeCommand(app, exit_code);
  devshare::cli::AddExplainCommand(app, exit_code);
  devshare::cli::AddServeCommand(app, exit_code);
  devshare::cli::AddSimulateCommand(app, exit_code);
  devshare::cli::AddTopCommand(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version or the usage error
    return code == 0 ? 0 : 2;
  }
  return exit_code;
}
