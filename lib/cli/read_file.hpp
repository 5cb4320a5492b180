// Reading files for the command line's subcommands, and the device config.
#ifndef DEVSHARE_CLI_READ_FILE_HPP_
#define DEVSHARE_CLI_READ_FILE_HPP_

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "devshare/status.hpp"
#include "devshare/vendor.hpp"

namespace devshare::cli {

// The file's bytes. Errors: kNotFound "cannot read <path>".
inline Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot read {}", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// HAMi's device-config YAML at `path`, or the NVIDIA default when empty.
inline Result<DeviceConfig> LoadDeviceConfig(const std::string& path) {
  if (path.empty()) return DefaultDeviceConfig();
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseDeviceConfig(*text);
}

// --device-config, read by LoadDeviceConfig.
inline void AddDeviceConfigOption(CLI::App* command, std::string& path) {
  command->add_option("--device-config", path,
                      "HAMi device-config YAML, or one with a volcano: section for Volcano's vGPU "
                      "(default: NVIDIA)");
}

}  // namespace devshare::cli

#endif  // DEVSHARE_CLI_READ_FILE_HPP_
