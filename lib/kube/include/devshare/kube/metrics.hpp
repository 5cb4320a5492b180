// devshare/kube/metrics.hpp — what `devshare serve` exposes on /metrics, in
// the Prometheus text format (version 0.0.4).
//
//   devshare_filter_duration_seconds   histogram, by outcome (placed,
//                                      unschedulable, refused, busy: held
//                                      and refused, error)
//   devshare_bind_duration_seconds     histogram, by outcome (bound, failed)
//   devshare_api_requests_total        counter, by verb and HTTP status code
//   devshare_leader                    gauge: 1 when leading and registered
//   devshare_nodes, devshare_devices   gauges: nodes and devices in the cache
//   devshare_nodes_undecodable         gauge: nodes whose register annotation
//                                      does not decode (their devices left out)
//   devshare_pods                      gauge: pods holding devices
//   devshare_quotas                    gauge: ResourceQuota objects in the cache
//   devshare_quotas_undecodable        gauge: those with a device limit that is
//                                      not a whole number (that limit left out)
//   devshare_audits_total              counter: drift audits run
//   devshare_audit_differences_total   counter, by kind: confirmed differences
//                                      between the cache and the API server
//   devshare_audit_healed_total        counter, by kind: those healed
//   devshare_audit_suspected           gauge: differences seen, not yet confirmed
//   devshare_audit_list_seconds, _pages, _objects, _bytes
//                                      gauges: the last audit's LIST
//
// and, measured from the cluster snapshot at each scrape (GpuGauges):
//
//   devshare_gpus                      gauge: devices, each counted as one GPU
//   devshare_gpu_allocated             gauge: GPUs allocated, Σ per device of
//                                      max(usedcores/devcore, usedmem/devmem)
//   devshare_gpu_memory_bytes          gauge: device memory registered, bytes
//   devshare_gpu_memory_allocated_bytes gauge: device memory allocated, bytes
//   devshare_gpu_free                  gauge: free GPUs (fgd's measure)
//   devshare_gpu_fragmented            gauge: free GPUs fragmented (fgd)
//   devshare_quota_limit               gauge, by namespace and resource: the
//                                      device quota in force (the tightest)
//   devshare_quota_used                gauge, same labels: what the namespace's
//                                      placed pods hold of it
//
// and with served DeviceClasses (DRA), from the engine and the snapshot:
//
//   devshare_dra_pods_gated            gauge: pods carrying devshare's scheduling gate
//   devshare_dra_pods_held             gauge, by reason (waiting: a claim not there yet;
//                                      no-fit; refused: devshare cannot allocate them)
//   devshare_dra_claims_allocated_total, devshare_dra_claim_writes_failed_total,
//   devshare_dra_claims_released_total, devshare_dra_gates_removed_total,
//   devshare_dra_claims_created_total, devshare_dra_pods_judged_total  counters
//   devshare_dra_device_capacity       gauge, by driver, pool, device and capacity:
//                                      what the device publishes
//   devshare_dra_device_capacity_free  gauge, same labels: what allocated claims
//                                      leave of it (0 when a claim holds it whole)
//   devshare_dra_counter, devshare_dra_counter_free
//                                      gauges, by driver, pool, counter_set and
//                                      counter: a pool's shared counters, and what
//                                      the devices held leave of them
//
// Decisions by outcome are the histograms' _count series.
//
// Thread-safety: none; updated and rendered on the server's one thread.
#ifndef DEVSHARE_KUBE_METRICS_HPP_
#define DEVSHARE_KUBE_METRICS_HPP_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devshare/engine/audit.hpp"
#include "devshare/engine/engine.hpp"
#include "devshare/filter.hpp"
#include "devshare/snapshot.hpp"

namespace devshare::kube {

// The cluster's devices as /metrics reports them, every vendor's device
// counted as one GPU. For a device with devcore cores and devmem MiB of which
// usedcores and usedmem are held, its allocated share is
// max(usedcores/devcore, usedmem/devmem) clamped to [0, 1] (a term whose
// total is 0 is left out), and its free share (fgd's, as MeasureFragmentation
// measures it) is 1 - that share, or 0 when the device is unhealthy, has no
// free slot, or registers no cores or no memory. So gpus - allocated - free
// is the share of the devices that no pod can be given: unhealthy devices and
// the idle part of devices whose slots are all taken.
struct GpuGauges {
  std::uint64_t gpus = 0;                    // devices
  double allocated = 0;                      // Σ allocated share, in GPUs
  std::uint64_t memory_bytes = 0;            // Σ devmem, in bytes
  std::uint64_t memory_allocated_bytes = 0;  // Σ usedmem, in bytes (not clamped)
  double free = 0;                           // ClusterFragmentation::free_gpus
  double fragmented = 0;                     // ClusterFragmentation::fragmented_gpus
  friend bool operator==(const GpuGauges&, const GpuGauges&) = default;
};

// Measures `snapshot` for the gauges above; fragmentation is for `workload`
// (fgd's default mix when empty). O(devices + nodes x classes). When
// MeasureFragmentation refuses the workload, free and fragmented are NaN.
GpuGauges MeasureGpus(const ClusterSnapshot& snapshot,
                      std::span<const WorkloadClass> workload = {});

// What the API client's requests did with connections (watches not
// counted): ApiClient::connection_stats.
struct ApiConnectionStats {
  std::uint64_t opened = 0;   // new connections
  std::uint64_t reused = 0;   // requests on an idle kept-alive connection
  std::uint64_t resumed = 0;  // TLS handshakes that resumed a session
};

// What one audit's LIST cost: pages read, objects listed, bytes of the
// answers, and the time from the first request to the last answer.
struct AuditListCost {
  std::uint64_t pages = 0, objects = 0, bytes = 0;
  double seconds = 0;
};

// One capacity of one DRA device, as the DRA gauges report it.
struct DraDeviceCapacity {
  std::string driver, pool, device, capacity;
  double total = 0;
  double free = 0;
};

// One shared counter of one pool.
struct DraCounter {
  std::string driver, pool, counter_set, counter;
  double total = 0;
  double free = 0;
};

struct DraUsage {
  std::vector<DraDeviceCapacity> devices;
  std::vector<DraCounter> counters;
};

// Every capacity of every device of the pools the snapshot's nodes see,
// each device once, in (driver, pool, device, capacity) order, and every
// shared counter of those pools (dra::CountersLeft), each pool once.
// O(devices x capacities).
DraUsage MeasureDraUsage(const ClusterSnapshot& snapshot);

struct DraGauges {
  std::uint64_t gated = 0;
  std::map<std::string, std::uint64_t> held;  // by reason
  std::uint64_t claims_allocated = 0, claim_writes_failed = 0, claims_released = 0,
                gates_removed = 0, claims_created = 0, pods_judged = 0;
  DraUsage usage;
};

// The engine's DRA state and the snapshot's devices as DraGauges.
DraGauges MeasureDra(const engine::Engine& engine);

class Metrics {
 public:
  // Upper bounds of the latency buckets, in seconds (+Inf is implied).
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1,    5};

  void ObserveFilter(std::string_view outcome, double seconds) {
    filter_[std::string(outcome)].Observe(seconds);
  }
  void ObserveBind(std::string_view outcome, double seconds) {
    bind_[std::string(outcome)].Observe(seconds);
  }
  void CountApiRequest(std::string_view verb, int code) { ++api_[{std::string(verb), code}]; }
  void SetApiConnections(const ApiConnectionStats& c) { connections_ = c; }
  void SetState(bool leader, std::uint64_t nodes, std::uint64_t devices, std::uint64_t pods) {
    leader_ = leader;
    nodes_ = nodes;
    devices_ = devices;
    pods_ = pods;
  }
  void SetGpus(const GpuGauges& gpus) { gpus_ = gpus; }
  // Nodes whose register annotation does not decode (engine::Engine::node_errors).
  void SetUndecodableNodes(std::uint64_t n) { undecodable_nodes_ = n; }
  // ResourceQuota objects in the cache, and those with a device limit that
  // is not a whole number (engine::Engine::quota_errors).
  void SetQuotaObjects(std::uint64_t quotas, std::uint64_t undecodable) {
    quotas_ = quotas;
    undecodable_quotas_ = undecodable;
  }
  // The drift auditor's totals (engine::Engine::audit_totals), the
  // differences suspected now and the last LIST's cost.
  void SetAudit(const engine::AuditTotals& totals, std::uint64_t suspected,
                const AuditListCost& last_list) {
    audit_ = totals;
    audit_suspected_ = suspected;
    audit_list_ = last_list;
  }
  // SetState and SetGpus from the snapshot: nodes, devices and pods counted
  // as the snapshot holds them, and its device quotas. O(devices + nodes x
  // classes + quotas).
  void SetCluster(bool leader, const ClusterSnapshot& snapshot,
                  std::span<const WorkloadClass> workload = {});

  // Preemption: the engine's counters (engine::Counters, "Preemption")
  // and the preemptions under way.
  void SetPreemption(const engine::Counters& counters, std::uint64_t in_progress) {
    preemption_ = counters;
    preemptions_in_progress_ = in_progress;
  }

  // With served DeviceClasses: the DRA series (none rendered otherwise).
  void SetDra(DraGauges dra) { dra_ = std::move(dra); }

  std::string Render() const;

 private:
  struct Histogram {
    std::array<std::uint64_t, kBuckets.size()> counts{};
    std::uint64_t count = 0;
    double sum = 0;
    void Observe(double seconds);
  };
  std::map<std::string, Histogram> filter_, bind_;
  std::map<std::pair<std::string, int>, std::uint64_t> api_;
  bool leader_ = false;
  std::uint64_t nodes_ = 0, devices_ = 0, pods_ = 0, undecodable_nodes_ = 0;
  std::uint64_t quotas_ = 0, undecodable_quotas_ = 0;
  GpuGauges gpus_;
  std::vector<QuotaUse> quota_use_;
  ApiConnectionStats connections_;
  engine::AuditTotals audit_;
  std::uint64_t audit_suspected_ = 0;
  AuditListCost audit_list_;
  std::optional<DraGauges> dra_;
  engine::Counters preemption_;
  std::uint64_t preemptions_in_progress_ = 0;
};

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_METRICS_HPP_
