// devshare/admission.hpp — the mutating-webhook decision for Pods
// (spec/hami-behaviour.md §3, §9.2; kubernetes-wire.md §2).
//
// Input: an AdmissionReview v1 request as JSON. Output: the AdmissionReview
// response — the request's uid echoed, allowed or denied with a message, and
// a base64 RFC 6902 JSON Patch the API server can apply: a member is added
// under a missing `resources`, `limits` or `env` by adding the parent, never
// below a path that does not exist.
//
// Rules, in HAMi's order: no containers -> deny; DRA (below); the
// scheduler-name gate;
// each container's vendor mutation (priority and core-policy env, a default
// GPU count when only memory/cores are asked, exclusive cores when only a
// count is asked, the runtime class, NVIDIA_VISIBLE_DEVICES=none under
// overwriteEnv); privileged containers with devices -> deny; schedulerName
// rewritten; a pod with nodeName -> deny; the GPU quota pre-check.
//
// DRA (devshare/dra_gate.hpp), with served DeviceClasses: a pod whose
// claims devshare allocates, or that names a claim or template not seen yet,
// gets dra::kSchedulingGate (whatever its scheduler); one whose claims
// devshare cannot allocate is denied with the reason, as is one bound to a
// node already, and one asking an extended resource a served class backs
// (dra::ServedExtendedResource).
//
// Differences (docs/compatibility.md): W12 — the core-policy env goes only to
// containers that ask for a GPU; a memory percentage outside 0..100 is a
// denial with a message, not an HTTP 500 (which `failurePolicy: Ignore`
// would turn into an unmutated pod).
//
// Thread-safety: pure function.
#ifndef DEVSHARE_ADMISSION_HPP_
#define DEVSHARE_ADMISSION_HPP_

#include <string>
#include <string_view>

#include "devshare/dra_gate.hpp"
#include "devshare/export.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/status.hpp"
#include "devshare/vendor.hpp"

namespace devshare {

struct AdmissionOptions {
  // Written into the pods that ask for devices (--scheduler-name). Default:
  // empty (the scheduler name is left alone).
  std::string scheduler_name;
  // Pods naming `default-scheduler` are taken over too. Default: true.
  bool force_overwrite_default_scheduler = true;
  // The DeviceClasses whose claims devshare allocates. Default: none (no
  // pod is gated).
  dra::ServedClasses dra_device_classes;
};

struct AdmissionDecision {
  std::string uid;
  bool allowed = true;
  int code = 0;         // HTTP-style status code of a denial (403, 400)
  std::string message;  // why it was denied, or why it was left alone
  std::string patch;    // the JSON Patch (not base64), empty for none
  friend bool operator==(const AdmissionDecision&, const AdmissionDecision&) = default;
};

// Decides on one AdmissionReview. `state` (may be null) supplies the GPU
// quota state for the pre-check and the DRA objects the pod's claims name. Errors (kMalformed): the
// review is not JSON, or has no request or uid — answer HTTP 400.
DEVSHARE_EXPORT Result<AdmissionDecision> DecideAdmission(std::string_view review_json,
                                                          const DeviceConfig& config,
                                                          const AdmissionOptions& options,
                                                          const ClusterSnapshot* state);

// The AdmissionReview response JSON for `decision` (patch base64-encoded,
// patchType JSONPatch only when there is a patch).
DEVSHARE_EXPORT std::string EncodeAdmissionResponse(const AdmissionDecision& decision);

}  // namespace devshare

#endif  // DEVSHARE_ADMISSION_HPP_
