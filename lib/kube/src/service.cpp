// `devshare serve` (devshare/kube/service.hpp): the engine's loop, start and
// stop. The units around it: service_routes.cpp, service_watch.cpp,
// service_audit.cpp, service_commands.cpp.
#include "devshare/kube/service.hpp"

#include <fmt/format.h>

#include <boost/asio/ip/address.hpp>
#include <boost/json.hpp>
#include <random>

#include "service_impl.hpp"

namespace devshare::kube {

namespace asio = boost::asio;
namespace bj = boost::json;

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

HttpResponse JsonResponse(int status, std::string body) {
  return HttpResponse{status, "application/json", std::move(body), {}};
}

HttpResponse ErrorResponse(int status, std::string_view message) {
  return JsonResponse(status, bj::serialize(bj::object{{"error", message}}));
}

bool IsLoopbackAddress(std::string_view address) {
  if (address == "localhost") return true;
  boost::system::error_code ec;
  const asio::ip::address a = asio::ip::make_address(std::string(address), ec);
  return !ec && a.is_loopback();
}

Service::Impl::Impl(asio::io_context& io_context, ClusterAccess access, ServiceOptions o)
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

void Service::Impl::Execute(std::vector<engine::Command> commands) {
  std::shared_ptr<CommandSink> sink = shared_from_this();
  for (engine::Command& c : commands) {
    std::visit(
        [&](auto& command) {
          using C = std::decay_t<decltype(command)>;
          if constexpr (std::is_same_v<C, engine::FilterReply> ||
                        std::is_same_v<C, engine::BindReply>) {
            Reply(command);
          } else if constexpr (std::is_same_v<C, engine::PodEvent>) {
            RunCommand(sink, command, options.hostname);
          } else {
            RunCommand(sink, command);
          }
        },
        c);
  }
  ScheduleWake();
}

void Service::Impl::Outcome(std::uint64_t id, bool ok) {
  std::vector<engine::Command> out;
  engine->ApiResult(id, ok, NowMs(), out);
  Execute(std::move(out));
}

void Service::Impl::ClaimSeen(dra::ResourceClaim claim) {
  engine->ResourceClaimObserved(std::move(claim));
  ScheduleWake();
}

void Service::Impl::After(std::chrono::milliseconds delay, std::function<void()> then) {
  auto timer = std::make_shared<asio::steady_timer>(io, delay);
  timer->async_wait(
      [weak = weak_from_this(), timer, then = std::move(then)](boost::system::error_code ec) {
        auto self = weak.lock();
        if (ec || !self || self->stopping) return;
        then();
      });
}

bool Service::Impl::MayWrite() { return engine->Ready(NowMs()); }

void Service::Impl::ScheduleWake() {
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
    server = std::make_unique<HttpServer>(impl_->io, o,
                                          [weak, trusted](const HttpRequest& r, Responder respond) {
                                            if (auto self = weak.lock())
                                              return self->Handle(r, std::move(respond), trusted);
                                            respond(ErrorResponse(503, "shutting down"));
                                          });
    return server->Start();
  };
  if (s = serve(impl_->options.http, impl_->server); !s.ok()) return s;
  if (impl_->options.extender_http) {
    if (s = serve(*impl_->options.extender_http, impl_->extender_server); !s.ok()) return s;
  }
  impl_->StartWatches();
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
