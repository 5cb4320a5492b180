// devshare/engine/engine.hpp — the scheduler service, sans I/O.
//
// The engine is what a deployment runs: it holds the cluster snapshot, runs
// node registration with the configured handshake protocol, answers Filter
// and Bind, follows leadership, and counts what it did. It performs no I/O
// and reads no clock: it consumes events (objects observed, time passing,
// requests, the results of the API calls it asked for) and emits commands
// (patch a node or pod, post a Binding, reply to a request). The Kubernetes
// adapter and the simulator drive the same engine.
//
// Flows (spec/hami-behaviour.md §4, §6, §7, §8, with devshare's fixes):
//   Filter   refused at once (no hanging) unless leading and registered;
//            otherwise the pod's reservation is made in the snapshot, its
//            annotations are PATCHed, and the reply follows the PATCH.
//   Bind     node lock (take over when expired or dangling) -> bind-phase
//            allocating -> Binding; or, lock-free, one Binding carrying the
//            device annotations. Any failure releases the lock and the
//            reservation and marks the pod failed (W8).
//
// Thread-safety: none; one engine is driven by one thread.
#ifndef DEVSHARE_ENGINE_ENGINE_HPP_
#define DEVSHARE_ENGINE_ENGINE_HPP_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "devshare/filter.hpp"
#include "devshare/handshake.hpp"
#include "devshare/lease.hpp"
#include "devshare/nodelock.hpp"
#include "devshare/objects.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/vendor.hpp"

namespace devshare::engine {

enum class RegistrationProtocol { kHami, kVolcano, kChangeOnly };
enum class Leadership { kAlways, kFollowLease };
enum class BindMode { kNodeLock, kLockFree };

struct EngineOptions {
  DeviceConfig config = DefaultDeviceConfig();
  FilterOptions filter;
  RegistrationProtocol registration = RegistrationProtocol::kChangeOnly;  // Default: change-only
  Leadership leadership = Leadership::kAlways;              // Default: always leader
  std::string hostname;             // this replica, for kFollowLease
  BindMode bind_mode = BindMode::kNodeLock;                 // Default: HAMi's node lock
  NodeLockOptions lock;
  std::int64_t register_period_ms = 15000;  // Default: HAMi's 15 s tick
  std::int32_t zone_offset_seconds = 0;     // handshake stamps (W16)
};

// Commands. `id` ties a command to the ApiResult that reports it.
struct PatchNode {
  std::uint64_t id = 0;
  std::string node;
  std::vector<AnnotationWrite> writes;
};
struct PatchPod {
  std::uint64_t id = 0;
  std::string pod_namespace;
  std::string name;
  StringMap annotations;
};
struct PostBinding {
  std::uint64_t id = 0;
  std::string pod_namespace;
  std::string name;
  std::string uid;
  std::string node;
  StringMap annotations;  // lock-free mode: the device assignment rides on the Binding
};
struct FilterReply {
  std::uint64_t request = 0;
  std::vector<std::string> nodes;        // the nodes kept: the chosen one, or all for a pod
                                         // asking no device (under the fgd node policy,
                                         // the one it prefers)
  std::vector<NodeFailure> failed;
  std::string error;                     // non-empty: the extender's Error field
};
struct BindReply {
  std::uint64_t request = 0;
  std::string error;
};
using Command = std::variant<PatchNode, PatchPod, PostBinding, FilterReply, BindReply>;

struct Counters {
  std::uint64_t filters = 0, filters_refused = 0, filters_placed = 0, filters_unschedulable = 0;
  std::uint64_t binds = 0, binds_failed = 0, lock_contention = 0;
  std::uint64_t node_patches = 0, pod_patches = 0, bindings = 0;
  std::uint64_t registration_passes = 0;
};

class Engine {
 public:
  explicit Engine(EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Watch events. A pod deletion needs only its UID.
  void NodeObserved(const Node& node, std::int64_t now_ms, std::vector<Command>& out);
  void NodeDeleted(const std::string& name);
  void PodObserved(const Pod& pod);
  void PodDeleted(const std::string& uid);
  void LeaseObserved(const std::optional<LeaseRecord>& lease, std::int64_t now_ms,
                     std::vector<Command>& out);

  // Time passing: runs a registration pass when one is due.
  void Tick(std::int64_t now_ms, std::vector<Command>& out);

  // Extender requests; the reply comes as a command, now or after the API
  // calls it needs.
  void Filter(std::uint64_t request, const Pod& pod, const std::vector<std::string>& nodes,
              std::int64_t now_ms, std::vector<Command>& out);
  void Bind(std::uint64_t request, const std::string& pod_namespace, const std::string& name,
            const std::string& uid, const std::string& node, std::int64_t now_ms,
            std::vector<Command>& out);

  // The outcome of a PatchNode/PatchPod/PostBinding command.
  void ApiResult(std::uint64_t id, bool succeeded, std::int64_t now_ms, std::vector<Command>& out);

  // /readyz: leading and one registration pass completed since.
  bool Ready(std::int64_t now_ms) const;
  const Counters& counters() const { return counters_; }
  const ClusterSnapshot& snapshot() const { return snapshot_; }

 private:
  struct Impl;
  void RegistrationPass(std::int64_t now_ms, std::vector<Command>& out);
  std::uint64_t NextId() { return next_id_++; }

  EngineOptions options_;
  ClusterSnapshot snapshot_;
  Counters counters_;
  std::unique_ptr<Impl> impl_;
  std::uint64_t next_id_ = 1;
};

}  // namespace devshare::engine

#endif  // DEVSHARE_ENGINE_ENGINE_HPP_
