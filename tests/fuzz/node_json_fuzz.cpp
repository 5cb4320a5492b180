// Fuzzes DecodeNodeDevices(kJson) (`hami.io/node-nvidia-register`).
//
// Properties: the fast path and the full decoder agree on every value the
// fast path accepts; whatever decodes re-encodes to JSON that decodes to the
// same devices. `vendor` (devicevendor) is read but never written by the
// encoder, so it is cleared before comparing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/node_codec.hpp"
#include "fuzz_fail.hpp"
#include "src/codec/node_json.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("node_json", what, value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto fast = devshare::internal::DecodeNodeJsonFast(input)) {
    auto full = devshare::internal::DecodeNodeJsonFull(input);
    if (!full.ok()) Fail("the fast path accepted what the full decoder rejects", input);
    if (*full != *fast) Fail("the fast path and the full decoder disagree", input);
  }
  auto decoded = devshare::DecodeNodeDevices(input, devshare::RegisterFormat::kJson);
  if (!decoded.ok()) return 0;

  std::vector<devshare::Device> devices = std::move(decoded).value();
  for (devshare::Device& d : devices) d.vendor.clear();

  const std::string encoded = devshare::EncodeNodeDevices(devices, devshare::RegisterFormat::kJson);
  auto again = devshare::DecodeNodeDevices(encoded, devshare::RegisterFormat::kJson);
  if (!again.ok()) Fail("re-encoded devices do not decode", encoded);
  if (*again != devices) Fail("round trip changed the devices", encoded);
  // The encoding is canonical: encoding again gives the same bytes.
  if (devshare::EncodeNodeDevices(*again, devshare::RegisterFormat::kJson) != encoded) {
    Fail("encoding is not stable", encoded);
  }
  return 0;
}
