// Private: the kubelets and the device plugins of the nodes.
//
// Plugins register their node's devices: a legacy plugin writes the
// register annotation and the handshake stamp every heartbeat, changed or
// not; a change-only plugin writes only when its device list changes (the
// core's LegacyPluginPass and ChangeOnlyPluginPass decide the writes).
//
// After a Binding the kubelet calls the plugin's Allocate (`allocate` ms
// later); the plugin finishes it as the core's AllocateFinished says:
// bind-phase success and the node lock released (DecideRelease: only the
// pod's own lock, or an ownerless legacy one). A hung or crashed plugin
// delays Allocate until it is back. An Allocate that fails is not modelled.
//
// Faults: a hung plugin is silent; a crashed one is silent and its kubelet
// reports no GPUs as allocatable until it is back; an unhealthy device is
// the node's first, reported by its plugin.
//
// Thread-safety: none; a run is single-threaded.
#ifndef DEVSHARE_SIM_SRC_KUBELETS_HPP_
#define DEVSHARE_SIM_SRC_KUBELETS_HPP_

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "api_server.hpp"
#include "devshare/device.hpp"
#include "devshare/sim/simulator.hpp"
#include "event_queue.hpp"

namespace devshare::sim::internal {

class Kubelets {
 public:
  // The kubelets and plugins of `nodes` (the scenario's nodes in name
  // order), each plugin with its node's devices. `register_key` and
  // `handshake_key` are the annotations the plugins write.
  Kubelets(const Scenario& scenario, const std::vector<NodeSpec>& nodes, std::string register_key,
           std::string handshake_key, EventQueue& events, ApiServer& api);
  Kubelets(const Kubelets&) = delete;
  Kubelets& operator=(const Kubelets&) = delete;

  // The node's devices as its plugin encodes them for registration.
  const std::string& encoded(std::size_t node) const { return nodes_[node].encoded; }

  // Legacy plugins start their heartbeats, each at a phase drawn from `rng`
  // (in node order). Change-only plugins have none.
  void StartHeartbeats(std::mt19937_64& rng);
  // kHeartbeat: the legacy plugin's period.
  void Heartbeat(std::size_t node);

  // A Binding of `pod` landed: its kubelet calls Allocate after `allocate`.
  void PodBound(std::size_t pod);
  // kAllocate: Allocate of a running pod on `node`, the node kube-scheduler
  // has it on. Waits while the node's plugin is down.
  void Allocate(std::size_t pod, std::size_t node);

  // A plugin fault on `node` starts or ends (kPluginHang, kPluginCrash,
  // kDeviceUnhealthy).
  void StartFault(Fault::Kind kind, std::size_t node);
  void EndFault(Fault::Kind kind, std::size_t node);

 private:
  struct NodeState {
    const NodeSpec* spec = nullptr;
    std::vector<Device> devices;
    std::string encoded;  // the plugin's view of its devices
    bool plugin_up = true;
    std::vector<std::size_t> waiting_allocate;  // pods whose Allocate waits for the plugin
  };

  // What the node's plugin writes now: everything (legacy) or the changes.
  void PluginWrites(std::size_t node);
  // The plugin reports its first device (un)healthy.
  void SetFirstDeviceHealth(std::size_t node, bool healthy);

  const Scenario& scenario_;
  const std::string register_key_, handshake_key_;
  EventQueue& events_;
  ApiServer& api_;
  std::vector<NodeState> nodes_;  // by node
};

}  // namespace devshare::sim::internal

#endif  // DEVSHARE_SIM_SRC_KUBELETS_HPP_
