// `devshare serve`'s watches (Nodes, unfinished Pods, ResourceQuotas,
// PodDisruptionBudgets, the DRA kinds, the leader Lease) into the engine,
// and client-go's leader election (kElect).
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <iostream>

#include "devshare/dra.hpp"
#include "devshare/dra_json.hpp"
#include "devshare/kube/cluster_read.hpp"
#include "devshare/lease.hpp"
#include "devshare/objects_json.hpp"
#include "json_member.hpp"
#include "service_impl.hpp"

namespace devshare::kube {

namespace bj = boost::json;

namespace {

// The DRA objects (with served DeviceClasses): every change goes to the
// engine, whose pass runs at the next wake; once each list is whole (and the
// nodes' and pods'), the engine may allocate.
template <typename T>
void WatchDraKind(const std::shared_ptr<Service::Impl>& impl, const std::string& resource,
                  Result<T> (*decode)(const bj::object&), void (*apply)(engine::Engine&, T),
                  void (*remove)(engine::Engine&, const std::string&, const std::string&)) {
  const std::size_t index = impl->dra_synced.size();
  impl->dra_synced.push_back(false);
  std::weak_ptr<Service::Impl> weak = impl;
  impl->client.Watch(
      "/apis/resource.k8s.io/v1/" + resource, "",
      [weak, decode, apply, remove](const WatchEvent& e) {
        auto self = weak.lock();
        if (!self || !e.object.is_object()) return;
        if (e.type == "DELETED") {
          const std::string name = MetadataString(e.object, "name");
          if (name.empty()) return;
          remove(*self->engine, MetadataString(e.object, "namespace"), name);
        } else {
          Result<T> decoded = decode(e.object.get_object());
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
        if (!self) return;
        self->dra_synced[index] = true;
        self->MaybeDraSynced();
      });
}

}  // namespace

void Service::Impl::StartWatches() {
  std::weak_ptr<Impl> weak = weak_from_this();
  client.Watch(
      "/api/v1/nodes", "",
      [weak](const WatchEvent& e) {
        if (auto self = weak.lock()) self->OnNode(e);
      },
      [weak] {
        if (auto self = weak.lock()) {
          self->nodes_synced = true;
          self->MaybeDraSynced();
        }
      });
  client.Watch(
      "/api/v1/pods", std::string(kUnfinishedPods),
      [weak](const WatchEvent& e) {
        if (auto self = weak.lock()) self->OnPod(e);
      },
      [weak] {
        if (auto self = weak.lock()) {
          self->pods_synced = true;
          self->MaybeDraSynced();
        }
      });
  client.Watch(
      "/api/v1/resourcequotas", "",
      [weak](const WatchEvent& e) {
        if (auto self = weak.lock()) self->OnQuota(e);
      },
      [weak] {
        if (auto self = weak.lock()) {
          self->quotas_synced = true;
          self->MaybeDraSynced();
        }
      });
  if (options.engine.preemption) {
    client.Watch("/apis/policy/v1/poddisruptionbudgets", "",
                 [weak](const WatchEvent& e) {
                   if (auto self = weak.lock()) self->OnBudget(e);
                 },
                 {});
  }
  if (!options.engine.dra_device_classes.empty()) WatchDra();
  if (options.leader != ServiceOptions::Leader::kAlways) {
    client.Watch(LeasePath(false), "metadata.name=" + options.lease_name,
                 [weak](const WatchEvent& e) {
                   if (auto self = weak.lock()) self->OnLease(e);
                 },
                 {});
  }
}

void Service::Impl::OnNode(const WatchEvent& e) {
  if (e.type == "DELETED") {
    if (std::string name = MetadataString(e.object, "name"); !name.empty())
      engine->NodeDeleted(name);
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
void Service::Impl::ReportNodeError(const std::string& name) {
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

void Service::Impl::OnQuota(const WatchEvent& e) {
  if (e.type == "DELETED") {
    if (std::string name = MetadataString(e.object, "name"); !name.empty())
      engine->ResourceQuotaDeleted(MetadataString(e.object, "namespace"), name);
    return ReportQuotaErrors();
  }
  if (!e.object.is_object()) return;
  Result<ResourceQuota> quota = DecodeResourceQuota(e.object.get_object());
  if (!quota.ok()) {
    std::cerr << fmt::format("devshare serve: resource quota left out: {}\n",
                             quota.status().message());
    return;
  }
  engine->ResourceQuotaObserved(*quota);
  ReportQuotaErrors();
}

void Service::Impl::OnBudget(const WatchEvent& e) {
  if (e.type == "DELETED") {
    if (std::string name = MetadataString(e.object, "name"); !name.empty())
      engine->PodDisruptionBudgetDeleted(MetadataString(e.object, "namespace"), name);
    return;
  }
  if (!e.object.is_object()) return;
  Result<PodDisruptionBudget> budget = DecodePodDisruptionBudget(e.object.get_object());
  if (!budget.ok()) {
    std::cerr << fmt::format("devshare serve: disruption budget left out: {}\n",
                             budget.status().message());
    return;
  }
  engine->PodDisruptionBudgetObserved(*budget);
}

void Service::Impl::ReportQuotaErrors() {
  const std::map<std::string, std::string>& errors = engine->quota_errors();
  std::erase_if(reported_quota_errors, [&](const auto& r) { return !errors.contains(r.first); });
  for (const auto& [quota, why] : errors) {
    std::string& reported = reported_quota_errors[quota];
    if (reported == why) continue;
    reported = why;
    std::cerr << fmt::format("devshare serve: {}\n", why);
  }
}

void Service::Impl::OnPod(const WatchEvent& e) {
  if (e.type == "DELETED") {
    if (std::string uid = MetadataString(e.object, "uid"); !uid.empty()) engine->PodDeleted(uid);
    return ScheduleWake();
  }
  if (!e.object.is_object()) return;
  Result<Pod> pod = DecodePod(e.object.get_object());
  if (pod.ok()) engine->PodObserved(*pod);
  ScheduleWake();  // a gated pod, or room freed for one
}

void Service::Impl::WatchDra() {
  auto self = shared_from_this();
  WatchDraKind<dra::ResourceSlice>(
      self, "resourceslices", &dra::DecodeResourceSlice,
      [](engine::Engine& e, dra::ResourceSlice s) { e.ResourceSliceObserved(std::move(s)); },
      [](engine::Engine& e, const std::string&, const std::string& name) {
        e.ResourceSliceDeleted(name);
      });
  WatchDraKind<dra::DeviceClass>(
      self, "deviceclasses", &dra::DecodeDeviceClass,
      [](engine::Engine& e, dra::DeviceClass c) { e.DeviceClassObserved(std::move(c)); },
      [](engine::Engine& e, const std::string&, const std::string& name) {
        e.DeviceClassDeleted(name);
      });
  WatchDraKind<dra::ResourceClaim>(
      self, "resourceclaims", &dra::DecodeResourceClaim,
      [](engine::Engine& e, dra::ResourceClaim c) { e.ResourceClaimObserved(std::move(c)); },
      [](engine::Engine& e, const std::string& ns, const std::string& name) {
        e.ResourceClaimDeleted(ns, name);
      });
  WatchDraKind<dra::ResourceClaimTemplate>(
      self, "resourceclaimtemplates", &dra::DecodeResourceClaimTemplate,
      [](engine::Engine& e, dra::ResourceClaimTemplate t) {
        e.ResourceClaimTemplateObserved(std::move(t));
      },
      [](engine::Engine& e, const std::string& ns, const std::string& name) {
        e.ResourceClaimTemplateDeleted(ns, name);
      });
}

// Claims are allocated only from whole lists: a pass before the nodes are
// listed finds no node for a claim allocated before a restart, and would
// release it.
void Service::Impl::MaybeDraSynced() {
  if (dra_synced_told || dra_synced.empty() || !synced() ||
      !std::all_of(dra_synced.begin(), dra_synced.end(), [](bool s) { return s; }))
    return;
  dra_synced_told = true;
  engine->DraSynced();
  ScheduleWake();
}

void Service::Impl::OnLease(const WatchEvent& e) {
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

std::string Service::Impl::LeasePath(bool named) const {
  return fmt::format("/apis/coordination.k8s.io/v1/namespaces/{}/leases{}", options.lease_namespace,
                     named ? "/" + options.lease_name : "");
}

void Service::Impl::Elect() {
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

}  // namespace devshare::kube
