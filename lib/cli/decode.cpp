#include "decode.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "devshare/annotations.hpp"
#include "devshare/node_codec.hpp"
#include "devshare/pod_codec.hpp"
#include "read_file.hpp"
#include "table.hpp"

namespace devshare::cli {

namespace {

namespace json = boost::json;

struct DecodeOptions {
  std::string value;
  std::string file;
  bool json = false;
  std::string format = "auto";
  std::int32_t zone_offset = 0;
};

// The value to decode: the argument, or the file's contents (without a
// trailing newline) when --file is given.
Result<std::string> ReadValue(const DecodeOptions& o) {
  if (o.file.empty()) return o.value;
  Result<std::string> text = ReadFile(o.file);
  if (!text.ok()) return text.status();
  std::string value = std::move(*text);
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
  return value;
}

std::string Join(const std::vector<std::string>& items) {
  return fmt::format("{}", fmt::join(items, ", "));
}

json::value DeviceJson(const Device& d) {
  json::array profiles;
  for (const MigProfile& p : d.mig_profiles) {
    json::array placements;
    for (const MigPlacement& pl : p.placements) {
      placements.push_back(json::object{{"start", pl.start}, {"size", pl.size}});
    }
    profiles.push_back(json::object{{"name", p.name},
                                    {"memoryMB", p.memory_mb},
                                    {"core", p.core},
                                    {"sliceCount", p.slice_count},
                                    {"placements", std::move(placements)}});
  }
  return json::object{{"id", d.id},           {"index", d.index},
                      {"count", d.count},     {"devmem", d.devmem},
                      {"devcore", d.devcore}, {"type", d.type},
                      {"numa", d.numa},       {"mode", d.mode},
                      {"health", d.health},   {"migProfiles", std::move(profiles)}};
}

int DecodeNode(const std::string& value, const DecodeOptions& o) {
  Result<RegisterFormat> format = ParseRegisterFormat(o.format);
  if (!format.ok()) {
    std::cerr << "devshare decode node: " << format.status().message() << "\n";
    return 1;
  }
  Result<std::vector<Device>> devices = DecodeNodeDevices(value, *format);
  if (!devices.ok()) {
    std::cerr << "devshare decode node: " << devices.status().message() << "\n";
    return 1;
  }
  if (o.json) {
    json::array out;
    for (const Device& d : *devices) out.push_back(DeviceJson(d));
    std::cout << json::serialize(out) << "\n";
    return 0;
  }
  // In registration order; MIG profiles below the table, to keep it narrow.
  Table table({"ID", "INDEX", "SLOTS", "MEMORY", "CORES", "TYPE", "NUMA", "MODE", "HEALTHY"});
  std::string mig;
  for (const Device& d : *devices) {
    std::vector<std::string> profiles;
    profiles.reserve(d.mig_profiles.size());
    for (const MigProfile& p : d.mig_profiles) {
      profiles.push_back(fmt::format("{} x{}", p.name, p.placements.size()));
    }
    if (!profiles.empty()) mig += fmt::format("{} MIG profiles: {}\n", d.id, Join(profiles));
    table.AddRow({d.id, std::to_string(d.index), std::to_string(d.count), std::to_string(d.devmem),
                  std::to_string(d.devcore), d.type, std::to_string(d.numa), d.mode,
                  d.health ? "yes" : "no"});
  }
  std::cout << table.Render() << mig << devices->size()
            << " device(s); memory in MiB, cores in % of one device\n";
  return 0;
}

int DecodePod(const std::string& value, const DecodeOptions& o) {
  Result<PodSingleDevice> pod = DecodePodDevices(value);
  if (!pod.ok()) {
    std::cerr << "devshare decode pod: " << pod.status().message() << "\n";
    return 1;
  }
  if (o.json) {
    json::array out;
    for (const ContainerDevices& container : *pod) {
      json::array devices;
      for (const ContainerDevice& d : container) {
        devices.push_back(json::object{{"uuid", d.uuid},
                                       {"type", d.type},
                                       {"usedmem", d.usedmem},
                                       {"usedcores", d.usedcores}});
      }
      out.push_back(std::move(devices));
    }
    std::cout << json::serialize(out) << "\n";
    return 0;
  }
  Table table({"CONTAINER", "UUID", "TYPE", "MEMORY(MiB)", "CORES(%)"});
  for (std::size_t c = 0; c < pod->size(); ++c) {
    if ((*pod)[c].empty()) table.AddRow({std::to_string(c), "-", "", "", ""});
    for (const ContainerDevice& d : (*pod)[c]) {
      table.AddRow({std::to_string(c), d.uuid, d.type, std::to_string(d.usedmem),
                    std::to_string(d.usedcores)});
    }
  }
  std::cout << table.Render() << pod->size()
            << " container entr(ies); a value ending in ';' decodes to one more, empty, entry\n";
  return 0;
}

std::string UtcTime(std::int64_t unix_seconds) {
  NodeLock at;
  at.unix_seconds = unix_seconds;
  return EncodeNodeLock(at);  // RFC 3339 in UTC
}

int DecodeLock(const std::string& value, const DecodeOptions& o) {
  Result<NodeLock> lock = DecodeNodeLock(value);
  if (!lock.ok()) {
    std::cerr << "devshare decode lock: " << lock.status().message() << "\n";
    return 1;
  }
  if (o.json) {
    json::object out{{"time", UtcTime(lock->unix_seconds)},
                     {"unixSeconds", lock->unix_seconds},
                     {"utcOffsetSeconds", lock->utc_offset_seconds},
                     {"legacy", !lock->has_owner}};
    if (lock->has_owner) {
      out["namespace"] = lock->pod_namespace;
      out["name"] = lock->pod_name;
    }
    std::cout << json::serialize(out) << "\n";
    return 0;
  }
  Table table({"FIELD", "VALUE"});
  table.AddRow({"locked at (UTC)", UtcTime(lock->unix_seconds)});
  table.AddRow({"writer's UTC offset", fmt::format("{}s", lock->utc_offset_seconds)});
  table.AddRow({"form", lock->has_owner ? "owner" : "legacy (no owner)"});
  if (lock->has_owner) table.AddRow({"owner", lock->pod_namespace + "/" + lock->pod_name});
  std::cout << table.Render();
  return 0;
}

int DecodeHandshakeValue(const std::string& value, const DecodeOptions& o) {
  Result<Handshake> h = DecodeHandshake(value, o.zone_offset);
  if (!h.ok()) {
    std::cerr << "devshare decode handshake: " << h.status().message() << "\n";
    return 1;
  }
  const std::string_view dialect = h->dialect == HandshakeDialect::kHami ? "hami" : "volcano";
  if (o.json) {
    json::object out{{"state", HandshakeStateName(h->state)}, {"dialect", dialect}};
    if (h->unix_seconds) {
      out["time"] = UtcTime(*h->unix_seconds);
      out["unixSeconds"] = *h->unix_seconds;
    }
    std::cout << json::serialize(out) << "\n";
    return 0;
  }
  Table table({"FIELD", "VALUE"});
  table.AddRow({"state", std::string(HandshakeStateName(h->state))});
  table.AddRow({"dialect", std::string(dialect)});
  table.AddRow({"time (UTC)", h->unix_seconds ? UtcTime(*h->unix_seconds) : "-"});
  std::cout << table.Render();
  return 0;
}

int DecodeWeights(const std::string& value, const DecodeOptions& o) {
  Result<ScoringWeights> w = DecodeScoringWeights(value);
  if (!w.ok()) {
    std::cerr << "devshare decode weights: " << w.status().message() << "\n";
    return 1;
  }
  if (o.json) {
    std::cout << json::serialize(
                     json::object{{"slot", w->slot}, {"core", w->core}, {"memory", w->memory}})
              << "\n";
    return 0;
  }
  Table table({"DIMENSION", "WEIGHT"});
  table.AddRow({"slot", std::to_string(w->slot)});
  table.AddRow({"core", std::to_string(w->core)});
  table.AddRow({"memory", std::to_string(w->memory)});
  std::cout << table.Render();
  return 0;
}

int DecodeMig(const std::string& value, const DecodeOptions& o) {
  Result<std::vector<MigAllocation>> allocations = DecodeMigAllocations(value);
  if (!allocations.ok()) {
    std::cerr << "devshare decode mig: " << allocations.status().message() << "\n";
    return 1;
  }
  if (o.json) {
    json::array out;
    for (const MigAllocation& a : *allocations) {
      json::object entry{
          {"containerIndex", a.container_index},
          {"deviceIndex", a.device_index},
          {"gpuUUID", a.gpu_uuid},
          {"profile", a.profile},
          {"placement", json::object{{"start", a.placement.start}, {"size", a.placement.size}}}};
      if (!a.mig_uuid.empty()) entry["migUUID"] = a.mig_uuid;
      if (a.gpu_instance_id) entry["gpuInstanceID"] = *a.gpu_instance_id;
      if (a.compute_instance_id) entry["computeInstanceID"] = *a.compute_instance_id;
      out.push_back(std::move(entry));
    }
    std::cout << json::serialize(out) << "\n";
    return 0;
  }
  Table table({"CTR", "DEV", "GPU", "PROFILE", "PLACE", "MIG UUID", "GI", "CI"});
  for (const MigAllocation& a : *allocations) {
    table.AddRow({std::to_string(a.container_index), std::to_string(a.device_index), a.gpu_uuid,
                  a.profile, fmt::format("{}+{}", a.placement.start, a.placement.size),
                  a.mig_uuid.empty() ? "-" : a.mig_uuid,
                  a.gpu_instance_id ? std::to_string(*a.gpu_instance_id) : "-",
                  a.compute_instance_id ? std::to_string(*a.compute_instance_id) : "-"});
  }
  std::cout << table.Render()
            << "CTR: container, DEV: its device, PLACE: first slice+slices, GI/CI: GPU and "
               "compute instance\n";
  return 0;
}

int DecodeScores(const std::string& value, const DecodeOptions& o) {
  Result<std::vector<DevicePairScore>> scores = DecodePairScores(value);
  if (!scores.ok()) {
    std::cerr << "devshare decode scores: " << scores.status().message() << "\n";
    return 1;
  }
  if (o.json) {
    json::array out;
    for (const DevicePairScore& s : *scores) {
      json::object peers;
      for (const auto& [peer, score] : s.scores) peers[peer] = score;
      out.push_back(json::object{{"uuid", s.uuid}, {"score", std::move(peers)}});
    }
    std::cout << json::serialize(out) << "\n";
    return 0;
  }
  Table table({"GPU", "PEER", "SCORE"});
  for (const DevicePairScore& s : *scores) {
    for (const auto& [peer, score] : s.scores) table.AddRow({s.uuid, peer, std::to_string(score)});
  }
  std::cout << table.Render();
  return 0;
}

using Decoder = int (*)(const std::string&, const DecodeOptions&);

void AddKind(CLI::App& decode, const char* name, const char* help, Decoder decoder, int& exit_code,
             bool with_format, bool with_zone) {
  auto options = std::make_shared<DecodeOptions>();
  CLI::App* sub = decode.add_subcommand(name, help);
  auto* value = sub->add_option("VALUE", options->value, "the annotation value");
  auto* file = sub->add_option("--file", options->file, "read the value from this file");
  value->excludes(file);
  sub->add_flag("--json", options->json, "print JSON instead of a table");
  if (with_format) {
    sub->add_option("--format", options->format, kRegisterFormatNames.Names(" | "))
        ->capture_default_str();
  }
  if (with_zone) {
    sub->add_option("--zone-offset", options->zone_offset,
                    "seconds east of UTC to read zone-less times in (default 0 = UTC)");
  }
  sub->callback([options, decoder, &exit_code, sub] {
    if (options->file.empty() && sub->count("VALUE") == 0) {
      throw CLI::RequiredError("VALUE or --file");
    }
    Result<std::string> value = ReadValue(*options);
    if (!value.ok()) {
      std::cerr << "devshare decode: " << value.status().message() << "\n";
      exit_code = 1;
      return;
    }
    exit_code = decoder(*value, *options);
  });
}

}  // namespace

void AddDecodeCommand(CLI::App& app, int& exit_code) {
  CLI::App* decode = app.add_subcommand("decode", "decode an annotation value");
  decode->require_subcommand(1);
  AddKind(*decode, "node", "node register annotation (JSON, legacy or Volcano)", DecodeNode,
          exit_code, true, false);
  AddKind(*decode, "pod", "pod devices (hami.io/vgpu-devices-allocated and friends)", DecodePod,
          exit_code, false, false);
  AddKind(*decode, "lock", "node lock (hami.io/mutex.lock)", DecodeLock, exit_code, false, false);
  AddKind(*decode, "handshake", "handshake (hami.io/node-handshake, Volcano's)",
          DecodeHandshakeValue, exit_code, false, true);
  AddKind(*decode, "weights", "device scoring weights (hami.io/device-scoring-weights)",
          DecodeWeights, exit_code, false, false);
  AddKind(*decode, "mig", "MIG reservations (hami.io/vgpu-mig-allocations)", DecodeMig, exit_code,
          false, false);
  AddKind(*decode, "scores", "GPU pair scores (hami.io/node-nvidia-score)", DecodeScores, exit_code,
          false, false);
}

}  // namespace devshare::cli
