// Fuzzes DecodeNodeDevices(kLegacy): "ID,Count,Devmem,Devcore,Type,Numa,
// Health[,Index,Mode]:" per device (Hygon DCU and other older vendors).
//
// Property: decoded devices re-encode (always in the 9-field form) to a
// value that decodes to the same devices. The 7-field form decodes to index 0
// and mode "hami-core", which the 9-field form carries explicitly, so the
// decoded structs still compare equal. A decoded text field cannot contain
// ',' or ':' (they are the separators); the check is guarded anyway so that
// the property stays true if that ever changes. An empty list is skipped: it
// encodes as "", which (as in HAMi) is not a valid legacy value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/node_codec.hpp"
#include "fuzz_fail.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("node_legacy", what, value);
}

bool HasSeparator(std::string_view s) { return s.find_first_of(",:") != std::string_view::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto decoded = devshare::DecodeNodeDevices(input, devshare::RegisterFormat::kLegacy);
  if (!decoded.ok() || decoded->empty()) return 0;

  for (const devshare::Device& d : *decoded) {
    if (HasSeparator(d.id) || HasSeparator(d.type) || HasSeparator(d.mode)) {
      Fail("a decoded field contains a separator", d.id + "|" + d.type + "|" + d.mode);
    }
  }

  const std::string encoded =
      devshare::EncodeNodeDevices(*decoded, devshare::RegisterFormat::kLegacy);
  auto again = devshare::DecodeNodeDevices(encoded, devshare::RegisterFormat::kLegacy);
  if (!again.ok()) Fail("re-encoded devices do not decode", encoded);
  if (*again != *decoded) Fail("round trip changed the devices", encoded);
  return 0;
}
