// Fuzzes the DRA decoders (ResourceSlice, DeviceClass, ResourceClaim,
// ResourceClaimTemplate, the extended-resource claims annotation) and
// quantity parsing.
//
// Properties: no crash; whatever decodes, encodes to JSON that decodes to
// the same value (nothing lost, nothing invented); a parsed quantity
// formats to text that parses back to it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "devshare/dra.hpp"
#include "devshare/dra_extended.hpp"
#include "fuzz_fail.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("dra_objects", what, value);
}

template <typename T, typename Decode, typename Encode>
void RoundTrip(std::string_view input, Decode decode, Encode encode, const char* what) {
  devshare::Result<T> decoded = decode(input);
  if (!decoded.ok()) return;
  const std::string json = encode(*decoded);
  devshare::Result<T> again = decode(json);
  if (!again.ok()) Fail(what, json);
  if (!(*again == *decoded)) Fail(what, json);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace dra = devshare::dra;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto q = dra::ParseQuantity(input)) {
    const std::string text = dra::FormatQuantity(*q);
    if (dra::ParseQuantity(text) != q) Fail("quantity does not format back", text);
  }
  RoundTrip<dra::ResourceSlice>(input, dra::DecodeResourceSlice, dra::EncodeResourceSlice,
                                "ResourceSlice does not round-trip");
  RoundTrip<dra::DeviceClass>(input, dra::DecodeDeviceClass, dra::EncodeDeviceClass,
                              "DeviceClass does not round-trip");
  RoundTrip<dra::ResourceClaim>(input, dra::DecodeResourceClaim, dra::EncodeResourceClaim,
                                "ResourceClaim does not round-trip");
  RoundTrip<dra::ResourceClaimTemplate>(input, dra::DecodeResourceClaimTemplate,
                                        dra::EncodeResourceClaimTemplate,
                                        "ResourceClaimTemplate does not round-trip");
  RoundTrip<std::vector<dra::ExtendedClaim>>(input, dra::DecodeExtendedClaims,
                                             dra::EncodeExtendedClaims,
                                             "extended resource claims do not round-trip");
  return 0;
}
