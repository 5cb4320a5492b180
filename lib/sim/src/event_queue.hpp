// Private: the virtual clock of a run and its pending events.
//
// Events fire in time order; events at the same time fire in the order they
// were scheduled (a sequence number breaks the tie), which is what makes a
// run repeat bit for bit. Every model schedules its own events here; the
// coordinator (simulator.cpp) pops them and hands each to its model.
//
// Thread-safety: none; a run is single-threaded.
#ifndef DEVSHARE_SIM_SRC_EVENT_QUEUE_HPP_
#define DEVSHARE_SIM_SRC_EVENT_QUEUE_HPP_

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace devshare::sim::internal {

// What an event starts; `Event::arg` says for whom (the index of a pod,
// node, replica, fault or request, or an extender request id).
enum class EventKind : std::uint8_t {
  kArrive,        // a pod is created (pod)
  kRequestStart,  // an API request reaches the server (request)
  kRequestDone,   // the server answers it (request)
  kWake,          // an engine's timer (replica)
  kCycle,         // kube-scheduler's next scheduling cycle
  kCycleTimeout,  // the extender's Filter timed out (extender request)
  kRequeue,       // a pod's backoff ended (pod)
  kAllocate,      // the kubelet calls the device plugin's Allocate (pod)
  kDepart,        // a pod's run ends (pod)
  kHeartbeat,     // a legacy plugin's period (node)
  kFault,         // a fault starts (fault)
  kFaultEnd,      // and ends (fault)
  kElect,         // a replica's leader-election retry period (replica)
  kAudit,         // the replicas' drift audits (Scenario::audit_period_ms)
  kTerminate,     // an evicted pod's grace period ends (pod)
};

struct Event {
  std::int64_t at;
  std::uint64_t seq;
  EventKind kind;
  std::uint64_t arg;
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

class EventQueue {
 public:
  // Virtual milliseconds since the run started.
  std::int64_t now() const { return now_; }

  void At(std::int64_t at, EventKind kind, std::uint64_t arg = 0) {
    events_.push(Event{at, seq_++, kind, arg});
  }

  bool empty() const { return events_.empty(); }
  // REQUIRES: !empty().
  const Event& next() const { return events_.top(); }
  // Removes the next event and moves the clock to its time.
  // REQUIRES: !empty().
  Event Pop() {
    const Event e = events_.top();
    events_.pop();
    now_ = e.at;
    return e;
  }
  // A run with an end time ends at it, events left or not.
  void AdvanceTo(std::int64_t at) { now_ = at; }

 private:
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
  std::int64_t now_ = 0;
};

}  // namespace devshare::sim::internal

#endif  // DEVSHARE_SIM_SRC_EVENT_QUEUE_HPP_
