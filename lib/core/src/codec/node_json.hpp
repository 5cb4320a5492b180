// Private: the two readers of the node register JSON and its writer.
// DecodeNodeDevices tries the fast path first and falls back to the full
// decoder.
//
// The fast path reads the plain form the
// device plugins write (no whitespace, no escapes, printable ASCII strings,
// integers, the flat DeviceInfo keys spelled as Go writes them). Anything
// else — including every malformed value — is left to the full decoder,
// which also gives the errors; the two agree on every value the fast path
// accepts (tests/fuzz/node_json_fuzz.cpp checks it).
#ifndef DEVSHARE_SRC_NODE_JSON_HPP_
#define DEVSHARE_SRC_NODE_JSON_HPP_

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/device.hpp"
#include "devshare/status.hpp"

namespace devshare::internal {

// The devices, or nullopt when `value` is not in the plain form.
std::optional<std::vector<Device>> DecodeNodeJsonFast(std::string_view value);

// The full decoder: every form Go's encoding/json accepts, and every error.
Result<std::vector<Device>> DecodeNodeJsonFull(std::string_view value);

// The JSON the NVIDIA device plugin writes (devshare/node_codec.hpp): never
// devicevendor or custominfo, byte for byte as Go's encoding/json.
std::string EncodeNodeJson(std::span<const Device> devices);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_NODE_JSON_HPP_
