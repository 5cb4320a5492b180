// Run: checks a scenario, puts its models together and runs the event loop.
//
// Each model is a unit of its own (lib/sim/README.md lists them); the
// Simulation here only hands each event to its model, carries outcomes
// between the models (a completed request to the engine that sent it and to
// the watches, a Binding to kube-scheduler, the kubelet and the report),
// and checks the invariants of simulator.hpp as Bindings land.
#include "devshare/sim/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <utility>
#include <variant>

#include "api_server.hpp"
#include "devshare/annotations.hpp"
#include "disruption.hpp"
#include "dra_run.hpp"
#include "event_queue.hpp"
#include "kube_scheduler.hpp"
#include "kubelets.hpp"
#include "leader_election.hpp"
#include "preemption_ledger.hpp"
#include "replicas.hpp"
#include "report.hpp"
#include "scenario_objects.hpp"

namespace devshare::sim {

Status CheckPlacement(const ClusterSnapshot& snapshot, std::string_view node,
                      std::string_view pod_uid) {
  Result<std::vector<DeviceView>> devices = snapshot.NodeDevices(node);
  if (!devices.ok()) return Status::Internal(fmt::format("node {} is not in the snapshot", node));
  Result<std::vector<PodUsage>> usage = snapshot.PodUsageOf(pod_uid);
  if (!usage.ok()) return Status::Internal("the snapshot holds no devices for the pod");
  for (const PodUsage& u : *usage) {
    const bool on_node = std::any_of(devices->begin(), devices->end(),
                                     [&](const DeviceView& d) { return d.device.id == u.uuid; });
    if (!on_node) return Status::Internal(fmt::format("device {} is not on node {}", u.uuid, node));
  }
  for (const DeviceView& d : *devices) {
    if (d.usage.used > d.device.count || d.usage.usedmem > d.device.devmem ||
        d.usage.usedcores > d.device.devcore) {
      return Status::Internal(
          fmt::format("device {} is over capacity ({}/{} slots, {}/{} MiB, {}/{} cores)",
                      d.device.id, d.usage.used, d.device.count, d.usage.usedmem, d.device.devmem,
                      d.usage.usedcores, d.device.devcore));
    }
  }
  return Status();
}

namespace internal {
namespace {

// The scenario's nodes in name order: the order every model indexes them by.
std::vector<NodeSpec> SortedNodes(const Scenario& scenario) {
  std::vector<NodeSpec> nodes = scenario.nodes;
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeSpec& a, const NodeSpec& b) { return a.name < b.name; });
  return nodes;
}

class Simulation final : private Replicas::Listener, private KubeScheduler::Listener {
 public:
  Simulation(const Scenario& scenario, std::uint64_t seed, const Progress& progress)
      : scenario_(scenario),
        progress_(progress),
        rng_(seed),
        options_(ReplicaEngineOptions(scenario)),
        nodes_(SortedNodes(scenario)),
        replica_count_(static_cast<std::size_t>(std::max(1, scenario.scheduler.replicas))),
        api_(scenario.api, replica_count_, scenario.pods.size(), RegisterKey(scenario.engine),
             events_, rng_),
        election_(replica_count_, events_, api_),
        replicas_(options_, replica_count_, seed, HandshakeKey(scenario.engine), events_, api_,
                  election_, *this),
        scheduler_(scenario, nodes_, events_, api_, replicas_, *this),
        kubelets_(scenario, nodes_, RegisterKey(scenario.engine), HandshakeKey(scenario.engine),
                  events_, api_),
        report_(events_, options_.filter.workload),
        ledger_(scenario.pods) {}

  Result<Report> Run() {
    const std::int64_t end = scenario_.end_ms;
    progress_total_ = end > 0 ? static_cast<std::uint64_t>(end / 1000) : scenario_.pods.size();
    progress_step_ = std::max<std::uint64_t>(1, progress_total_ / 100);
    SetUpNodes();
    SetUpQuotas();
    for (const DisruptionBudget& budget : scenario_.budgets) api_.AddBudget(budget);
    for (std::size_t b = 0; b < api_.budget_count(); ++b)
      budgets_sent_.push_back(api_.BudgetStatus(b));
    SetUpReplicas();
    for (std::size_t i = 0; i < scenario_.faults.size(); ++i) {
      events_.At(scenario_.faults[i].at_ms, EventKind::kFault, i);
    }
    for (std::size_t i = 0; i < scenario_.pods.size(); ++i) {
      events_.At(scenario_.pods[i].arrive_ms, EventKind::kArrive, i);
    }
    if (scenario_.audit_period_ms > 0) events_.At(scenario_.audit_period_ms, EventKind::kAudit);
    while (!events_.empty() && !violation_) {
      if (end > 0 && events_.next().at > end) break;
      Fire(events_.Pop());
      const std::int64_t now = events_.now();
      if (end == 0 && handled_ == scenario_.pods.size()) break;
      if (end > 0 && progress_ && static_cast<std::uint64_t>(now / 1000) >= progress_next_) {
        progress_next_ = static_cast<std::uint64_t>(now / 1000) + progress_step_;
        progress_(std::min<std::uint64_t>(now / 1000, progress_total_), progress_total_);
      }
    }
    if (violation_) return *violation_;
    if (end > 0) {
      events_.AdvanceTo(end);
      if (progress_) progress_(progress_total_, progress_total_);
    }
    return Finish();
  }

 private:
  // ---- set-up

  // Each node's object carries its plugin's devices as registered; legacy
  // plugins then start their heartbeats (the random phases drawn in node
  // order, before anything else).
  void SetUpNodes() {
    const std::string register_key = RegisterKey(scenario_.engine);
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      api_.AddNode(MakeNode(nodes_[n], register_key, kubelets_.encoded(n)));
      report_.AddCapacity(nodes_[n].gpus);
    }
    kubelets_.StartHeartbeats(rng_);
  }

  // The API server holds the quotas before any engine lists the cluster; a
  // device limit that is not a whole number is reported and ignored.
  void SetUpQuotas() {
    for (const ResourceQuota& quota : scenario_.quotas) {
      if (Status s = api_.AddQuota(quota); !s.ok()) report_.QuotaWarning(s.message());
    }
  }

  // Each replica draws its elector identity, lists the cluster and, with
  // several replicas, starts electing (10 ms apart).
  void SetUpReplicas() {
    for (std::size_t r = 0; r < replica_count_; ++r) {
      const int i = static_cast<int>(r);
      election_.SetIdentity(i, fmt::format("{}_{:016x}", replicas_.host(i), rng_()));
      replicas_.Start(i);
      if (replica_count_ > 1) election_.Run(i, static_cast<std::int64_t>(r) * 10);
    }
  }

  // ---- events

  void Fire(const Event& e) {
    switch (e.kind) {
      case EventKind::kArrive:
        return Arrive(e.arg);
      case EventKind::kRequestStart:
        return api_.Receive(e.arg);
      case EventKind::kRequestDone:
        return Complete(e.arg);
      case EventKind::kWake:
        return replicas_.Wake(static_cast<int>(e.arg));
      case EventKind::kCycle:
        return scheduler_.Cycle();
      case EventKind::kCycleTimeout:
        return scheduler_.CycleTimedOut(e.arg);
      case EventKind::kRequeue:
        return scheduler_.Enqueue(e.arg);
      case EventKind::kAllocate: {
        const PodState& pod = scheduler_.pod(e.arg);
        if (pod.running)
          kubelets_.Allocate(e.arg, api_.NodeIndex(pod.node));  // not once it departed
        return;
      }
      case EventKind::kDepart:
        return Depart(e.arg);
      case EventKind::kHeartbeat:
        return kubelets_.Heartbeat(e.arg);
      case EventKind::kFault:
        return StartFault(e.arg);
      case EventKind::kFaultEnd:
        return EndFault(e.arg);
      case EventKind::kElect:
        return election_.Elect(static_cast<int>(e.arg));
      case EventKind::kAudit:
        return Audit();
      case EventKind::kTerminate:
        return Terminate(e.arg);
    }
  }

  // Each live replica's engine against a LIST of the API objects now.
  void Audit() {
    engine::AuditListing listing;
    for (std::size_t n = 0; n < api_.node_count(); ++n) {
      const Node& node = api_.node(n);
      listing.nodes.push_back(
          engine::ListedObject{"", node.name, node.uid, node.resource_version, node.annotations});
    }
    for (std::size_t p = 0; p < api_.pod_count(); ++p) {
      if (!api_.exists(p)) continue;
      const Pod& pod = api_.pod(p);
      listing.pods.push_back(
          engine::ListedObject{pod.pod_namespace, pod.name, pod.uid, "", pod.annotations});
    }
    for (const ResourceQuota& q : api_.quotas()) {
      listing.quotas.push_back(
          engine::ListedObject{q.quota_namespace, q.name, q.uid, q.resource_version, {}});
    }
    for (std::size_t r = 0; r < replica_count_; ++r) {
      if (replicas_.alive(static_cast<int>(r))) replicas_.Audit(static_cast<int>(r), listing);
    }
    events_.At(events_.now() + scenario_.audit_period_ms, EventKind::kAudit);
  }

  // The pod is created: the report samples the cluster before it is
  // placed, the engines see it, and it joins kube-scheduler's queue.
  void Arrive(std::size_t index) {
    const PodSpec& spec = scenario_.pods[index];
    api_.CreatePod(index, MakePod(spec, index));
    Status sampled = report_.Arrived(GpusOf(spec), api_.truth());
    if (!sampled.ok()) return Fail(std::move(sampled));
    replicas_.PodObserved(api_.pod(index));
    SendBudgets();
    scheduler_.Enqueue(index);
  }

  // The pod's run ends (an evicted pod's too, if it ends in its grace
  // period: nothing of it is lost).
  void Depart(std::size_t index) {
    if (!scheduler_.Depart(index)) return;
    ledger_.Deleted(index, events_.now(), events_.now());
    Delete(index);
  }

  // An evicted pod's grace period is over: it is deleted, its run lost.
  void Terminate(std::size_t index) {
    if (!scheduler_.Depart(index)) return;  // its run ended meanwhile
    ledger_.Deleted(index, scheduler_.pod(index).bound_at, events_.now());
    Delete(index);
  }

  void Delete(std::size_t index) {
    report_.Departed(GpusOf(scenario_.pods[index]));
    api_.DeletePod(index);
    replicas_.PodDeleted(api_.pod(index).uid);
    SendBudgets();
  }

  // The disruption controller: each budget's status, to the engines'
  // watches when it changed.
  void SendBudgets() {
    for (std::size_t b = 0; b < budgets_sent_.size(); ++b) {
      PodDisruptionBudget status = api_.BudgetStatus(b);
      if (status == budgets_sent_[b]) continue;
      replicas_.BudgetObserved(status);
      budgets_sent_[b] = std::move(status);
    }
  }

  // ---- completed requests: the engine that sent one hears its outcome;
  // the watches carry what changed.

  void Complete(std::uint64_t id) {
    Completion done = api_.Complete(id);
    std::visit([&](auto& body) { Completed(done, body); }, done.request.body);
  }

  void Completed(const Completion& done, engine::PatchNode& c) {
    const int r = done.request.client;
    replicas_.Tell(r, c.id, done.ok);
    if (done.ok) scheduler_.NodeChanged(done.node);
    if (c.registration) replicas_.RegistrationWritten(r);
  }

  void Completed(const Completion& done, engine::PatchPod& c) {
    replicas_.Tell(done.request.client, c.id, done.ok);
    if (done.ok) replicas_.PodObserved(api_.pod(done.pod));
  }

  void Completed(const Completion& done, engine::PostBinding& c) {
    const int r = done.request.client;
    if (done.ok) Bound(done.pod, c.node, r);
    replicas_.Tell(r, c.id, done.ok);
    if (!done.ok) return;
    replicas_.PodObserved(api_.pod(done.pod));
    kubelets_.PodBound(done.pod);
  }

  void Completed(const Completion& /*done*/, NodeWrite& w) { scheduler_.NodeChanged(w.node); }

  void Completed(const Completion& /*done*/, PodWrite& w) {
    replicas_.PodObserved(api_.pod(w.pod));
  }

  // An accepted eviction: the pod is terminating (the watches say so) and
  // goes when its grace period is over.
  void Completed(const Completion& done, engine::EvictPod& c) {
    replicas_.Tell(done.request.client, c.id, done.ok);
    if (!done.evicted) return;
    if (std::optional<std::string> wrong = ledger_.Evicted(done.pod))
      return Violation(done.pod, *wrong);
    replicas_.PodObserved(api_.pod(done.pod));
    SendBudgets();
    const std::int64_t grace = scenario_.pods[done.pod].termination_grace_seconds * 1000;
    events_.At(events_.now() + grace, EventKind::kTerminate, done.pod);
  }

  void Completed(const Completion& /*done*/, engine::NominatePod& /*c*/) {}

  void Completed(const Completion& done, LeaseWrite& w) {
    if (election_.WriteResult(done.request.client, w.decision, done.ok)) scheduler_.Kick();
    if (done.ok) replicas_.LeaseObserved();
  }

  // ---- faults

  void StartFault(std::size_t fault) {
    const Fault& f = scenario_.faults[fault];
    switch (f.kind) {
      case Fault::Kind::kMissedEvents:
        replicas_.SetDeaf(true);
        break;
      case Fault::Kind::kPodDeletedInBind:
        if (!DeletePodInBind()) {  // no bind in flight yet: look again shortly
          events_.At(events_.now() + 100, EventKind::kFault, fault);
          return;
        }
        break;
      case Fault::Kind::kNodeReplaced:
        ReplaceNode(api_.NodeIndex(f.node));
        break;
      default:
        break;
    }
    ++drift_injected_[std::string(kFaultKindNames.Name(f.kind))];
    if (f.duration_ms > 0) events_.At(events_.now() + f.duration_ms, EventKind::kFaultEnd, fault);
    if (f.kind == Fault::Kind::kMissedEvents || f.kind == Fault::Kind::kPodDeletedInBind ||
        f.kind == Fault::Kind::kNodeReplaced)
      return;
    if (f.kind == Fault::Kind::kLeaderCrash) {
      const int r = replicas_.Leader();
      if (r < 0) return;
      crashed_leader_ = r;
      return Crash(r);
    }
    kubelets_.StartFault(f.kind, api_.NodeIndex(f.node));
  }

  // The first pod whose bind is in flight is deleted; the engines do not
  // hear of it. False when no bind is in flight.
  bool DeletePodInBind() {
    for (std::size_t i = 0; i < scenario_.pods.size(); ++i) {
      if (!api_.exists(i) || !scheduler_.BindingInFlight(i)) continue;
      api_.DeletePod(i);
      scheduler_.Deleted(i);
      Handled();
      return true;
    }
    return false;
  }

  // The node is deleted with its pods and created again under its name
  // (the same devices, another UID); the engines hear none of it.
  void ReplaceNode(std::size_t n) {
    Node replaced = api_.node(n);
    replaced.uid += "-replaced";
    replaced.annotations.Erase(keys::kNodeLock);
    for (std::size_t i = 0; i < scenario_.pods.size(); ++i) {
      if (!api_.exists(i) || api_.pod(i).node_name != replaced.name) continue;
      if (scheduler_.Depart(i)) report_.Departed(GpusOf(scenario_.pods[i]));
      api_.DeletePod(i);
    }
    api_.ReplaceNode(n, std::move(replaced));
  }

  void EndFault(std::size_t fault) {
    const Fault& f = scenario_.faults[fault];
    if (f.kind == Fault::Kind::kMissedEvents) return replicas_.SetDeaf(false);
    if (f.kind == Fault::Kind::kLeaderCrash) {
      if (crashed_leader_ >= 0) {  // back as a follower
        replicas_.Start(crashed_leader_);
        election_.Run(crashed_leader_, events_.now());
      }
      crashed_leader_ = -1;
      return;
    }
    kubelets_.EndFault(f.kind, api_.NodeIndex(f.node));
  }

  // The replica's process dies: its engine and elector stop, and its
  // scheduler's cycle and binds are lost (their pods go back to the queue).
  void Crash(int r) {
    replicas_.Crash(r);
    election_.Stop(r);
    report_.LeaderCrashed();
    scheduler_.ReplicaCrashed(r);
  }

  // ---- what kube-scheduler's decisions mean to the run

  // A Binding landed: the checks of simulator.hpp. The pod must not be
  // bound already, its devices must be on its node, no device over its
  // capacity and no namespace over its quota (on the cluster as its API
  // objects say), and the engine that placed it must hold the same devices
  // for it as its annotations.
  void Bound(std::size_t index, const std::string& node, int r) override {
    if (!scheduler_.Bound(index, node)) return Violation(index, "allocated twice");
    const PodSpec& spec = scenario_.pods[index];
    report_.Bound(GpusOf(spec));
    SendBudgets();
    if (!scheduler_.pod(index).given_up) Handled();
    if (spec.duration_ms > 0)
      events_.At(events_.now() + spec.duration_ms, EventKind::kDepart, index);
    if (spec.gpus == 0) return;
    const std::string& uid = api_.pod(index).uid;
    if (!api_.truth_error().ok()) return Violation(index, api_.truth_error().message());
    Status placement = CheckPlacement(api_.truth(), node, uid);
    if (!placement.ok()) return Violation(index, placement.message());
    if (!scenario_.quotas.empty()) {
      const std::vector<QuotaUse> in_force = api_.truth().Quotas();
      report_.QuotasUsed(in_force);
      for (const QuotaUse& q : in_force) {
        if (q.used > q.limit) {
          return Violation(index, fmt::format("namespace {} uses {} {}, over its quota's {}",
                                              q.pod_namespace, q.used, q.resource, q.limit));
        }
      }
    }
    if (!replicas_.alive(r)) return;
    Result<std::vector<PodUsage>> cached = replicas_.cache(r).PodUsageOf(uid);
    Result<std::vector<PodUsage>> annotated = api_.truth().PodUsageOf(uid);
    if (!cached.ok() || !annotated.ok() || *cached != *annotated) {
      return Violation(index, "the engine's cache disagrees with the pod's annotations");
    }
  }

  void GaveUp(std::size_t /*pod*/) override { Handled(); }

  // A preemption begins: its victims (by name, as the engine keeps them)
  // and the GPU memory they hold, against what the preemptor takes.
  void Preempting(int r, const engine::NominatePod& nomination) override {
    auto preemption = replicas_.preemptions(r).find(nomination.uid);
    const std::optional<std::size_t> preemptor = api_.PodIndex(nomination.name);
    if (preemption == replicas_.preemptions(r).end() || !preemptor) return;
    auto memory = [](const Result<std::vector<PodUsage>>& usage) {
      std::int64_t mib = 0;
      if (usage.ok()) {
        for (const PodUsage& u : *usage) mib += u.usedmem;
      }
      return mib;
    };
    std::vector<std::size_t> victims;
    std::int64_t victims_mib = 0;
    for (const std::string& key : preemption->second.victims) {
      const std::optional<std::size_t> victim = api_.PodIndex(key.substr(key.find('/') + 1));
      if (!victim) continue;
      victims.push_back(*victim);
      victims_mib += memory(api_.truth().PodUsageOf(api_.pod(*victim).uid));
    }
    const std::int64_t needed_mib = memory(replicas_.cache(r).PodUsageOf(nomination.uid));
    if (std::optional<std::string> wrong =
            ledger_.Preempting(*preemptor, nomination.node, victims, victims_mib, needed_mib))
      Violation(*preemptor, *wrong);
  }
  void Placed() override { report_.Placed(); }

  void Violation(std::size_t index, std::string_view what) override {
    Fail(Status::Internal(
        fmt::format("t={} ms, pod {}: {}", events_.now(), api_.pod(index).name, what)));
  }

  // The first failure ends the run.
  void Fail(Status status) {
    if (!violation_) violation_ = std::move(status);
  }

  // A pod is handled: bound, or given up.
  void Handled() {
    ++handled_;
    if (progress_ && scenario_.end_ms == 0 &&
        (handled_ % progress_step_ == 0 || handled_ == progress_total_)) {
      progress_(handled_, progress_total_);
    }
  }

  // ---- the engines' answers, for kube-scheduler

  void FilterAnswered(int r, const engine::FilterReply& reply) override {
    scheduler_.FilterAnswered(r, reply);
  }
  void BindAnswered(const engine::BindReply& reply) override { scheduler_.BindAnswered(reply); }
  void RegistrationWritten() override { scheduler_.RegistrationWritten(); }

  // ---- the report

  Result<Report> Finish() {
    for (std::size_t i = 0; i < scenario_.pods.size(); ++i) {
      const PodState& pod = scheduler_.pod(i);
      if (!api_.created(i) || pod.deleted) continue;
      const bool binding = !pod.bound && scheduler_.BindingInFlight(i);
      report_.CountPod(scenario_.pods[i], PodOutcome{pod.bound, pod.running, pod.given_up, binding,
                                                     pod.bound_at, pod.reason});
    }
    Result<Report> report = report_.Finish(api_.truth(), !scenario_.quotas.empty());
    if (!report.ok()) return report;
    api_.AddTo(*report);
    scheduler_.AddTo(*report);
    replicas_.AddTo(*report);
    ledger_.AddTo(
        *report,
        [&](std::size_t i) {
          const PodState& pod = scheduler_.pod(i);
          return PodEnd{api_.created(i), pod.bound, !pod.bound && !pod.given_up, pod.bound_at,
                        pod.node};
        },
        events_.now());
    report->drift_injected = drift_injected_;
    const int leader = replicas_.Leader();
    if (leader >= 0) report->cache_mismatched_devices = MismatchedDevices(replicas_.cache(leader));
    return report;
  }

  // Devices whose usage the cache counts otherwise than the API objects.
  std::uint64_t MismatchedDevices(const ClusterSnapshot& cache) const {
    std::uint64_t mismatched = 0;
    for (std::size_t n = 0; n < api_.node_count(); ++n) {
      Result<std::vector<DeviceView>> truth = api_.truth().NodeDevices(api_.node(n).name);
      Result<std::vector<DeviceView>> cached = cache.NodeDevices(api_.node(n).name);
      if (!truth.ok() || !cached.ok()) {
        mismatched += truth.ok() ? truth->size() : cached.ok() ? cached->size() : 0;
        continue;
      }
      for (std::size_t d = 0; d < truth->size(); ++d) {
        const DeviceUsage& t = (*truth)[d].usage;
        const DeviceUsage& c = d < cached->size() ? (*cached)[d].usage : DeviceUsage{};
        if (d >= cached->size() || t.used != c.used || t.usedmem != c.usedmem ||
            t.usedcores != c.usedcores)
          ++mismatched;
      }
    }
    return mismatched;
  }

  const Scenario& scenario_;
  const Progress& progress_;
  std::mt19937_64 rng_;  // every random choice of the models, in one sequence
  const engine::EngineOptions options_;
  const std::vector<NodeSpec> nodes_;  // by name
  const std::size_t replica_count_;

  EventQueue events_;
  ApiServer api_;
  LeaderElection election_;
  Replicas replicas_;
  KubeScheduler scheduler_;
  Kubelets kubelets_;
  ReportBuilder report_;
  PreemptionLedger ledger_;
  std::vector<PodDisruptionBudget> budgets_sent_;  // each budget as the engines last heard it

  std::uint64_t progress_total_ = 0, progress_step_ = 1, progress_next_ = 0;
  std::size_t handled_ = 0;
  int crashed_leader_ = -1;
  std::map<std::string, std::uint64_t> drift_injected_;  // by fault kind
  std::optional<Status> violation_;
};

}  // namespace
}  // namespace internal

Result<Report> Run(const Scenario& scenario, std::uint64_t seed, const Progress& progress) {
  auto invalid = [](const std::string& what) {
    return Status::InvalidArgument("scenario: " + what);
  };
  std::set<std::string_view> nodes;
  for (const NodeSpec& n : scenario.nodes) {
    if (n.name.empty()) return invalid("a node has no name");
    if (!nodes.insert(n.name).second) return invalid(fmt::format("node {} is named twice", n.name));
    if (n.gpus < 0 || n.gpu_memory_mib < 0 || n.cpu_milli < 0 || n.memory_mib < 0) {
      return invalid(fmt::format("node {} has a negative size", n.name));
    }
  }
  std::set<std::string_view> pods;
  for (const PodSpec& p : scenario.pods) {
    if (p.gpus < 0 || p.gpus > 8)
      return invalid(fmt::format("pod {} asks {} devices (0..8)", p.name, p.gpus));
    if (!pods.insert(p.name).second) return invalid(fmt::format("pod {} is named twice", p.name));
    if (p.pod_namespace.empty()) return invalid(fmt::format("pod {} has no namespace", p.name));
    if (p.arrive_ms < 0 || p.duration_ms < 0)
      return invalid(fmt::format("pod {} has a negative time", p.name));
    if (p.termination_grace_seconds < 0)
      return invalid(fmt::format("pod {} has a negative grace period", p.name));
    if (p.gpu_milli < 0 || p.cpu_milli < 0 || p.memory_mib < 0) {
      return invalid(fmt::format("pod {} has a negative size", p.name));
    }
  }
  for (const Fault& f : scenario.faults) {
    const bool cluster_wide = f.kind == Fault::Kind::kLeaderCrash ||
                              f.kind == Fault::Kind::kMissedEvents ||
                              f.kind == Fault::Kind::kPodDeletedInBind;
    if (!cluster_wide && !nodes.contains(f.node)) {
      return invalid(fmt::format("a fault names the unknown node '{}'", f.node));
    }
    if (f.at_ms < 0 || f.duration_ms < 0) return invalid("a fault has a negative time");
  }
  if (scenario.scheduler.replicas < 1) return invalid("scheduler replicas must be at least 1");
  if (scenario.scheduler.retry_unschedulable && scenario.end_ms <= 0) {
    return invalid("retrying unschedulable pods needs an end time");
  }
  if (scenario.api.qps <= 0 || scenario.api.burst < 1 || scenario.api.max_inflight < 1) {
    return invalid("the API model needs qps > 0, burst >= 1 and max_inflight >= 1");
  }
  if (scenario.plugins.heartbeat_ms <= 0) return invalid("the plugin heartbeat must be positive");
  std::set<std::pair<std::string_view, std::string_view>> quotas;
  for (const ResourceQuota& q : scenario.quotas) {
    if (q.quota_namespace.empty() || q.name.empty())
      return invalid("a quota has no namespace or no name");
    if (!quotas.emplace(q.quota_namespace, q.name).second)
      return invalid(fmt::format("quota {}/{} is named twice", q.quota_namespace, q.name));
  }
  std::set<std::pair<std::string_view, std::string_view>> budgets;
  for (const DisruptionBudget& b : scenario.budgets) {
    if (Status s = internal::CheckBudget(b); !s.ok()) return invalid(std::string(s.message()));
    if (!budgets.emplace(b.budget_namespace, b.name).second)
      return invalid(fmt::format("budget {}/{} is named twice", b.budget_namespace, b.name));
  }
  const bool priorities = std::any_of(scenario.pods.begin(), scenario.pods.end(),
                                      [](const PodSpec& p) { return p.priority != 0; });
  if (scenario.dra.enabled) {
    if (!scenario.faults.empty()) return invalid("DRA mode models no faults");
    if (!scenario.quotas.empty()) return invalid("DRA mode models no quotas");
    if (!scenario.budgets.empty() || priorities)
      return invalid("DRA mode models no priorities or budgets");
    return internal::RunDra(scenario, seed, progress);
  }
  internal::Simulation simulation(scenario, seed, progress);
  return simulation.Run();
}

}  // namespace devshare::sim
