// Fuzzes DecodeNodeDevices(kVolcano) (`volcano.sh/node-vgpu-register`):
// "UUID,Count,Devmem,Type,Health,Mode:" per device.
//
// Index is the record's position among the ':'-separated pieces, empty pieces
// included ("a:::b" gives indices 0 and 3), while the encoder writes no empty
// pieces, so re-decoding numbers the devices 0..n-1. Properties:
//   - decoded indices are strictly increasing;
//   - every device has devcore 100;
//   - decode(encode(devices)) equals devices with index replaced by position.
// An empty list is skipped: it encodes as "", not a valid Volcano value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/node_codec.hpp"
#include "fuzz_fail.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("node_volcano", what, value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto decoded = devshare::DecodeNodeDevices(input, devshare::RegisterFormat::kVolcano);
  if (!decoded.ok() || decoded->empty()) return 0;

  std::vector<devshare::Device> devices = std::move(decoded).value();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].devcore != 100) Fail("devcore is not 100", input);
    if (i > 0 && devices[i].index <= devices[i - 1].index) Fail("indices not increasing", input);
  }

  const std::string encoded =
      devshare::EncodeNodeDevices(devices, devshare::RegisterFormat::kVolcano);
  auto again = devshare::DecodeNodeDevices(encoded, devshare::RegisterFormat::kVolcano);
  if (!again.ok()) Fail("re-encoded devices do not decode", encoded);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    devices[i].index = static_cast<std::uint32_t>(i);
  }
  if (*again != devices) Fail("round trip changed the devices", encoded);
  return 0;
}
