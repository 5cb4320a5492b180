#include "serve.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "cluster_flags.hpp"
#include "devshare/engine/engine_options.hpp"
#include "devshare/kube/service.hpp"
#include "hami_exact_option.hpp"
#include "read_file.hpp"

namespace devshare::cli {

namespace {

struct ServeOptions {
  ClusterFlags cluster;
  std::string listen = "0.0.0.0:8443";
  std::string extender_listen;  // empty: none when `listen` is loopback, else 127.0.0.1:8444
  std::string extender_client_ca;
  std::string tls_cert, tls_key;
  double audit_period_seconds = 60;
  double audit_grace_seconds = 30;
  std::string leader = "always";
  std::string lease_namespace = "kube-system";
  std::string lease_name = "kube-scheduler";
  std::string hostname;
  std::string scheduler_name = "devshare-scheduler";
  bool force_overwrite_default_scheduler = true;
  std::string node_policy = "binpack";
  std::string gpu_policy = "spread";
  std::string registration = "change-only";
  std::string bind = "node-lock";
  std::string lock_retry = "release";
  bool avoid_locked_nodes = true;
  bool preemption = true;
  std::string pod_writes = "binding";
  std::string device_config;
  HamiExact hami_exact;
  double qps = 5;
  int burst = 10;
  double bind_budget_seconds = 10;
  std::vector<std::string> dra_device_classes;
  std::string dra_policy = "fgd";
};

using Leader = kube::ServiceOptions::Leader;
constexpr auto kLeaderNames = MakeEnumNames<Leader>(
    {{"always", Leader::kAlways}, {"follow", Leader::kFollow}, {"elect", Leader::kElect}});

template <typename T, std::size_t N>
Status Choose(const std::string& option, const std::string& value, const EnumNames<T, N>& names,
              T& out) {
  if (std::optional<T> found = names.Find(value)) {
    out = *found;
    return Status();
  }
  return Status::InvalidArgument(
      fmt::format("--{} {}: want one of {}", option, value, names.Names()));
}

// ADDRESS:PORT into `http`.
Status ParseListen(std::string_view option, const std::string& value,
                   kube::HttpServerOptions& http) {
  const std::size_t colon = value.rfind(':');
  if (colon == std::string::npos)
    return Status::InvalidArgument(fmt::format("--{} {}: want ADDRESS:PORT", option, value));
  http.address = value.substr(0, colon);
  if (http.address.size() > 2 && http.address.front() == '[' && http.address.back() == ']')
    http.address = http.address.substr(1, http.address.size() - 2);  // [::1]:8444
  try {
    std::size_t used = 0;
    const int port = std::stoi(value.substr(colon + 1), &used);
    if (used != value.size() - colon - 1 || port < 0 || port > 65535) throw std::out_of_range("");
    http.port = static_cast<std::uint16_t>(port);
  } catch (...) {
    return Status::InvalidArgument(
        fmt::format("--{} {}: the port is not a number from 0 to 65535", option, value));
  }
  return Status();
}

Result<kube::ServiceOptions> Options(const ServeOptions& o) {
  kube::ServiceOptions s;
  Result<DeviceConfig> config = LoadDeviceConfig(o.device_config);
  if (!config.ok()) return config.status();
  if (!(o.qps > 0) || o.burst < 1)
    return Status::InvalidArgument(fmt::format(
        "--qps {} --burst {}: want QPS above 0 and a burst of 1 or more", o.qps, o.burst));
  if (o.bind_budget_seconds < 0)
    return Status::InvalidArgument(
        fmt::format("--bind-budget {}: want 0 or more seconds", o.bind_budget_seconds));
  if (o.audit_period_seconds < 0 || o.audit_grace_seconds < 0)
    return Status::InvalidArgument(
        fmt::format("--audit-period {} --audit-grace {}: want 0 or more seconds",
                    o.audit_period_seconds, o.audit_grace_seconds));
  engine::EngineOptions base;
  base.config = std::move(*config);
  base.filter.hami_exact = o.hami_exact;
  std::vector<engine::EngineOption> named{
      {"--node-policy", o.node_policy},
      {"--gpu-policy", o.gpu_policy},
      {"--registration", o.registration},
      {"--bind", o.bind},
      {"--lock-retry", o.lock_retry},
      {"--avoid-locked-nodes", o.avoid_locked_nodes ? "true" : "false"},
      {"--preemption", o.preemption ? "true" : "false"},
      {"--pod-writes", o.pod_writes},
      {"--dra-policy", o.dra_policy},
      // Filter holds pods back while the binds in flight need more than
      // --bind-budget seconds of this client's writes (0: never).
      {"api_qps", fmt::format("{}", o.bind_budget_seconds > 0 ? o.qps : 0.0)},
      {"audit_grace_ms", std::to_string(static_cast<std::int64_t>(o.audit_grace_seconds * 1000))}};
  if (o.bind_budget_seconds > 0) {
    named.push_back({"bind_budget_ms",
                     std::to_string(static_cast<std::int64_t>(o.bind_budget_seconds * 1000))});
  }
  for (const std::string& c : o.dra_device_classes) named.push_back({"--dra-device-class", c});
  Result<engine::EngineOptions> built = engine::BuildEngineOptions(named, std::move(base));
  if (!built.ok()) return built.status();
  s.engine = std::move(*built);
  if (Status st = Choose<Leader>("leader", o.leader, kLeaderNames, s.leader); !st.ok()) return st;
  Status st;
  if (st = ParseListen("listen", o.listen, s.http); !st.ok()) return st;
  s.http.cert_file = o.tls_cert;
  s.http.key_file = o.tls_key;
  if (o.tls_cert.empty() != o.tls_key.empty())
    return Status::InvalidArgument("--tls-cert and --tls-key go together");
  // The extender's routes: on a loopback --listen, there; else on their
  // own listener, loopback by default, or reachable with a client CA.
  const bool service_loopback = kube::IsLoopbackAddress(s.http.address);
  if (!o.extender_listen.empty() || !service_loopback) {
    kube::HttpServerOptions extender;
    if (st =
            ParseListen("extender-listen",
                        o.extender_listen.empty() ? "127.0.0.1:8444" : o.extender_listen, extender);
        !st.ok())
      return st;
    if (!kube::IsLoopbackAddress(extender.address)) {
      if (o.extender_client_ca.empty() || o.tls_cert.empty()) {
        return Status::InvalidArgument(fmt::format(
            "--extender-listen {}: the network reaches it, so it needs --extender-client-ca "
            "(and --tls-cert): /filter and /bind may bind any pod to any node",
            o.extender_listen));
      }
      extender.cert_file = o.tls_cert;
      extender.key_file = o.tls_key;
      extender.client_ca_file = o.extender_client_ca;
    }
    s.extender_http = extender;
  } else if (!o.extender_client_ca.empty()) {
    return Status::InvalidArgument(
        "--extender-client-ca goes with a non-loopback --extender-listen");
  }
  s.audit_period =
      std::chrono::milliseconds(static_cast<std::int64_t>(o.audit_period_seconds * 1000));
  s.api.qps = o.qps;
  s.api.burst = o.burst;
  s.admission.dra_device_classes = s.engine.dra_device_classes;
  s.admission.scheduler_name = o.scheduler_name;
  s.admission.force_overwrite_default_scheduler = o.force_overwrite_default_scheduler;
  s.lease_namespace = o.lease_namespace;
  s.lease_name = o.lease_name;
  s.hostname = o.hostname;
  if (s.hostname.empty()) {
    char host[256] = {};
    if (const char* env = std::getenv("HOSTNAME"); env != nullptr && *env != '\0') {
      s.hostname = env;
    } else if (gethostname(host, sizeof(host) - 1) == 0) {
      s.hostname = host;
    }
  }
  return s;
}

int Run(const ServeOptions& o) {
  Result<kube::ServiceOptions> options = Options(o);
  Result<kube::ClusterAccess> access = options.ok() ? FindAccess(o.cluster) : options.status();
  if (!access.ok()) {
    std::cerr << "devshare serve: " << access.status().message() << "\n";
    return 1;
  }
  boost::asio::io_context io;
  kube::Service service(io, *access, *options);
  Status started = service.Start();
  if (!started.ok()) {
    std::cerr << "devshare serve: " << started.message() << "\n";
    return 1;
  }
  std::cerr << fmt::format("devshare serve: listening on {}:{} ({}), leader mode {}\n",
                           options->http.address, service.port(),
                           o.tls_cert.empty() ? "http" : "https", o.leader);
  if (options->extender_http) {
    std::cerr << fmt::format(
        "devshare serve: the extender (/filter, /prioritize, /bind, /debug/audit) on {}:{} ({})\n",
        options->extender_http->address, service.extender_port(),
        options->extender_http->client_ca_file.empty() ? "http, loopback"
                                                       : "https, client certificates required");
  }
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    std::cerr << "devshare serve: stopping\n";
    service.Stop();
  });
  io.run();
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* sub =
      app.add_subcommand("serve", "serve kube-scheduler (extender) and the API server (webhook)");
  AddClusterFlags(sub, o->cluster);
  sub->add_option("--listen", o->listen, "ADDRESS:PORT to serve on")->capture_default_str();
  sub->add_option("--extender-listen", o->extender_listen,
                  "ADDRESS:PORT of the extender's routes (/filter, /prioritize, /bind, "
                  "/debug/audit), which act with devshare's rights: loopback (kube-scheduler in "
                  "the same pod) or with --extender-client-ca. Default: served on --listen when it "
                  "is loopback, else 127.0.0.1:8444");
  sub->add_option("--extender-client-ca", o->extender_client_ca,
                  "PEM CA whose client certificates a non-loopback --extender-listen requires");
  sub->add_option("--audit-period", o->audit_period_seconds,
                  "seconds between drift audits: the cache against a fresh LIST of nodes and pods "
                  "(0: only on GET /debug/audit)")
      ->capture_default_str();
  sub->add_option("--audit-grace", o->audit_grace_seconds,
                  "seconds a difference must persist before the audit counts and heals it")
      ->capture_default_str();
  sub->add_option("--tls-cert", o->tls_cert,
                  "PEM certificate (chain): serve HTTPS; reloaded when it changes");
  sub->add_option("--tls-key", o->tls_key, "PEM private key of --tls-cert");
  sub->add_option("--leader", o->leader, "always, follow (the Lease kube-scheduler holds) or elect")
      ->capture_default_str();
  sub->add_option("--lease-namespace", o->lease_namespace, "namespace of the Lease")
      ->capture_default_str();
  sub->add_option("--lease-name", o->lease_name, "name of the Lease")->capture_default_str();
  sub->add_option("--hostname", o->hostname,
                  "this replica's name in the Lease (default: the host name)");
  sub->add_option("--scheduler-name", o->scheduler_name,
                  "schedulerName the webhook writes into GPU pods")
      ->capture_default_str();
  sub->add_option("--force-overwrite-default-scheduler", o->force_overwrite_default_scheduler,
                  "the webhook also moves GPU pods that name default-scheduler (HAMi's flag)")
      ->capture_default_str();
  sub->add_option("--node-policy", o->node_policy, kNodePolicyNames.Names())->capture_default_str();
  sub->add_option("--gpu-policy", o->gpu_policy,
                  kGpuPolicyNames.Names() + " (the first six also as a comma chain)")
      ->capture_default_str();
  sub->add_option("--registration", o->registration, engine::kRegistrationNames.Names())
      ->capture_default_str();
  sub->add_option("--bind", o->bind, engine::kBindModeNames.Names())->capture_default_str();
  sub->add_option("--lock-retry", o->lock_retry,
                  "release (wait for the lock's release, in turn), once (HAMi), fixed (100 ms) "
                  "or backoff")
      ->capture_default_str();
  sub->add_option("--avoid-locked-nodes", o->avoid_locked_nodes,
                  "place a pod on a node no other bind holds the lock of when one fits "
                  "(false: as HAMi, which ignores the locks)")
      ->capture_default_str();
  sub->add_option("--preemption", o->preemption,
                  "a pod no node has room for evicts the fewest lower-priority pods it needs "
                  "gone (Eviction API), and the devices they free are kept for it")
      ->capture_default_str();
  sub->add_option("--pod-writes", o->pod_writes,
                  "binding (the Binding carries the placement and the bind phase; Filter "
                  "answers from memory) or hami (Filter PATCHes the placement and answers after "
                  "it, Bind PATCHes the bind phase before the Binding)")
      ->capture_default_str();
  AddDeviceConfigOption(sub, o->device_config);
  AddHamiExactOption(sub, o->hami_exact);
  sub->add_option("--qps", o->qps, "API client queries per second")->capture_default_str();
  sub->add_option("--burst", o->burst, "API client burst")->capture_default_str();
  sub->add_option("--bind-budget", o->bind_budget_seconds,
                  "seconds of --qps the binds in flight may need: beyond, Filter holds the next "
                  "pod (up to 10 s) until a bind ends, so binds do not outwait kube-scheduler's "
                  "extender timeout in the client's queue (0: no hold)")
      ->capture_default_str();
  sub->add_option("--dra-device-class", o->dra_device_classes,
                  "a DeviceClass whose ResourceClaims devshare allocates (repeatable): the "
                  "webhook gates the pods that use one, devshare allocates their claims and "
                  "removes the gate, kube-scheduler binds them; kube-scheduler never allocates "
                  "from those pools")
      ->take_all();
  sub->add_option("--dra-policy", o->dra_policy,
                  "how devshare places DRA claims: binpack, spread or fgd")
      ->capture_default_str();
  sub->callback([o, &exit_code] { exit_code = Run(*o); });
}

}  // namespace devshare::cli
