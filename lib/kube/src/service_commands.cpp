// The engine's API commands executed against the API server
// (service_commands.hpp).
#include "service_commands.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <chrono>
#include <iostream>

#include "devshare/dra_gate.hpp"
#include "devshare/objects_json.hpp"
#include "json_member.hpp"

namespace devshare::kube {

namespace bj = boost::json;

namespace {

constexpr const char* kMergePatch = "application/merge-patch+json";
constexpr const char* kStrategicMergePatch = "application/strategic-merge-patch+json";
// What kube-scheduler puts on a claim it allocates (resourceapi.Finalizer).
constexpr const char* kClaimFinalizer = "resource.kubernetes.io/delete-protection";

bj::object AnnotationsPatch(const std::vector<AnnotationWrite>& writes) {
  bj::object annotations;
  for (const AnnotationWrite& w : writes) {
    if (w.value) {
      annotations[w.key] = *w.value;
    } else {
      annotations[w.key] = nullptr;
    }
  }
  return annotations;
}

// Reports a 2xx as success, anything else as failure.
auto Reporting(const std::shared_ptr<CommandSink>& sink, std::uint64_t id) {
  return [sink, id](const ApiResponse& r) { sink->Outcome(id, r.status / 100 == 2); };
}

// ---- WriteClaimStatus

// One claim write in its steps (service_commands.hpp): the finalizer, then
// the status; the claim read again after a 409 or an unknown outcome.
struct ClaimWrite {
  std::shared_ptr<CommandSink> sink;
  engine::WriteClaimStatus command;
  std::string path;
  int rereads = 0;     // reads after a write's answer, at most kMaxRereads
  int read_tries = 0;  // of the current read, at most kMaxReadTries
};
using ClaimWriteRef = std::shared_ptr<ClaimWrite>;
using ClaimStep = void (*)(const ClaimWriteRef&, const std::string& version);

constexpr int kMaxRereads = 3;
constexpr int kMaxReadTries = 7;  // 0.5 s doubling between them: 31.5 s in all
constexpr std::chrono::milliseconds kFirstReadDelay{500};

// An answer that does not say whether a write applied: none came (the
// connection cut, a timeout) or a 5xx (the server may have applied the
// write before failing, or after answering 504).
bool OutcomeUnknown(const ApiResponse& r) { return r.status == 0 || r.status / 100 == 5; }

// The claim an answer carries, when it decodes.
std::optional<dra::ResourceClaim> ClaimOf(const ApiResponse& r) {
  if (r.status / 100 != 2) return std::nullopt;
  Result<dra::ResourceClaim> claim = dra::DecodeResourceClaim(r.body);
  if (!claim.ok()) return std::nullopt;
  return std::move(*claim);
}

// Whether `claim` is the command's claim with the status the command writes.
bool CarriesCommand(const dra::ResourceClaim& claim, const engine::WriteClaimStatus& command) {
  return claim.uid == command.uid && claim.allocation == command.allocation &&
         claim.reserved_for == command.reserved_for;
}

// One read of Reread's, tried again while it gets no answer or a 5xx.
void ReadAfterWrite(const ClaimWriteRef& w, ClaimStep step) {
  ++w->read_tries;
  w->sink->api().Call("get-claim", "GET", w->path, "", "", [w, step](const ApiResponse& r) {
    if (OutcomeUnknown(r) && w->read_tries < kMaxReadTries) {
      return w->sink->After(kFirstReadDelay * (1 << (w->read_tries - 1)),
                            [w, step] { ReadAfterWrite(w, step); });
    }
    std::optional<dra::ResourceClaim> claim = r.status == 200 ? ClaimOf(r) : std::nullopt;
    if (!claim) return w->sink->Outcome(w->command.id, false);
    if (CarriesCommand(*claim, w->command)) {
      w->sink->Outcome(w->command.id, true);
      return w->sink->ClaimSeen(std::move(*claim));
    }
    const bool still_free = claim->uid == w->command.uid && w->command.allocation &&
                            !claim->allocation && w->sink->MayWrite();
    const std::string version = claim->resource_version;
    w->sink->ClaimSeen(std::move(*claim));
    if (!still_free) return w->sink->Outcome(w->command.id, false);
    step(w, version);
  });
}

// After a 409 or an unknown outcome on `step`: the claim is read (and shown
// to the cache, after the outcome when it says the command succeeded) and
// the command succeeds, writes again at the version read, or fails
// (service_commands.hpp).
void Reread(const ClaimWriteRef& w, ClaimStep step) {
  ++w->rereads;
  w->read_tries = 0;
  ReadAfterWrite(w, step);
}

// Whether a write's answer `r` sends the command to Reread.
bool ToReread(const ClaimWriteRef& w, const ApiResponse& r) {
  return (r.status == 409 || OutcomeUnknown(r)) && w->rereads < kMaxRereads;
}

void WriteStatus(const ClaimWriteRef& w, const std::string& version) {
  w->sink->api().Call(
      "claim-status", "PATCH", w->path + "/status", kMergePatch,
      dra::EncodeClaimStatusPatch(w->command.allocation, w->command.reserved_for, version),
      [w](const ApiResponse& r) {
        if (ToReread(w, r)) return Reread(w, &WriteStatus);
        std::optional<dra::ResourceClaim> written = ClaimOf(r);
        w->sink->Outcome(w->command.id, r.status / 100 == 2);
        // After the outcome: the engine then keeps the claim as written
        // (while the write was in flight it kept what it assumed).
        if (written) w->sink->ClaimSeen(std::move(*written));
      });
}

// As kube-scheduler: the finalizer that keeps an allocated claim from going
// while a pod may use it (a strategic merge adds it to the list, keeping the
// others), then the allocation at the version the finalizer's answer gives.
void AddFinalizer(const ClaimWriteRef& w, const std::string& version) {
  w->sink->api().Call("claim-finalizer", "PATCH", w->path, kStrategicMergePatch,
                      bj::serialize(bj::object{
                          {"metadata", bj::object{{"resourceVersion", version},
                                                  {"finalizers", bj::array{kClaimFinalizer}}}}}),
                      [w](const ApiResponse& r) {
                        if (ToReread(w, r)) return Reread(w, &AddFinalizer);
                        std::optional<dra::ResourceClaim> claim = ClaimOf(r);
                        if (!claim) return w->sink->Outcome(w->command.id, false);
                        const std::string next = claim->resource_version;
                        w->sink->ClaimSeen(std::move(*claim));
                        WriteStatus(w, next);
                      });
}

// ---- PostBinding

// One Binding (service_commands.hpp): posted, and after a 409 or an unknown
// outcome the pod read to learn whether it is bound where the command asks.
struct BindingWrite {
  std::shared_ptr<CommandSink> sink;
  engine::PostBinding command;
  std::string path;  // the pod's
  int rereads = 0;
  int read_tries = 0;
};
using BindingWriteRef = std::shared_ptr<BindingWrite>;

void PostBindingOnce(const BindingWriteRef& w);

// The pod's UID and node, when the answer carries the pod.
std::optional<std::pair<std::string, std::string>> UidAndNode(const ApiResponse& r) {
  boost::system::error_code ec;
  const bj::value pod = r.status == 200 ? bj::parse(r.body, ec) : bj::value();
  if (ec || !pod.is_object()) return std::nullopt;
  const bj::object* meta = ObjectMember(pod.get_object(), "metadata");
  const bj::object* spec = ObjectMember(pod.get_object(), "spec");
  if (meta == nullptr) return std::nullopt;
  return std::pair{StringOrEmpty(*meta, "uid"),
                   spec != nullptr ? StringOrEmpty(*spec, "nodeName") : std::string()};
}

void ReadBinding(const BindingWriteRef& w) {
  ++w->read_tries;
  w->sink->api().Call("get-pod", "GET", w->path, "", "", [w](const ApiResponse& r) {
    if (OutcomeUnknown(r) && w->read_tries < kMaxReadTries) {
      return w->sink->After(kFirstReadDelay * (1 << (w->read_tries - 1)), [w] { ReadBinding(w); });
    }
    const std::optional<std::pair<std::string, std::string>> pod = UidAndNode(r);
    const engine::PostBinding& c = w->command;
    if (!pod || pod->first != c.uid) return w->sink->Outcome(c.id, false);
    if (pod->second == c.node) return w->sink->Outcome(c.id, true);
    if (!pod->second.empty() || !w->sink->MayWrite()) return w->sink->Outcome(c.id, false);
    PostBindingOnce(w);
  });
}

void PostBindingOnce(const BindingWriteRef& w) {
  const engine::PostBinding& c = w->command;
  bj::object metadata{{"name", c.name}, {"namespace", c.pod_namespace}, {"uid", c.uid}};
  if (!c.annotations.entries().empty()) {
    bj::object annotations;
    for (const auto& [k, v] : c.annotations.entries()) annotations[k] = v;
    metadata["annotations"] = std::move(annotations);
  }
  const bj::object binding{
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata", std::move(metadata)},
      {"target", bj::object{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", c.node}}}};
  w->sink->api().Call("binding", "POST", w->path + "/binding", "application/json",
                      bj::serialize(binding), [w](const ApiResponse& r) {
                        if ((r.status == 409 || OutcomeUnknown(r)) && w->rereads < kMaxRereads) {
                          ++w->rereads;
                          w->read_tries = 0;
                          return ReadBinding(w);
                        }
                        w->sink->Outcome(w->command.id, r.status / 100 == 2);
                      });
}

}  // namespace

std::string ClaimPath(const std::string& claim_namespace, const std::string& name) {
  return fmt::format("/apis/resource.k8s.io/v1/namespaces/{}/resourceclaims/{}", claim_namespace,
                     name);
}

void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::PatchNode& c) {
  const std::string path = "/api/v1/nodes/" + c.node;
  const std::uint64_t id = c.id;
  ApiClient& api = sink->api();
  if (c.preconditions.empty()) {
    api.Call("patch-node", "PATCH", path, kMergePatch,
             bj::serialize(
                 bj::object{{"metadata", bj::object{{"annotations", AnnotationsPatch(c.writes)}}}}),
             Reporting(sink, id));
    return;
  }
  // At the version the engine checked the preconditions at, one PATCH;
  // a concurrent writer makes it a 409, and then (or without a version)
  // the node is read, checked, and PATCHed with the version read.
  if (!c.resource_version.empty()) {
    bj::object metadata{{"annotations", AnnotationsPatch(c.writes)},
                        {"resourceVersion", c.resource_version}};
    api.Call("patch-node", "PATCH", path, kMergePatch,
             bj::serialize(bj::object{{"metadata", std::move(metadata)}}),
             [sink, id, c](const ApiResponse& r) {
               if (r.status != 409) return sink->Outcome(id, r.status / 100 == 2);
               engine::PatchNode reread = c;
               reread.resource_version.clear();
               RunCommand(sink, reread);
             });
    return;
  }
  api.Call("get-node", "GET", path, "", "", [sink, id, path, c](const ApiResponse& r) {
    boost::system::error_code ec;
    bj::value node = r.status == 200 ? bj::parse(r.body, ec) : bj::value();
    const bj::object* meta =
        node.is_object() ? ObjectMember(node.get_object(), "metadata") : nullptr;
    if (ec || meta == nullptr) return sink->Outcome(id, false);
    const bj::object* annotations = ObjectMember(*meta, "annotations");
    for (const AnnotationWrite& p : c.preconditions) {
      const bj::value* v = annotations != nullptr ? annotations->if_contains(p.key) : nullptr;
      const bool holds =
          p.value ? (v != nullptr && v->is_string() && v->get_string() == *p.value) : v == nullptr;
      if (!holds) return sink->Outcome(id, false);
    }
    bj::object metadata{{"annotations", AnnotationsPatch(c.writes)}};
    if (const std::string version = StringOrEmpty(*meta, "resourceVersion"); !version.empty())
      metadata["resourceVersion"] = version;
    sink->api().Call("patch-node", "PATCH", path, kMergePatch,
                     bj::serialize(bj::object{{"metadata", metadata}}), Reporting(sink, id));
  });
}

void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::PatchPod& c) {
  bj::object annotations;
  for (const auto& [k, v] : c.annotations.entries()) annotations[k] = v;
  sink->api().Call(
      "patch-pod", "PATCH", fmt::format("/api/v1/namespaces/{}/pods/{}", c.pod_namespace, c.name),
      kMergePatch,
      bj::serialize(bj::object{{"metadata", bj::object{{"annotations", annotations}}}}),
      Reporting(sink, c.id));
}

void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::PostBinding& c) {
  auto w = std::make_shared<BindingWrite>(
      BindingWrite{sink, c, fmt::format("/api/v1/namespaces/{}/pods/{}", c.pod_namespace, c.name)});
  PostBindingOnce(w);
}

void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::WriteClaimStatus& c) {
  auto w = std::make_shared<ClaimWrite>(ClaimWrite{sink, c, ClaimPath(c.claim_namespace, c.name)});
  if (c.add_finalizer) return AddFinalizer(w, c.resource_version);
  WriteStatus(w, c.resource_version);
}

void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::CreateResourceClaim& c) {
  bj::value claim = bj::parse(dra::EncodeResourceClaim(c.claim));
  claim.as_object()["metadata"].as_object()["ownerReferences"] =
      bj::array{bj::object{{"apiVersion", "v1"},
                           {"kind", "Pod"},
                           {"name", c.owner_name},
                           {"uid", c.owner_uid},
                           {"controller", true}}};
  sink->api().Call(
      "create-claim", "POST",
      fmt::format("/apis/resource.k8s.io/v1/namespaces/{}/resourceclaims", c.claim.claim_namespace),
      "application/json", bj::serialize(claim), [sink, c](const ApiResponse& r) {
        const bool ok = r.status / 100 == 2 || r.status == 409;
        if (!ok) {
          std::cerr << fmt::format("devshare serve: creating claim {}/{} failed: HTTP {}: {}\n",
                                   c.claim.claim_namespace, c.claim.name, r.status,
                                   r.body.substr(0, 300));
        }
        sink->Outcome(c.id, ok);
      });
}

void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::RemoveSchedulingGate& c) {
  // A strategic merge deletes the gate by name; the UID makes it this pod.
  const bj::object patch{
      {"metadata", bj::object{{"uid", c.uid}}},
      {"spec",
       bj::object{{"schedulingGates",
                   bj::array{bj::object{{"$patch", "delete"}, {"name", dra::kSchedulingGate}}}}}}};
  sink->api().Call("remove-gate", "PATCH",
                   fmt::format("/api/v1/namespaces/{}/pods/{}", c.pod_namespace, c.name),
                   kStrategicMergePatch, bj::serialize(patch), Reporting(sink, c.id));
}

void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::EvictPod& c) {
  const bj::object eviction{
      {"apiVersion", "policy/v1"},
      {"kind", "Eviction"},
      {"metadata", bj::object{{"name", c.name}, {"namespace", c.pod_namespace}}},
      {"deleteOptions", bj::object{{"preconditions", bj::object{{"uid", c.uid}}}}}};
  sink->api().Call("evict", "POST",
                   fmt::format("/api/v1/namespaces/{}/pods/{}/eviction", c.pod_namespace, c.name),
                   "application/json", bj::serialize(eviction), [sink, c](const ApiResponse& r) {
                     const bool ok = r.status / 100 == 2 || r.status == 404;
                     if (!ok) {
                       std::cerr << fmt::format(
                           "devshare serve: evicting pod {}/{} failed: HTTP {}: {}\n",
                           c.pod_namespace, c.name, r.status, r.body.substr(0, 300));
                     }
                     sink->Outcome(c.id, ok);
                   });
}

void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::NominatePod& c) {
  const bj::object patch{{"status", bj::object{{"nominatedNodeName", c.node}}}};
  sink->api().Call("nominate", "PATCH",
                   fmt::format("/api/v1/namespaces/{}/pods/{}/status", c.pod_namespace, c.name),
                   kMergePatch, bj::serialize(patch), [c](const ApiResponse& r) {
                     if (r.status / 100 == 2) return;
                     std::cerr << fmt::format(
                         "devshare serve: nominating {} for pod {}/{} failed: HTTP {}\n", c.node,
                         c.pod_namespace, c.name, r.status);
                   });
}

void RunCommand(const std::shared_ptr<CommandSink>& sink, const engine::PodEvent& c,
                const std::string& reporting_instance) {
  const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  const std::string now = EncodeMicroTime(now_ms * 1000);
  const bj::object event{
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", bj::object{{"generateName", c.name + "."}, {"namespace", c.pod_namespace}}},
      {"involvedObject", bj::object{{"apiVersion", "v1"},
                                    {"kind", "Pod"},
                                    {"namespace", c.pod_namespace},
                                    {"name", c.name},
                                    {"uid", c.uid}}},
      {"reason", c.reason},
      {"message", c.message},
      {"type", "Warning"},
      {"count", 1},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"source", bj::object{{"component", "devshare"}}},
      {"reportingComponent", "devshare"},
      {"reportingInstance", reporting_instance}};
  sink->api().Call("event", "POST", fmt::format("/api/v1/namespaces/{}/events", c.pod_namespace),
                   "application/json", bj::serialize(event), [](const ApiResponse&) {});
  std::cerr << fmt::format("devshare serve: pod {}/{}: {}: {}\n", c.pod_namespace, c.name, c.reason,
                           c.message);
}

}  // namespace devshare::kube
