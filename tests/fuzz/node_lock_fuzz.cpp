// Fuzzes DecodeNodeLock (`hami.io/mutex.lock`).
//
// Property: decode(encode(lock)) == lock. Strings are not compared: decoding
// drops fractional seconds and "-00:00" is re-encoded as "Z".
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "devshare/annotations.hpp"
#include "fuzz_fail.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("node_lock", what, value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto decoded = devshare::DecodeNodeLock(input);
  if (!decoded.ok()) return 0;

  const std::string encoded = devshare::EncodeNodeLock(*decoded);
  auto again = devshare::DecodeNodeLock(encoded);
  if (!again.ok()) Fail("re-encoded lock does not decode", encoded);
  if (*again != *decoded) Fail("round trip changed the lock", encoded);
  if (devshare::EncodeNodeLock(*again) != encoded) Fail("encoding is not stable", encoded);
  return 0;
}
