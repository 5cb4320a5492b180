// `devshare serve`'s drift auditor (devshare/kube/service.hpp, "The drift
// auditor"): metadata listings handed to Engine::Audit, and the objects it
// asks for read again.
#include <fmt/format.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <iostream>

#include "devshare/dra.hpp"
#include "devshare/kube/audit_wire.hpp"
#include "devshare/kube/cluster_read.hpp"
#include "devshare/objects_json.hpp"
#include "service_impl.hpp"

namespace devshare::kube {

struct Service::Impl::AuditRun {
  engine::AuditListing listing;
  AuditListCost cost;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::vector<Responder> waiting;  // /debug/audit requests answered at the end
};

namespace {

// The listing is the largest allocation between audits, and glibc's
// allocator keeps what is freed below the top of its heap: serve's RSS
// climbed by about 250 KiB a minute in soaks while the heap in use stayed
// flat.
void ReturnFreeMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

// A heal: the object as the API server has it now, decoded by `decode`
// and handed to `apply` (nullopt: a 404, the object's absence); any other
// failure is left for the next audit.
template <typename T, typename Decode, typename Apply>
void ReadAgain(const std::shared_ptr<Service::Impl>& impl, const std::string& verb,
               const std::string& path, Decode decode, Apply apply) {
  impl->client.Call(
      verb, "GET", path, "", "",
      [self = impl, decode = std::move(decode), apply = std::move(apply)](const ApiResponse& r) {
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

}  // namespace

// The next audit: a period after this one, or when a suspected
// difference can be confirmed, whichever comes first.
void Service::Impl::ScheduleAudit() {
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

void Service::Impl::StartAudit(Responder respond) {
  if (audit) {  // one LIST at a time: a request joins the running audit
    if (respond) audit->waiting.push_back(std::move(respond));
    return;
  }
  if (!synced()) {
    if (respond) respond(ErrorResponse(503, "not ready: the cluster cache is still syncing"));
    return ScheduleAudit();
  }
  audit_timer.cancel();
  audit = std::make_shared<AuditRun>();
  if (respond) audit->waiting.push_back(std::move(respond));
  ListAuditPage(audit, AuditStage::kNodes, "");
}

// The listing, page by page: nodes, then unfinished pods, then
// ResourceQuotas, then (with served DeviceClasses) ResourceClaims.
void Service::Impl::ListAuditPage(const std::shared_ptr<AuditRun>& run, AuditStage stage,
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
      {"audit-list-quotas", "/api/v1/resourcequotas", "", "quotas"},
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
          return self->AuditFailed(run,
                                   fmt::format("listing {}: {}", at.what, page.status().message()));
        engine::AuditListing& l = run->listing;
        std::vector<engine::ListedObject>& into = stage == AuditStage::kNodes    ? l.nodes
                                                  : stage == AuditStage::kPods   ? l.pods
                                                  : stage == AuditStage::kQuotas ? l.quotas
                                                                                 : l.claims;
        into.insert(into.end(), std::make_move_iterator(page->objects.begin()),
                    std::make_move_iterator(page->objects.end()));
        if (!page->continue_token.empty())
          return self->ListAuditPage(run, stage, page->continue_token);
        if (stage == AuditStage::kNodes) return self->ListAuditPage(run, AuditStage::kPods, "");
        if (stage == AuditStage::kPods) return self->ListAuditPage(run, AuditStage::kQuotas, "");
        if (stage == AuditStage::kQuotas && !self->options.engine.dra_device_classes.empty())
          return self->ListAuditPage(run, AuditStage::kClaims, "");
        self->CompleteAudit(run);
      });
}

void Service::Impl::AuditFailed(const std::shared_ptr<AuditRun>& run, const std::string& why) {
  std::cerr << fmt::format("devshare serve: audit: {}; trying again at the next audit\n", why);
  for (Responder& respond : run->waiting)
    respond(ErrorResponse(503, fmt::format("audit: {}", why)));
  audit.reset();
  ScheduleAudit();
}

void Service::Impl::CompleteAudit(const std::shared_ptr<AuditRun>& run) {
  run->cost.seconds = SecondsSince(run->start);
  run->cost.objects = run->listing.nodes.size() + run->listing.pods.size() +
                      run->listing.quotas.size() + run->listing.claims.size();
  std::vector<engine::Command> out;
  const engine::AuditReport report = engine->Audit(run->listing, NowMs(), out);
  run->listing = {};
  last_suspected = 0;
  for (const engine::Drift& d : report.differences) {
    if (!d.confirmed) {
      ++last_suspected;
      continue;
    }
    std::cerr << fmt::format("devshare serve: audit: {} {}: {}{}\n", engine::DriftKindName(d.kind),
                             d.object, d.detail, d.healed ? " (healed)" : "");
  }
  last_audit_cost = run->cost;
  for (const std::string& node : report.nodes_to_read) ReadNodeAgain(node);
  for (const engine::PodToRead& pod : report.pods_to_read) ReadPodAgain(pod);
  for (const engine::ObjectToRead& claim : report.claims_to_read) ReadClaimAgain(claim);
  for (const engine::ObjectToRead& quota : report.quotas_to_read) ReadQuotaAgain(quota);
  Execute(std::move(out));
  const std::string body =
      EncodeAuditReport(report, engine->audit_totals(), run->cost, SecondsSince(run->start) * 1000);
  for (Responder& respond : run->waiting) respond(JsonResponse(200, body));
  audit.reset();
  ReturnFreeMemory();
  ScheduleAudit();
}

void Service::Impl::ReadNodeAgain(const std::string& name) {
  ReadAgain<Node>(
      shared_from_this(), "audit-get-node", "/api/v1/nodes/" + name,
      [](std::string_view body) { return DecodeNode(body); },
      [name](Impl& self, const std::optional<Node>& node) {
        std::vector<engine::Command> out;
        self.engine->NodeRead(name, node, NowMs(), out);
        self.ReportNodeError(name);
        self.Execute(std::move(out));
      });
}

void Service::Impl::ReadPodAgain(const engine::PodToRead& asked) {
  ReadAgain<Pod>(
      shared_from_this(), "audit-get-pod",
      fmt::format("/api/v1/namespaces/{}/pods/{}", asked.pod_namespace, asked.name),
      [](std::string_view body) { return DecodePod(body); },
      [asked](Impl& self, const std::optional<Pod>& pod) { self.engine->PodRead(asked, pod); });
}

void Service::Impl::ReadClaimAgain(const engine::ObjectToRead& asked) {
  ReadAgain<dra::ResourceClaim>(
      shared_from_this(), "audit-get-claim", ClaimPath(asked.object_namespace, asked.name),
      [](std::string_view body) { return dra::DecodeResourceClaim(body); },
      [asked](Impl& self, const std::optional<dra::ResourceClaim>& claim) {
        self.engine->ClaimRead(asked, claim);
        self.ScheduleWake();
      });
}

void Service::Impl::ReadQuotaAgain(const engine::ObjectToRead& asked) {
  ReadAgain<ResourceQuota>(
      shared_from_this(), "audit-get-quota",
      fmt::format("/api/v1/namespaces/{}/resourcequotas/{}", asked.object_namespace, asked.name),
      [](std::string_view body) { return DecodeResourceQuota(body); },
      [asked](Impl& self, const std::optional<ResourceQuota>& quota) {
        self.engine->QuotaRead(asked, quota);
        self.ReportQuotaErrors();
      });
}

}  // namespace devshare::kube
