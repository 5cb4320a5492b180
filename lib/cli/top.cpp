#include "top.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "cluster_flags.hpp"
#include "devshare/annotations.hpp"
#include "devshare/filter.hpp"
#include "devshare/handshake.hpp"
#include "objects_file.hpp"
#include "read_file.hpp"
#include "table.hpp"

namespace devshare::cli {

namespace {

namespace bj = boost::json;

struct TopOptions {
  ClusterFlags live;
  std::string cluster;  // a file instead of the live cluster
  std::string device_config;
  std::string node;  // only this node, with its devices
  bool gpus = false;
  bool json = false;
  std::int64_t now = 0;
};

struct Amount {
  std::int64_t used = 0, total = 0;
  void Add(std::int64_t u, std::int64_t t) {
    used += u;
    total += t;
  }
  std::string Text() const { return fmt::format("{}/{}", used, total); }
  bj::object Json() const { return bj::object{{"used", used}, {"total", total}}; }
};

struct DeviceRow {
  DeviceView view;
  std::vector<std::string> pods;
};

// Something wrong with a node: a few words for the table, the whole story below it.
struct Note {
  std::string brief, detail;
};

struct NodeRow {
  std::string name;
  std::vector<DeviceRow> devices;
  Amount memory, cores, slots;
  std::set<std::string> pods;
  double free_gpus = 0, fragmented_gpus = 0;
  std::vector<Note> notes;
};

// What is wrong with a node's registration, in words.
void NoteHandshakes(const Node& node, const DeviceConfig& config, std::int64_t now,
                    std::vector<Note>& notes) {
  for (const VendorSpec& vendor : config.vendors) {
    if (vendor.handshake_annotation.empty()) continue;
    const std::string* value = node.annotations.Find(vendor.handshake_annotation);
    if (value == nullptr) continue;
    Result<Handshake> h = DecodeHandshake(*value);
    if (!h.ok()) {
      notes.push_back(Note{"handshake does not decode",
                           fmt::format("{} does not decode: {}", vendor.handshake_annotation,
                                       h.status().message())});
    } else if (h->state == HandshakeState::kRequesting && h->unix_seconds &&
               now - *h->unix_seconds > kHandshakeExpirySeconds) {
      notes.push_back(Note{fmt::format("handshake stale ({} s)", now - *h->unix_seconds),
                           fmt::format("{} has asked for {} s with no answer from the device "
                                       "plugin",
                                       vendor.handshake_annotation, now - *h->unix_seconds)});
    }
  }
}

// The table's NOTE: the first note's brief, and how many more there are.
std::string Brief(const std::vector<Note>& notes) {
  if (notes.empty()) return "";
  return notes.size() == 1 ? notes[0].brief
                           : fmt::format("{} (+{} more)", notes[0].brief, notes.size() - 1);
}

bj::array NotesJson(const std::vector<Note>& notes) {
  bj::array out;
  for (const Note& n : notes) out.push_back(bj::object{{"brief", n.brief}, {"detail", n.detail}});
  return out;
}

// A node of a GPU vendor: it carries one of its annotations or resources.
bool ShowsDevices(const Node& node, const DeviceConfig& config) {
  return std::ranges::any_of(config.vendors, [&](const VendorSpec& vendor) {
    return (!vendor.register_annotation.empty() &&
            node.annotations.Find(vendor.register_annotation) != nullptr) ||
           (!vendor.handshake_annotation.empty() &&
            node.annotations.Find(vendor.handshake_annotation) != nullptr) ||
           (!vendor.count_resource.empty() &&
            node.allocatable.Find(vendor.count_resource) != nullptr);
  });
}

int Run(const TopOptions& o) {
  auto fail = [](std::string_view why) {
    std::cerr << "devshare top: " << why << "\n";
    return 1;
  };
  Result<DeviceConfig> config = LoadDeviceConfig(o.device_config);
  if (!config.ok()) return fail(config.status().message());
  Result<kube::ClusterObjects> objects = Status();
  if (!o.cluster.empty()) {
    if (!o.live.kubeconfig.empty() || !o.live.context.empty())
      return fail("--cluster reads a file: --kubeconfig and --context do not go with it");
    Result<ObjectsFile> file = ReadObjectsFile(o.cluster);
    if (!file.ok()) return fail(file.status().message());
    objects = std::move(*file);
  } else {
    Result<kube::ClusterAccess> access = FindAccess(o.live);
    if (!access.ok()) return fail(access.status().message());
    kube::ClusterReader reader(std::move(*access));
    if (Status s = reader.Start(); !s.ok()) return fail(s.message());
    objects = ReadClusterWithProgress(reader, "top");
  }
  if (!objects.ok()) return fail(objects.status().message());
  const std::int64_t now = o.now != 0 ? o.now : static_cast<std::int64_t>(std::time(nullptr));

  ClusterSnapshot snapshot(*config);
  const SnapshotErrors errors = FillSnapshot(*objects, "", snapshot);
  const std::vector<std::string>& pod_errors = errors.pods;
  std::map<std::string, std::vector<Note>> notes;  // by node
  for (const Node& node : objects->nodes) {
    if (auto e = errors.nodes.find(node.name); e != errors.nodes.end())
      notes[node.name].push_back(Note{"registration does not decode", e->second});
    NoteHandshakes(node, *config, now, notes[node.name]);
  }
  std::map<std::string, double> free, fragmented;
  if (Result<ClusterFragmentation> f = MeasureFragmentation(snapshot); f.ok()) {
    for (const NodeFragmentation& n : f->nodes) {
      free[n.node] = n.free_gpus;
      fragmented[n.node] = n.fragmented_gpus;
    }
  }
  // The pods on each device, by UUID.
  std::map<std::string, std::vector<std::string>> pods_on;
  for (const Pod& pod : objects->pods) {
    Result<std::vector<PodUsage>> usage = snapshot.PodUsageOf(pod.uid);
    if (!usage.ok()) continue;
    for (const PodUsage& u : *usage)
      pods_on[u.uuid].push_back(fmt::format("{}/{}", pod.pod_namespace, pod.name));
  }

  std::vector<NodeRow> rows;
  std::size_t hidden = 0;
  Amount memory, cores, slots;
  std::size_t gpus = 0;
  for (const Node& node : objects->nodes) {
    if (!o.node.empty() && node.name != o.node) continue;
    if (!ShowsDevices(node, *config) && notes[node.name].empty()) {
      ++hidden;
      continue;
    }
    NodeRow row{node.name,       {}, {}, {}, {}, {}, free[node.name], fragmented[node.name],
                notes[node.name]};
    if (Result<std::vector<DeviceView>> devices = snapshot.NodeDevices(node.name); devices.ok()) {
      for (const DeviceView& d : *devices) {
        row.memory.Add(d.usage.usedmem, d.device.devmem);
        row.cores.Add(d.usage.usedcores, d.device.devcore);
        row.slots.Add(d.usage.used, d.device.count);
        const std::vector<std::string>& on = pods_on[d.device.id];
        row.pods.insert(on.begin(), on.end());
        row.devices.push_back(DeviceRow{d, on});
        if (!d.healthy)
          row.notes.push_back(Note{"unhealthy GPU", fmt::format("{} is unhealthy", d.device.id)});
      }
    }
    if (row.devices.empty() && row.notes.empty()) {
      row.notes.push_back(
          Note{"no devices", "a GPU vendor's annotation or resource is there, but no device"});
    }
    memory.Add(row.memory.used, row.memory.total);
    cores.Add(row.cores.used, row.cores.total);
    slots.Add(row.slots.used, row.slots.total);
    gpus += row.devices.size();
    rows.push_back(std::move(row));
  }
  if (!o.node.empty() && rows.empty()) return fail(fmt::format("no GPU node named {}", o.node));

  if (o.json) {
    bj::array quotas;
    for (const QuotaUse& q : snapshot.Quotas()) {
      quotas.push_back(bj::object{{"namespace", q.pod_namespace},
                                  {"resource", q.resource},
                                  {"used", q.used},
                                  {"limit", q.limit}});
    }
    bj::array nodes;
    for (const NodeRow& r : rows) {
      bj::array devices;
      for (const DeviceRow& d : r.devices) {
        devices.push_back(
            bj::object{{"index", d.view.device.index},
                       {"uuid", d.view.device.id},
                       {"type", d.view.device.type},
                       {"healthy", d.view.healthy},
                       {"memory", Amount{d.view.usage.usedmem, d.view.device.devmem}.Json()},
                       {"cores", Amount{d.view.usage.usedcores, d.view.device.devcore}.Json()},
                       {"slots", Amount{d.view.usage.used, d.view.device.count}.Json()},
                       {"pods", bj::value_from(d.pods)}});
      }
      nodes.push_back(bj::object{
          {"node", r.name},
          {"gpus", r.devices.size()},
          {"memory", r.memory.Json()},
          {"cores", r.cores.Json()},
          {"slots", r.slots.Json()},
          {"pods", bj::value_from(std::vector<std::string>(r.pods.begin(), r.pods.end()))},
          {"free_gpus", r.free_gpus},
          {"fragmented_gpus", r.fragmented_gpus},
          {"notes", NotesJson(r.notes)},
          {"devices", std::move(devices)}});
    }
    bj::object out{{"nodes", std::move(nodes)},
                   {"gpus", gpus},
                   {"memory", memory.Json()},
                   {"cores", cores.Json()},
                   {"slots", slots.Json()},
                   {"nodes_without_devices", hidden},
                   {"undecodable", bj::value_from(objects->undecodable)},
                   {"pod_errors", bj::value_from(pod_errors)},
                   {"quotas", std::move(quotas)},
                   {"quota_errors", bj::value_from(errors.quotas)}};
    std::cout << bj::serialize(out) << "\n";
    return 0;
  }

  Table nodes({"NODE", "GPUS", "MEMORY MiB", "CORES %", "SLOTS", "PODS", "FREE GPUS", "FRAGMENTED",
               "NOTE"});
  for (const NodeRow& r : rows) {
    nodes.AddRow({r.name, fmt::format("{}", r.devices.size()), r.memory.Text(), r.cores.Text(),
                  r.slots.Text(), fmt::format("{}", r.pods.size()),
                  fmt::format("{:.2f}", r.free_gpus), fmt::format("{:.2f}", r.fragmented_gpus),
                  Brief(r.notes)});
  }
  std::cout << nodes.Render();
  std::cout << fmt::format(
      "\n{} GPU nodes, {} GPUs: memory {} MiB, cores {} %, slots {} in use{}.\n", rows.size(), gpus,
      memory.Text(), cores.Text(), slots.Text(),
      hidden > 0 ? fmt::format(" ({} nodes without devices not shown)", hidden) : "");
  for (const NodeRow& r : rows) {
    for (const Note& n : r.notes) std::cout << fmt::format("{}: {}\n", r.name, n.detail);
  }
  for (const std::string& e : pod_errors) std::cout << fmt::format("pod: {}\n", e);
  if (const std::vector<QuotaUse> quotas = snapshot.Quotas(); !quotas.empty()) {
    Table table({"NAMESPACE", "QUOTA ON", "USED", "LIMIT"});
    for (const QuotaUse& q : quotas) {
      table.AddRow(
          {q.pod_namespace, q.resource, fmt::format("{}", q.used), fmt::format("{}", q.limit)});
    }
    std::cout << "\n" << table.Render();
  }
  for (const std::string& e : errors.quotas) std::cout << fmt::format("quota: {}\n", e);
  if (o.gpus || !o.node.empty()) {
    Table devices({"NODE", "GPU", "UUID", "TYPE", "MEMORY MiB", "CORES %", "SLOTS", "PODS"});
    for (const NodeRow& r : rows) {
      for (const DeviceRow& d : r.devices) {
        devices.AddRow(
            {r.name, fmt::format("{}{}", d.view.device.index, d.view.healthy ? "" : " (unhealthy)"),
             d.view.device.id, d.view.device.type,
             Amount{d.view.usage.usedmem, d.view.device.devmem}.Text(),
             Amount{d.view.usage.usedcores, d.view.device.devcore}.Text(),
             Amount{d.view.usage.used, d.view.device.count}.Text(),
             fmt::format("{}", fmt::join(d.pods, " "))});
      }
    }
    std::cout << "\n" << devices.Render();
  }
  return 0;
}

}  // namespace

void AddTopCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TopOptions>();
  CLI::App* sub = app.add_subcommand(
      "top",
      "what every GPU node holds: memory, cores and slots in use, pods, fragmentation, "
      "and nodes whose registration is broken or stale");
  AddClusterFlags(sub, o->live);
  sub->add_option("--cluster", o->cluster,
                  "YAML or JSON file of Node objects and Pods instead of the live cluster");
  AddDeviceConfigOption(sub, o->device_config);
  sub->add_option("--node", o->node, "only this node, with its GPUs");
  sub->add_flag("--gpus", o->gpus, "a row per GPU too");
  sub->add_option("--now", o->now, "Unix seconds handshakes are judged at (default: now)");
  sub->add_flag("--json", o->json, "print JSON instead of tables");
  sub->callback([o, &exit_code] { exit_code = Run(*o); });
}

}  // namespace devshare::cli
