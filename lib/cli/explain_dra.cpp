#include "explain_dra.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <iostream>
#include <map>
#include <optional>
#include <string_view>
#include <variant>

#include "devshare/dra_place.hpp"
#include "devshare/snapshot.hpp"
#include "table.hpp"

namespace devshare::cli {

namespace {

namespace bj = boost::json;

// A quantity for people: whole Gi or Mi where it is one, else as the API
// server writes it.
std::string Readable(dra::Quantity q) {
  constexpr std::int64_t kMiMilli = std::int64_t{1024} * 1024 * 1000;
  if (q.milli > 0 && q.milli % (kMiMilli * 1024) == 0)
    return fmt::format("{}Gi", q.milli / (kMiMilli * 1024));
  if (q.milli > 0 && q.milli % kMiMilli == 0) return fmt::format("{}Mi", q.milli / kMiMilli);
  return dra::FormatQuantity(q);
}

// "request: driver/pool/device (cores 30, memory 4Gi)" for each device.
std::vector<std::string> DeviceList(const std::vector<dra::Allocation>& allocations) {
  std::vector<std::string> out;
  for (const dra::Allocation& a : allocations) {
    for (const dra::AllocatedDevice& d : a.devices) {
      std::vector<std::string> consumed;
      consumed.reserve(d.consumed_capacity.size());
      for (const auto& [name, q] : d.consumed_capacity)
        consumed.push_back(fmt::format("{} {}", name, Readable(q)));
      out.push_back(
          fmt::format("{}: {}/{}/{}{}", d.request, d.driver, d.pool, d.device,
                      consumed.empty() ? "" : fmt::format(" ({})", fmt::join(consumed, ", "))));
    }
  }
  return out;
}

// Why the claims do not fit `node`: its CPU or memory, else each claim's
// devices that cannot take its requests, with the reason (at most three).
std::string WhyNot(const ClusterSnapshot& snapshot, const std::vector<dra::ResourceClaim>& claims,
                   const dra::PodResources& pod, const std::string& node) {
  Result<NodeCpuMemory> room = snapshot.NodeCpuMemoryOf(node);
  if (room.ok()) {
    if (room->cpu_milli != NodeCpuMemory::kUnknown &&
        room->cpu_milli - room->cpu_requested_milli < pod.cpu_milli)
      return fmt::format("cpu: needs {}m, {}m free", pod.cpu_milli,
                         room->cpu_milli - room->cpu_requested_milli);
    if (room->memory_bytes != NodeCpuMemory::kUnknown &&
        room->memory_bytes - room->memory_requested_bytes < pod.memory_bytes)
      return fmt::format("memory: needs {} bytes, {} free", pod.memory_bytes,
                         room->memory_bytes - room->memory_requested_bytes);
  }
  std::vector<std::string> reasons;
  for (const dra::ResourceClaim& claim : claims) {
    Result<dra::NodeExplanation> e = snapshot.ExplainClaim(claim, node);
    if (!e.ok()) return std::string(e.status().message());
    for (const std::string& pool : e->pools) reasons.push_back(pool);
    bool any_fits = false;
    for (const dra::DeviceVerdict& v : e->devices) any_fits = any_fits || v.fits;
    for (const dra::DeviceVerdict& v : e->devices) {
      if (!v.fits)
        reasons.push_back(fmt::format("{} {}: {}", claim.name, v.device.device, v.reason));
    }
    if (reasons.empty() && any_fits)
      reasons.push_back(
          fmt::format("{}: no devices that fit all of its requests and constraints", claim.name));
    if (reasons.empty()) reasons.push_back(fmt::format("{}: no device", claim.name));
  }
  if (reasons.size() > 3) {
    const std::size_t more = reasons.size() - 3;
    reasons.resize(3);
    reasons.push_back(fmt::format("{} more", more));
  }
  return fmt::format("{}", fmt::join(reasons, "; "));
}

}  // namespace

int ExplainClaims(const ObjectsFile& cluster, const ObjectsFile& pod, const std::string& policy,
                  const std::vector<WorkloadClass>& workload, bool json) {
  auto fail = [](std::string_view message) {
    std::cerr << "devshare explain: " << message << "\n";
    return 1;
  };
  const std::optional<dra::Policy> chosen_policy = dra::kPolicyNames.Find(policy);
  if (!chosen_policy) {
    return fail(
        fmt::format("unknown DRA policy {} (want one of {})", policy, dra::kPolicyNames.Names()));
  }
  if (pod.pods.size() > 1)
    return fail(fmt::format("the claims' file holds {} Pods, at most one", pod.pods.size()));
  ClusterSnapshot snapshot;
  for (const Node& node : cluster.nodes) {
    if (Status s = snapshot.AddNode(node); !s.ok())
      std::cerr << "devshare explain: warning: " << s.message() << "\n";
  }
  for (const Pod& p : cluster.pods) static_cast<void>(snapshot.AddPod(p));
  for (const dra::ResourceSlice& slice : cluster.slices) snapshot.AddResourceSlice(slice);
  for (const dra::DeviceClass& c : cluster.device_classes) snapshot.AddDeviceClass(c);
  for (const dra::ResourceClaim& c : cluster.claims) snapshot.AddResourceClaim(c);
  const dra::PodResources resources =
      pod.pods.empty() ? dra::PodResources{}
                       : dra::PodResources{pod.pods[0].cpu_milli, pod.pods[0].memory_bytes};
  Result<dra::Placer> placer =
      dra::Placer::Make(dra::PlacerOptions{*chosen_policy, workload, false});
  if (!placer.ok()) return fail(placer.status().message());

  std::map<std::string_view, const Node*> node_objects;
  for (const Node& node : cluster.nodes) node_objects.emplace(node.name, &node);
  std::optional<dra::NodeFit> best;
  std::vector<std::pair<std::string, std::variant<dra::NodeFit, std::string>>> verdicts;
  for (const std::string& node : snapshot.NodeNames()) {
    // A node the pod may not go to (its node selector, affinity, tolerations).
    if (!pod.pods.empty()) {
      if (std::optional<std::string> why = NodeExcludes(pod.pods[0], *node_objects.at(node))) {
        verdicts.emplace_back(node, std::move(*why));
        continue;
      }
    }
    Result<std::optional<dra::NodeFit>> fit = placer->Fit(snapshot, pod.claims, resources, node);
    if (!fit.ok()) return fail(fit.status().message());
    if (!*fit) {
      verdicts.emplace_back(node, WhyNot(snapshot, pod.claims, resources, node));
      continue;
    }
    if (*chosen_policy != dra::Policy::kUpstream && (!best || (*fit)->score > best->score))
      best = **fit;
    verdicts.emplace_back(node, std::move(**fit));
  }
  std::vector<std::string> claim_names;
  claim_names.reserve(pod.claims.size());
  for (const dra::ResourceClaim& c : pod.claims)
    claim_names.push_back(c.claim_namespace + "/" + c.name);

  if (json) {
    bj::array nodes;
    for (const auto& [node, verdict] : verdicts) {
      bj::object n{{"node", node}, {"fits", std::holds_alternative<dra::NodeFit>(verdict)}};
      if (const auto* fit = std::get_if<dra::NodeFit>(&verdict)) {
        n["score"] = fit->score;
        bj::array allocations;
        for (const dra::Allocation& a : fit->allocations)
          allocations.push_back(bj::parse(dra::EncodeAllocation(a)));
        n["allocations"] = std::move(allocations);
      } else {
        n["reason"] = std::get<std::string>(verdict);
      }
      nodes.push_back(std::move(n));
    }
    bj::array names;
    for (const std::string& name : claim_names) names.push_back(bj::string(name));
    bj::object out{{"claims", std::move(names)},
                   {"policy", policy},
                   {"chosen", best ? bj::value(best->node) : bj::value(nullptr)},
                   {"nodes", std::move(nodes)}};
    std::cout << bj::serialize(out) << "\n";
    return 0;
  }
  std::cout << fmt::format("Claims {} under DRA policy {}.\n\n", fmt::join(claim_names, ", "),
                           policy);
  Table table({"NODE", "FITS", "SCORE / REASON", "DEVICES"});
  for (const auto& [node, verdict] : verdicts) {
    const auto* fit = std::get_if<dra::NodeFit>(&verdict);
    if (fit == nullptr) {
      table.AddRow({node, "no", std::get<std::string>(verdict), ""});
      continue;
    }
    const std::vector<std::string> devices = DeviceList(fit->allocations);
    for (std::size_t i = 0; i < std::max<std::size_t>(devices.size(), 1); ++i) {
      const std::string device = i < devices.size() ? devices[i] : "";
      if (i > 0) {
        table.AddRow({"", "", "", device});
        continue;
      }
      table.AddRow(
          {node, best && best->node == node ? "yes (chosen)" : "yes",
           *chosen_policy == dra::Policy::kUpstream ? "-" : fmt::format("{:.2f}", fit->score),
           device});
    }
  }
  std::cout << table.Render();
  if (*chosen_policy == dra::Policy::kUpstream) {
    std::cout << "\nupstream: each node's allocation as kube-scheduler v1.37's allocator makes it; "
                 "kube-scheduler chooses the node.\n";
  } else if (!best) {
    std::cout << "\nNo node fits.\n";
  } else {
    std::cout << "\nChosen: " << best->node << "\n";
  }
  return 0;
}

int ExplainPodClaims(const ObjectsFile& cluster, const Pod& pod, const std::string& policy,
                     const std::vector<WorkloadClass>& workload, bool json) {
  ObjectsFile placing;
  placing.pods.push_back(pod);
  for (const PodResourceClaim& wanted : pod.resource_claims) {
    const std::string& name = wanted.resource_claim_name.empty() ? wanted.generated_claim_name
                                                                 : wanted.resource_claim_name;
    if (name.empty()) {
      std::cerr << fmt::format(
          "devshare explain: claim {} of pod {}/{} is not made yet from template {} (the "
          "resourceclaim controller of kube-controller-manager makes it)\n",
          wanted.name, pod.pod_namespace, pod.name, wanted.resource_claim_template_name);
      return 1;
    }
    auto found = std::find_if(cluster.claims.begin(), cluster.claims.end(),
                              [&](const dra::ResourceClaim& c) {
                                return c.claim_namespace == pod.pod_namespace && c.name == name;
                              });
    if (found == cluster.claims.end()) {
      std::cerr << fmt::format("devshare explain: claim {}/{} of pod {} is not in the cluster\n",
                               pod.pod_namespace, name, pod.name);
      return 1;
    }
    if (found->allocation) {
      if (!json)
        std::cout << fmt::format("Claim {}/{} is allocated already: {}.\n", pod.pod_namespace, name,
                                 fmt::join(DeviceList({*found->allocation}), "; "));
      continue;
    }
    placing.claims.push_back(*found);
  }
  if (placing.claims.empty()) {
    if (!json) std::cout << "Every claim of the pod is allocated: nothing to place.\n";
    if (json)
      std::cout << R"({"claims":[],"chosen":null,"nodes":[]})"
                << "\n";
    return 0;
  }
  ObjectsFile others = cluster;
  std::erase_if(others.pods, [&](const Pod& p) { return p.uid == pod.uid; });
  return ExplainClaims(others, placing, policy, workload, json);
}

}  // namespace devshare::cli
