// Fuzzes DecodeNodeDevices(kAuto): format detection followed by whichever
// decoder it picks. Property: no crash, no sanitizer report; and the result
// is that of the explicitly chosen format (auto never returns a value no
// concrete decoder would).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "devshare/node_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto decoded = devshare::DecodeNodeDevices(input, devshare::RegisterFormat::kAuto);
  if (!decoded.ok()) return 0;
  for (const auto format : {devshare::RegisterFormat::kJson, devshare::RegisterFormat::kLegacy,
                            devshare::RegisterFormat::kVolcano}) {
    auto explicit_result = devshare::DecodeNodeDevices(input, format);
    if (explicit_result.ok() && *explicit_result == *decoded) return 0;
  }
  std::abort();  // auto decoded something no concrete format decodes to
}
