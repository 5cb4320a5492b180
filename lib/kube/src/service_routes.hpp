// service_routes.hpp — which of `devshare serve`'s routes
// (devshare/kube/service.hpp) a request asks for. Private to lib/kube
// (service_routes.cpp) and its unit tests.
#ifndef DEVSHARE_KUBE_SRC_SERVICE_ROUTES_HPP_
#define DEVSHARE_KUBE_SRC_SERVICE_ROUTES_HPP_

#include <string_view>
#include <variant>

#include "devshare/kube/http_server.hpp"

namespace devshare::kube {

enum class ServiceRoute {
  kFilter,
  kPrioritize,
  kBind,
  kPreempt,
  kWebhook,
  kAudit,  // GET .../audit (/debug/audit)
  kHealthz,
  kReadyz,
  kAdmissionReadyz,  // GET /readyz/admission
  kMetrics,
};

// The route of `request`, matched on its path's last segment (so any
// urlPrefix works; the query is ignored, and /readyz/admission is matched
// whole), or the answer refusing it: 403 for an extender route (filter,
// prioritize, bind, preempt, audit) on a listener whose callers are not `trusted`,
// naming `extender_listener`; then 405 for a wrong method (GET for audit,
// health, readiness and metrics, POST for the rest); 404 for any other path.
std::variant<ServiceRoute, HttpResponse> MatchRoute(const HttpRequest& request, bool trusted,
                                                    std::string_view extender_listener);

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_SRC_SERVICE_ROUTES_HPP_
