#include "kube_scheduler.hpp"

#include <algorithm>
#include <utility>

#include "report.hpp"

namespace devshare::sim::internal {

KubeScheduler::KubeScheduler(const Scenario& scenario, const std::vector<NodeSpec>& nodes,
                             EventQueue& events, ApiServer& api, Replicas& replicas,
                             Listener& listener)
    : scenario_(scenario),
      nodes_(nodes),
      events_(events),
      api_(api),
      replicas_(replicas),
      listener_(listener),
      pods_(scenario.pods.size()) {
  rooms_.reserve(nodes.size());
  for (const NodeSpec& spec : nodes)
    rooms_.push_back(NodeRoom{spec.cpu_milli, spec.memory_mib, 0, 0});
}

bool KubeScheduler::BindingInFlight(std::size_t pod) const {
  return std::any_of(bindings_.begin(), bindings_.end(),
                     [&](const auto& b) { return b.second.pod == pod; });
}

bool KubeScheduler::Volcano() const {
  return scenario_.engine.registration == engine::RegistrationProtocol::kVolcano;
}

void KubeScheduler::Enqueue(std::size_t pod) {
  Queue(pod, next_queued_++);
  Kick();
}

void KubeScheduler::Queue(std::size_t pod, std::int64_t order) {
  queue_.insert(Queued{-scenario_.pods[pod].priority, order, pod});
}

void KubeScheduler::Kick() {
  if (cycle_kicked_) return;
  cycle_kicked_ = true;
  events_.At(events_.now(), EventKind::kCycle);
}

// ---- the scheduling cycle

// NodeResourcesFit, then the extender's Filter.
void KubeScheduler::Cycle() {
  cycle_kicked_ = false;
  if (cycle_busy_) return;
  if (Volcano()) {
    if (!SessionOpen()) return;
    if (session_left_ == 0 || queue_.empty()) {  // the session ends; the next opens a period later
      in_session_ = false;
      cycle_kicked_ = true;
      events_.At(events_.now() + kSessionPeriodMs, EventKind::kCycle);
      return;
    }
    --session_left_;
  }
  if (queue_.empty()) return;
  const int r = replicas_.Leader();
  if (r < 0) return;  // resumes when a replica starts leading
  const std::size_t index = queue_.begin()->pod;
  queue_.erase(queue_.begin());
  PodState& pod = pods_[index];
  const PodSpec& spec = scenario_.pods[index];
  if (pod.bound || pod.given_up) return Kick();
  ++pod.attempts;
  candidates_.clear();
  for (std::size_t n = 0; n < rooms_.size(); ++n) {
    const NodeRoom& room = rooms_[n];
    const bool cpu = room.cpu_milli == 0 || room.cpu_used + spec.cpu_milli <= room.cpu_milli;
    const bool mem = room.memory_mib == 0 || room.memory_used + spec.memory_mib <= room.memory_mib;
    if (cpu && mem) candidates_.push_back(nodes_[n].name);
  }
  if (candidates_.empty()) {
    Unschedulable(index, "no node has enough CPU and memory",
                  !scenario_.scheduler.retry_unschedulable);
    return Kick();
  }
  if (spec.gpus == 0) {  // no device: kube-scheduler binds it itself
    const std::optional<std::string> preferred =
        replicas_.PreferredNode(r, api_.pod(index), candidates_);
    Assume(index, preferred ? *preferred : candidates_.front());
    api_.BindPod(index, pod.node);
    listener_.Bound(index, pod.node, r);
    replicas_.PodObserved(api_.pod(index));
    return Kick();
  }
  cycle_busy_ = true;
  cycle_pod_ = index;
  cycle_request_ = next_extender_request_++;
  cycle_ready_ = replicas_.Ready(r);
  events_.At(events_.now() + scenario_.scheduler.extender_timeout_ms, EventKind::kCycleTimeout,
             cycle_request_);
  replicas_.Filter(r, cycle_request_, api_.pod(index), candidates_);
}

bool KubeScheduler::SessionOpen() {
  if (in_session_) return true;
  if (!session_barrier_) {
    for (std::size_t node : session_nodes_) replicas_.NodeObserved(node);
    session_nodes_.clear();
    session_barrier_ = replicas_.registration_queued();
  }
  if (replicas_.registration_done() < *session_barrier_)
    return false;  // resumed by the last of those writes
  session_barrier_.reset();
  in_session_ = true;
  session_left_ = queue_.size();
  return true;
}

void KubeScheduler::FilterAnswered(int r, const engine::FilterReply& reply) {
  if (!cycle_busy_ || reply.request != cycle_request_) return;  // timed out: the answer is dropped
  cycle_busy_ = false;
  Kick();
  const std::size_t index = cycle_pod_;
  const bool give_up = !scenario_.scheduler.retry_unschedulable;
  if (!reply.error.empty()) return Unschedulable(index, "extender: " + reply.error, give_up);
  if (reply.nodes.empty()) {
    auto over_quota = [](const NodeFailure& f) {
      return f.reason.find("ResourceQuotaNotFit") != std::string::npos;
    };
    const bool quota =
        std::any_of(reply.failed.begin(), reply.failed.end(), over_quota) ||
        std::any_of(reply.unresolvable.begin(), reply.unresolvable.end(), over_quota);
    return Unschedulable(index, std::string(quota ? kQuotaReason : "no device fits"), give_up);
  }
  if (!cycle_ready_) {
    return listener_.Violation(
        index, "a placement from an engine that had not completed a registration pass");
  }
  listener_.Placed();
  Assume(index, reply.nodes.front());
  bindings_.emplace(reply.request, Binding{index, r});
  replicas_.Bind(r, reply.request, api_.pod(index), pods_[index].node);
}

void KubeScheduler::CycleTimedOut(std::uint64_t request) {
  if (!cycle_busy_ || request != cycle_request_) return;
  cycle_busy_ = false;
  ++extender_timeouts_;
  Unschedulable(cycle_pod_, "extender timed out", !scenario_.scheduler.retry_unschedulable);
  Kick();
}

void KubeScheduler::BindAnswered(const engine::BindReply& reply) {
  auto it = bindings_.find(reply.request);
  if (it == bindings_.end()) return;
  const std::size_t index = it->second.pod;
  bindings_.erase(it);
  PodState& pod = pods_[index];
  if (reply.error.empty() || pod.bound || pod.deleted) return;
  // kube-scheduler retries a failed bind with backoff.
  Unassume(index);
  pod.reason = "bind failed";
  Requeue(index);
}

void KubeScheduler::Unschedulable(std::size_t index, std::string reason, bool give_up) {
  PodState& pod = pods_[index];
  pod.reason = std::move(reason);
  Unassume(index);
  if (!give_up) return Requeue(index);
  pod.given_up = true;
  listener_.GaveUp(index);
}

void KubeScheduler::Requeue(std::size_t index) {
  const SchedulerModel& s = scenario_.scheduler;
  const int doublings = std::min(pods_[index].attempts - 1, 20);
  const std::int64_t delay =
      std::min(s.max_backoff_ms, s.initial_backoff_ms << std::max(doublings, 0));
  events_.At(events_.now() + delay, EventKind::kRequeue, index);
}

// ---- kube-scheduler's cache of CPU and memory

void KubeScheduler::Assume(std::size_t index, const std::string& node) {
  NodeRoom& room = rooms_[api_.NodeIndex(node)];
  room.cpu_used += scenario_.pods[index].cpu_milli;
  room.memory_used += scenario_.pods[index].memory_mib;
  pods_[index].node = node;
}

void KubeScheduler::Unassume(std::size_t index) {
  PodState& pod = pods_[index];
  if (pod.node.empty() || pod.bound) return;
  NodeRoom& room = rooms_[api_.NodeIndex(pod.node)];
  room.cpu_used -= scenario_.pods[index].cpu_milli;
  room.memory_used -= scenario_.pods[index].memory_mib;
  pod.node.clear();
}

bool KubeScheduler::Bound(std::size_t index, const std::string& node) {
  PodState& pod = pods_[index];
  if (pod.bound) return false;
  if (pod.node != node) {  // bound where the scheduler did not assume it (a late Binding)
    Unassume(index);
    Assume(index, node);
  }
  pod.bound = pod.running = true;
  pod.bound_at = events_.now();
  pod.reason.clear();
  return true;
}

void KubeScheduler::Deleted(std::size_t index) {
  PodState& pod = pods_[index];
  pod.deleted = pod.given_up = true;
  pod.reason = "deleted";
  Unassume(index);
}

bool KubeScheduler::Depart(std::size_t index) {
  PodState& pod = pods_[index];
  if (!pod.running) return false;
  pod.running = false;
  NodeRoom& room = rooms_[api_.NodeIndex(pod.node)];
  room.cpu_used -= scenario_.pods[index].cpu_milli;
  room.memory_used -= scenario_.pods[index].memory_mib;
  return true;
}

// ---- events from the rest of the cluster

void KubeScheduler::NodeChanged(std::size_t node) {
  if (Volcano()) {
    session_nodes_.insert(node);
    return;
  }
  replicas_.NodeObserved(node);
}

void KubeScheduler::RegistrationWritten() {
  if (session_barrier_ && replicas_.registration_done() >= *session_barrier_) Kick();
}

void KubeScheduler::ReplicaCrashed(int r) {
  if (cycle_busy_) {
    cycle_busy_ = false;
    Unassume(cycle_pod_);
    Queue(cycle_pod_, --first_queued_);  // at the head of its priority
  }
  for (auto it = bindings_.begin(); it != bindings_.end();) {
    if (it->second.replica == r) {
      if (!pods_[it->second.pod].bound) {
        Unassume(it->second.pod);
        Queue(it->second.pod, next_queued_++);
      }
      it = bindings_.erase(it);
    } else {
      ++it;
    }
  }
  Kick();
}

}  // namespace devshare::sim::internal
