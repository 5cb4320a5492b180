// Private: the scheduler replicas — each runs devshare's engine, the same
// scheduler service a deployment runs, and the part of its adapter that
// turns the engine's commands into API requests.
//
// An engine lists the cluster when its replica starts, hears watch events
// while its replica lives, and is told the outcome of each of its requests.
// Its registration (handshake) writes go one at a time, as HAMi's
// registration loop sends them, a newer write for a node replacing a queued
// one (the replaced one is told to the engine as failed). Its answers to
// kube-scheduler (Filter, Bind) go to the Listener.
//
// A crashed replica's engine hears nothing more and its queued
// registration writes are dropped; the writes it had sent still land. Its
// evictions and nominations go as requests too (verbs eviction and
// patch-pod-status), a nomination told to the Listener as it is sent. Its
// counters are kept for the report; a restart starts a new engine.
//
// Thread-safety: none; a run is single-threaded.
#ifndef DEVSHARE_SIM_SRC_REPLICAS_HPP_
#define DEVSHARE_SIM_SRC_REPLICAS_HPP_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api_server.hpp"
#include "devshare/engine/engine.hpp"
#include "devshare/sim/simulator.hpp"
#include "event_queue.hpp"
#include "leader_election.hpp"

namespace devshare::sim::internal {

class Replicas {
 public:
  // Where the engines' answers go.
  class Listener {
   public:
    virtual ~Listener() = default;
    // The engine of replica r answered kube-scheduler's Filter or Bind.
    virtual void FilterAnswered(int r, const engine::FilterReply& reply) = 0;
    virtual void BindAnswered(const engine::BindReply& reply) = 0;
    // One more registration write is done (registration_done() moved).
    virtual void RegistrationWritten() = 0;
    // The engine of replica r began a preemption: it nominates the pod
    // (its preemptions() say where, and which victims it evicts).
    virtual void Preempting(int r, const engine::NominatePod& nomination) = 0;
  };

  // `count` replicas named scheduler-<r>; replica r's engine runs `options`
  // seeded with seed + r, following the Lease when there are several.
  // `handshake_key`: the handshake annotation, whose writes by a replica not
  // holding the Lease the report counts as duplicates.
  Replicas(const engine::EngineOptions& options, std::size_t count, std::uint64_t seed,
           std::string handshake_key, EventQueue& events, ApiServer& api,
           const LeaderElection& election, Listener& listener);
  Replicas(const Replicas&) = delete;
  Replicas& operator=(const Replicas&) = delete;

  std::size_t size() const { return replicas_.size(); }
  const std::string& host(int r) const { return replica(r).host; }
  bool alive(int r) const { return replica(r).alive; }
  // The replica whose kube-scheduler schedules: the live one leading the
  // election, or the only one while it lives; -1 when none.
  int Leader() const;

  // Replica r's process starts (again): a new engine lists the cluster
  // (nodes, quotas, budgets, created pods and, with several replicas, the
  // Lease).
  void Start(int r);
  // Replica r's process dies.
  void Crash(int r);
  // kWake: the engine's timer, unless a later one superseded it.
  void Wake(int r);

  // Missed watch events: while deaf, no engine hears a node or pod event
  // (they do not relist when it ends).
  void SetDeaf(bool deaf) { deaf_ = deaf; }
  // Replica r's engine audits its cache against `listing` (the API
  // objects now); the objects it asks for are read from the API objects
  // at once, and its writes go as requests.
  void Audit(int r, const engine::AuditListing& listing);

  // Watch events, to every live engine.
  void NodeObserved(std::size_t node);
  void PodObserved(const Pod& pod);
  void PodDeleted(const std::string& uid);
  void LeaseObserved();
  void BudgetObserved(const PodDisruptionBudget& budget);
  // The outcome of one of replica r's requests, told to its engine if it
  // still lives.
  void Tell(int r, std::uint64_t id, bool succeeded);

  // kube-scheduler's calls to the extender of replica r. The engine's
  // commands are executed; its answer comes through the Listener. As the
  // Kubernetes adapter does, Filter first hands the engine the pod as
  // kube-scheduler sees it.
  bool Ready(int r) const;
  void Filter(int r, std::uint64_t request, const Pod& pod, const std::vector<std::string>& nodes);
  void Bind(int r, std::uint64_t request, const Pod& pod, const std::string& node);
  // The Filter of a pod without devices, which writes nothing: the node the
  // extender names when it names exactly one (fgd scores such pods).
  std::optional<std::string> PreferredNode(int r, const Pod& pod,
                                           const std::vector<std::string>& nodes);
  // What replica r's engine holds (the invariant checker compares it).
  const ClusterSnapshot& cache(int r) const { return replica(r).engine->snapshot(); }
  // Replica r's preemptions under way (Engine::preemptions).
  const std::map<std::string, engine::Preemption>& preemptions(int r) const {
    return replica(r).engine->preemptions();
  }

  // A registration write of replica r completed: the next queued one goes.
  void RegistrationWritten(int r);
  // Registration writes handed to the queues, and those done (completed or
  // replaced by a newer one), over all replicas.
  std::uint64_t registration_queued() const { return registration_queued_; }
  std::uint64_t registration_done() const { return registration_done_; }

  // The engines' counters summed over the replicas (the dead ones' too),
  // and the duplicate handshake writes.
  void AddTo(Report& report) const;

 private:
  struct Replica {
    std::string host;
    std::unique_ptr<engine::Engine> engine;
    bool alive = true;
    std::optional<std::int64_t> wake_at;
    engine::Counters retired;  // counters of engines lost in crashes
    engine::AuditTotals retired_audits;
    std::deque<std::string> registration_order;
    std::unordered_map<std::string, engine::PatchNode> registration_queued;
    bool registration_busy = false;
  };

  Replica& replica(int r) { return replicas_[static_cast<std::size_t>(r)]; }
  const Replica& replica(int r) const { return replicas_[static_cast<std::size_t>(r)]; }

  void Dispatch(int r, std::vector<engine::Command> commands);
  void Rearm(int r);
  void Handle(int r, engine::PatchNode& c);
  void Handle(int r, engine::PatchPod& c);
  void Handle(int r, engine::PostBinding& c);
  void Handle(int r, engine::FilterReply& reply);
  void Handle(int r, engine::BindReply& reply);
  void Handle(int r, engine::EvictPod& c);
  void Handle(int r, engine::NominatePod& c);
  void SendRegistration(int r);

  const engine::EngineOptions& options_;
  const std::uint64_t seed_;
  const std::string handshake_key_;
  EventQueue& events_;
  ApiServer& api_;
  const LeaderElection& election_;
  Listener& listener_;

  std::vector<Replica> replicas_;
  std::vector<std::uint64_t> replaced_;  // registration writes replaced by newer ones
  std::uint64_t registration_queued_ = 0, registration_done_ = 0;
  std::uint64_t duplicate_registration_writes_ = 0;
  bool deaf_ = false;
};

}  // namespace devshare::sim::internal

#endif  // DEVSHARE_SIM_SRC_REPLICAS_HPP_
