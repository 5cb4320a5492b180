// service_impl.hpp — the state of `devshare serve` (devshare/kube/service.hpp),
// shared by its units: service.cpp (the engine's loop, start and stop),
// service_routes.cpp (HTTP), service_watch.cpp (watches and election),
// service_audit.cpp (the drift auditor); the API commands are
// service_commands.hpp's. Private to lib/kube.
#ifndef DEVSHARE_KUBE_SRC_SERVICE_IMPL_HPP_
#define DEVSHARE_KUBE_SRC_SERVICE_IMPL_HPP_

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "devshare/kube/extender.hpp"
#include "devshare/kube/metrics.hpp"
#include "devshare/kube/service.hpp"
#include "service_commands.hpp"

namespace devshare::kube {

// The engine's clock: Unix milliseconds (handshake and bind-time stamps are
// wall-clock times).
std::int64_t NowMs();
// Seconds since `start` on the steady clock (for the metrics).
double SecondsSince(std::chrono::steady_clock::time_point start);
// A JSON answer, and the JSON {"error": message} answer.
HttpResponse JsonResponse(int status, std::string body);
HttpResponse ErrorResponse(int status, std::string_view message);

struct Service::Impl : CommandSink, std::enable_shared_from_this<Service::Impl> {
  Impl(boost::asio::io_context& io_context, ClusterAccess access, ServiceOptions o);

  // ---- the engine (service.cpp)
  void Execute(std::vector<engine::Command> commands);
  void ScheduleWake();
  ApiClient& api() override { return client; }
  void Outcome(std::uint64_t id, bool ok) override;
  void ClaimSeen(dra::ResourceClaim claim) override;
  void After(std::chrono::milliseconds delay, std::function<void()> then) override;
  bool MayWrite() override;

  // ---- HTTP (service_routes.cpp)
  // `trusted`: the listener's callers are known (loopback, or a client
  // certificate), so the extender's routes are served.
  void Handle(const HttpRequest& request, Responder respond, bool trusted);
  void Reply(engine::FilterReply& reply);
  void Reply(engine::BindReply& reply);
  std::string ExtenderListenerName() const;

  // ---- the watches and the election (service_watch.cpp)
  void StartWatches();
  void OnNode(const WatchEvent& e);
  void ReportNodeError(const std::string& name);
  void OnQuota(const WatchEvent& e);
  // PodDisruptionBudgets, for preemption; readiness does not wait for them
  // (the Eviction API enforces them whatever devshare knows).
  void OnBudget(const WatchEvent& e);
  // Quotas with a device limit that is not a whole number are said once on
  // stderr, and again when the reason changes (devshare_quotas_undecodable).
  void ReportQuotaErrors();
  void OnPod(const WatchEvent& e);
  void WatchDra();
  // Once the nodes, the pods and every DRA kind are listed, the engine may
  // allocate claims (Engine::DraSynced).
  void MaybeDraSynced();
  void OnLease(const WatchEvent& e);
  std::string LeasePath(bool named) const;
  void Elect();

  // ---- the drift auditor (service_audit.cpp)
  struct AuditRun;
  enum class AuditStage { kNodes, kPods, kQuotas, kClaims };
  void ScheduleAudit();
  void StartAudit(Responder respond);
  void ListAuditPage(const std::shared_ptr<AuditRun>& run, AuditStage stage,
                     const std::string& token);
  void AuditFailed(const std::shared_ptr<AuditRun>& run, const std::string& why);
  void CompleteAudit(const std::shared_ptr<AuditRun>& run);
  void ReadNodeAgain(const std::string& name);
  void ReadPodAgain(const engine::PodToRead& asked);
  void ReadClaimAgain(const engine::ObjectToRead& asked);
  void ReadQuotaAgain(const engine::ObjectToRead& asked);

  bool synced() const { return nodes_synced && pods_synced && quotas_synced; }
  bool Ready() const { return synced() && engine->Ready(NowMs()); }

  struct PendingFilter {
    Responder respond;
    ExtenderArgs args;
    std::chrono::steady_clock::time_point start;
  };

  boost::asio::io_context& io;
  ServiceOptions options;
  Metrics metrics;
  std::unique_ptr<engine::Engine> engine;
  ApiClient client;
  std::unique_ptr<HttpServer> server, extender_server;
  boost::asio::steady_timer wake_timer, elect_timer, audit_timer;
  std::shared_ptr<AuditRun> audit;  // the audit in progress
  AuditListCost last_audit_cost;
  std::uint64_t last_suspected = 0;
  std::uint64_t next_request = 1;
  std::unordered_map<std::uint64_t, PendingFilter> filters;
  std::map<std::string, std::string> reported_node_errors;   // ReportNodeError
  std::map<std::string, std::string> reported_quota_errors;  // ReportQuotaErrors
  std::unordered_map<std::uint64_t, std::pair<Responder, std::chrono::steady_clock::time_point>>
      binds;
  Elector elector;
  std::optional<LeaseRecord> current_lease;
  bool nodes_synced = false, pods_synced = false, quotas_synced = false, stopping = false;
  std::vector<bool> dra_synced;  // per DRA watch (service_watch.cpp)
  bool dra_synced_told = false;  // Engine::DraSynced called
};

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_SRC_SERVICE_IMPL_HPP_
