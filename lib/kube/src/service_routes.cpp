// `devshare serve`'s HTTP routes (devshare/kube/service.hpp): matching
// (service_routes.hpp), and the handlers with the engine's replies.
#include "service_routes.hpp"

#include <fmt/format.h>

#include "devshare/admission.hpp"
#include "devshare/kube/extender.hpp"
#include "service_impl.hpp"

namespace devshare::kube {

namespace {

// The path's last segment: /scheduler/filter -> filter.
std::string_view LastSegment(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  return path.substr(path.rfind('/') + 1);
}

}  // namespace

std::variant<ServiceRoute, HttpResponse> MatchRoute(const HttpRequest& request, bool trusted,
                                                    std::string_view extender_listener) {
  const std::string_view path =
      std::string_view(request.target).substr(0, request.target.find('?'));
  const std::string_view last = LastSegment(path);
  struct Named {
    std::string_view name;
    ServiceRoute route;
    bool get;       // GET, else POST
    bool extender;  // acts with devshare's rights
  };
  static constexpr Named kRoutes[] = {
      {"filter", ServiceRoute::kFilter, false, true},
      {"prioritize", ServiceRoute::kPrioritize, false, true},
      {"bind", ServiceRoute::kBind, false, true},
      {"preempt", ServiceRoute::kPreempt, false, true},
      {"audit", ServiceRoute::kAudit, true, true},
      {"webhook", ServiceRoute::kWebhook, false, false},
      {"healthz", ServiceRoute::kHealthz, true, false},
      {"readyz", ServiceRoute::kReadyz, true, false},
      {"metrics", ServiceRoute::kMetrics, true, false},
  };
  const Named* named = nullptr;
  static constexpr Named kAdmission{"admission", ServiceRoute::kAdmissionReadyz, true, false};
  if (path == "/readyz/admission") {
    named = &kAdmission;
  } else {
    for (const Named& r : kRoutes) {
      if (r.name == last) named = &r;
    }
  }
  if (named == nullptr) return ErrorResponse(404, fmt::format("no route {}", request.target));
  if (named->extender && !trusted) {
    return ErrorResponse(
        403, fmt::format("{} is served only on the extender listener ({}), not on one the "
                         "network reaches",
                         request.target, extender_listener));
  }
  if (request.method != (named->get ? "GET" : "POST"))
    return ErrorResponse(405, named->get ? "use GET" : "use POST");
  return named->route;
}

std::string Service::Impl::ExtenderListenerName() const {
  const HttpServerOptions& o = options.extender_http ? *options.extender_http : options.http;
  return fmt::format("{}:{}", o.address, extender_server ? extender_server->port() : o.port);
}

void Service::Impl::Handle(const HttpRequest& request, Responder respond, bool trusted) {
  std::variant<ServiceRoute, HttpResponse> matched =
      MatchRoute(request, trusted, trusted ? std::string() : ExtenderListenerName());
  if (HttpResponse* refusal = std::get_if<HttpResponse>(&matched))
    return respond(std::move(*refusal));
  const HttpResponse ok{200, "text/plain", "ok", {}};
  switch (std::get<ServiceRoute>(matched)) {
    case ServiceRoute::kAudit:
      return StartAudit(std::move(respond));
    case ServiceRoute::kAdmissionReadyz:
      return respond(
          synced() ? ok
                   : HttpResponse{
                         503, "text/plain", "not ready: the cluster cache is still syncing", {}});
    case ServiceRoute::kHealthz:
      return respond(ok);
    case ServiceRoute::kReadyz:
      return respond(
          Ready() ? ok
                  : HttpResponse{
                        503, "text/plain", "not ready: not leading, or not registered yet", {}});
    case ServiceRoute::kMetrics:
      metrics.SetCluster(Ready(), engine->snapshot(), options.engine.filter.workload);
      metrics.SetUndecodableNodes(engine->node_errors().size());
      metrics.SetQuotaObjects(engine->quota_count(), engine->quota_errors().size());
      metrics.SetPreemption(engine->counters(), engine->preemptions().size());
      metrics.SetApiConnections(client.connection_stats());
      metrics.SetAudit(engine->audit_totals(), last_suspected, last_audit_cost);
      if (!options.engine.dra_device_classes.empty()) metrics.SetDra(MeasureDra(*engine));
      return respond(HttpResponse{200, "text/plain; version=0.0.4", metrics.Render(), {}});
    case ServiceRoute::kWebhook: {
      Result<AdmissionDecision> d = DecideAdmission(request.body, options.engine.config,
                                                    options.admission, &engine->snapshot());
      if (!d.ok()) return respond(ErrorResponse(400, d.status().message()));
      return respond(JsonResponse(200, EncodeAdmissionResponse(*d)));
    }
    case ServiceRoute::kBind: {
      Result<BindArgs> args = DecodeBindArgs(request.body);
      if (!args.ok()) return respond(ErrorResponse(400, args.status().message()));
      const std::uint64_t id = next_request++;
      binds.emplace(id, std::pair{std::move(respond), std::chrono::steady_clock::now()});
      std::vector<engine::Command> out;
      engine->Bind(id, args->pod_namespace, args->pod_name, args->pod_uid, args->node, NowMs(),
                   out);
      return Execute(std::move(out));
    }
    case ServiceRoute::kPreempt: {
      Result<PreemptionArgs> args = DecodePreemptionArgs(request.body);
      if (!args.ok()) return respond(ErrorResponse(400, args.status().message()));
      if (!synced())
        return respond(ErrorResponse(503, "not ready: the cluster cache is still syncing"));
      Result<std::map<std::string, engine::NodeVictims>> victims =
          engine->ExtenderPreempt(args->pod, args->victims, NowMs());
      if (!victims.ok()) {
        const bool unavailable = victims.status().code() == StatusCode::kUnavailable;
        return respond(ErrorResponse(unavailable ? 503 : 400, victims.status().message()));
      }
      return respond(JsonResponse(200, EncodePreemptionResult(*victims)));
    }
    case ServiceRoute::kPrioritize:
    case ServiceRoute::kFilter:
      break;
  }
  Result<ExtenderArgs> args = DecodeExtenderArgs(request.body);
  if (!args.ok()) return respond(ErrorResponse(400, args.status().message()));
  if (std::get<ServiceRoute>(matched) == ServiceRoute::kPrioritize) {
    // kube-scheduler leaves the ranking to its other plugins when an
    // extender's prioritize fails.
    if (!synced())
      return respond(ErrorResponse(503, "not ready: the cluster cache is still syncing"));
    Result<std::vector<NodeScore>> scores = engine->Prioritize(args->pod, args->nodes, NowMs());
    if (!scores.ok()) {
      return respond(ErrorResponse(scores.status().code() == StatusCode::kUnavailable ? 503 : 400,
                                   scores.status().message()));
    }
    return respond(JsonResponse(200, EncodeHostPriorities(*scores)));
  }
  if (!synced()) {
    metrics.ObserveFilter("refused", 0);
    engine::FilterReply refused{0, {}, {}, "not ready: the cluster cache is still syncing", {}};
    HttpResponse response = JsonResponse(200, EncodeFilterResult(*args, refused));
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

void Service::Impl::Reply(engine::FilterReply& reply) {
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
  metrics.ObserveFilter(outcome, SecondsSince(pending.start));
  HttpResponse response = JsonResponse(200, EncodeFilterResult(pending.args, reply));
  // Refused: this replica does not lead. The client's next request goes on
  // a new connection, which a Service sends to the ready replica (a kept
  // connection would stay with this one).
  response.close = outcome == "refused";
  pending.respond(std::move(response));
}

void Service::Impl::Reply(engine::BindReply& reply) {
  auto it = binds.find(reply.request);
  if (it == binds.end()) return;
  auto [respond, start] = std::move(it->second);
  binds.erase(it);
  metrics.ObserveBind(reply.error.empty() ? "bound" : "failed", SecondsSince(start));
  HttpResponse response = JsonResponse(200, EncodeBindResult(reply.error));
  response.close = reply.error.starts_with("not ready");
  respond(std::move(response));
}

}  // namespace devshare::kube
