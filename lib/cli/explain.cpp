#include "explain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cluster_flags.hpp"
#include "devshare/filter.hpp"
#include "devshare/kube/cluster_read.hpp"
#include "devshare/preemption.hpp"
#include "devshare/request.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/vendor.hpp"
#include "explain_dra.hpp"
#include "hami_exact_option.hpp"
#include "objects_file.hpp"
#include "read_file.hpp"
#include "table.hpp"

namespace devshare::cli {

namespace {

namespace bj = boost::json;

struct ExplainOptions {
  std::string cluster;
  std::string pod;
  ClusterFlags live;
  std::string device_config;
  FilterOptions filter;
  std::string dra_policy = "upstream";
  std::int64_t now = 0;
  bool json = false;
};

std::string Describe(const ContainerRequest& r) {
  std::string mem =
      r.memreq > 0 ? fmt::format("{} MiB", r.memreq) : fmt::format("{}% memory", r.mem_percentage);
  return fmt::format("{} x {} ({}, {}% cores)", r.nums, r.vendor, mem, r.coresreq);
}

// Each device a container would get: "c<container>:<uuid>(<MiB>MiB,<cores>%)".
std::vector<std::string> DeviceList(const PodDevices& devices) {
  std::vector<std::string> parts;
  for (const auto& [vendor, containers] : devices) {
    for (std::size_t c = 0; c < containers.size(); ++c) {
      for (const ContainerDevice& d : containers[c]) {
        parts.push_back(fmt::format("c{}:{}({}MiB,{}%)", c, d.uuid, d.usedmem, d.usedcores));
      }
    }
  }
  return parts;
}

std::string Devices(const PodDevices& devices) {
  return fmt::format("{}", fmt::join(DeviceList(devices), " "));
}

void Warn(const SnapshotErrors& errors) {
  for (const auto& [node, why] : errors.nodes)
    std::cerr << "devshare explain: warning: " << why << "\n";
  for (const std::string& why : errors.pods)
    std::cerr << "devshare explain: warning: " << why << "\n";
  for (const std::string& why : errors.quotas)
    std::cerr << "devshare explain: warning: " << why << "\n";
}

std::string VictimList(const PreemptionCandidate& c) {
  std::vector<std::string> names;
  names.reserve(c.victims.size());
  for (const PreemptionVictim& v : c.victims) {
    names.push_back(fmt::format("{}/{} (priority {}{})", v.pod_namespace, v.name, v.priority,
                                v.violates_budget ? ", against its disruption budget" : ""));
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

// What preempting would do, after "No node fits.".
void PrintPreemption(const PreemptionPlan& plan) {
  if (!plan.refused.empty()) {
    std::cout << "It may not preempt: " << plan.refused << ".\n";
    return;
  }
  const PreemptionCandidate* chosen = plan.chosen();
  if (chosen == nullptr) {
    std::cout << "Preempting would not help: on every node it misses room even with every pod "
                 "of lower priority gone.\n";
    return;
  }
  std::cout << fmt::format("Preempting would place it on {}, evicting {}; it would get {}.\n",
                           chosen->node, VictimList(*chosen), Devices(chosen->devices));
  for (std::size_t i = 1; i < plan.candidates.size(); ++i) {
    std::cout << fmt::format("  else {}, evicting {}\n", plan.candidates[i].node,
                             VictimList(plan.candidates[i]));
  }
  std::cout << "Nodes are ranked as kube-scheduler ranks them: fewest disruption budgets "
               "exceeded, then the lowest priority evicted, the smallest sum of priorities, the "
               "fewest pods, the latest started.\n";
}

bj::object PreemptionJson(const PreemptionPlan& plan) {
  bj::array candidates;
  for (const PreemptionCandidate& c : plan.candidates) {
    bj::array victims;
    for (const PreemptionVictim& v : c.victims) {
      victims.push_back(bj::object{{"pod", v.pod_namespace + "/" + v.name},
                                   {"priority", v.priority},
                                   {"violates_budget", v.violates_budget}});
    }
    candidates.push_back(bj::object{{"node", c.node},
                                    {"victims", std::move(victims)},
                                    {"budget_violations", c.budget_violations},
                                    {"devices", Devices(c.devices)}});
  }
  bj::object unresolvable;
  for (const NodeFailure& f : plan.unresolvable) unresolvable[f.node] = f.reason;
  return bj::object{{"refused", plan.refused},
                    {"candidates", std::move(candidates)},
                    {"unresolvable", std::move(unresolvable)}};
}

// --cluster FILE --pod FILE: the snapshot from the one file, the pod from
// the other.
Result<Pod> FromFiles(const ExplainOptions& o, const ObjectsFile& cluster, ObjectsFile pods,
                      ClusterSnapshot& snapshot) {
  if (pods.pods.size() != 1) {
    return Status::InvalidArgument(
        fmt::format("{} must hold exactly one Pod (or ResourceClaims to place), it holds {}", o.pod,
                    pods.pods.size()));
  }
  Warn(FillSnapshot(cluster, "", snapshot));
  return std::move(pods.pods[0]);
}

// A pod of the live cluster and the cluster as read with it.
struct LiveRead {
  Pod pod;
  kube::ClusterObjects objects;
};

// --pod NAMESPACE/NAME: the pod and the cluster from the API server.
Result<LiveRead> FromCluster(const ExplainOptions& o) {
  const std::size_t slash = o.pod.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == o.pod.size() ||
      o.pod.find('/', slash + 1) != std::string::npos) {
    return Status::InvalidArgument(fmt::format(
        "--pod {}: without --cluster, name a pod of the cluster as NAMESPACE/NAME", o.pod));
  }
  Result<kube::ClusterAccess> access = FindAccess(o.live);
  if (!access.ok()) return access.status();
  kube::ClusterReader reader(std::move(*access));
  if (Status s = reader.Start(); !s.ok()) return s;
  Result<Pod> pod = reader.ReadPod(o.pod.substr(0, slash), o.pod.substr(slash + 1));
  if (!pod.ok()) return pod.status();
  Result<kube::ClusterObjects> objects = ReadClusterWithProgress(reader, "explain");
  if (!objects.ok()) return objects.status();
  return LiveRead{std::move(*pod), std::move(*objects)};
}

int Run(const ExplainOptions& o) {
  Result<DeviceConfig> config = LoadDeviceConfig(o.device_config);
  if (!config.ok()) {
    std::cerr << "devshare explain: " << config.status().message() << "\n";
    return 1;
  }
  ClusterSnapshot snapshot(*config);
  Result<Pod> read = Status();
  kube::ClusterObjects objects;  // the cluster's pods and budgets, for preemption
  if (o.cluster.empty()) {
    Result<LiveRead> live = FromCluster(o);
    if (!live.ok()) {
      std::cerr << "devshare explain: " << live.status().message() << "\n";
      return 1;
    }
    if (!live->pod.resource_claims.empty())
      return ExplainPodClaims(live->objects, live->pod, o.dra_policy, o.filter.workload, o.json);
    // The pod itself is left out of the snapshot, to be placed as if new.
    Warn(FillSnapshot(live->objects, live->pod.uid, snapshot));
    read = std::move(live->pod);
    objects = std::move(live->objects);
  } else {
    Result<ObjectsFile> cluster = ReadObjectsFile(o.cluster);
    Result<ObjectsFile> pods = cluster.ok() ? ReadObjectsFile(o.pod) : cluster;
    if (!pods.ok()) {
      std::cerr << "devshare explain: " << pods.status().message() << "\n";
      return 1;
    }
    if (!pods->claims.empty())
      return ExplainClaims(*cluster, *pods, o.dra_policy, o.filter.workload, o.json);
    read = FromFiles(o, *cluster, std::move(*pods), snapshot);
    objects = std::move(*cluster);
  }
  if (!read.ok()) {
    std::cerr << "devshare explain: " << read.status().message() << "\n";
    return 1;
  }
  const Pod& pod = *read;
  const std::int64_t now = o.now != 0 ? o.now : static_cast<std::int64_t>(std::time(nullptr));
  Result<FilterResult> result = Filter(snapshot, pod, {}, now, o.filter);
  if (!result.ok()) {
    std::cerr << "devshare explain: " << result.status().message() << "\n";
    return 1;
  }
  // The devices each feasible node would give.
  std::map<std::string, PodDevices> devices_by_node;
  for (const NodeScore& s : result->scores) {
    const std::string name[] = {s.node};
    Result<FilterResult> one = Filter(snapshot, pod, name, now, o.filter);
    if (one.ok()) devices_by_node[s.node] = one->devices;
  }
  std::map<std::string, std::string> reasons;
  for (const NodeFailure& f : result->failed) reasons[f.node] = f.reason;
  std::map<std::string, double> scores;
  for (const NodeScore& s : result->scores) scores[s.node] = s.score;
  // The device quotas of the pod's namespace: why ResourceQuotaNotFit.
  std::vector<QuotaUse> quotas = snapshot.Quotas();
  std::erase_if(quotas, [&](const QuotaUse& q) { return q.pod_namespace != pod.pod_namespace; });
  // A pod that fits nowhere: the lower-priority pods it would preempt.
  std::erase_if(objects.pods, [&](const Pod& p) { return p.uid == pod.uid; });
  std::optional<PreemptionPlan> preemption;
  if (!result->node && result->has_requests) {
    Result<PreemptionPlan> plan =
        PlanPreemption(snapshot, pod, objects.pods, objects.budgets, {}, now, o.filter);
    if (!plan.ok()) {
      std::cerr << "devshare explain: preemption: " << plan.status().message() << "\n";
      return 1;
    }
    preemption = std::move(*plan);
  }

  if (o.json) {
    bj::array nodes;
    for (const std::string& name : snapshot.NodeNames()) {
      bj::object n{{"node", name}, {"fits", scores.contains(name)}};
      if (scores.contains(name)) {
        n["score"] = scores[name];
        n["devices"] = Devices(devices_by_node[name]);
      } else {
        n["reason"] = reasons[name];
      }
      nodes.push_back(std::move(n));
    }
    bj::object patch;
    for (const auto& [k, v] : result->annotations.entries()) patch[k] = v;
    bj::array quota_json;
    for (const QuotaUse& q : quotas)
      quota_json.push_back(
          bj::object{{"resource", q.resource}, {"used", q.used}, {"limit", q.limit}});
    bj::object out{{"pod", pod.pod_namespace + "/" + pod.name},
                   {"chosen", result->node ? bj::value(*result->node) : bj::value(nullptr)},
                   {"nodes", std::move(nodes)},
                   {"patch", std::move(patch)},
                   {"quotas", std::move(quota_json)}};
    if (preemption) out["preemption"] = PreemptionJson(*preemption);
    std::cout << bj::serialize(out) << "\n";
    return 0;
  }

  std::cout << "Pod " << pod.pod_namespace << "/" << pod.name << " asks:\n";
  const std::vector<ContainerRequests> requests = PodRequests(pod, *config);
  for (std::size_t c = 0; c < requests.size(); ++c) {
    const bool init = c < pod.init_containers.size();
    const Container& container =
        init ? pod.init_containers[c] : pod.containers[c - pod.init_containers.size()];
    std::vector<std::string> asks;
    for (const ContainerRequest& r : requests[c]) asks.push_back(Describe(r));
    std::cout << fmt::format(
        "  container {} {}{}: {}\n", c, container.name, init ? " (init)" : "",
        asks.empty() ? "no devices" : fmt::format("{}", fmt::join(asks, "; ")));
  }
  if (!result->has_requests) {
    std::cout << "It asks for no device: every node passes.\n";
    if (result->node) {
      std::cout << "fgd prefers " << *result->node
                << ", where its CPU and memory leave the fewest GPUs unusable.\n";
    }
    return 0;
  }
  std::cout << fmt::format("\nNode policy {}, GPU policy {} (pod annotations override).\n\n",
                           o.filter.node_policy, o.filter.gpu_policy);
  Table table({"NODE", "FITS", "SCORE / REASON", "DEVICES"});
  for (const std::string& name : snapshot.NodeNames()) {
    if (scores.contains(name)) {
      // A row per device, the node's figures on the first.
      const std::vector<std::string> devices = DeviceList(devices_by_node[name]);
      for (std::size_t i = 0; i < std::max<std::size_t>(devices.size(), 1); ++i) {
        const std::string device = i < devices.size() ? devices[i] : "";
        if (i > 0) {
          table.AddRow({"", "", "", device});
          continue;
        }
        table.AddRow({name, name == result->node ? "yes (chosen)" : "yes",
                      fmt::format("{:.2f}", scores[name]), device});
      }
    } else {
      table.AddRow({name, "no", reasons[name], ""});
    }
  }
  std::cout << table.Render();
  if (!quotas.empty()) std::cout << "\n";
  for (const QuotaUse& q : quotas) {
    std::cout << fmt::format(
        "Quota in {}: {} {} of {} in use (the tightest of its ResourceQuotas' limits.{}).\n",
        q.pod_namespace, q.resource, q.used, q.limit, q.resource);
  }
  if (!result->node) {
    std::cout << "\nNo node fits.\n";
    if (preemption) PrintPreemption(*preemption);
    return 0;
  }
  std::cout << "\nChosen: " << *result->node << "\nAnnotation patch:\n";
  for (const auto& [k, v] : result->annotations.entries())
    std::cout << "  " << k << ": " << v << "\n";
  return 0;
}

}  // namespace

void AddExplainCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ExplainOptions>();
  CLI::App* sub = app.add_subcommand(
      "explain",
      "why a pod fits or not, node by node: a pod of the live cluster (--pod NAMESPACE/NAME), or "
      "one from a file against a cluster from a file (--cluster FILE --pod FILE)");
  sub->add_option("--cluster", o->cluster,
                  "YAML or JSON file of Node objects and existing Pods (default: read the live "
                  "cluster)");
  sub->add_option("--pod", o->pod,
                  "NAMESPACE/NAME of a pod in the live cluster, or with --cluster a YAML or JSON "
                  "file holding the Pod to place, or the ResourceClaims (DRA) to place with at "
                  "most one Pod for its CPU and memory")
      ->required();
  sub->add_option("--dra-policy", o->dra_policy,
                  "for ResourceClaims: upstream (kube-scheduler's allocator, node by node) | "
                  "binpack | spread | fgd")
      ->capture_default_str();
  AddClusterFlags(sub, o->live);
  AddDeviceConfigOption(sub, o->device_config);
  sub->add_option("--node-policy", o->filter.node_policy, kNodePolicyNames.Names(" | "))
      ->capture_default_str();
  sub->add_option("--gpu-policy", o->filter.gpu_policy,
                  kGpuPolicyNames.Names(" | ") + " (the first six also as a comma chain)")
      ->capture_default_str();
  AddHamiExactOption(sub, o->filter.hami_exact);
  sub->add_option("--now", o->now, "Unix seconds written to hami.io/vgpu-time (default: now)");
  sub->add_flag("--json", o->json, "print JSON instead of a table");
  sub->callback([o, &exit_code] { exit_code = Run(*o); });
}

}  // namespace devshare::cli
