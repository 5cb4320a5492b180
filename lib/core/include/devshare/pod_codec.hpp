// devshare/pod_codec.hpp — pod annotations: device assignment and MIG
// reservations.
//
// Pod devices (`hami.io/vgpu-devices-to-allocate`, `-allocated`; other
// vendors `hami.io/<x>-devices-...`): each device is
// `UUID,Type,Usedmem,Usedcores` terminated by ':', each container's run is
// terminated by ';', init containers first:
//     "GPU-a,NVIDIA,1000,30:;"           one container, one device
//     ";GPU-a,NVIDIA,1000,30:;;"         three containers, the middle one
// Volcano (`volcano.sh/vgpu-ids-new`, `volcano.sh/devices-to-allocate`)
// joins the containers' runs with ';' instead, without the last one:
//     "GPU-a,NVIDIA,1000,30:"            one container, one device
// Decoding splits on ';' and keeps every piece, so a value HAMi wrote for N
// containers decodes to N+1 entries (the last one empty), exactly as HAMi.
//
// MIG reservations (`hami.io/vgpu-mig-allocations`): a JSON array of
//   {"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"2g.10gb",
//    "placement":{"start":0,"size":2}}
// optionally completed by the device plugin with "migUUID",
// "gpuInstanceID" and "computeInstanceID" (all three or none).
//
// Decoders are total (kMalformed naming field and byte offset); encoders write
// the bytes HAMi writes.
//
// Thread-safety: pure functions; safe to call concurrently.
#ifndef DEVSHARE_POD_CODEC_HPP_
#define DEVSHARE_POD_CODEC_HPP_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/device.hpp"
#include "devshare/export.hpp"
#include "devshare/status.hpp"

namespace devshare {

// Decodes a pod-devices value into one entry per ';'-separated piece.
// "" decodes to one empty container, as in HAMi.
// Errors: a device with fewer or more than 4 fields, an empty UUID or type,
// a memory or core field that is not a non-negative int32.
DEVSHARE_EXPORT Result<PodSingleDevice> DecodePodDevices(std::string_view value);

// The same into `out`, reusing the storage it already has (its vectors and
// strings keep their capacity), for callers that decode again and again
// without allocating. On error `out` is cleared.
DEVSHARE_EXPORT Status DecodePodDevicesInto(std::string_view value, PodSingleDevice& out);

// Encodes one container's devices: "UUID,Type,mem,cores:" per device.
DEVSHARE_EXPORT std::string EncodeContainerDevices(const ContainerDevices& devices);

// How the containers' runs are separated.
enum class PodDevicesFormat {
  kHami,     // each terminated by ';'
  kVolcano,  // joined by ';'
};

// Encodes every container. An empty pod encodes as "".
DEVSHARE_EXPORT std::string EncodePodDevices(const PodSingleDevice& containers,
                                             PodDevicesFormat format = PodDevicesFormat::kHami);

// Only the devices whose type equals `type`, joined by ':' with no trailing
// separator (HAMi's EncodeContainerDeviceType).
DEVSHARE_EXPORT std::string EncodeContainerDeviceType(const ContainerDevices& devices,
                                                      std::string_view type);

// Decodes MIG reservations; "" decodes to an empty list. Errors: not a JSON
// array of objects, an incomplete entry (negative index, empty gpuUUID or
// profile, placement size 0), a partial runtime identity, or a repeated
// (containerIndex, deviceIndex) pair.
DEVSHARE_EXPORT Result<std::vector<MigAllocation>> DecodeMigAllocations(std::string_view value);
// Encodes reservations; an empty list encodes as "" (HAMi writes no key).
DEVSHARE_EXPORT std::string EncodeMigAllocations(std::span<const MigAllocation> allocations);

}  // namespace devshare

#endif  // DEVSHARE_POD_CODEC_HPP_
