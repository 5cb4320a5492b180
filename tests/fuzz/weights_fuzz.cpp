// Fuzzes DecodeScoringWeights (`hami.io/device-scoring-weights`).
//
// Properties: decoded weights are non-negative and not all zero, and
// decode(encode(w)) == w.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "devshare/annotations.hpp"
#include "fuzz_fail.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("weights", what, value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto decoded = devshare::DecodeScoringWeights(input);
  if (!decoded.ok()) return 0;

  const devshare::ScoringWeights& w = *decoded;
  if (w.slot < 0 || w.core < 0 || w.memory < 0) Fail("negative weight", input);
  if (w.slot == 0 && w.core == 0 && w.memory == 0) Fail("all weights zero", input);

  const std::string encoded = devshare::EncodeScoringWeights(w);
  auto again = devshare::DecodeScoringWeights(encoded);
  if (!again.ok()) Fail("re-encoded weights do not decode", encoded);
  if (*again != w) Fail("round trip changed the weights", encoded);
  return 0;
}
