// Private: the kube-scheduler model (and Volcano's session loop in its
// place under Volcano's protocol).
//
// One scheduling cycle at a time, in queue order (kube-scheduler's activeQ:
// the highest priority first, then the earliest queued): NodeResourcesFit on CPU
// and memory (as assumed by kube-scheduler's cache: bound pods and pods
// assumed on a node, until they leave), then the extender's Filter with a
// timeout; the Bind runs asynchronously while the next cycle starts. A pod
// that fits nowhere is given up (the FGD paper's experiment) or retried
// with kube-scheduler's backoff (1 s doubling to 10 s), as is a failed
// Bind. A pod without devices is bound by kube-scheduler itself, on the
// node the Filter names when it names one (fgd), else on the first node
// that fits. A pod the Filter places nowhere is pending for its
// namespace's quota (kQuotaReason) when a node refused a device for
// ResourceQuotaNotFit, else because no device fits. Only the leading
// replica's kube-scheduler schedules; a crashed replica's cycle and binds
// go back to the queue.
//
// Volcano handles node events, and writes their handshakes, in the session
// that then schedules: a session takes the node events since the last one,
// opens once the handshake writes they caused are done, and tries each pod
// queued when it opened; sessions start a second apart. kube-scheduler
// with an extender has no such coupling: node events reach the engines at
// once.
//
// Not modelled: kube-scheduler's own preemption (the engines preempt; v1.37
// finds no victims for devices it does not see), scoring plugins other than
// the extender's choice, the unschedulable queue's event-driven moves, a
// Bind timeout. The backoff stands in for those moves: a pod deletion moves
// an unschedulable pod to the backoffQ, from which it leaves when its
// backoff (1 s doubling to 10 s since its last attempt) is over, which is
// when the backoff here requeues it anyway; without such an event
// kube-scheduler would wait longer (up to 5 min).
//
// Thread-safety: none; a run is single-threaded.
#ifndef DEVSHARE_SIM_SRC_KUBE_SCHEDULER_HPP_
#define DEVSHARE_SIM_SRC_KUBE_SCHEDULER_HPP_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api_server.hpp"
#include "devshare/engine/engine.hpp"
#include "devshare/sim/simulator.hpp"
#include "event_queue.hpp"
#include "replicas.hpp"

namespace devshare::sim::internal {

inline constexpr std::int64_t kSessionPeriodMs = 1000;  // Volcano's schedule period

// A pod as kube-scheduler (and, once bound, the kubelet) knows it.
struct PodState {
  bool bound = false;     // bound at some point
  bool running = false;   // bound and not yet departed
  bool given_up = false;  // unschedulable, and not retried
  bool deleted = false;   // deleted before it was bound (not retried)
  std::string node;       // assumed (after Filter) or bound; empty: none
  int attempts = 0;
  std::string reason;  // why it is not bound, the last time it was tried
  std::int64_t bound_at = 0;
};

class KubeScheduler {
 public:
  // What the scheduler's decisions mean to the rest of the run.
  class Listener {
   public:
    virtual ~Listener() = default;
    // kube-scheduler bound a pod without devices itself.
    virtual void Bound(std::size_t pod, const std::string& node, int replica) = 0;
    // A pod is given up: it will not be tried again.
    virtual void GaveUp(std::size_t pod) = 0;
    // A pod was placed (the extender chose its node).
    virtual void Placed() = 0;
    // An invariant broke at this pod; the run ends with it.
    virtual void Violation(std::size_t pod, std::string_view what) = 0;
  };

  // `nodes`: the scenario's nodes in name order (the API server's order).
  KubeScheduler(const Scenario& scenario, const std::vector<NodeSpec>& nodes, EventQueue& events,
                ApiServer& api, Replicas& replicas, Listener& listener);
  KubeScheduler(const KubeScheduler&) = delete;
  KubeScheduler& operator=(const KubeScheduler&) = delete;

  const PodState& pod(std::size_t index) const { return pods_[index]; }
  // A Bind of the pod is in flight.
  bool BindingInFlight(std::size_t pod) const;

  // A pod joins the queue: created, or its backoff is over (kRequeue).
  void Enqueue(std::size_t pod);
  // A cycle is due now (once, however often kicked before it runs).
  void Kick();
  // kCycle: one scheduling cycle, unless one is running.
  void Cycle();
  // kCycleTimeout: the extender did not answer `request` in time.
  void CycleTimedOut(std::uint64_t request);

  // The extender's answers (from Replicas).
  void FilterAnswered(int r, const engine::FilterReply& reply);
  void BindAnswered(const engine::BindReply& reply);

  // A node object changed: its watch event reaches the engines, at once or
  // (Volcano) in the next session.
  void NodeChanged(std::size_t node);
  // A registration write completed: the session waiting for it may open.
  void RegistrationWritten();
  // Replica r crashed: its cycle and binds are requeued.
  void ReplicaCrashed(int r);

  // A Binding of pod `index` to `node` landed (the extender's or
  // kube-scheduler's own): the pod runs there. Returns false when it was bound
  // already.
  bool Bound(std::size_t index, const std::string& node);
  // The pod's run ends: its CPU and memory are free again. Returns false
  // when it was not running.
  bool Depart(std::size_t index);
  // The pod was deleted before it was bound: it is not tried again, and a
  // bind of it in flight is forgotten.
  void Deleted(std::size_t index);

  // What the report counts of kube-scheduler: the extender's timeouts.
  void AddTo(Report& report) const { report.extender_timeouts += extender_timeouts_; }

 private:
  // A node's CPU and memory as NodeResourcesFit sees them (0: unlimited).
  struct NodeRoom {
    std::int64_t cpu_milli = 0, memory_mib = 0;
    std::int64_t cpu_used = 0, memory_used = 0;
  };
  struct Binding {
    std::size_t pod;
    int replica;
  };

  bool Volcano() const;
  bool SessionOpen();
  void Unschedulable(std::size_t index, std::string reason, bool give_up);
  void Requeue(std::size_t index);
  void Assume(std::size_t index, const std::string& node);
  void Unassume(std::size_t index);

  const Scenario& scenario_;
  const std::vector<NodeSpec>& nodes_;
  EventQueue& events_;
  ApiServer& api_;
  Replicas& replicas_;
  Listener& listener_;

  std::vector<NodeRoom> rooms_;  // by node
  std::vector<PodState> pods_;   // by the scenario's index
  // The activeQ: the highest priority first, then the earliest queued.
  struct Queued {
    std::int64_t minus_priority;
    std::int64_t order;
    std::size_t pod;
    auto operator<=>(const Queued&) const = default;
  };
  void Queue(std::size_t pod, std::int64_t order);
  std::set<Queued> queue_;
  std::int64_t next_queued_ = 0, first_queued_ = 0;
  std::vector<std::string> candidates_;
  bool cycle_kicked_ = false, cycle_busy_ = false, cycle_ready_ = false;
  std::size_t cycle_pod_ = 0;
  std::uint64_t cycle_request_ = 0, next_extender_request_ = 1;
  std::unordered_map<std::uint64_t, Binding> bindings_;  // extender request -> pod
  std::uint64_t extender_timeouts_ = 0;

  std::optional<std::uint64_t> session_barrier_;  // registration writes the next session waits for
  bool in_session_ = false;
  std::size_t session_left_ = 0;         // pods the open session has still to try
  std::set<std::size_t> session_nodes_;  // nodes changed since the last session
};

}  // namespace devshare::sim::internal

#endif  // DEVSHARE_SIM_SRC_KUBE_SCHEDULER_HPP_
