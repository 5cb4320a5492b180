#include "devshare/kube/cluster_read.hpp"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <memory>

#include "devshare/dra_json.hpp"
#include "devshare/kube/api_client.hpp"
#include "devshare/objects_json.hpp"
#include "json_member.hpp"

namespace devshare::kube {

namespace {

namespace asio = boost::asio;
namespace bj = boost::json;

constexpr ApiClientOptions kReadOptions{50, 100};

std::string NameOf(const bj::object& item) {
  const bj::object* meta = ObjectMember(item, "metadata");
  if (meta == nullptr) return "?";
  const std::string ns = StringOrEmpty(*meta, "namespace");
  return ns.empty() ? StringOrEmpty(*meta, "name") : ns + "/" + StringOrEmpty(*meta, "name");
}

Status Unavailable(std::string_view what, const ApiResponse& r) {
  return Status::Unavailable(r.status == 0 ? fmt::format("{}: {}", what, r.error)
                                           : fmt::format("{}: the API server answered {}: {}", what,
                                                         r.status, r.body.substr(0, 300)));
}

// Adds one listed item to `out`.
void Add(std::string_view kind, const bj::object& item, ClusterObjects& out) {
  if (kind == "nodes") {
    Result<Node> node = DecodeNode(item);
    if (node.ok()) return out.nodes.push_back(std::move(*node));
    return out.undecodable.push_back(
        fmt::format("node {}: {}", NameOf(item), node.status().message()));
  }
  if (kind == "pods") {
    Result<Pod> pod = DecodePod(item);
    if (pod.ok()) return out.pods.push_back(std::move(*pod));
    return out.undecodable.push_back(
        fmt::format("pod {}: {}", NameOf(item), pod.status().message()));
  }
  if (kind == "resourceslices" || kind == "deviceclasses" || kind == "resourceclaims") {
    Status failed;
    if (kind == "resourceslices") {
      Result<dra::ResourceSlice> slice = dra::DecodeResourceSlice(item);
      if (slice.ok()) return out.slices.push_back(std::move(*slice));
      failed = slice.status();
    } else if (kind == "deviceclasses") {
      Result<dra::DeviceClass> device_class = dra::DecodeDeviceClass(item);
      if (device_class.ok()) return out.device_classes.push_back(std::move(*device_class));
      failed = device_class.status();
    } else {
      Result<dra::ResourceClaim> claim = dra::DecodeResourceClaim(item);
      if (claim.ok()) return out.claims.push_back(std::move(*claim));
      failed = claim.status();
    }
    return out.undecodable.push_back(
        fmt::format("{} {}: {}", kind.substr(0, kind.size() - 1), NameOf(item), failed.message()));
  }
  if (kind == "poddisruptionbudgets") {
    Result<PodDisruptionBudget> budget = DecodePodDisruptionBudget(item);
    if (budget.ok()) return out.budgets.push_back(std::move(*budget));
    return out.undecodable.push_back(
        fmt::format("pod disruption budget {}: {}", NameOf(item), budget.status().message()));
  }
  Result<ResourceQuota> quota = DecodeResourceQuota(item);
  if (quota.ok()) return out.quotas.push_back(std::move(*quota));
  out.undecodable.push_back(
      fmt::format("resource quota {}: {}", NameOf(item), quota.status().message()));
}

struct Lister {
  ApiClient& client;
  const std::string& server;
  const ReadProgress& progress;
  ClusterObjects objects;
  Status failure;
  bool done = false;

  struct Kind {
    std::string_view name, path, field_selector;
  };
  static constexpr Kind kKinds[] = {
      {"nodes", "/api/v1/nodes", ""},
      {"pods", "/api/v1/pods", kUnfinishedPods},
      {"resourcequotas", "/api/v1/resourcequotas", ""},
      {"poddisruptionbudgets", "/apis/policy/v1/poddisruptionbudgets", ""},
      {"resourceslices", "/apis/resource.k8s.io/v1/resourceslices", ""},
      {"deviceclasses", "/apis/resource.k8s.io/v1/deviceclasses", ""},
      {"resourceclaims", "/apis/resource.k8s.io/v1/resourceclaims", ""}};
  // Lists a read goes on without: the DRA lists (a cluster that does not
  // serve resource.k8s.io/v1 has none) and the budgets (read for
  // preemption only; a reader without the right to list them gets a 403).
  static bool Optional(std::string_view what, int status) {
    if (what == "poddisruptionbudgets") return status == 404 || status == 403;
    return status == 404 &&
           (what == "resourceslices" || what == "deviceclasses" || what == "resourceclaims");
  }

  void List(std::size_t kind, const std::string& continue_token, std::size_t so_far) {
    if (kind == std::size(kKinds)) {
      done = true;
      return;
    }
    const std::string target =
        ListTarget(kKinds[kind].path, kKinds[kind].field_selector, continue_token);
    client.Call("list", "GET", target, "", "", [this, kind, so_far](const ApiResponse& r) {
      const std::string_view what = kKinds[kind].name;
      if (Optional(what, r.status)) return List(kind + 1, "", 0);
      if (r.status != 200) {
        failure = Unavailable(fmt::format("listing {} at {}", what, server), r);
        done = true;
        return;
      }
      boost::system::error_code ec;
      const bj::value doc = bj::parse(r.body, ec);
      const bj::object* list = ec ? nullptr : doc.if_object();
      const bj::value* items = list != nullptr ? list->if_contains("items") : nullptr;
      if (items == nullptr || !items->is_array()) {
        failure = Status::Unavailable(fmt::format("listing {}: not a list", what));
        done = true;
        return;
      }
      std::size_t count = so_far;
      for (const bj::value& item : items->get_array()) {
        if (item.is_object()) Add(what, item.get_object(), objects);
        ++count;
      }
      if (progress) progress(what, count);
      const bj::object* meta = ObjectMember(*list, "metadata");
      const std::string next = meta != nullptr ? StringOrEmpty(*meta, "continue") : std::string();
      if (!next.empty()) return List(kind, next, count);
      List(kind + 1, "", 0);
    });
  }
};

}  // namespace

struct ClusterReader::Impl {
  explicit Impl(ClusterAccess a)
      : access(std::move(a)), client(io, access, kReadOptions, nullptr) {}
  // Runs the client's handlers until `done`: idle connections may keep the
  // loop busy after it, and a loop that ran out of work must be restarted.
  void RunUntil(const bool& done) {
    io.restart();
    while (!done && io.run_one() > 0) {
    }
  }

  ClusterAccess access;
  asio::io_context io;
  ApiClient client;
};

ClusterReader::ClusterReader(ClusterAccess access)
    : impl_(std::make_unique<Impl>(std::move(access))) {}

ClusterReader::~ClusterReader() {
  // The client's handlers end before the loop and the client go.
  impl_->client.Stop();
  impl_->io.restart();
  impl_->io.run();
}

Status ClusterReader::Start() { return impl_->client.Start(); }

Result<ClusterObjects> ClusterReader::ReadCluster(const ReadProgress& progress) {
  Lister lister{impl_->client, impl_->access.server, progress, {}, Status()};
  lister.List(0, "", 0);
  impl_->RunUntil(lister.done);
  if (!lister.failure.ok()) return lister.failure;
  return std::move(lister.objects);
}

Result<Pod> ClusterReader::ReadPod(std::string_view pod_namespace, std::string_view name) {
  Result<Pod> pod = Status::Unavailable("no answer");
  bool done = false;
  impl_->client.Call(
      "get", "GET", fmt::format("/api/v1/namespaces/{}/pods/{}", pod_namespace, name), "", "",
      [&](const ApiResponse& r) {
        done = true;
        if (r.status == 404) {
          pod = Status::NotFound(fmt::format("pod {}/{} not found", pod_namespace, name));
          return;
        }
        if (r.status != 200) {
          pod = Unavailable(
              fmt::format("reading pod {}/{} at {}", pod_namespace, name, impl_->access.server), r);
          return;
        }
        Result<Pod> decoded = DecodePod(r.body);
        pod = decoded.ok()
                  ? std::move(decoded)
                  : Result<Pod>(Status::InvalidArgument(fmt::format(
                        "pod {}/{}: {}", pod_namespace, name, decoded.status().message())));
      });
  impl_->RunUntil(done);
  return pod;
}

}  // namespace devshare::kube
