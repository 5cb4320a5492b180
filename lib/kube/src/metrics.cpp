#include "devshare/kube/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace devshare::kube {

GpuGauges MeasureGpus(const ClusterSnapshot& snapshot, std::span<const WorkloadClass> workload) {
  constexpr std::uint64_t kMiB = 1024 * 1024;
  GpuGauges g;
  for (const std::string& name : snapshot.NodeNames()) {
    Result<std::vector<DeviceView>> devices = snapshot.NodeDevices(name);
    if (!devices.ok()) continue;
    for (const DeviceView& d : *devices) {
      ++g.gpus;
      double share = 0;
      if (d.device.devcore > 0) share = static_cast<double>(d.usage.usedcores) / d.device.devcore;
      if (d.device.devmem > 0)
        share = std::max(share, static_cast<double>(d.usage.usedmem) / d.device.devmem);
      g.allocated += std::clamp(share, 0.0, 1.0);
      g.memory_bytes += static_cast<std::uint64_t>(std::max(d.device.devmem, 0)) * kMiB;
      g.memory_allocated_bytes += static_cast<std::uint64_t>(std::max(d.usage.usedmem, 0)) * kMiB;
    }
  }
  if (Result<ClusterFragmentation> f = MeasureFragmentation(snapshot, workload); f.ok()) {
    g.free = f->free_gpus;
    g.fragmented = f->fragmented_gpus;
  } else {
    g.free = g.fragmented = std::numeric_limits<double>::quiet_NaN();
  }
  return g;
}

DraUsage MeasureDraUsage(const ClusterSnapshot& snapshot) {
  const dra::AllocatedState& allocated = snapshot.dra_allocated();
  std::map<dra::DeviceId, const dra::Device*> devices;
  DraUsage usage;
  std::set<std::pair<std::string, std::string>> pools_seen;
  for (const std::string& node : snapshot.NodeNames()) {
    Result<const std::vector<dra::GatheredPool>*> pools = snapshot.DraPools(node);
    if (!pools.ok()) continue;
    for (const dra::GatheredPool& pool : **pools) {
      for (const dra::ResourceSlice* slice : pool.device_slices) {
        for (const dra::Device& d : slice->devices)
          devices.emplace(dra::DeviceId{pool.driver, pool.pool, d.name}, &d);
      }
      if (pool.counter_sets.empty() || !pools_seen.emplace(pool.driver, pool.pool).second) continue;
      const auto left = dra::CountersLeft(pool, allocated);
      for (const auto& [set_name, set] : pool.counter_sets) {
        for (const auto& [counter, total] : set->counters) {
          const dra::Quantity free = left.at(set_name).at(counter);
          usage.counters.push_back(DraCounter{pool.driver, pool.pool, set_name, counter,
                                              static_cast<double>(total.milli) / 1000,
                                              static_cast<double>(free.milli) / 1000});
        }
      }
    }
  }
  std::sort(usage.counters.begin(), usage.counters.end(), [](const auto& a, const auto& b) {
    return std::tie(a.driver, a.pool, a.counter_set, a.counter) <
           std::tie(b.driver, b.pool, b.counter_set, b.counter);
  });
  std::vector<DraDeviceCapacity>& out = usage.devices;
  for (const auto& [id, device] : devices) {
    const bool whole = allocated.devices.contains(id);
    auto consumed = allocated.consumed_capacity.find(id);
    for (const auto& [name, capacity] : device->capacity) {
      double used = 0;
      if (consumed != allocated.consumed_capacity.end()) {
        if (auto q = consumed->second.find(name); q != consumed->second.end())
          used = static_cast<double>(q->second.milli) / 1000;
      }
      const double total = static_cast<double>(capacity.value.milli) / 1000;
      out.push_back(DraDeviceCapacity{id.driver, id.pool, id.device, name, total,
                                      whole ? 0 : std::max(0.0, total - used)});
    }
  }
  return usage;
}

DraGauges MeasureDra(const engine::Engine& engine) {
  DraGauges g;
  g.gated = engine.dra_gated();
  for (std::string_view name : engine::kDraHoldKindNames) g.held[std::string(name)] = 0;
  for (const auto& [uid, hold] : engine.dra_held())
    ++g.held[std::string(engine::kDraHoldKindNames[static_cast<std::size_t>(hold.kind)])];
  const engine::Counters& c = engine.counters();
  g.claims_allocated = c.dra_claims_allocated;
  g.claim_writes_failed = c.dra_claim_writes_failed;
  g.claims_released = c.dra_claims_released;
  g.gates_removed = c.dra_gates_removed;
  g.claims_created = c.dra_claims_created;
  g.pods_judged = c.dra_pods_judged;
  g.usage = MeasureDraUsage(engine.snapshot());
  return g;
}

void Metrics::SetCluster(bool leader, const ClusterSnapshot& snapshot,
                         std::span<const WorkloadClass> workload) {
  gpus_ = MeasureGpus(snapshot, workload);
  quota_use_ = snapshot.Quotas();
  SetState(leader, snapshot.node_count(), gpus_.gpus, snapshot.pod_count());
}

void Metrics::Histogram::Observe(double seconds) {
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++counts[i];
  }
  ++count;
  sum += seconds;
}

namespace {

// A sample value as the text format spells it: NaN, +Inf, -Inf, or the
// shortest decimal that reads back as `value`.
std::string Value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

template <typename Histogram>
void RenderHistograms(std::string& out, std::string_view name, std::string_view help,
                      const std::map<std::string, Histogram>& by_outcome) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  for (const auto& [outcome, h] : by_outcome) {
    for (std::size_t i = 0; i < Metrics::kBuckets.size(); ++i) {
      fmt::format_to(std::back_inserter(out), "{}_bucket{{outcome=\"{}\",le=\"{}\"}} {}\n", name,
                     outcome, Metrics::kBuckets[i], h.counts[i]);
    }
    fmt::format_to(std::back_inserter(out), "{}_bucket{{outcome=\"{}\",le=\"+Inf\"}} {}\n", name,
                   outcome, h.count);
    fmt::format_to(std::back_inserter(out), "{}_sum{{outcome=\"{}\"}} {}\n", name, outcome,
                   Value(h.sum));
    fmt::format_to(std::back_inserter(out), "{}_count{{outcome=\"{}\"}} {}\n", name, outcome,
                   h.count);
  }
}

// One sample without labels; `type` is "gauge" or "counter".
void RenderScalar(std::string& out, std::string_view type, std::string_view name,
                  std::string_view help, std::uint64_t value) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name,
                 type, name, value);
}

void RenderGauge(std::string& out, std::string_view name, std::string_view help,
                 std::uint64_t value) {
  RenderScalar(out, "gauge", name, help, value);
}

void RenderGauge(std::string& out, std::string_view name, std::string_view help, double value) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help,
                 name, name, Value(value));
}

void RenderDra(std::string& out, const DraGauges& dra) {
  auto it = std::back_inserter(out);
  RenderGauge(out, "devshare_dra_pods_gated",
              "Pods carrying devshare's scheduling gate (their DRA claims are devshare's to "
              "allocate).",
              dra.gated);
  fmt::format_to(it,
                 "# HELP devshare_dra_pods_held Gated pods devshare cannot place yet, by reason.\n"
                 "# TYPE devshare_dra_pods_held gauge\n");
  for (const auto& [reason, n] : dra.held)
    fmt::format_to(it, "devshare_dra_pods_held{{reason=\"{}\"}} {}\n", reason, n);
  RenderScalar(out, "counter", "devshare_dra_claims_allocated_total",
               "ResourceClaims devshare allocated and reserved (written).", dra.claims_allocated);
  RenderScalar(out, "counter", "devshare_dra_claim_writes_failed_total",
               "ResourceClaim writes that failed (a conflict: tried again from the watch).",
               dra.claim_writes_failed);
  RenderScalar(out, "counter", "devshare_dra_claims_released_total",
               "ResourceClaims devshare released: written before a restart on a node the pod's "
               "other claims no longer fit.",
               dra.claims_released);
  RenderScalar(out, "counter", "devshare_dra_gates_removed_total",
               "Scheduling gates devshare removed once a pod's claims were allocated.",
               dra.gates_removed);
  RenderScalar(out, "counter", "devshare_dra_claims_created_total",
               "ResourceClaims devshare made for pods asking a served class's extended resource.",
               dra.claims_created);
  RenderScalar(out, "counter", "devshare_dra_pods_judged_total",
               "Gated pods judged (each pod each pass that looked at it).", dra.pods_judged);
  for (const bool free : {false, true}) {
    const std::string_view name =
        free ? "devshare_dra_device_capacity_free" : "devshare_dra_device_capacity";
    fmt::format_to(it, "# HELP {} {}\n# TYPE {} gauge\n", name,
                   free ? "What allocated claims leave of a DRA device's capacity (0 when one "
                          "holds the device whole)."
                        : "A DRA device's capacity as its ResourceSlice publishes it.",
                   name);
    for (const DraDeviceCapacity& d : dra.usage.devices) {
      fmt::format_to(it, "{}{{driver=\"{}\",pool=\"{}\",device=\"{}\",capacity=\"{}\"}} {}\n", name,
                     d.driver, d.pool, d.device, d.capacity, Value(free ? d.free : d.total));
    }
  }
  for (const bool free : {false, true}) {
    const std::string_view name = free ? "devshare_dra_counter_free" : "devshare_dra_counter";
    fmt::format_to(it, "# HELP {} {}\n# TYPE {} gauge\n", name,
                   free ? "What the DRA devices held leave of a pool's shared counter."
                        : "A DRA pool's shared counter as its ResourceSlice publishes it.",
                   name);
    for (const DraCounter& c : dra.usage.counters) {
      fmt::format_to(it, "{}{{driver=\"{}\",pool=\"{}\",counter_set=\"{}\",counter=\"{}\"}} {}\n",
                     name, c.driver, c.pool, c.counter_set, c.counter,
                     Value(free ? c.free : c.total));
    }
  }
}

}  // namespace

std::string Metrics::Render() const {
  std::string out;
  RenderHistograms(out, "devshare_filter_duration_seconds", "Time to answer a Filter, by outcome.",
                   filter_);
  RenderHistograms(out, "devshare_bind_duration_seconds", "Time to answer a Bind, by outcome.",
                   bind_);
  out +=
      "# HELP devshare_api_requests_total Requests to the API server, by verb and status code.\n"
      "# TYPE devshare_api_requests_total counter\n";
  for (const auto& [key, n] : api_) {
    fmt::format_to(std::back_inserter(out),
                   "devshare_api_requests_total{{verb=\"{}\",code=\"{}\"}} {}\n", key.first,
                   key.second, n);
  }
  RenderScalar(out, "counter", "devshare_api_connections_opened_total",
               "Connections opened to the API server for requests (watches not counted).",
               connections_.opened);
  RenderScalar(out, "counter", "devshare_api_connection_reuses_total",
               "Requests sent on a kept-alive connection to the API server.", connections_.reused);
  RenderScalar(out, "counter", "devshare_api_tls_resumptions_total",
               "TLS handshakes with the API server that resumed a session.", connections_.resumed);
  RenderGauge(out, "devshare_leader", "1 when this replica leads and has registered the nodes.",
              std::uint64_t{leader_ ? 1u : 0u});
  RenderGauge(out, "devshare_nodes", "Nodes whose devices are in the cache.", nodes_);
  RenderGauge(out, "devshare_nodes_undecodable",
              "Nodes whose register annotation does not decode; their devices are left out.",
              undecodable_nodes_);
  const engine::Counters& p = preemption_;
  for (const auto& [name, help, value] :
       {std::tuple{"devshare_preemptions_total",
                   "Pods that found no room and began a preemption (evicting lower-priority pods).",
                   p.preemptions},
        std::tuple{"devshare_preemption_victims_total",
                   "Pods evicted for a preemption (the Eviction API accepted).",
                   p.preemption_victims},
        std::tuple{"devshare_preemption_evictions_failed_total",
                   "Evictions refused or failed (a PodDisruptionBudget: 429); the preemption is "
                   "given up.",
                   p.evictions_failed},
        std::tuple{"devshare_preemptions_placed_total",
                   "Preempting pods placed once their victims were gone.", p.preemptions_placed},
        std::tuple{"devshare_preemptions_abandoned_total",
                   "Preemptions given up (a failed eviction, victims that did not go, or a pod "
                   "not placed in time); the devices kept are released.",
                   p.preemptions_abandoned},
        std::tuple{"devshare_preemptions_refused_total",
                   "Filters of pods that found no room and could not preempt (no lower-priority "
                   "pod whose eviction helps, victims protected by a budget, or "
                   "preemptionPolicy Never).",
                   p.preemptions_refused}}) {
    RenderScalar(out, "counter", name, help, value);
  }
  RenderScalar(out, "counter", "devshare_retries_requested_total",
               "Pods Filter had just refused, annotated for kube-scheduler to try again once a "
               "deletion freed devices.",
               p.retries_requested);
  RenderGauge(out, "devshare_preemptions_in_progress",
              "Preemptions whose pod waits for its victims to go or to be placed.",
              preemptions_in_progress_);
  RenderGauge(out, "devshare_quotas", "ResourceQuota objects in the cache.", quotas_);
  RenderGauge(out, "devshare_quotas_undecodable",
              "ResourceQuotas with a device limit that is not a whole number; that limit is left "
              "out.",
              undecodable_quotas_);
  for (const auto& [name, help, used] :
       {std::tuple{"devshare_quota_limit",
                   "The device quota in force in a namespace: the tightest of its ResourceQuotas' "
                   "limits.<resource>.",
                   false},
        std::tuple{"devshare_quota_used",
                   "What a namespace's placed pods hold of a device resource under quota.",
                   true}}) {
    if (quota_use_.empty()) break;
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
    for (const QuotaUse& q : quota_use_) {
      fmt::format_to(std::back_inserter(out), "{}{{namespace=\"{}\",resource=\"{}\"}} {}\n", name,
                     q.pod_namespace, q.resource, used ? q.used : q.limit);
    }
  }
  RenderGauge(out, "devshare_devices", "Devices in the cache.", devices_);
  RenderGauge(out, "devshare_pods", "Pods holding devices.", pods_);
  RenderScalar(out, "counter", "devshare_audits_total",
               "Drift audits run: the cache compared with a fresh LIST of the API server.",
               audit_.audits);
  for (const auto& [name, counts, help] :
       {std::tuple{"devshare_audit_differences_total", &audit_.found,
                   "Differences between the cache and the API server confirmed by the drift "
                   "auditor, by kind."},
        std::tuple{"devshare_audit_healed_total", &audit_.healed,
                   "Confirmed differences the drift auditor healed, by kind."}}) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} counter\n", name, help, name);
    for (std::size_t k = 0; k < engine::kDriftKinds; ++k) {
      fmt::format_to(std::back_inserter(out), "{}{{kind=\"{}\"}} {}\n", name,
                     engine::kDriftKindNames[k], (*counts)[k]);
    }
  }
  RenderGauge(out, "devshare_audit_suspected",
              "Differences the last drift audit saw that are not confirmed yet.", audit_suspected_);
  RenderGauge(out, "devshare_audit_list_seconds", "Time the last drift audit's LIST took.",
              audit_list_.seconds);
  RenderGauge(out, "devshare_audit_list_pages", "Pages the last drift audit's LIST read.",
              audit_list_.pages);
  RenderGauge(out, "devshare_audit_list_objects",
              "Nodes, unfinished pods, quotas and claims the last drift audit's LIST read.",
              audit_list_.objects);
  RenderGauge(out, "devshare_audit_list_bytes",
              "Bytes of the answers to the last drift audit's LIST (metadata only).",
              audit_list_.bytes);
  RenderGauge(out, "devshare_gpus",
              "Devices in the cache, each counted as one GPU (every vendor's).", gpus_.gpus);
  RenderGauge(out, "devshare_gpu_allocated",
              "GPUs allocated to pods: the sum over devices of max(used cores / cores, used memory "
              "/ memory), "
              "each clamped to [0, 1].",
              gpus_.allocated);
  RenderGauge(out, "devshare_gpu_memory_bytes",
              "Device memory registered by the devices in the cache, in bytes.",
              gpus_.memory_bytes);
  RenderGauge(out, "devshare_gpu_memory_allocated_bytes",
              "Device memory allocated to pods, in bytes.", gpus_.memory_allocated_bytes);
  RenderGauge(out, "devshare_gpu_free",
              "Free GPUs: the sum over healthy devices with a free slot of min(free cores / cores, "
              "free memory / memory) (fgd's measure).",
              gpus_.free);
  RenderGauge(
      out, "devshare_gpu_fragmented",
      "Free GPUs that the expected workload cannot use (fgd's fragmentation, Weng et al. ATC '23; "
      "at most devshare_gpu_free).",
      gpus_.fragmented);
  if (dra_) RenderDra(out, *dra_);
  return out;
}

}  // namespace devshare::kube
