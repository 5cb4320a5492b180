// Fuzzes DecodeLease and DecodeMicroTime (coordination.k8s.io/v1 Lease).
//
// Properties: no crash; a decoded Lease encodes and decodes back equal, and
// a decoded MicroTime re-encodes to a MicroTime that decodes to the same
// instant.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "devshare/lease.hpp"
#include "fuzz_fail.hpp"

namespace {
[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("lease", what, value);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto t = devshare::DecodeMicroTime(input); t.ok()) {
    const std::string again = devshare::EncodeMicroTime(*t);
    auto back = devshare::DecodeMicroTime(again);
    if (!back.ok() || *back != *t) Fail("MicroTime round trip", again);
  }
  auto lease = devshare::DecodeLease(input);
  if (!lease.ok()) return 0;
  const std::string encoded = devshare::EncodeLease(*lease);
  auto back = devshare::DecodeLease(encoded);
  if (!back.ok() || *back != *lease) Fail("Lease round trip", encoded);
  return 0;
}
