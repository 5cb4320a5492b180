// Fuzzes DecodePairScores (`hami.io/node-nvidia-score`).
//
// Properties: each entry's scores are sorted by peer uuid and unique (as the
// header promises), and decode(encode(x)) == x.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "devshare/node_codec.hpp"
#include "fuzz_fail.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("pair_scores", what, value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto decoded = devshare::DecodePairScores(input);
  if (!decoded.ok()) return 0;

  for (const devshare::DevicePairScore& entry : *decoded) {
    for (std::size_t j = 1; j < entry.scores.size(); ++j) {
      if (!(entry.scores[j - 1].first < entry.scores[j].first)) {
        Fail("scores not sorted and unique by peer uuid", input);
      }
    }
  }

  const std::string encoded = devshare::EncodePairScores(*decoded);
  auto again = devshare::DecodePairScores(encoded);
  if (!again.ok()) Fail("re-encoded scores do not decode", encoded);
  if (*again != *decoded) Fail("round trip changed the scores", encoded);
  return 0;
}
