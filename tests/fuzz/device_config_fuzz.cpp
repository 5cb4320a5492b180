// Fuzzes ParseDeviceConfig (HAMi's device-config YAML, through yaml-cpp).
//
// Property: no crash, no sanitizer report, no exception escaping (the core
// never throws across its API), errors are kInvalidConfig. On success the
// documented invariants hold: unique common words, memory_factor >= 1. (A
// config may list no vendor: `vnpus: {enpuPolicy: x}` is a non-empty section
// that configures none.)
// run.sh bounds inputs with -max_len (yaml-cpp is slow on large documents).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "devshare/vendor.hpp"
#include "fuzz_fail.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("device_config", what, value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = devshare::ParseDeviceConfig(input);
  if (!parsed.ok()) {
    if (parsed.status().code() != devshare::StatusCode::kInvalidConfig) {
      Fail("error is not kInvalidConfig");
    }
    return 0;
  }
  const devshare::DeviceConfig& config = *parsed;
  for (std::size_t i = 0; i < config.vendors.size(); ++i) {
    if (config.vendors[i].memory_factor < 1) Fail("memory_factor < 1");
    if (config.FindVendor(config.vendors[i].common_word) != &config.vendors[i]) {
      Fail("two vendors share a common word");
    }
  }
  return 0;
}
