// devshare/node_codec.hpp — node annotations: device registration and pair
// scores.
//
// Formats (spec/hami-behaviour.md §1.3, §1.4; Volcano: peers §A1):
//
//   JSON (`hami.io/node-nvidia-register`, Ascend): an array of DeviceInfo,
//     keys in the order id,index,count,devmem,devcore,type,numa,mode,
//     migProfiles,health, every one omitted when zero/empty (so a missing
//     `health` means false). Keys match case-insensitively, unknown keys are
//     ignored, `null` leaves a field at its zero value.
//       [{"id":"GPU-a","count":10,"devmem":32768,"devcore":100,
//         "type":"NVIDIA-Tesla V100-PCIE-32GB","mode":"hami-core","health":true}]
//   Legacy colon format (Hygon and other older vendors): per device
//       ID,Count,Devmem,Devcore,Type,Numa,Health,Index,Mode:
//     terminated by ':'. The decoder also accepts the 7-field form without
//     Index and Mode (Index 0, Mode "hami-core").
//   Volcano (`volcano.sh/node-vgpu-register`): per device
//       UUID,Count,Devmem,Type,Health,Mode:
//     Devcore is implied 100 and Index is the record's position.
//
// Every decoder is total: on malformed input it returns a kMalformed Status
// naming the field (for example `device[2].devmem`) and the byte offset; it
// never returns a partial list. Encoders write the bytes HAMi/Volcano write.
//
// Thread-safety: pure functions; safe to call concurrently.
#ifndef DEVSHARE_NODE_CODEC_HPP_
#define DEVSHARE_NODE_CODEC_HPP_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/device.hpp"
#include "devshare/enum_names.hpp"
#include "devshare/export.hpp"
#include "devshare/status.hpp"

namespace devshare {

enum class RegisterFormat {
  kAuto,  // decode only: JSON if the value starts with '[' or is `null`,
          // Volcano if the first record has 6 fields, else legacy
  kJson,
  kLegacy,
  kVolcano,
};

inline constexpr auto kRegisterFormatNames =
    MakeEnumNames<RegisterFormat>({{"auto", RegisterFormat::kAuto},
                                   {"json", RegisterFormat::kJson},
                                   {"legacy", RegisterFormat::kLegacy},
                                   {"volcano", RegisterFormat::kVolcano}});

// The format kRegisterFormatNames calls `name`; kInvalidArgument
// `unknown register format "yaml" (want one of auto, json, legacy, volcano)`.
DEVSHARE_EXPORT Result<RegisterFormat> ParseRegisterFormat(std::string_view name);
DEVSHARE_EXPORT std::string_view RegisterFormatName(RegisterFormat format);

// Decodes a node register annotation. An empty JSON array (or `null`) and a
// legacy value of only separators decode to an empty list.
// Errors: kMalformed with field and offset.
DEVSHARE_EXPORT Result<std::vector<Device>> DecodeNodeDevices(
    std::string_view value, RegisterFormat format = RegisterFormat::kAuto);

// Encodes devices in `format`. REQUIRES: format != kAuto.
// kJson writes only the fields the NVIDIA device plugin writes (never
// devicevendor or custominfo), exactly as Go's encoding/json would.
DEVSHARE_EXPORT std::string EncodeNodeDevices(std::span<const Device> devices,
                                              RegisterFormat format);

// Decodes `hami.io/node-nvidia-score`:
//   [{"uuid":"GPU-0","score":{"GPU-1":100,"GPU-2":200}}, ...]
// Each entry's scores come out sorted by peer uuid.
DEVSHARE_EXPORT Result<std::vector<DevicePairScore>> DecodePairScores(std::string_view value);
DEVSHARE_EXPORT std::string EncodePairScores(std::span<const DevicePairScore> scores);

}  // namespace devshare

#endif  // DEVSHARE_NODE_CODEC_HPP_
