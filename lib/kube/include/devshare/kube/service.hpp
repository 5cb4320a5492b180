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
//   GET  /metrics     Prometheus text (see metrics.hpp)
//
// Routes match on the path's last segment, so any urlPrefix works. A body
// that is not the expected JSON gets 400 with the reason; an unknown path
// 404; a wrong method 405.
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
#include <memory>
#include <string>

#include "devshare/admission.hpp"
#include "devshare/engine/engine.hpp"
#include "devshare/kube/api_client.hpp"
#include "devshare/kube/http_server.hpp"
#include "devshare/lease.hpp"

namespace devshare::kube {

struct ServiceOptions {
  enum class Leader { kAlways, kFollow, kElect };
  engine::EngineOptions engine;  // leadership and hostname are set from `leader`
  HttpServerOptions http;
  ApiClientOptions api;
  AdmissionOptions admission;
  Leader leader = Leader::kAlways;
  std::string lease_namespace = "kube-system";
  std::string lease_name = "kube-scheduler";
  std::string hostname;  // this replica; kElect's identity is <hostname>_<random>
  ElectionConfig election;
};

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
  // Stops serving (requests in flight are answered), watching and electing;
  // a leader releases its Lease.
  void Stop();

  struct Impl;  // opaque

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_SERVICE_HPP_
