// Fuzzes DecodeMigAllocations (`hami.io/vgpu-mig-allocations`).
//
// Property: decoded reservations re-encode to a value that decodes to the
// same reservations (an empty list encodes as "" and "" decodes to an empty
// list, so that case holds too), and the encoding is stable.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "devshare/pod_codec.hpp"
#include "fuzz_fail.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("mig_allocations", what, value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto decoded = devshare::DecodeMigAllocations(input);
  if (!decoded.ok()) return 0;

  const std::string encoded = devshare::EncodeMigAllocations(*decoded);
  if (decoded->empty() != encoded.empty()) Fail("empty list <=> empty value violated", encoded);
  auto again = devshare::DecodeMigAllocations(encoded);
  if (!again.ok()) Fail("re-encoded reservations do not decode", encoded);
  if (*again != *decoded) Fail("round trip changed the reservations", encoded);
  if (devshare::EncodeMigAllocations(*again) != encoded) Fail("encoding is not stable", encoded);
  return 0;
}
