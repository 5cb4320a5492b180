// service_commands.hpp — the engine's API commands (devshare/engine/engine.hpp
// "Commands") executed against the API server, as `devshare serve` does.
// Private to lib/kube (service*.cpp) and its unit tests.
#ifndef DEVSHARE_KUBE_SRC_SERVICE_COMMANDS_HPP_
#define DEVSHARE_KUBE_SRC_SERVICE_COMMANDS_HPP_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "devshare/dra.hpp"
#include "devshare/engine/engine.hpp"
#include "devshare/kube/api_client.hpp"

namespace devshare::kube {

// Where a command's results go. The executors hold the sink (a shared_ptr)
// until the command's last request has answered, so the sink keeps the
// ApiClient it hands out alive that long.
class CommandSink {
 public:
  virtual ~CommandSink() = default;
  virtual ApiClient& api() = 0;
  // The outcome of the command `id` (Engine::ApiResult): called exactly once
  // per command that has an id (PodEvent has none).
  virtual void Outcome(std::uint64_t id, bool ok) = 0;
  // A ResourceClaim as the API server answered a write or a read of it,
  // for the cache (Engine::ResourceClaimObserved, as a watch event would
  // bring it). A claim write's last answer comes after its Outcome, so the
  // cache ends at the version the write made.
  virtual void ClaimSeen(dra::ResourceClaim claim) = 0;
  // Calls `then` once `delay` has passed (on the ApiClient's thread), unless
  // the sink is stopped first.
  virtual void After(std::chrono::milliseconds delay, std::function<void()> then) = 0;
  // Whether the replica may still write (it leads, Engine::Ready): a write a
  // command makes again after a read asks first.
  virtual bool MayWrite() = 0;
};

// The path of a ResourceClaim (resource.k8s.io/v1).
std::string ClaimPath(const std::string& claim_namespace, const std::string& name);

// The writes, as `devshare serve` makes them:
//   PatchNode: a JSON merge patch of the node's annotations. With
//     preconditions: at the command's resourceVersion, and on a 409 (or
//     without a version) the node is read, the preconditions checked, and
//     PATCHed at the version read; a precondition that no longer holds
//     fails the command.
//   PatchPod: a merge patch of the pod's annotations.
//   PostBinding: a Binding of the pod to the node. A 409 or an answer that
//     does not say whether it applied (none, or a 5xx: the API server may
//     bind the pod after answering 504) reads the pod, tried again as a
//     claim's read below: bound to the command's node (its UID the
//     command's) succeeds; still unbound, the Binding is posted again
//     while MayWrite (at most three reads in all); anything else fails.
//   WriteClaimStatus: as kube-scheduler, the finalizer first when asked (a
//     strategic merge PATCH, which adds it to the list), then status
//     allocation and reservedFor (a merge PATCH of /status), each at the
//     version known: the command's, then the finalizer's answer's. A 409
//     on either, or an answer that does not say whether the write applied
//     (none came: a cut connection, a timeout; or a 5xx), reads the claim
//     (and hands it to ClaimSeen), the read tried again after 0.5, 1, 2, 4,
//     8 and 16 s while it gets no answer or a 5xx. Then:
//       - the claim read already carries the command's allocation and
//         reservedFor (a write whose answer was lost): the command
//         succeeded;
//       - the command allocates, the claim read is the same claim (UID)
//         still unallocated and the replica may still write (MayWrite):
//         that write is made again at the version read, at most 3 times in
//         all;
//       - otherwise the command fails, for the engine to judge the claim
//         anew from what was read.
//     So a failure is reported only with the claim as the server has it
//     (or after 31 s of reads without an answer): an engine that gives the
//     room back on a failure does not give back room a lost answer took.
//   RemoveSchedulingGate: a strategic merge PATCH deleting the gate, the
//     pod's UID as precondition.
//   CreateResourceClaim: a POST of the claim with a controller
//     ownerReference to its pod; a 409 (it exists already) is a success.
//   EvictPod: a policy/v1 Eviction of the pod, its UID as precondition and
//     its own grace period; a 404 (gone already) is a success, a 429 (a
//     PodDisruptionBudget) a failure.
//   NominatePod: a merge PATCH of the pod's status.nominatedNodeName; it
//     has no outcome (a failure is logged).
//   PodEvent: a Warning Event on the pod from `reporting_instance`, and a
//     line on stderr; it has no outcome.
void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::PatchNode& c);
void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::PatchPod& c);
void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::PostBinding& c);
void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::WriteClaimStatus& c);
void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::CreateResourceClaim& c);
void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::RemoveSchedulingGate& c);
void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::EvictPod& c);
void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::NominatePod& c);
void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::PodEvent& c,
                const std::string& reporting_instance);

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_SRC_SERVICE_COMMANDS_HPP_
