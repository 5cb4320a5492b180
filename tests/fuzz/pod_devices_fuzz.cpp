// Fuzzes DecodePodDevices (`hami.io/vgpu-devices-to-allocate`, `-allocated`,
// `volcano.sh/devices-to-allocate`).
//
// pod_codec.hpp: the encoder terminates every container by ';' and decoding
// keeps every ';'-separated piece, so "a value written for N containers
// decodes to N+1 entries (the last one empty)". Properties, for any decoded
// pod P (never empty: "" decodes to one empty container):
//   1. decode(encode(P)) == P + [{}]           (one trailing empty container)
//   2. if P's last container is empty (P was written by the encoder, or looks
//      like it): decode(encode(P without its last entry)) == P
//   3. encode(P) is the per-container EncodeContainerDevices(c) + ";"
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "devshare/pod_codec.hpp"
#include "fuzz_fail.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("pod_devices", what, value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto decoded = devshare::DecodePodDevices(input);
  if (!decoded.ok()) return 0;
  const devshare::PodSingleDevice& pod = *decoded;
  if (pod.empty()) Fail("decoded to no container at all", input);

  // 1.
  const std::string encoded = devshare::EncodePodDevices(pod);
  auto again = devshare::DecodePodDevices(encoded);
  if (!again.ok()) Fail("encoded pod does not decode", encoded);
  devshare::PodSingleDevice expected = pod;
  expected.emplace_back();
  if (*again != expected) Fail("decode(encode(P)) != P + [{}]", encoded);

  // 2.
  if (pod.back().empty()) {
    const devshare::PodSingleDevice written(pod.begin(), pod.end() - 1);
    const std::string value = devshare::EncodePodDevices(written);
    auto read = devshare::DecodePodDevices(value);
    if (!read.ok() || *read != pod) Fail("N containers written do not read as N+1", value);
  }

  // 3.
  std::string joined;
  for (const devshare::ContainerDevices& c : pod) {
    joined += devshare::EncodeContainerDevices(c);
    joined += ';';
  }
  if (joined != encoded) Fail("EncodePodDevices disagrees with EncodeContainerDevices", joined);
  return 0;
}
