// devshare/kube/service.hpp — `devshare serve`: the engine connected to a
// real cluster. The service watches Nodes, Pods (not finished) and the
// leader Lease, feeds them to the engine, executes the engine's commands
// through the API client, and answers kube-scheduler and the API server:
//
//   POST /filter      ExtenderArgs -> ExtenderFilterResult (from memory; under
//                     --pod-writes hami after the pod PATCH; held while the
//                     binds in flight need more than the bind budget of writes)
//   POST /prioritize  ExtenderArgs -> HostPriorityList (NodeScore::normalized on 0..10,
//                     higher is better under every node policy; 503 until ready)
//   POST /bind        ExtenderBindingArgs -> ExtenderBindingResult
//   POST /webhook     AdmissionReview v1 -> AdmissionReview v1
//   GET  /healthz     200 while the process serves
//   GET  /readyz      200 only when leading and registered, else 503
//   GET  /readyz/admission  200 once the cluster cache is synced, leading or
//                     not: every such replica can answer the webhook, so the
//                     Service that carries it should route to all of them
//   GET  /metrics     Prometheus text (see metrics.hpp)
//   GET  /debug/audit a drift audit now (see below), as JSON (audit_wire.hpp)
//
// Routes match on the path's last segment, so any urlPrefix works. A body
// that is not the expected JSON gets 400 with the reason; an unknown path
// 404; a wrong method 405.
//
// Who may call what. /filter, /prioritize, /bind and /debug/audit act with
// devshare's rights (bind any pending pod to any node), so they are served
// only where the caller is known: on a listener bound to a loopback address
// (kube-scheduler in the same pod), or on one that requires a client
// certificate (HttpServerOptions::client_ca_file). The service listener
// (`http`) serves them only when it is loopback itself; otherwise it
// answers them 403 naming the extender listener (`extender_http`), and
// serves the webhook, health and metrics, which the API server and the
// kubelet reach through the Service.
//
// The drift auditor. Every `audit_period` (and at once on /debug/audit;
// requests that come while an audit runs share its answer) the service
// lists the nodes, the unfinished pods (and with DRA the claims) afresh, as metadata only
// (PartialObjectMetadataList, 500 a page, through the client's token
// bucket like every request), and hands the listing to Engine::Audit; a
// suspected difference brings the next audit forward to when it can be
// confirmed. Each confirmed difference is logged on stderr and counted in
// /metrics; the objects the engine asks to read again are GET and applied
// (Engine::NodeRead, Engine::PodRead).
//
// DRA (ServiceOptions::engine.dra_device_classes, devshare/dra_gate.hpp):
// the service also watches ResourceSlices, DeviceClasses, ResourceClaims and
// ResourceClaimTemplates (resource.k8s.io/v1) into the engine, answers the
// webhook with the scheduling gate for pods of the served classes (or the
// refusal of claims devshare cannot allocate), and executes the engine's
// DRA commands: a claim's allocation as kube-scheduler writes it (PATCH
// adding the finalizer, then PATCH of /status with allocation and
// reservedFor, each at the claim's resourceVersion; on a 409 the claim is
// read, and written again at the version read if it is still the same claim
// unallocated, else the write fails for the engine to judge anew; every
// claim the API server answers with goes to the engine's cache), the gate's
// removal (a strategic merge PATCH of the pod, its UID as precondition), and
// a Warning Event for a pod left gated. Claims are allocated only once the
// nodes, the pods and every DRA kind are listed. The audit lists the claims
// too.
//
// Leadership: kAlways (one replica), kFollow (HAMi's mode: lead while the
// kube-scheduler Lease names this host), kElect (run client-go's election
// on the Lease; the engine then follows it too). A lock write PATCHes at the
// resourceVersion the engine checked it at; on a 409 it GETs the node,
// checks again, and PATCHes with the version read.
//
// Thread-safety: everything runs on the io_context's one thread.
#ifndef DEVSHARE_KUBE_SERVICE_HPP_
#define DEVSHARE_KUBE_SERVICE_HPP_

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "devshare/admission.hpp"
#include "devshare/engine/engine.hpp"
#include "devshare/kube/api_client.hpp"
#include "devshare/kube/http_server.hpp"
#include "devshare/lease.hpp"

namespace devshare::kube {

struct ServiceOptions {
  enum class Leader { kAlways, kFollow, kElect };
  engine::EngineOptions engine;  // leadership and hostname are set from `leader`
  HttpServerOptions http;        // the service listener
  // The extender listener, when not served by a loopback `http`.
  std::optional<HttpServerOptions> extender_http;
  std::chrono::milliseconds audit_period{60000};  // Default: 60 s; 0: on demand only
  ApiClientOptions api;
  AdmissionOptions admission;
  Leader leader = Leader::kAlways;
  std::string lease_namespace = "kube-system";
  std::string lease_name = "kube-scheduler";
  std::string hostname;  // this replica; kElect's identity is <hostname>_<random>
  ElectionConfig election;
};

// True for an address only this machine reaches: 127.0.0.0/8, ::1,
// "localhost".
bool IsLoopbackAddress(std::string_view address);

class Service {
 public:
  Service(boost::asio::io_context& io, ClusterAccess access, ServiceOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Starts the API client, the watches, the election and the HTTP server.
  // Errors: those of ApiClient::Start and HttpServer::Start.
  Status Start();
  std::uint16_t port() const;
  std::uint16_t extender_port() const;  // 0 without an extender listener
  // Stops serving (requests in flight are answered), watching and electing;
  // a leader releases its Lease.
  void Stop();

  struct Impl;  // opaque

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_SERVICE_HPP_
