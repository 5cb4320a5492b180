// Private: the colon formats of a node's register annotation (the formats
// are in devshare/node_codec.hpp): HAMi's legacy form
//   ID,Count,Devmem,Devcore,Type,Numa,Health[,Index,Mode]:
// and Volcano's `volcano.sh/node-vgpu-register`
//   UUID,Count,Devmem,Type,Health,Mode:
// Each decoder is total: a kMalformed Status naming the field
// (`device[2].devmem`) and the byte offset, never a partial list.
#ifndef DEVSHARE_SRC_NODE_COLON_HPP_
#define DEVSHARE_SRC_NODE_COLON_HPP_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/device.hpp"
#include "devshare/status.hpp"

namespace devshare::internal {

// The legacy form, 7 or 9 fields a record (7: Index 0, Mode "hami-core").
// A value of only separators decodes to an empty list; a value without ':'
// is malformed.
Result<std::vector<Device>> DecodeNodeLegacy(std::string_view value);
// Every device in the 9-field legacy form, each record ending in ':'.
std::string EncodeNodeLegacy(std::span<const Device> devices);

// Volcano's form, 6 fields a record: Devcore is 100, Index the record's
// position among the ':'-separated records (empty ones counted); Count and
// Devmem must not be negative (Volcano's are unsigned).
Result<std::vector<Device>> DecodeNodeVolcano(std::string_view value);
// Every device in Volcano's form, each record ending in ':'.
std::string EncodeNodeVolcano(std::span<const Device> devices);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_NODE_COLON_HPP_
