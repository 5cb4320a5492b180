// Private: one parser for pod-devices values, shared by DecodePodDevices
// (which builds the value) and the snapshot (which collapses usage straight
// from the text without building it).
#ifndef DEVSHARE_SRC_POD_SCAN_HPP_
#define DEVSHARE_SRC_POD_SCAN_HPP_

#include <cstdint>
#include <string_view>

#include "base/text.hpp"
#include "devshare/status.hpp"

namespace devshare::internal {

// One device of a pod-devices value; the views point into the value.
struct ScannedDevice {
  std::string_view uuid;
  std::string_view type;
  std::int32_t usedmem = 0;
  std::int32_t usedcores = 0;
};

// Parses "UUID,Type,Usedmem,Usedcores" found at byte `base` of the value, as
// device `device` of container `container` (for error messages).
Status ParsePodDevice(std::string_view text, std::size_t base, std::size_t container,
                      std::size_t device, ScannedDevice& out);

// Splits a pod-devices value as HAMi does (every ';' piece is a container,
// the trailing one included) and calls on_container(container) for each
// piece, then on_device(container, device) for each device in it. Stops at
// the first malformed device and returns its error.
template <typename OnContainer, typename OnDevice>
Status ScanPodDevices(std::string_view value, OnContainer&& on_container, OnDevice&& on_device) {
  Status status;
  std::size_t container = 0;
  ForEachSplit(value, ';', [&](std::string_view container_text, std::size_t base) {
    on_container(container);
    std::size_t device = 0;
    ForEachSplit(container_text, ':', [&](std::string_view device_text, std::size_t offset) {
      if (device_text.empty()) return true;
      ScannedDevice d;
      status = ParsePodDevice(device_text, base + offset, container, device, d);
      if (!status.ok()) return false;
      on_device(container, d);
      ++device;
      return true;
    });
    ++container;
    return status.ok();
  });
  return status;
}

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_POD_SCAN_HPP_
