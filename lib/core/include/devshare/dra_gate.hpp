// devshare/dra_gate.hpp — which pods devshare allocates DRA claims for,
// and the scheduling gate that holds them until it has.
//
// One allocator per pool: devshare serves a set of DeviceClasses and
// allocates every claim that asks one of them, so kube-scheduler never
// allocates from the same pools. The webhook puts kSchedulingGate on each
// pod that has (or may have) such a claim; devshare allocates the pod's
// claims, writes them, and removes the gate; kube-scheduler then binds the
// pod where the allocations' node selector says.
//
// A pod's claims are judged together:
//   kNotServed  none asks a served class: the pod is none of devshare's
//               business (a gated one is released as it is).
//   kServed     devshare allocates them: every claim not yet allocated
//               asks served classes only and every selector compiles.
//   kWaiting    a claim or template it names is not seen yet, or a claim
//               is still to be made from its template.
//   kRefused    devshare cannot allocate them, and kube-scheduler must not:
//               a selector devshare does not evaluate, a request of a class
//               that is not there, or served and other classes in one pod.
//               The reason says what to change.
//
// Thread-safety: pure functions.
#ifndef DEVSHARE_DRA_GATE_HPP_
#define DEVSHARE_DRA_GATE_HPP_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/export.hpp"
#include "devshare/objects.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/status.hpp"

namespace devshare::dra {

// The scheduling gate of the pods whose claims devshare allocates.
inline constexpr std::string_view kSchedulingGate = "devshare.dev/dra-allocation";

using ServedClasses = std::set<std::string, std::less<>>;

// One of a pod's claims (spec.resourceClaims[]) as the snapshot has it.
struct ResolvedClaim {
  std::string pod_claim;            // the name the pod's containers use
  std::string source;               // "ResourceClaim NS/NAME" or "ResourceClaimTemplate NS/NAME"
  const ClaimSpec* spec = nullptr;  // nullptr: not seen yet
  const ResourceClaim* claim = nullptr;  // the claim; nullptr until it exists
};

enum class ClaimsVerdictKind { kNotServed, kServed, kWaiting, kRefused };

struct ClaimsVerdict {
  ClaimsVerdictKind kind = ClaimsVerdictKind::kNotServed;
  std::string reason;  // kWaiting and kRefused: why, naming the claim
  // kServed: the claims, in the pod's order (pointers into the snapshot,
  // valid until it changes).
  std::vector<ResolvedClaim> claims;
};

// Whether `spec` asks a device of a served class (in `exactly` or any of
// its firstAvailable alternatives).
DEVSHARE_EXPORT bool AsksServedClass(const ClaimSpec& spec, const ServedClasses& served);

// OK when devshare can allocate `spec`: every class it names is in
// `classes` and every selector (the request's and its class's) compiles.
// Errors: kNotFound (a class), kUnsupported or kMalformed (a selector),
// each naming the request and saying what to change.
DEVSHARE_EXPORT Status CheckAllocatable(const ClaimSpec& spec, const DeviceClasses& classes);

// The verdict on `pod`'s claims. `at_admission`: the pod is being created,
// so a claim still to be made from a template is judged by the template
// (afterwards, the claim the resourceclaim controller made is awaited).
DEVSHARE_EXPORT ClaimsVerdict JudgePodClaims(const Pod& pod, const ClusterSnapshot& snapshot,
                                             const ServedClasses& served, bool at_admission);

// Whether `pod` carries kSchedulingGate.
DEVSHARE_EXPORT bool HasSchedulingGate(const Pod& pod);

}  // namespace devshare::dra

#endif  // DEVSHARE_DRA_GATE_HPP_
