#include "kubelets.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "devshare/annotations.hpp"
#include "devshare/handshake.hpp"
#include "devshare/node_codec.hpp"
#include "devshare/nodelock.hpp"
#include "scenario_objects.hpp"

namespace devshare::sim::internal {

Kubelets::Kubelets(const Scenario& scenario, const std::vector<NodeSpec>& nodes,
                   std::string register_key, std::string handshake_key, EventQueue& events,
                   ApiServer& api)
    : scenario_(scenario),
      register_key_(std::move(register_key)),
      handshake_key_(std::move(handshake_key)),
      events_(events),
      api_(api) {
  nodes_.reserve(nodes.size());
  for (const NodeSpec& spec : nodes) {
    NodeState n;
    n.spec = &spec;
    n.devices = MakeDevices(spec);
    n.encoded = EncodeNodeDevices(n.devices, RegisterFormat::kJson);
    nodes_.push_back(std::move(n));
  }
}

// ---- registration

void Kubelets::StartHeartbeats(std::mt19937_64& rng) {
  if (scenario_.plugins.mode != PluginModel::Mode::kLegacy) return;
  std::uniform_int_distribution<std::int64_t> phase(
      0, std::max<std::int64_t>(scenario_.plugins.heartbeat_ms - 1, 0));
  for (std::size_t node = 0; node < nodes_.size(); ++node)
    events_.At(phase(rng), EventKind::kHeartbeat, node);
}

void Kubelets::Heartbeat(std::size_t node) {
  PluginWrites(node);
  events_.At(events_.now() + scenario_.plugins.heartbeat_ms, EventKind::kHeartbeat, node);
}

void Kubelets::PluginWrites(std::size_t node) {
  const NodeState& n = nodes_[node];
  if (!n.plugin_up) return;
  if (scenario_.plugins.mode == PluginModel::Mode::kLegacy) {
    LegacyPluginWrites w =
        LegacyPluginPass(n.encoded, register_key_, handshake_key_, events_.now() / 1000,
                         scenario_.engine.zone_offset_seconds);
    api_.Submit(Request{
        Verb::kPluginNode, -1,
        NodeWrite{
            node, {std::move(w.register_write), std::move(w.handshake_write)}, std::nullopt}});
    return;
  }
  const std::string* on_node = api_.node(node).annotations.Find(register_key_);
  std::optional<AnnotationWrite> w =
      ChangeOnlyPluginPass(on_node != nullptr ? std::optional<std::string>(*on_node) : std::nullopt,
                           n.encoded, register_key_);
  if (w)
    api_.Submit(Request{Verb::kPluginNode, -1, NodeWrite{node, {std::move(*w)}, std::nullopt}});
}

// ---- Allocate

void Kubelets::PodBound(std::size_t pod) {
  events_.At(events_.now() + scenario_.api.allocate_ms, EventKind::kAllocate, pod);
}

void Kubelets::Allocate(std::size_t pod, std::size_t node) {
  NodeState& n = nodes_[node];
  if (!n.plugin_up) {
    n.waiting_allocate.push_back(pod);
    return;
  }
  // Allocate succeeds (a failing one is not modelled), so the reservation
  // stays: the pod runs on it.
  BindOutcome outcome = AllocateFinished(true);
  api_.Submit(Request{Verb::kPluginPod, -1, PodWrite{pod, std::move(outcome.pod_patch)}});
  if (!outcome.release_lock) return;
  const std::string* lock = api_.node(node).annotations.Find(keys::kNodeLock);
  const Pod& object = api_.pod(pod);
  std::optional<AnnotationWrite> release =
      DecideRelease(lock != nullptr ? std::optional<std::string>(*lock) : std::nullopt,
                    PodRef{object.pod_namespace, object.name}, false);
  if (release)
    api_.Submit(Request{Verb::kPluginNode, -1, NodeWrite{node, {*release}, std::nullopt}});
}

// ---- faults

void Kubelets::StartFault(Fault::Kind kind, std::size_t node) {
  NodeState& n = nodes_[node];
  switch (kind) {
    case Fault::Kind::kPluginHang:
      n.plugin_up = false;
      break;
    case Fault::Kind::kPluginCrash:
      n.plugin_up = false;
      api_.Submit(Request{Verb::kKubeletNode, -1, NodeWrite{node, {}, std::string("0")}});
      break;
    case Fault::Kind::kDeviceUnhealthy:
      SetFirstDeviceHealth(node, false);
      break;
    case Fault::Kind::kLeaderCrash:
    case Fault::Kind::kMissedEvents:
    case Fault::Kind::kPodDeletedInBind:
    case Fault::Kind::kNodeReplaced:
      break;
  }
}

void Kubelets::EndFault(Fault::Kind kind, std::size_t node) {
  NodeState& n = nodes_[node];
  switch (kind) {
    case Fault::Kind::kPluginCrash:
      api_.Submit(Request{Verb::kKubeletNode, -1, NodeWrite{node, {}, GpuAllocatable(*n.spec)}});
      [[fallthrough]];
    case Fault::Kind::kPluginHang:
      n.plugin_up = true;
      PluginWrites(node);
      for (std::size_t pod : n.waiting_allocate)
        events_.At(events_.now(), EventKind::kAllocate, pod);
      n.waiting_allocate.clear();
      break;
    case Fault::Kind::kDeviceUnhealthy:
      SetFirstDeviceHealth(node, true);
      break;
    case Fault::Kind::kLeaderCrash:
    case Fault::Kind::kMissedEvents:
    case Fault::Kind::kPodDeletedInBind:
    case Fault::Kind::kNodeReplaced:
      break;
  }
}

void Kubelets::SetFirstDeviceHealth(std::size_t node, bool healthy) {
  NodeState& n = nodes_[node];
  if (!n.devices.empty()) n.devices.front().health = healthy;
  n.encoded = EncodeNodeDevices(n.devices, RegisterFormat::kJson);
  PluginWrites(node);
}

}  // namespace devshare::sim::internal
