#include "devshare/kube/service.hpp"

#include <fmt/format.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <boost/asio/ip/address.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <iostream>
#include <map>
#include <random>
#include <unordered_map>

#include "devshare/dra.hpp"
#include "devshare/dra_gate.hpp"
#include "devshare/kube/audit_wire.hpp"
#include "devshare/kube/cluster_read.hpp"
#include "devshare/kube/extender.hpp"
#include "devshare/kube/metrics.hpp"
#include "devshare/lease.hpp"
#include "devshare/objects_json.hpp"

namespace devshare::kube {

namespace asio = boost::asio;
namespace bj = boost::json;

namespace {

constexpr const char* kMergePatch = "application/merge-patch+json";
// What kube-scheduler puts on a claim it allocates (resourceapi.Finalizer).
constexpr const char* kClaimFinalizer = "resource.kubernetes.io/delete-protection";

// The engine's clock: Unix milliseconds (handshake and bind-time stamps are
// wall-clock times).
std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

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

HttpResponse Json(int status, std::string body) {
  return HttpResponse{status, "application/json", std::move(body), {}};
}

HttpResponse Error(int status, std::string_view message) {
  return Json(status, bj::serialize(bj::object{{"error", message}}));
}

// The path's last segment: /scheduler/filter -> filter.
std::string_view Route(std::string_view target) {
  target = target.substr(0, target.find('?'));
  while (target.size() > 1 && target.back() == '/') target.remove_suffix(1);
  return target.substr(target.rfind('/') + 1);
}

// The routes that act with devshare's rights (see service.hpp).
bool ExtenderRoute(std::string_view route) {
  return route == "filter" || route == "prioritize" || route == "bind" || route == "audit";
}

}  // namespace

bool IsLoopbackAddress(std::string_view address) {
  if (address == "localhost") return true;
  boost::system::error_code ec;
  const asio::ip::address a = asio::ip::make_address(std::string(address), ec);
  return !ec && a.is_loopback();
}

struct Service::Impl : std::enable_shared_from_this<Service::Impl> {
  Impl(asio::io_context& io_context, ClusterAccess access, ServiceOptions o)
      : io(io_context),
        options(std::move(o)),
        client(io, std::move(access), options.api, &metrics),
        wake_timer(io),
        elect_timer(io),
        audit_timer(io) {
    engine::EngineOptions e = options.engine;
    if (options.leader != ServiceOptions::Leader::kAlways) {
      e.leadership = engine::Leadership::kFollowLease;
      e.hostname = options.hostname;
    }
    if (options.leader == ServiceOptions::Leader::kElect && options.election.identity.empty()) {
      std::random_device random;
      options.election.identity =
          fmt::format("{}_{:08x}{:08x}", options.hostname, random(), random());
    }
    engine = std::make_unique<engine::Engine>(std::move(e));
  }

  // ---- the engine

  void Execute(std::vector<engine::Command> commands) {
    for (engine::Command& c : commands) std::visit([&](auto& command) { Run(command); }, c);
    ScheduleWake();
  }

  void Outcome(std::uint64_t id, bool ok) {
    std::vector<engine::Command> out;
    engine->ApiResult(id, ok, NowMs(), out);
    Execute(std::move(out));
  }

  void ScheduleWake() {
    const std::optional<std::int64_t> wake = engine->NextWakeMs();
    if (!wake) return;
    wake_timer.expires_after(std::chrono::milliseconds(std::max<std::int64_t>(0, *wake - NowMs())));
    wake_timer.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->stopping) return;
      std::vector<engine::Command> out;
      self->engine->Tick(NowMs(), out);
      self->Execute(std::move(out));
    });
  }

  void Run(engine::PatchNode& c) {
    const std::string path = "/api/v1/nodes/" + c.node;
    const std::uint64_t id = c.id;
    auto self = shared_from_this();
    if (c.preconditions.empty()) {
      client.Call("patch-node", "PATCH", path, kMergePatch,
                  bj::serialize(bj::object{
                      {"metadata", bj::object{{"annotations", AnnotationsPatch(c.writes)}}}}),
                  [self, id](const ApiResponse& r) { self->Outcome(id, r.status / 100 == 2); });
      return;
    }
    // At the version the engine checked the preconditions at, one PATCH;
    // a concurrent writer makes it a 409, and then (or without a version)
    // the node is read, checked, and PATCHed with the version read.
    if (!c.resource_version.empty()) {
      bj::object metadata{{"annotations", AnnotationsPatch(c.writes)},
                          {"resourceVersion", c.resource_version}};
      client.Call("patch-node", "PATCH", path, kMergePatch,
                  bj::serialize(bj::object{{"metadata", std::move(metadata)}}),
                  [self, id, c](const ApiResponse& r) {
                    if (r.status != 409) return self->Outcome(id, r.status / 100 == 2);
                    engine::PatchNode reread = c;
                    reread.resource_version.clear();
                    self->Run(reread);
                  });
      return;
    }
    client.Call("get-node", "GET", path, "", "", [self, id, path, c](const ApiResponse& r) {
      boost::system::error_code ec;
      bj::value node = r.status == 200 ? bj::parse(r.body, ec) : bj::value();
      const bj::value* meta =
          node.is_object() ? node.get_object().if_contains("metadata") : nullptr;
      if (ec || meta == nullptr || !meta->is_object()) return self->Outcome(id, false);
      const bj::value* annotations = meta->get_object().if_contains("annotations");
      for (const AnnotationWrite& p : c.preconditions) {
        const bj::value* v = annotations != nullptr && annotations->is_object()
                                 ? annotations->get_object().if_contains(p.key)
                                 : nullptr;
        const bool holds = p.value ? (v != nullptr && v->is_string() && v->get_string() == *p.value)
                                   : v == nullptr;
        if (!holds) return self->Outcome(id, false);
      }
      const bj::value* version = meta->get_object().if_contains("resourceVersion");
      bj::object metadata{{"annotations", AnnotationsPatch(c.writes)}};
      if (version != nullptr && version->is_string())
        metadata["resourceVersion"] = version->get_string();
      self->client.Call(
          "patch-node", "PATCH", path, kMergePatch,
          bj::serialize(bj::object{{"metadata", metadata}}),
          [self, id](const ApiResponse& patched) { self->Outcome(id, patched.status / 100 == 2); });
    });
  }

  void Run(engine::PatchPod& c) {
    bj::object annotations;
    for (const auto& [k, v] : c.annotations.entries()) annotations[k] = v;
    const std::uint64_t id = c.id;
    client.Call("patch-pod", "PATCH",
                fmt::format("/api/v1/namespaces/{}/pods/{}", c.pod_namespace, c.name), kMergePatch,
                bj::serialize(bj::object{{"metadata", bj::object{{"annotations", annotations}}}}),
                [self = shared_from_this(), id](const ApiResponse& r) {
                  self->Outcome(id, r.status / 100 == 2);
                });
  }

  void Run(engine::PostBinding& c) {
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
    const std::uint64_t id = c.id;
    client.Call("binding", "POST",
                fmt::format("/api/v1/namespaces/{}/pods/{}/binding", c.pod_namespace, c.name),
                "application/json", bj::serialize(binding),
                [self = shared_from_this(), id](const ApiResponse& r) {
                  self->Outcome(id, r.status / 100 == 2);
                });
  }

  // ---- DRA

  static std::string ClaimPath(const std::string& claim_namespace, const std::string& name) {
    return fmt::format("/apis/resource.k8s.io/v1/namespaces/{}/resourceclaims/{}", claim_namespace,
                       name);
  }

  void Run(engine::WriteClaimStatus& c) {
    const std::string path = ClaimPath(c.claim_namespace, c.name);
    const std::uint64_t id = c.id;
    auto self = shared_from_this();
    // The status at `version`: a claim changed since is a 409, a failure.
    auto write_status = [self, id, path, allocation = std::move(c.allocation),
                         reserved_for = std::move(c.reserved_for)](const std::string& version) {
      self->client.Call(
          "claim-status", "PATCH", path + "/status", kMergePatch,
          dra::EncodeClaimStatusPatch(allocation, reserved_for, version),
          [self, id](const ApiResponse& r) { self->Outcome(id, r.status / 100 == 2); });
    };
    if (!c.add_finalizer) return write_status(c.resource_version);
    // As kube-scheduler: the finalizer that keeps an allocated claim from
    // going while a pod may use it, then the allocation (a strategic merge
    // adds it to the list, keeping the others).
    client.Call("claim-finalizer", "PATCH", path, "application/strategic-merge-patch+json",
                bj::serialize(bj::object{
                    {"metadata", bj::object{{"resourceVersion", c.resource_version},
                                            {"finalizers", bj::array{kClaimFinalizer}}}}}),
                [self, id, write_status](const ApiResponse& r) {
                  if (r.status / 100 != 2) return self->Outcome(id, false);
                  boost::system::error_code ec;
                  const bj::value claim = bj::parse(r.body, ec);
                  const bj::value* version =
                      ec ? nullptr : claim.find_pointer("/metadata/resourceVersion", ec);
                  if (version == nullptr || !version->is_string()) return self->Outcome(id, false);
                  write_status(std::string(version->get_string()));
                });
  }

  void Run(engine::RemoveSchedulingGate& c) {
    // A strategic merge deletes the gate by name; the UID makes it this pod.
    const bj::object patch{
        {"metadata", bj::object{{"uid", c.uid}}},
        {"spec",
         bj::object{{"schedulingGates", bj::array{bj::object{{"$patch", "delete"},
                                                             {"name", dra::kSchedulingGate}}}}}}};
    const std::uint64_t id = c.id;
    client.Call("remove-gate", "PATCH",
                fmt::format("/api/v1/namespaces/{}/pods/{}", c.pod_namespace, c.name),
                "application/strategic-merge-patch+json", bj::serialize(patch),
                [self = shared_from_this(), id](const ApiResponse& r) {
                  self->Outcome(id, r.status / 100 == 2);
                });
  }

  void Run(engine::PodEvent& c) {
    const std::string now = EncodeMicroTime(NowMs() * 1000);
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
        {"reportingInstance", options.hostname}};
    client.Call("event", "POST", fmt::format("/api/v1/namespaces/{}/events", c.pod_namespace),
                "application/json", bj::serialize(event), [](const ApiResponse&) {});
    std::cerr << fmt::format("devshare serve: pod {}/{} stays gated: {}\n", c.pod_namespace, c.name,
                             c.message);
  }

  void Run(engine::FilterReply& reply) {
    auto it = filters.find(reply.request);
    if (it == filters.end()) return;
    PendingFilter pending = std::move(it->second);
    filters.erase(it);
    const std::string_view outcome = !reply.error.empty()
                                         ? (reply.error.starts_with("not ready") ? "refused"
                                            : reply.error.starts_with("busy")    ? "busy"
                                                                                 : "error")
                                     : reply.nodes.empty() ? "unschedulable"
                                                           : "placed";
    metrics.ObserveFilter(outcome, Seconds(pending.start));
    HttpResponse response = Json(200, EncodeFilterResult(pending.args, reply));
    // Refused: this replica does not lead. The client's next request goes on
    // a new connection, which a Service sends to the ready replica (a kept
    // connection would stay with this one).
    response.close = outcome == "refused";
    pending.respond(std::move(response));
  }

  void Run(engine::BindReply& reply) {
    auto it = binds.find(reply.request);
    if (it == binds.end()) return;
    auto [respond, start] = std::move(it->second);
    binds.erase(it);
    metrics.ObserveBind(reply.error.empty() ? "bound" : "failed", Seconds(start));
    HttpResponse response = Json(200, EncodeBindResult(reply.error));
    response.close = reply.error.starts_with("not ready");
    respond(std::move(response));
  }

  static double Seconds(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // ---- the watches

  void OnNode(const WatchEvent& e) {
    if (e.type == "DELETED") {
      const bj::value* meta =
          e.object.is_object() ? e.object.get_object().if_contains("metadata") : nullptr;
      const bj::value* name =
          meta != nullptr && meta->is_object() ? meta->get_object().if_contains("name") : nullptr;
      if (name != nullptr && name->is_string())
        engine->NodeDeleted(std::string(name->get_string()));
      return;
    }
    if (!e.object.is_object()) return;
    Result<Node> node = DecodeNode(e.object.get_object());
    if (!node.ok()) return;  // not a node we can read: ignored, as the informer would fail it
    std::vector<engine::Command> out;
    engine->NodeObserved(*node, NowMs(), out);
    ReportNodeError(node->name);
    Execute(std::move(out));
  }

  // A node whose devices could not be registered is said once on stderr, and
  // again when the reason changes (devshare_nodes_undecodable counts them).
  void ReportNodeError(const std::string& name) {
    const auto& errors = engine->node_errors();
    auto it = errors.find(name);
    if (it == errors.end()) {
      reported_node_errors.erase(name);
      return;
    }
    std::string& reported = reported_node_errors[name];
    if (reported == it->second) return;
    reported = it->second;
    std::cerr << fmt::format("devshare serve: {} (its devices are left out)\n", it->second);
  }

  void OnPod(const WatchEvent& e) {
    if (e.type == "DELETED") {
      const bj::value* meta =
          e.object.is_object() ? e.object.get_object().if_contains("metadata") : nullptr;
      const bj::value* uid =
          meta != nullptr && meta->is_object() ? meta->get_object().if_contains("uid") : nullptr;
      if (uid != nullptr && uid->is_string()) engine->PodDeleted(std::string(uid->get_string()));
      return ScheduleWake();
    }
    if (!e.object.is_object()) return;
    Result<Pod> pod = DecodePod(e.object.get_object());
    if (pod.ok()) engine->PodObserved(*pod);
    ScheduleWake();  // a gated pod, or room freed for one
  }

  // The DRA objects (with served DeviceClasses): every change goes to the
  // engine, whose pass runs at the next wake; once each list is whole, the
  // engine may allocate.
  template <typename T>
  void WatchDraKind(const std::string& resource, Result<T> (*decode)(std::string_view),
                    void (*apply)(engine::Engine&, T),
                    void (*remove)(engine::Engine&, const std::string&, const std::string&)) {
    const std::size_t index = dra_synced.size();
    dra_synced.push_back(false);
    std::weak_ptr<Impl> weak = weak_from_this();
    client.Watch(
        "/apis/resource.k8s.io/v1/" + resource, "",
        [weak, decode, apply, remove](const WatchEvent& e) {
          auto self = weak.lock();
          if (!self || !e.object.is_object()) return;
          if (e.type == "DELETED") {
            boost::system::error_code ec;
            const bj::value* name = e.object.find_pointer("/metadata/name", ec);
            const bj::value* ns = e.object.find_pointer("/metadata/namespace", ec);
            if (name == nullptr || !name->is_string()) return;
            remove(*self->engine,
                   ns != nullptr && ns->is_string() ? std::string(ns->get_string()) : "",
                   std::string(name->get_string()));
          } else {
            Result<T> decoded = decode(bj::serialize(e.object));
            if (!decoded.ok()) {
              std::cerr << fmt::format("devshare serve: {} left out: {}\n", e.type,
                                       decoded.status().message());
              return;
            }
            apply(*self->engine, std::move(*decoded));
          }
          self->ScheduleWake();
        },
        [weak, index] {
          auto self = weak.lock();
          if (!self || self->dra_synced[index]) return;
          self->dra_synced[index] = true;
          if (std::all_of(self->dra_synced.begin(), self->dra_synced.end(),
                          [](bool synced) { return synced; })) {
            self->engine->DraSynced();
            self->ScheduleWake();
          }
        });
  }

  void WatchDra() {
    WatchDraKind<dra::ResourceSlice>(
        "resourceslices", &dra::DecodeResourceSlice,
        [](engine::Engine& e, dra::ResourceSlice s) { e.ResourceSliceObserved(std::move(s)); },
        [](engine::Engine& e, const std::string&, const std::string& name) {
          e.ResourceSliceDeleted(name);
        });
    WatchDraKind<dra::DeviceClass>(
        "deviceclasses", &dra::DecodeDeviceClass,
        [](engine::Engine& e, dra::DeviceClass c) { e.DeviceClassObserved(std::move(c)); },
        [](engine::Engine& e, const std::string&, const std::string& name) {
          e.DeviceClassDeleted(name);
        });
    WatchDraKind<dra::ResourceClaim>(
        "resourceclaims", &dra::DecodeResourceClaim,
        [](engine::Engine& e, dra::ResourceClaim c) { e.ResourceClaimObserved(std::move(c)); },
        [](engine::Engine& e, const std::string& ns, const std::string& name) {
          e.ResourceClaimDeleted(ns, name);
        });
    WatchDraKind<dra::ResourceClaimTemplate>(
        "resourceclaimtemplates", &dra::DecodeResourceClaimTemplate,
        [](engine::Engine& e, dra::ResourceClaimTemplate t) {
          e.ResourceClaimTemplateObserved(std::move(t));
        },
        [](engine::Engine& e, const std::string& ns, const std::string& name) {
          e.ResourceClaimTemplateDeleted(ns, name);
        });
  }

  void OnLease(const WatchEvent& e) {
    std::optional<LeaseRecord> lease;
    if (e.type != "DELETED") {
      if (!e.object.is_object()) return;
      Result<LeaseRecord> decoded = DecodeLease(e.object.get_object());
      if (!decoded.ok()) return;
      lease = std::move(*decoded);
    }
    current_lease = lease;
    std::vector<engine::Command> out;
    engine->LeaseObserved(lease, NowMs(), out);
    Execute(std::move(out));
  }

  // ---- the election (kElect)

  std::string LeasePath(bool named) const {
    return fmt::format("/apis/coordination.k8s.io/v1/namespaces/{}/leases{}",
                       options.lease_namespace, named ? "/" + options.lease_name : "");
  }

  void Elect() {
    auto self = shared_from_this();
    client.Call("get-lease", "GET", LeasePath(true), "", "", [self](const ApiResponse& r) {
      if (self->stopping) return;
      std::optional<LeaseRecord> current;
      if (r.status == 200) {
        Result<LeaseRecord> decoded = DecodeLease(r.body);
        if (decoded.ok()) current = std::move(*decoded);
      }
      if (r.status != 200 && r.status != 404) {
        ElectionReadFailed(self->elector, self->options.election, NowMs());
      } else {
        ElectionDecision d =
            TryAcquireOrRenew(self->elector, current, self->options.election,
                              self->options.lease_name, self->options.lease_namespace, NowMs());
        const bool create = d.action == ElectionAction::kCreate;
        if (create || d.action == ElectionAction::kAcquire || d.action == ElectionAction::kRenew) {
          self->client.Call(create ? "create-lease" : "update-lease", create ? "POST" : "PUT",
                            self->LeasePath(!create), "application/json", EncodeLease(d.lease),
                            [self, d](const ApiResponse& w) {
                              ElectionWriteResult(self->elector, d, w.status / 100 == 2, NowMs());
                            });
        }
      }
      self->elect_timer.expires_after(
          std::chrono::milliseconds(self->options.election.retry_period_ms));
      self->elect_timer.async_wait([self](boost::system::error_code ec) {
        if (!ec && !self->stopping) self->Elect();
      });
    });
  }

  // ---- the drift auditor

  struct AuditRun {
    engine::AuditListing listing;
    AuditListCost cost;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    std::vector<Responder> waiting;  // /debug/audit requests answered at the end
  };

  std::string ExtenderListenerName() const {
    const HttpServerOptions& o = options.extender_http ? *options.extender_http : options.http;
    return fmt::format("{}:{}", o.address, extender_server ? extender_server->port() : o.port);
  }

  // The next audit: a period after this one, or when a suspected
  // difference can be confirmed, whichever comes first.
  void ScheduleAudit() {
    if (stopping) return;
    std::optional<std::int64_t> at;
    if (options.audit_period.count() > 0) at = NowMs() + options.audit_period.count();
    if (std::optional<std::int64_t> follow_up = engine->AuditFollowUpMs())
      at = at ? std::min(*at, *follow_up) : *follow_up;
    if (!at) return;
    audit_timer.expires_after(std::chrono::milliseconds(std::max<std::int64_t>(0, *at - NowMs())));
    audit_timer.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      auto self = weak.lock();
      if (!ec && self && !self->stopping) self->StartAudit(nullptr);
    });
  }

  void StartAudit(Responder respond) {
    if (audit) {  // one LIST at a time: a request joins the running audit
      if (respond) audit->waiting.push_back(std::move(respond));
      return;
    }
    if (!synced()) {
      if (respond) respond(Error(503, "not ready: the cluster cache is still syncing"));
      return ScheduleAudit();
    }
    audit_timer.cancel();
    audit = std::make_shared<AuditRun>();
    if (respond) audit->waiting.push_back(std::move(respond));
    ListAuditPage(audit, AuditStage::kNodes, "");
  }

  // The listing, page by page: nodes, then unfinished pods, then (with
  // served DeviceClasses) ResourceClaims.
  enum class AuditStage { kNodes, kPods, kClaims };
  void ListAuditPage(const std::shared_ptr<AuditRun>& run, AuditStage stage,
                     const std::string& token) {
    struct Stage {
      const char* verb;
      const char* path;
      std::string_view selector;
      const char* what;
    };
    static constexpr Stage kStages[] = {
        {"audit-list-nodes", "/api/v1/nodes", "", "nodes"},
        {"audit-list-pods", "/api/v1/pods", kUnfinishedPods, "pods"},
        {"audit-list-claims", "/apis/resource.k8s.io/v1/resourceclaims", "", "claims"}};
    const Stage& at = kStages[static_cast<int>(stage)];
    client.GetMetadata(
        at.verb, ListTarget(at.path, at.selector, token),
        [self = shared_from_this(), run, stage, at](const ApiResponse& r) {
          if (self->stopping) return;
          ++run->cost.pages;
          run->cost.bytes += r.body.size();
          if (r.status != 200) {
            return self->AuditFailed(
                run, r.status == 0 ? fmt::format("listing {}: {}", at.what, r.error)
                                   : fmt::format("listing {}: HTTP {}", at.what, r.status));
          }
          Result<MetadataPage> page = DecodeMetadataPage(r.body);
          if (!page.ok())
            return self->AuditFailed(
                run, fmt::format("listing {}: {}", at.what, page.status().message()));
          std::vector<engine::ListedObject>& into = stage == AuditStage::kNodes ? run->listing.nodes
                                                    : stage == AuditStage::kPods
                                                        ? run->listing.pods
                                                        : run->listing.claims;
          into.insert(into.end(), std::make_move_iterator(page->objects.begin()),
                      std::make_move_iterator(page->objects.end()));
          if (!page->continue_token.empty())
            return self->ListAuditPage(run, stage, page->continue_token);
          if (stage == AuditStage::kNodes) return self->ListAuditPage(run, AuditStage::kPods, "");
          if (stage == AuditStage::kPods && !self->options.engine.dra_device_classes.empty())
            return self->ListAuditPage(run, AuditStage::kClaims, "");
          self->CompleteAudit(run);
        });
  }

  void AuditFailed(const std::shared_ptr<AuditRun>& run, const std::string& why) {
    std::cerr << fmt::format("devshare serve: audit: {}; trying again at the next audit\n", why);
    for (Responder& respond : run->waiting) respond(Error(503, fmt::format("audit: {}", why)));
    audit.reset();
    ScheduleAudit();
  }

  void CompleteAudit(const std::shared_ptr<AuditRun>& run) {
    run->cost.seconds = Seconds(run->start);
    run->cost.objects =
        run->listing.nodes.size() + run->listing.pods.size() + run->listing.claims.size();
    std::vector<engine::Command> out;
    const engine::AuditReport report = engine->Audit(run->listing, NowMs(), out);
    run->listing = {};
    last_suspected = 0;
    for (const engine::Drift& d : report.differences) {
      if (!d.confirmed) {
        ++last_suspected;
        continue;
      }
      std::cerr << fmt::format("devshare serve: audit: {} {}: {}{}\n",
                               engine::DriftKindName(d.kind), d.object, d.detail,
                               d.healed ? " (healed)" : "");
    }
    last_audit_cost = run->cost;
    for (const std::string& node : report.nodes_to_read) ReadNodeAgain(node);
    for (const engine::PodToRead& pod : report.pods_to_read) ReadPodAgain(pod);
    for (const engine::ClaimToRead& claim : report.claims_to_read) ReadClaimAgain(claim);
    Execute(std::move(out));
    const std::string body =
        EncodeAuditReport(report, engine->audit_totals(), run->cost, Seconds(run->start) * 1000);
    for (Responder& respond : run->waiting) respond(Json(200, body));
    audit.reset();
    ReturnFreeMemory();
    ScheduleAudit();
  }

  // The listing is the largest allocation between audits, and glibc's
  // allocator keeps what is freed below the top of its heap: serve's RSS
  // climbed by about 250 KiB a minute in soaks while the heap in use stayed
  // flat.
  static void ReturnFreeMemory() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
  }

  // A heal: the object as the API server has it now, decoded by `decode`
  // and handed to `apply` (nullopt: a 404, the object's absence); any other
  // failure is left for the next audit.
  template <typename T, typename Decode, typename Apply>
  void ReadAgain(const std::string& verb, const std::string& path, Decode decode, Apply apply) {
    client.Call(verb, "GET", path, "", "",
                [self = shared_from_this(), decode = std::move(decode),
                 apply = std::move(apply)](const ApiResponse& r) {
                  if (self->stopping || (r.status != 200 && r.status != 404)) return;
                  std::optional<T> object;
                  if (r.status == 200) {
                    Result<T> decoded = decode(r.body);
                    if (!decoded.ok()) return;
                    object = std::move(*decoded);
                  }
                  apply(*self, object);
                });
  }

  void ReadNodeAgain(const std::string& name) {
    ReadAgain<Node>(
        "audit-get-node", "/api/v1/nodes/" + name,
        [](std::string_view body) { return DecodeNode(body); },
        [name](Impl& self, const std::optional<Node>& node) {
          std::vector<engine::Command> out;
          self.engine->NodeRead(name, node, NowMs(), out);
          self.ReportNodeError(name);
          self.Execute(std::move(out));
        });
  }

  void ReadPodAgain(const engine::PodToRead& asked) {
    ReadAgain<Pod>(
        "audit-get-pod",
        fmt::format("/api/v1/namespaces/{}/pods/{}", asked.pod_namespace, asked.name),
        [](std::string_view body) { return DecodePod(body); },
        [asked](Impl& self, const std::optional<Pod>& pod) { self.engine->PodRead(asked, pod); });
  }

  void ReadClaimAgain(const engine::ClaimToRead& asked) {
    ReadAgain<dra::ResourceClaim>(
        "audit-get-claim", ClaimPath(asked.claim_namespace, asked.name),
        [](std::string_view body) { return dra::DecodeResourceClaim(body); },
        [asked](Impl& self, const std::optional<dra::ResourceClaim>& claim) {
          self.engine->ClaimRead(asked, claim);
          self.ScheduleWake();
        });
  }

  // ---- HTTP

  // `trusted`: the listener's callers are known (loopback, or a client
  // certificate), so the extender's routes are served.
  void Handle(HttpRequest request, Responder respond, bool trusted) {
    const std::string_view route = Route(request.target);
    const bool post = request.method == "POST";
    if (ExtenderRoute(route) && !trusted) {
      return respond(
          Error(403, fmt::format("{} is served only on the extender listener ({}), not on one the "
                                 "network reaches",
                                 request.target, ExtenderListenerName())));
    }
    if (route == "audit") {
      if (request.method != "GET") return respond(Error(405, "use GET"));
      return StartAudit(std::move(respond));
    }
    if (request.target.substr(0, request.target.find('?')) == "/readyz/admission") {
      if (request.method != "GET") return respond(Error(405, "use GET"));
      return respond(
          synced() ? HttpResponse{200, "text/plain", "ok", {}}
                   : HttpResponse{
                         503, "text/plain", "not ready: the cluster cache is still syncing", {}});
    }
    if (route == "healthz" || route == "readyz" || route == "metrics") {
      if (request.method != "GET") return respond(Error(405, "use GET"));
      if (route == "healthz") return respond(HttpResponse{200, "text/plain", "ok", {}});
      if (route == "readyz") {
        return respond(
            Ready() ? HttpResponse{200, "text/plain", "ok", {}}
                    : HttpResponse{
                          503, "text/plain", "not ready: not leading, or not registered yet", {}});
      }
      metrics.SetCluster(Ready(), engine->snapshot(), options.engine.filter.workload);
      metrics.SetUndecodableNodes(engine->node_errors().size());
      metrics.SetApiConnections(client.connection_stats());
      metrics.SetAudit(engine->audit_totals(), last_suspected, last_audit_cost);
      if (!options.engine.dra_device_classes.empty()) metrics.SetDra(MeasureDra(*engine));
      return respond(HttpResponse{200, "text/plain; version=0.0.4", metrics.Render(), {}});
    }
    if (route != "filter" && route != "prioritize" && route != "bind" && route != "webhook") {
      return respond(Error(404, fmt::format("no route {}", request.target)));
    }
    if (!post) return respond(Error(405, "use POST"));
    if (route == "webhook") {
      Result<AdmissionDecision> d = DecideAdmission(request.body, options.engine.config,
                                                    options.admission, &engine->snapshot());
      if (!d.ok()) return respond(Error(400, d.status().message()));
      return respond(Json(200, EncodeAdmissionResponse(*d)));
    }
    if (route == "bind") {
      Result<BindArgs> args = DecodeBindArgs(request.body);
      if (!args.ok()) return respond(Error(400, args.status().message()));
      const std::uint64_t id = next_request++;
      binds.emplace(id, std::pair{std::move(respond), std::chrono::steady_clock::now()});
      std::vector<engine::Command> out;
      engine->Bind(id, args->pod_namespace, args->pod_name, args->pod_uid, args->node, NowMs(),
                   out);
      return Execute(std::move(out));
    }
    Result<ExtenderArgs> args = DecodeExtenderArgs(request.body);
    if (!args.ok()) return respond(Error(400, args.status().message()));
    if (route == "prioritize") {
      // kube-scheduler leaves the ranking to its other plugins when an
      // extender's prioritize fails.
      if (!synced()) return respond(Error(503, "not ready: the cluster cache is still syncing"));
      Result<std::vector<NodeScore>> scores = engine->Prioritize(args->pod, args->nodes, NowMs());
      if (!scores.ok()) {
        return respond(Error(scores.status().code() == StatusCode::kUnavailable ? 503 : 400,
                             scores.status().message()));
      }
      return respond(Json(200, EncodeHostPriorities(*scores)));
    }
    if (!synced()) {
      metrics.ObserveFilter("refused", 0);
      engine::FilterReply refused{0, {}, {}, "not ready: the cluster cache is still syncing"};
      HttpResponse response = Json(200, EncodeFilterResult(*args, refused));
      response.close = true;
      return respond(std::move(response));
    }
    const std::uint64_t id = next_request++;
    const auto start = std::chrono::steady_clock::now();
    engine->PodObserved(args->pod);  // the scheduler's copy is at least as new as the watch's
    std::vector<engine::Command> out;
    engine->Filter(id, args->pod, args->nodes, NowMs(), out);
    filters.emplace(id, PendingFilter{std::move(respond), std::move(*args), start});
    Execute(std::move(out));
  }

  bool synced() const { return nodes_synced && pods_synced; }
  bool Ready() const { return synced() && engine->Ready(NowMs()); }

  struct PendingFilter {
    Responder respond;
    ExtenderArgs args;
    std::chrono::steady_clock::time_point start;
  };

  asio::io_context& io;
  ServiceOptions options;
  Metrics metrics;
  std::unique_ptr<engine::Engine> engine;
  ApiClient client;
  std::unique_ptr<HttpServer> server, extender_server;
  asio::steady_timer wake_timer, elect_timer, audit_timer;
  std::shared_ptr<AuditRun> audit;  // the audit in progress
  AuditListCost last_audit_cost;
  std::uint64_t last_suspected = 0;
  std::uint64_t next_request = 1;
  std::unordered_map<std::uint64_t, PendingFilter> filters;
  std::map<std::string, std::string> reported_node_errors;  // ReportNodeError
  std::unordered_map<std::uint64_t, std::pair<Responder, std::chrono::steady_clock::time_point>>
      binds;
  Elector elector;
  std::optional<LeaseRecord> current_lease;
  bool nodes_synced = false, pods_synced = false, stopping = false;
  std::vector<bool> dra_synced;  // per DRA watch (WatchDraKind)
};

Service::Service(asio::io_context& io, ClusterAccess access, ServiceOptions options)
    : impl_(std::make_shared<Impl>(io, std::move(access), std::move(options))) {}

Service::~Service() { Stop(); }

Status Service::Start() {
  Status s = impl_->client.Start();
  if (!s.ok()) return s;
  if (impl_->options.leader == ServiceOptions::Leader::kElect) {
    s = ValidateElectionConfig(impl_->options.election);
    if (!s.ok()) return s;
  }
  std::weak_ptr<Impl> weak = impl_;
  auto serve = [&](const HttpServerOptions& o, std::unique_ptr<HttpServer>& server) {
    const bool trusted = IsLoopbackAddress(o.address) || !o.client_ca_file.empty();
    server = std::make_unique<HttpServer>(
        impl_->io, o, [weak, trusted](HttpRequest r, Responder respond) {
          if (auto self = weak.lock())
            return self->Handle(std::move(r), std::move(respond), trusted);
          respond(Error(503, "shutting down"));
        });
    return server->Start();
  };
  if (s = serve(impl_->options.http, impl_->server); !s.ok()) return s;
  if (impl_->options.extender_http) {
    if (s = serve(*impl_->options.extender_http, impl_->extender_server); !s.ok()) return s;
  }
  impl_->client.Watch(
      "/api/v1/nodes", "",
      [weak](const WatchEvent& e) {
        if (auto self = weak.lock()) self->OnNode(e);
      },
      [weak] {
        if (auto self = weak.lock()) self->nodes_synced = true;
      });
  impl_->client.Watch(
      "/api/v1/pods", std::string(kUnfinishedPods),
      [weak](const WatchEvent& e) {
        if (auto self = weak.lock()) self->OnPod(e);
      },
      [weak] {
        if (auto self = weak.lock()) self->pods_synced = true;
      });
  if (!impl_->options.engine.dra_device_classes.empty()) impl_->WatchDra();
  if (impl_->options.leader != ServiceOptions::Leader::kAlways) {
    impl_->client.Watch(impl_->LeasePath(false), "metadata.name=" + impl_->options.lease_name,
                        [weak](const WatchEvent& e) {
                          if (auto self = weak.lock()) self->OnLease(e);
                        },
                        {});
  }
  if (impl_->options.leader == ServiceOptions::Leader::kElect) impl_->Elect();
  impl_->ScheduleAudit();
  return Status();
}

std::uint16_t Service::port() const { return impl_->server ? impl_->server->port() : 0; }

std::uint16_t Service::extender_port() const {
  return impl_->extender_server ? impl_->extender_server->port() : 0;
}

void Service::Stop() {
  if (impl_->stopping) return;
  impl_->stopping = true;
  if (impl_->server) impl_->server->Stop();
  if (impl_->extender_server) impl_->extender_server->Stop();
  impl_->wake_timer.cancel();
  impl_->audit_timer.cancel();
  impl_->elect_timer.cancel();
  if (impl_->elector.leading && impl_->current_lease) {
    // ReleaseOnCancel: hand the Lease over at once.
    LeaseRecord released = ReleaseLease(*impl_->current_lease, NowMs() * 1000);
    auto self = impl_;
    impl_->client.Call("update-lease", "PUT", impl_->LeasePath(true), "application/json",
                       EncodeLease(released), [self](const ApiResponse&) { self->client.Stop(); });
    return;
  }
  impl_->client.Stop();
}

}  // namespace devshare::kube
