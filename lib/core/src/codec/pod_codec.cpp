#include "devshare/pod_codec.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <set>
#include <utility>

#include "base/json.hpp"
#include "base/text.hpp"
#include "codec/pod_scan.hpp"

namespace devshare {

namespace {

constexpr std::string_view kPodWhat = "pod devices";
constexpr std::string_view kMigWhat = "MIG allocations";

Status DeviceError(std::size_t container, std::size_t device, std::string_view field,
                   std::string problem, std::size_t offset) {
  std::string path = field.empty()
                         ? fmt::format("container[{}].device[{}]", container, device)
                         : fmt::format("container[{}].device[{}].{}", container, device, field);
  std::string message = fmt::format("{}: {}: {} at byte {}", kPodWhat, path, problem, offset);
  return Status::Malformed(std::move(message), std::move(path), offset);
}

}  // namespace

Status internal::ParsePodDevice(std::string_view text, std::size_t base, std::size_t container,
                                std::size_t device, ScannedDevice& out) {
  std::array<std::string_view, 4> f;
  std::array<std::size_t, 4> at{};
  std::size_t n = 0;
  internal::ForEachSplit(text, ',', [&](std::string_view field, std::size_t offset) {
    if (n < 4) {
      f[n] = field;
      at[n] = offset;
    }
    ++n;
    return true;
  });
  if (n != 4) {
    return DeviceError(
        container, device, "",
        fmt::format("want 4 fields UUID,Type,Usedmem,Usedcores, got {} in {}", n, Quote(text)),
        base);
  }
  if (f[0].empty()) return DeviceError(container, device, "uuid", "empty device UUID", base);
  if (f[1].empty())
    return DeviceError(container, device, "type", "empty device type", base + at[1]);
  auto mem = internal::ParseGoInt(f[2], 32);
  if (!mem || *mem < 0) {
    return DeviceError(container, device, "usedmem",
                       fmt::format("not a non-negative int32: {}", Quote(f[2])), base + at[2]);
  }
  auto cores = internal::ParseGoInt(f[3], 32);
  if (!cores || *cores < 0) {
    return DeviceError(container, device, "usedcores",
                       fmt::format("not a non-negative int32: {}", Quote(f[3])), base + at[3]);
  }
  out.uuid = f[0];
  out.type = f[1];
  out.usedmem = static_cast<std::int32_t>(*mem);
  out.usedcores = static_cast<std::int32_t>(*cores);
  return Status();
}

namespace {

void AppendDevice(std::string& out, const ContainerDevice& d) {
  out += d.uuid;
  out += ',';
  out += d.type;
  fmt::format_to(std::back_inserter(out), ",{},{}", d.usedmem, d.usedcores);
}

}  // namespace

Status DecodePodDevicesInto(std::string_view value, PodSingleDevice& out) {
  std::size_t containers = 0;
  std::size_t devices = 0;  // in the current container
  auto finish_container = [&] {
    if (containers > 0) out[containers - 1].resize(devices);
  };
  Status status = internal::ScanPodDevices(
      value,
      [&](std::size_t) {
        finish_container();
        if (containers == out.size()) out.emplace_back();
        ++containers;
        devices = 0;
      },
      [&](std::size_t, const internal::ScannedDevice& d) {
        ContainerDevices& c = out[containers - 1];
        if (devices == c.size()) c.emplace_back();
        ContainerDevice& slot = c[devices++];
        slot.uuid.assign(d.uuid);
        slot.type.assign(d.type);
        slot.usedmem = d.usedmem;
        slot.usedcores = d.usedcores;
      });
  if (!status.ok()) {
    out.clear();
    return status;
  }
  finish_container();
  out.resize(containers);
  return Status();
}

Result<PodSingleDevice> DecodePodDevices(std::string_view value) {
  PodSingleDevice pod;
  pod.reserve(internal::CountChar(value, ';') + 1);
  Status status = DecodePodDevicesInto(value, pod);
  if (!status.ok()) return status;
  return pod;
}

std::string EncodeContainerDevices(const ContainerDevices& devices) {
  std::string out;
  for (const ContainerDevice& d : devices) {
    AppendDevice(out, d);
    out += ':';
  }
  return out;
}

std::string EncodePodDevices(const PodSingleDevice& containers, PodDevicesFormat format) {
  std::string out;
  for (std::size_t c = 0; c < containers.size(); ++c) {
    if (format == PodDevicesFormat::kVolcano && c > 0) out += ';';
    for (const ContainerDevice& d : containers[c]) {
      AppendDevice(out, d);
      out += ':';
    }
    if (format == PodDevicesFormat::kHami) out += ';';
  }
  return out;
}

std::string EncodeContainerDeviceType(const ContainerDevices& devices, std::string_view type) {
  std::string out;
  for (const ContainerDevice& d : devices) {
    if (d.type != type) continue;
    if (!out.empty()) out += ':';
    AppendDevice(out, d);
  }
  return out;
}

Result<std::vector<MigAllocation>> DecodeMigAllocations(std::string_view value) {
  std::vector<MigAllocation> out;
  if (value.empty()) return out;
  boost::json::monotonic_resource arena;
  Result<boost::json::value> doc =
      internal::ParseJson(value, kMigWhat, boost::json::storage_ptr(&arena));
  if (!doc.ok()) return doc.status();
  if (doc->is_null()) return out;
  if (!doc->is_array()) return internal::TypeError(kMigWhat, "value", "an array", *doc);
  const auto& array = doc->get_array();
  out.resize(array.size());
  constexpr std::int64_t kIntMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kIntMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kU32Max = std::numeric_limits<std::uint32_t>::max();
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  for (std::size_t i = 0; i < array.size(); ++i) {
    const std::string path = fmt::format("allocation[{}]", i);
    MigAllocation& a = out[i];
    if (!array[i].is_object()) return internal::TypeError(kMigWhat, path, "an object", array[i]);
    for (const auto& member : array[i].get_object()) {
      const std::string_view key = member.key();
      const boost::json::value& v = member.value();
      Status s;
      std::int64_t n = 0;
      if (internal::EqualFoldAscii(key, "containerIndex")) {
        s = internal::ReadInt(v, kIntMin, kIntMax, kMigWhat, path + ".containerIndex",
                              a.container_index);
      } else if (internal::EqualFoldAscii(key, "deviceIndex")) {
        s = internal::ReadInt(v, kIntMin, kIntMax, kMigWhat, path + ".deviceIndex", a.device_index);
      } else if (internal::EqualFoldAscii(key, "gpuUUID")) {
        s = internal::ReadString(v, kMigWhat, path + ".gpuUUID", a.gpu_uuid);
      } else if (internal::EqualFoldAscii(key, "profile")) {
        s = internal::ReadString(v, kMigWhat, path + ".profile", a.profile);
      } else if (internal::EqualFoldAscii(key, "migUUID")) {
        s = internal::ReadString(v, kMigWhat, path + ".migUUID", a.mig_uuid);
      } else if (internal::EqualFoldAscii(key, "gpuInstanceID")) {
        if (v.is_null()) {
          a.gpu_instance_id.reset();
          continue;
        }
        s = internal::ReadInt(v, 0, kU32Max, kMigWhat, path + ".gpuInstanceID", n);
        if (s.ok()) a.gpu_instance_id = static_cast<std::uint32_t>(n);
      } else if (internal::EqualFoldAscii(key, "computeInstanceID")) {
        if (v.is_null()) {
          a.compute_instance_id.reset();
          continue;
        }
        s = internal::ReadInt(v, 0, kU32Max, kMigWhat, path + ".computeInstanceID", n);
        if (s.ok()) a.compute_instance_id = static_cast<std::uint32_t>(n);
      } else if (internal::EqualFoldAscii(key, "placement")) {
        if (v.is_null()) continue;
        if (!v.is_object())
          return internal::TypeError(kMigWhat, path + ".placement", "an object", v);
        for (const auto& field : v.get_object()) {
          const bool is_start = internal::EqualFoldAscii(field.key(), "start");
          if (!is_start && !internal::EqualFoldAscii(field.key(), "size")) continue;
          std::int64_t p = is_start ? a.placement.start : a.placement.size;
          s = internal::ReadInt(field.value(), 0, kU32Max, kMigWhat,
                                path + (is_start ? ".placement.start" : ".placement.size"), p);
          if (!s.ok()) return s;
          (is_start ? a.placement.start : a.placement.size) = static_cast<std::uint32_t>(p);
        }
      }
      if (!s.ok()) return s;
    }
    if (a.container_index < 0 || a.device_index < 0 || a.gpu_uuid.empty() || a.profile.empty() ||
        a.placement.size == 0) {
      return Status::Malformed(
          fmt::format("{}: {} is incomplete (needs containerIndex >= 0, deviceIndex >= 0, "
                      "gpuUUID, profile and a placement of size > 0)",
                      kMigWhat, path),
          path);
    }
    const int runtime_fields = static_cast<int>(!a.mig_uuid.empty()) +
                               static_cast<int>(a.gpu_instance_id.has_value()) +
                               static_cast<int>(a.compute_instance_id.has_value());
    if (runtime_fields != 0 && runtime_fields != 3) {
      return Status::Malformed(
          fmt::format("{}: {} has a partial runtime identity (migUUID, gpuInstanceID and "
                      "computeInstanceID must be all present or all absent)",
                      kMigWhat, path),
          path);
    }
    if (!seen.emplace(a.container_index, a.device_index).second) {
      return Status::Malformed(
          fmt::format("{}: {}: duplicate allocation for container {} device {}", kMigWhat, path,
                      a.container_index, a.device_index),
          path);
    }
  }
  return out;
}

std::string EncodeMigAllocations(std::span<const MigAllocation> allocations) {
  if (allocations.empty()) return "";
  std::string out = "[";
  auto it = std::back_inserter(out);
  for (std::size_t i = 0; i < allocations.size(); ++i) {
    const MigAllocation& a = allocations[i];
    if (i > 0) out += ',';
    fmt::format_to(it, "{{\"containerIndex\":{},\"deviceIndex\":{},\"gpuUUID\":", a.container_index,
                   a.device_index);
    internal::AppendGoJsonString(out, a.gpu_uuid);
    out += ",\"profile\":";
    internal::AppendGoJsonString(out, a.profile);
    fmt::format_to(it, ",\"placement\":{{\"start\":{},\"size\":{}}}", a.placement.start,
                   a.placement.size);
    if (!a.mig_uuid.empty()) {
      out += ",\"migUUID\":";
      internal::AppendGoJsonString(out, a.mig_uuid);
    }
    if (a.gpu_instance_id) fmt::format_to(it, ",\"gpuInstanceID\":{}", *a.gpu_instance_id);
    if (a.compute_instance_id) {
      fmt::format_to(it, ",\"computeInstanceID\":{}", *a.compute_instance_id);
    }
    out += '}';
  }
  out += ']';
  return out;
}

}  // namespace devshare
