#include "devshare/sim/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <queue>
#include <random>
#include <set>
#include <tuple>
#include <unordered_map>

#include "devshare/annotations.hpp"
#include "devshare/node_codec.hpp"
#include "devshare/nodelock.hpp"

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
      return Status::Internal(fmt::format(
          "device {} is over capacity ({}/{} slots, {}/{} MiB, {}/{} cores)", d.device.id,
          d.usage.used, d.device.count, d.usage.usedmem, d.device.devmem, d.usage.usedcores,
          d.device.devcore));
    }
  }
  return Status();
}

namespace {

using namespace devshare::engine;  // NOLINT: the engine's commands are the vocabulary here

constexpr std::int32_t kSlotsPerGpu = 100;  // slots never bind before memory and cores
constexpr std::string_view kNamespace = "sim";
constexpr std::string_view kLeaseName = "devshare-scheduler";
constexpr std::string_view kLeaseNamespace = "kube-system";
constexpr std::int64_t kSessionPeriodMs = 1000;  // Volcano's schedule period

std::vector<Device> MakeDevices(const NodeSpec& spec) {
  std::vector<Device> devices;
  for (std::int32_t g = 0; g < spec.gpus; ++g) {
    Device d;
    d.id = fmt::format("{}-gpu{}", spec.name, g);
    d.index = static_cast<std::uint32_t>(g);
    d.count = kSlotsPerGpu;
    d.devmem = spec.gpu_memory_mib;
    d.devcore = 100;
    d.type = spec.model;
    d.mode = "hami-core";
    d.health = true;
    devices.push_back(std::move(d));
  }
  return devices;
}

std::string GpuAllocatable(const NodeSpec& spec) { return std::to_string(spec.gpus * kSlotsPerGpu); }

Pod MakePod(const PodSpec& spec, std::size_t index) {
  Pod pod;
  pod.name = spec.name;
  pod.pod_namespace = std::string(kNamespace);
  pod.uid = fmt::format("uid-{}", index);
  pod.phase = "Pending";
  Container c;
  c.name = "main";
  if (spec.gpus > 0) {
    const bool fraction = spec.gpus == 1 && spec.gpu_milli > 0 && spec.gpu_milli < 1000;
    const std::int32_t share = fraction ? std::max(1, spec.gpu_milli / 10) : 100;
    c.limits.Set("nvidia.com/gpu", std::to_string(spec.gpus));
    c.limits.Set("nvidia.com/gpucores", std::to_string(share));
    c.limits.Set("nvidia.com/gpumem-percentage", std::to_string(share));
  }
  pod.containers.push_back(std::move(c));
  if (!spec.gpu_spec.empty()) {
    std::string types = spec.gpu_spec;
    std::replace(types.begin(), types.end(), '|', ',');
    pod.annotations.Set(keys::kUseGpuType, types);
  }
  pod.cpu_milli = spec.cpu_milli;
  pod.memory_bytes = spec.memory_mib * 1024 * 1024;
  return pod;
}

double GpusOf(const PodSpec& spec) {
  return spec.gpus == 1 && spec.gpu_milli > 0 ? spec.gpu_milli / 1000.0 : spec.gpus;
}

// The engine's options, with the scenario's own request mix as the workload
// fgd expects when none is given: one class per distinct (gpus, gpu_milli,
// CPU, memory) of the scenario's GPU pods, weighted by its count.
engine::EngineOptions WithWorkload(const Scenario& scenario) {
  engine::EngineOptions options = scenario.engine;
  if (!options.filter.workload.empty()) return options;
  using Shape = std::tuple<std::int32_t, std::int32_t, std::int64_t, std::int64_t>;
  std::map<Shape, double> mix;  // (gpus, milli, cpu, memory) -> count
  for (const PodSpec& p : scenario.pods) {
    if (p.gpus == 0) continue;
    const bool fraction = p.gpus == 1 && p.gpu_milli > 0 && p.gpu_milli < 1000;
    mix[{fraction ? 0 : p.gpus, fraction ? p.gpu_milli : 0, p.cpu_milli, p.memory_mib}] += 1;
  }
  for (const auto& [shape, count] : mix) {
    const auto& [gpus, milli, cpu, memory] = shape;
    options.filter.workload.push_back(WorkloadClass{count, gpus, milli, cpu, memory});
  }
  return options;
}

// Percentile p (0..100) of sorted values, nearest rank.
std::int64_t Percentile(const std::vector<std::int64_t>& sorted, std::size_t p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, sorted.size() * p / 100)];
}

class Simulation {
 public:
  Simulation(const Scenario& scenario, std::uint64_t seed, const Progress& progress)
      : scenario_(scenario),
        progress_(progress),
        rng_(seed),
        seed_(seed),
        workload_options_(WithWorkload(scenario)),
        register_key_(scenario.engine.config.vendors.empty()
                          ? std::string("hami.io/node-nvidia-register")
                          : scenario.engine.config.vendors.front().register_annotation),
        handshake_key_(scenario.engine.registration == RegistrationProtocol::kVolcano
                           ? std::string(keys::kVolcanoHandshake)
                       : scenario.engine.config.vendors.empty()
                           ? std::string("hami.io/node-handshake")
                           : scenario.engine.config.vendors.front().handshake_annotation),
        pods_(scenario.pods.size()) {}

  Result<Report> Run() {
    const std::int64_t end = scenario_.end_ms;
    progress_total_ = end > 0 ? static_cast<std::uint64_t>(end / 1000) : scenario_.pods.size();
    progress_step_ = std::max<std::uint64_t>(1, progress_total_ / 100);
    SetUpNodes();
    SetUpReplicas();
    for (std::size_t i = 0; i < scenario_.faults.size(); ++i) At(scenario_.faults[i].at_ms, Ev::kFault, i);
    for (std::size_t i = 0; i < scenario_.pods.size(); ++i) At(scenario_.pods[i].arrive_ms, Ev::kArrive, i);
    while (!events_.empty() && !violation_) {
      const Event e = events_.top();
      if (end > 0 && e.at > end) break;
      events_.pop();
      now_ = e.at;
      Fire(e);
      if (end == 0 && handled_ == scenario_.pods.size()) break;
      if (end > 0 && progress_ && static_cast<std::uint64_t>(now_ / 1000) >= progress_next_) {
        progress_next_ = static_cast<std::uint64_t>(now_ / 1000) + progress_step_;
        progress_(std::min<std::uint64_t>(now_ / 1000, progress_total_), progress_total_);
      }
    }
    if (violation_) return *violation_;
    if (end > 0) {
      now_ = end;
      if (progress_) progress_(progress_total_, progress_total_);
    }
    return Finish();
  }

 private:
  enum class Ev : std::uint8_t {
    kArrive, kRequestStart, kRequestDone, kWake, kCycle, kCycleTimeout, kRequeue,
    kAllocate, kDepart, kHeartbeat, kFault, kFaultEnd, kElect,
  };
  struct Event {
    std::int64_t at;
    std::uint64_t seq;
    Ev kind;
    std::uint64_t arg;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  // API requests. Plugins and kubelets write through clients of their own,
  // which their rare writes never throttle.
  enum class Verb : std::uint8_t { kPatchNode, kPatchPod, kBinding, kPluginNode, kPluginPod, kKubeletNode, kLease };
  static constexpr std::string_view kVerbNames[] = {"patch-node",        "patch-pod",        "binding",
                                                    "plugin-patch-node", "plugin-patch-pod", "kubelet-patch-node",
                                                    "lease"};
  struct NodeWrite {
    std::size_t node;
    std::vector<AnnotationWrite> writes;
    std::optional<std::string> gpu_allocatable;
  };
  struct PodWrite {
    std::size_t pod;
    StringMap annotations;
  };
  struct LeaseWrite {
    ElectionDecision decision;
  };
  struct Request {
    Verb verb;
    int replica;  // whose engine (or elector) hears the outcome; -1: nobody waits
    std::variant<PatchNode, PatchPod, PostBinding, NodeWrite, PodWrite, LeaseWrite> body;
  };

  struct NodeState {
    NodeSpec spec;
    Node object;
    std::uint64_t resource_version = 1;
    std::vector<Device> devices;
    std::string encoded;  // the plugin's view of its devices
    std::int64_t cpu_used = 0, memory_used = 0;
    bool plugin_up = true;
    std::vector<std::size_t> waiting_allocate;  // pods whose Allocate waits for the plugin
  };
  struct PodState {
    Pod object;
    bool arrived = false, bound = false, running = false, given_up = false;
    std::string node;  // assumed (after Filter) or bound; empty: none
    int attempts = 0;
    std::string reason;  // why it is not bound, the last time it was tried
    std::int64_t bound_at = 0;
  };
  struct Replica {
    std::string host;
    std::unique_ptr<Engine> engine;
    bool alive = true;
    Elector elector;
    ElectionConfig election;
    double tokens = 0;
    std::int64_t refilled_at = 0;
    std::optional<std::int64_t> wake_at;
    Counters retired;  // counters of an engine lost in a crash
    // Registration writes go one at a time, as HAMi's registration loop
    // sends them; a newer write for a node replaces its queued one.
    std::deque<std::string> registration_order;
    std::unordered_map<std::string, PatchNode> registration_queued;
    bool registration_busy = false;
  };
  struct Binding {
    std::size_t pod;
    int replica;
  };

  // ---- events

  void At(std::int64_t at, Ev kind, std::uint64_t arg = 0) { events_.push(Event{at, seq_++, kind, arg}); }

  void Fire(const Event& e) {
    switch (e.kind) {
      case Ev::kArrive: return Arrive(e.arg);
      case Ev::kRequestStart: return ServerReceives(e.arg);
      case Ev::kRequestDone: return Complete(e.arg);
      case Ev::kWake: return Wake(static_cast<int>(e.arg));
      case Ev::kCycle:
        cycle_kicked_ = false;
        return StartCycle();
      case Ev::kCycleTimeout: return CycleTimedOut(e.arg);
      case Ev::kRequeue:
        queue_.push_back(e.arg);
        return Kick();
      case Ev::kAllocate: return Allocate(e.arg);
      case Ev::kDepart: return Depart(e.arg);
      case Ev::kHeartbeat: return Heartbeat(e.arg);
      case Ev::kFault: return StartFault(scenario_.faults[e.arg]);
      case Ev::kFaultEnd: return EndFault(scenario_.faults[e.arg]);
      case Ev::kElect: return Elect(static_cast<int>(e.arg));
    }
  }

  // ---- set-up

  void SetUpNodes() {
    std::vector<const NodeSpec*> specs;
    for (const NodeSpec& spec : scenario_.nodes) specs.push_back(&spec);
    std::sort(specs.begin(), specs.end(), [](const NodeSpec* a, const NodeSpec* b) { return a->name < b->name; });
    nodes_.reserve(specs.size());
    std::uniform_int_distribution<std::int64_t> phase(0, std::max<std::int64_t>(scenario_.plugins.heartbeat_ms - 1, 0));
    for (const NodeSpec* spec : specs) {
      NodeState n;
      n.spec = *spec;
      n.devices = MakeDevices(*spec);
      n.encoded = EncodeNodeDevices(n.devices, RegisterFormat::kJson);
      n.object.name = spec->name;
      n.object.resource_version = "1";
      n.object.annotations.Set(register_key_, n.encoded);
      n.object.allocatable.Set("nvidia.com/gpu", GpuAllocatable(*spec));
      if (spec->cpu_milli > 0) n.object.allocatable.Set("cpu", fmt::format("{}m", spec->cpu_milli));
      if (spec->memory_mib > 0) n.object.allocatable.Set("memory", fmt::format("{}Mi", spec->memory_mib));
      truth_.AddNode(n.object);
      report_.gpu_capacity += spec->gpus;
      node_index_.emplace(spec->name, nodes_.size());
      nodes_.push_back(std::move(n));
      if (scenario_.plugins.mode == PluginModel::Mode::kLegacy) {
        At(phase(rng_), Ev::kHeartbeat, nodes_.size() - 1);
      }
    }
  }

  void SetUpReplicas() {
    const auto count = static_cast<std::size_t>(std::max(1, scenario_.scheduler.replicas));
    replicas_.resize(count);
    for (std::size_t r = 0; r < count; ++r) {
      Replica& replica = replicas_[r];
      replica.host = fmt::format("scheduler-{}", r);
      replica.election.identity = fmt::format("{}_{:016x}", replica.host, rng_());
      replica.tokens = scenario_.api.burst;
      StartEngine(static_cast<int>(r));
      if (count > 1) At(static_cast<std::int64_t>(r) * 10, Ev::kElect, r);
    }
  }

  // A replica's engine starts: it lists the cluster (nodes, pods, lease).
  void StartEngine(int r) {
    Replica& replica = replicas_[static_cast<std::size_t>(r)];
    EngineOptions options = workload_options_;
    options.seed = seed_ + static_cast<std::uint64_t>(r);
    if (replicas_.size() > 1) {
      options.leadership = Leadership::kFollowLease;
      options.hostname = replica.host;
    }
    replica.engine = std::make_unique<Engine>(std::move(options));
    replica.alive = true;
    replica.wake_at.reset();
    std::vector<Command> out;
    for (const NodeState& n : nodes_) replica.engine->NodeObserved(n.object, now_, out);
    for (const PodState& p : pods_) {
      if (p.arrived) replica.engine->PodObserved(p.object);
    }
    if (replicas_.size() > 1) replica.engine->LeaseObserved(lease_, now_, out);
    replica.engine->Tick(now_, out);
    Dispatch(r, std::move(out));
  }

  // ---- the engines

  void Dispatch(int r, std::vector<Command> commands) {
    for (Command& command : commands) {
      std::visit([&](auto& c) { Handle(r, c); }, command);
    }
    while (!replaced_.empty()) {
      const std::uint64_t id = replaced_.back();
      replaced_.pop_back();
      Tell(r, id, false);
    }
    Rearm(r);
  }

  void Rearm(int r) {
    Replica& replica = replicas_[static_cast<std::size_t>(r)];
    if (!replica.alive) return;
    const std::optional<std::int64_t> wake = replica.engine->NextWakeMs();
    if (!wake || (replica.wake_at && *replica.wake_at <= *wake)) return;
    replica.wake_at = std::max(*wake, now_);
    At(*replica.wake_at, Ev::kWake, static_cast<std::uint64_t>(r));
  }

  void Wake(int r) {
    Replica& replica = replicas_[static_cast<std::size_t>(r)];
    if (!replica.alive || !replica.wake_at || *replica.wake_at != now_) return;  // superseded
    replica.wake_at.reset();
    std::vector<Command> out;
    replica.engine->Tick(now_, out);
    Dispatch(r, std::move(out));
  }

  void Handle(int r, PatchNode& c) {
    const bool handshake = std::any_of(c.writes.begin(), c.writes.end(),
                                       [&](const AnnotationWrite& w) { return w.key == handshake_key_; });
    if (handshake && replicas_.size() > 1 &&
        (!lease_ || lease_->holder != replicas_[static_cast<std::size_t>(r)].election.identity)) {
      ++report_.duplicate_registration_writes;
    }
    if (!c.registration) return Submit(Request{Verb::kPatchNode, r, std::move(c)});
    Replica& replica = replicas_[static_cast<std::size_t>(r)];
    auto [queued, added] = replica.registration_queued.try_emplace(c.node);
    ++registration_queued_;
    if (added) {
      replica.registration_order.push_back(c.node);
    } else {
      ++registration_done_;  // merged into the newer write
      replaced_.push_back(queued->second.id);  // told to the engine as failed once this dispatch is done
    }
    queued->second = std::move(c);
    SendRegistration(r);
  }

  void SendRegistration(int r) {
    Replica& replica = replicas_[static_cast<std::size_t>(r)];
    if (replica.registration_busy || replica.registration_order.empty()) return;
    auto queued = replica.registration_queued.find(replica.registration_order.front());
    replica.registration_order.pop_front();
    PatchNode next = std::move(queued->second);
    replica.registration_queued.erase(queued);
    replica.registration_busy = true;
    Submit(Request{Verb::kPatchNode, r, std::move(next)});
  }
  void Handle(int r, PatchPod& c) { Submit(Request{Verb::kPatchPod, r, std::move(c)}); }
  void Handle(int r, PostBinding& c) { Submit(Request{Verb::kBinding, r, std::move(c)}); }
  void Handle(int r, FilterReply& reply) { FilterAnswered(r, reply); }
  void Handle(int /*r*/, BindReply& reply) { BindAnswered(reply); }

  // ---- the API server

  void Submit(Request request) {
    ++report_.api_calls[std::string(kVerbNames[static_cast<std::size_t>(request.verb)])];
    const std::uint64_t id = next_request_++;
    const std::int64_t start = Throttled(request) ? TokenAt(request.replica, now_) : now_;
    requests_.emplace(id, std::move(request));
    At(start, Ev::kRequestStart, id);
  }

  static bool Throttled(const Request& request) {
    return request.verb == Verb::kPatchNode || request.verb == Verb::kPatchPod || request.verb == Verb::kBinding;
  }

  // When the replica's client may send a request it has at `from`: client-go's
  // token bucket, first come first served.
  std::int64_t TokenAt(int r, std::int64_t from) {
    Replica& replica = replicas_[static_cast<std::size_t>(r)];
    const double rate = scenario_.api.qps / 1000.0;  // tokens per ms
    if (from > replica.refilled_at) {
      replica.tokens = std::min<double>(scenario_.api.burst,
                                        replica.tokens + static_cast<double>(from - replica.refilled_at) * rate);
      replica.refilled_at = from;
    }
    const std::int64_t base = std::max(from, replica.refilled_at);
    std::int64_t start = base;
    if (replica.tokens < 1) {
      start = base + static_cast<std::int64_t>(std::ceil((1 - replica.tokens) / rate));
      report_.throttled_ms += start - from;
    }
    replica.tokens -= 1;  // a debt is repaid by the refill before the next request
    return start;
  }

  void ServerReceives(std::uint64_t id) {
    Request& request = requests_.at(id);
    if (inflight_ >= scenario_.api.max_inflight) {
      ++report_.rejected_429;
      const std::int64_t retry = now_ + scenario_.api.retry_after_ms;
      At(Throttled(request) ? TokenAt(request.replica, retry) : retry, Ev::kRequestStart, id);
      return;
    }
    ++inflight_;
    std::uniform_int_distribution<std::int64_t> jitter(0, std::max<std::int64_t>(scenario_.api.jitter_ms, 0));
    At(now_ + scenario_.api.latency_ms + jitter(rng_), Ev::kRequestDone, id);
  }

  void Complete(std::uint64_t id) {
    --inflight_;
    auto it = requests_.find(id);
    Request request = std::move(it->second);
    requests_.erase(it);
    std::visit([&](auto& body) { Apply(request.replica, body); }, request.body);
  }

  // The outcome of an engine's request, told to it if it is still alive.
  void Tell(int r, std::uint64_t id, bool succeeded) {
    Replica& replica = replicas_[static_cast<std::size_t>(r)];
    if (!replica.alive) return;
    std::vector<Command> out;
    replica.engine->ApiResult(id, succeeded, now_, out);
    Dispatch(r, std::move(out));
  }

  void Apply(int r, PatchNode& c) {
    auto it = node_index_.find(c.node);
    bool ok = it != node_index_.end();
    if (ok && !Holds(nodes_[it->second].object, c.preconditions)) {
      ++report_.conflicts_409;
      ok = false;
    }
    if (ok) WriteNode(it->second, c.writes, std::nullopt);
    Tell(r, c.id, ok);
    if (ok) NodeChanged(it->second);
    if (c.registration) {
      ++registration_done_;
      if (session_barrier_ && registration_done_ >= *session_barrier_) Kick();
      replicas_[static_cast<std::size_t>(r)].registration_busy = false;
      if (replicas_[static_cast<std::size_t>(r)].alive) SendRegistration(r);
    }
  }

  void Apply(int r, PatchPod& c) {
    PodState* pod = FindPod(c.name);
    if (pod != nullptr) {
      for (const auto& [k, v] : c.annotations.entries()) pod->object.annotations.Set(k, v);
    }
    Tell(r, c.id, pod != nullptr);
    if (pod != nullptr) PodChanged(*pod);
  }

  void Apply(int r, PostBinding& c) {
    PodState* pod = FindPod(c.name);
    const bool ok = pod != nullptr && pod->object.node_name.empty() && node_index_.count(c.node) != 0;
    if (pod != nullptr && !ok) ++report_.conflicts_409;  // already bound: the API server refuses
    if (ok) {
      for (const auto& [k, v] : c.annotations.entries()) pod->object.annotations.Set(k, v);
      pod->object.node_name = c.node;
      Bound(*pod, c.node, r);
    }
    Tell(r, c.id, ok);
    if (ok) {
      PodChanged(*pod);
      At(now_ + scenario_.api.allocate_ms, Ev::kAllocate, PodIndex(*pod));
    }
  }

  void Apply(int /*r*/, NodeWrite& w) {
    WriteNode(w.node, w.writes, w.gpu_allocatable);
    NodeChanged(w.node);
  }

  void Apply(int /*r*/, PodWrite& w) {
    for (const auto& [k, v] : w.annotations.entries()) pods_[w.pod].object.annotations.Set(k, v);
    PodChanged(pods_[w.pod]);
  }

  void Apply(int r, LeaseWrite& w) {
    const ElectionDecision& d = w.decision;
    const bool ok = d.action == ElectionAction::kCreate
                        ? !lease_.has_value()
                        : lease_.has_value() && lease_->resource_version == d.lease.resource_version;
    if (ok) {
      lease_ = d.lease;
      lease_->resource_version = std::to_string(++lease_version_);
    } else {
      ++report_.conflicts_409;
    }
    Replica& replica = replicas_[static_cast<std::size_t>(r)];
    if (replica.alive && ElectionWriteResult(replica.elector, d, ok, now_) == LeaderEvent::kStartedLeading) {
      Kick();
    }
    if (!ok) return;
    for (std::size_t i = 0; i < replicas_.size(); ++i) {
      if (!replicas_[i].alive) continue;
      std::vector<Command> out;
      replicas_[i].engine->LeaseObserved(lease_, now_, out);
      Dispatch(static_cast<int>(i), std::move(out));
    }
  }

  // The adapter's read-check-write of a precondition (GET, then PATCH with
  // its resourceVersion): atomic here, as the window between them is.
  static bool Holds(const Node& node, const std::vector<AnnotationWrite>& preconditions) {
    return std::all_of(preconditions.begin(), preconditions.end(), [&](const AnnotationWrite& p) {
      const std::string* value = node.annotations.Find(p.key);
      return p.value ? value != nullptr && *value == *p.value : value == nullptr;
    });
  }

  void WriteNode(std::size_t index, const std::vector<AnnotationWrite>& writes,
                 const std::optional<std::string>& gpu_allocatable) {
    NodeState& n = nodes_[index];
    bool devices = gpu_allocatable.has_value();
    for (const AnnotationWrite& w : writes) {
      if (w.value) {
        n.object.annotations.Set(w.key, *w.value);
      } else {
        n.object.annotations.Erase(w.key);
      }
      devices = devices || w.key == register_key_;
    }
    if (gpu_allocatable) n.object.allocatable.Set("nvidia.com/gpu", *gpu_allocatable);
    n.object.resource_version = std::to_string(++n.resource_version);
    if (devices) truth_.AddNode(n.object);
  }

  // Watch events reach every live replica (under Volcano's protocol, at the
  // next session).
  void NodeChanged(std::size_t index) {
    if (Volcano()) {
      session_nodes_.insert(index);
      return;
    }
    DeliverNode(index);
  }

  void DeliverNode(std::size_t index) {
    for (std::size_t r = 0; r < replicas_.size(); ++r) {
      if (!replicas_[r].alive) continue;
      std::vector<Command> out;
      replicas_[r].engine->NodeObserved(nodes_[index].object, now_, out);
      Dispatch(static_cast<int>(r), std::move(out));
    }
  }

  void PodChanged(const PodState& pod) {
    for (Replica& replica : replicas_) {
      if (replica.alive) replica.engine->PodObserved(pod.object);
    }
  }

  // ---- the leader election of the kube-schedulers

  void Elect(int r) {
    Replica& replica = replicas_[static_cast<std::size_t>(r)];
    if (!replica.alive) return;
    ElectionDecision d = TryAcquireOrRenew(replica.elector, lease_, replica.election, kLeaseName,
                                           kLeaseNamespace, now_);
    if (d.action == ElectionAction::kCreate || d.action == ElectionAction::kAcquire ||
        d.action == ElectionAction::kRenew) {
      Submit(Request{Verb::kLease, r, LeaseWrite{std::move(d)}});
    }
    At(now_ + replica.election.retry_period_ms, Ev::kElect, static_cast<std::uint64_t>(r));
  }

  // The replica whose kube-scheduler schedules, or -1.
  int Leader() const {
    for (std::size_t r = 0; r < replicas_.size(); ++r) {
      const Replica& replica = replicas_[r];
      if (replica.alive && (replicas_.size() == 1 || replica.elector.leading)) return static_cast<int>(r);
    }
    return -1;
  }

  // ---- kube-scheduler

  void Arrive(std::size_t index) {
    PodState& pod = pods_[index];
    pod.object = MakePod(scenario_.pods[index], index);
    pod.arrived = true;
    pod_by_name_.emplace(pod.object.name, index);
    ++arrived_;
    arrived_gpus_ += GpusOf(scenario_.pods[index]);
    // The curve's next points: the cluster before this pod is placed.
    while (report_.gpu_capacity > 0 &&
           arrived_gpus_ >= report_.gpu_capacity * kCurveStepPercent * next_curve_point_ / 100.0) {
      std::optional<ClusterFragmentation> f = Fragmentation();
      if (!f) return;
      report_.fragmentation_curve.push_back(FragmentationSample{
          kCurveStepPercent * next_curve_point_, 100.0 * held_ / report_.gpu_capacity, f->free_gpus,
          f->fragmented_gpus});
      ++next_curve_point_;
    }
    PodChanged(pod);
    queue_.push_back(index);
    Kick();
  }

  void Kick() {
    if (cycle_kicked_) return;
    cycle_kicked_ = true;
    At(now_, Ev::kCycle);
  }

  // One scheduling cycle: NodeResourcesFit, then the extender's Filter.
  void StartCycle() {
    if (cycle_busy_) return;
    if (Volcano()) {
      if (!SessionOpen()) return;
      if (session_left_ == 0 || queue_.empty()) {  // the session ends; the next opens a period later
        in_session_ = false;
        cycle_kicked_ = true;
        At(now_ + kSessionPeriodMs, Ev::kCycle);
        return;
      }
      --session_left_;
    }
    if (queue_.empty()) return;
    const int r = Leader();
    if (r < 0) return;  // resumes when a replica starts leading
    const std::size_t index = queue_.front();
    queue_.pop_front();
    PodState& pod = pods_[index];
    const PodSpec& spec = scenario_.pods[index];
    if (pod.bound || pod.given_up) return Kick();
    ++pod.attempts;
    candidates_.clear();
    for (const NodeState& n : nodes_) {
      const bool cpu = n.spec.cpu_milli == 0 || n.cpu_used + spec.cpu_milli <= n.spec.cpu_milli;
      const bool mem = n.spec.memory_mib == 0 || n.memory_used + spec.memory_mib <= n.spec.memory_mib;
      if (cpu && mem) candidates_.push_back(n.spec.name);
    }
    if (candidates_.empty()) {
      Unschedulable(index, "no node has enough CPU and memory", !scenario_.scheduler.retry_unschedulable);
      return Kick();
    }
    if (spec.gpus == 0) {  // no device: kube-scheduler binds it itself
      Assume(index, CpuOnlyNode(r, pod));
      pod.object.node_name = pod.node;
      Bound(pod, pod.node, r);
      PodChanged(pod);
      return Kick();
    }
    cycle_busy_ = true;
    cycle_pod_ = index;
    cycle_request_ = next_extender_request_++;
    Replica& replica = replicas_[static_cast<std::size_t>(r)];
    cycle_ready_ = replica.engine->Ready(now_);
    At(now_ + scenario_.scheduler.extender_timeout_ms, Ev::kCycleTimeout, cycle_request_);
    std::vector<Command> out;
    replica.engine->Filter(cycle_request_, pod.object, candidates_, now_, out);
    Dispatch(r, std::move(out));
  }

  bool Volcano() const { return scenario_.engine.registration == RegistrationProtocol::kVolcano; }

  // Volcano handles node events, and writes their handshakes, in the
  // session that then schedules: a session takes the node events since the
  // last one, opens once the handshake writes they caused are done, and
  // tries each pod queued when it opened; sessions start a second apart.
  // kube-scheduler with an extender has no such coupling.
  bool SessionOpen() {
    if (in_session_) return true;
    if (!session_barrier_) {
      for (std::size_t index : session_nodes_) DeliverNode(index);
      session_nodes_.clear();
      session_barrier_ = registration_queued_;
    }
    if (registration_done_ < *session_barrier_) return false;  // resumed by the last of those writes
    session_barrier_.reset();
    in_session_ = true;
    session_left_ = queue_.size();
    return true;
  }

  // The node for a pod without devices: the extender's preference when it
  // names one node (fgd scores such pods), else kube-scheduler's first
  // fitting node. Such a Filter writes nothing.
  std::string CpuOnlyNode(int r, const PodState& pod) {
    std::vector<Command> out;
    replicas_[static_cast<std::size_t>(r)].engine->Filter(0, pod.object, candidates_, now_, out);
    for (const Command& command : out) {
      const auto* reply = std::get_if<FilterReply>(&command);
      if (reply != nullptr && reply->error.empty() && reply->nodes.size() == 1) return reply->nodes.front();
    }
    return candidates_.front();
  }

  void FilterAnswered(int r, const FilterReply& reply) {
    if (!cycle_busy_ || reply.request != cycle_request_) return;  // timed out: the answer is dropped
    cycle_busy_ = false;
    Kick();
    const std::size_t index = cycle_pod_;
    const bool give_up = !scenario_.scheduler.retry_unschedulable;
    if (!reply.error.empty()) return Unschedulable(index, "extender: " + reply.error, give_up);
    if (reply.nodes.empty()) return Unschedulable(index, "no device fits", give_up);
    if (!cycle_ready_) {
      return Violation(index, "a placement from an engine that had not completed a registration pass");
    }
    if (crashed_at_) {
      report_.unavailable_ms += now_ - *crashed_at_;
      crashed_at_.reset();
    }
    PodState& pod = pods_[index];
    Assume(index, reply.nodes.front());
    bindings_.emplace(reply.request, Binding{index, r});
    std::vector<Command> out;
    replicas_[static_cast<std::size_t>(r)].engine->Bind(reply.request, pod.object.pod_namespace, pod.object.name,
                                                       pod.object.uid, pod.node, now_, out);
    Dispatch(r, std::move(out));
  }

  void CycleTimedOut(std::uint64_t request) {
    if (!cycle_busy_ || request != cycle_request_) return;
    cycle_busy_ = false;
    ++report_.extender_timeouts;
    Unschedulable(cycle_pod_, "extender timed out", !scenario_.scheduler.retry_unschedulable);
    Kick();
  }

  void BindAnswered(const BindReply& reply) {
    auto it = bindings_.find(reply.request);
    if (it == bindings_.end()) return;
    const std::size_t index = it->second.pod;
    bindings_.erase(it);
    PodState& pod = pods_[index];
    if (reply.error.empty() || pod.bound) return;
    // kube-scheduler retries a failed bind with backoff.
    Unassume(index);
    pod.reason = "bind failed";
    Requeue(index);
  }

  void Unschedulable(std::size_t index, std::string reason, bool give_up) {
    PodState& pod = pods_[index];
    pod.reason = std::move(reason);
    Unassume(index);
    if (!give_up) return Requeue(index);
    pod.given_up = true;
    Handled();
  }

  void Requeue(std::size_t index) {
    const SchedulerModel& s = scenario_.scheduler;
    const int doublings = std::min(pods_[index].attempts - 1, 20);
    const std::int64_t delay = std::min(s.max_backoff_ms, s.initial_backoff_ms << std::max(doublings, 0));
    At(now_ + delay, Ev::kRequeue, index);
  }

  void Assume(std::size_t index, const std::string& node) {
    PodState& pod = pods_[index];
    NodeState& n = nodes_[node_index_.at(node)];
    n.cpu_used += scenario_.pods[index].cpu_milli;
    n.memory_used += scenario_.pods[index].memory_mib;
    pod.node = node;
  }

  void Unassume(std::size_t index) {
    PodState& pod = pods_[index];
    if (pod.node.empty() || pod.bound) return;
    NodeState& n = nodes_[node_index_.at(pod.node)];
    n.cpu_used -= scenario_.pods[index].cpu_milli;
    n.memory_used -= scenario_.pods[index].memory_mib;
    pod.node.clear();
  }

  // A Binding landed: the checks of the class comment.
  void Bound(PodState& pod, const std::string& node, int r) {
    const std::size_t index = PodIndex(pod);
    if (pod.bound) return Violation(index, "allocated twice");
    if (pod.node != node) {  // bound where the scheduler did not assume it (a late Binding)
      Unassume(index);
      Assume(index, node);
    }
    pod.bound = pod.running = true;
    pod.bound_at = now_;
    pod.reason.clear();
    ++report_.bound;
    Hold(GpusOf(scenario_.pods[index]));
    if (!pod.given_up) Handled();
    const PodSpec& spec = scenario_.pods[index];
    if (spec.duration_ms > 0) At(now_ + spec.duration_ms, Ev::kDepart, index);
    truth_.AddPod(pod.object);  // devices, CPU and memory
    if (spec.gpus == 0) return;
    Status placement = CheckPlacement(truth_, node, pod.object.uid);
    if (!placement.ok()) return Violation(index, std::string(placement.message()));
    const Replica& replica = replicas_[static_cast<std::size_t>(r)];
    if (!replica.alive) return;
    Result<std::vector<PodUsage>> cached = replica.engine->snapshot().PodUsageOf(pod.object.uid);
    Result<std::vector<PodUsage>> annotated = truth_.PodUsageOf(pod.object.uid);
    if (!cached.ok() || !annotated.ok() || *cached != *annotated) {
      return Violation(index, "the engine's cache disagrees with the pod's annotations");
    }
  }

  // The cluster's fragmentation as its API objects say, for the workload
  // fgd is given (the scenario's own mix by default). An invalid workload
  // ends the run with its error.
  std::optional<ClusterFragmentation> Fragmentation() {
    Result<ClusterFragmentation> f = MeasureFragmentation(truth_, workload_options_.filter.workload);
    if (f.ok()) return std::move(*f);
    if (!violation_) violation_ = f.status();
    return std::nullopt;
  }

  // GPUs held by running pods change by `delta` now: the time integral of
  // the allocation moves forward first.
  void Hold(double delta) {
    held_integral_ += held_ * static_cast<double>(now_ - held_since_);
    held_since_ = now_;
    held_ += delta;
  }

  void Violation(std::size_t index, std::string_view what) {
    if (!violation_) {
      violation_ = Status::Internal(fmt::format("t={} ms, pod {}: {}", now_, pods_[index].object.name, what));
    }
  }

  void Handled() {
    ++handled_;
    if (progress_ && scenario_.end_ms == 0 && (handled_ % progress_step_ == 0 || handled_ == progress_total_)) {
      progress_(handled_, progress_total_);
    }
  }

  void Depart(std::size_t index) {
    PodState& pod = pods_[index];
    if (!pod.running) return;
    pod.running = false;
    Hold(-GpusOf(scenario_.pods[index]));
    NodeState& n = nodes_[node_index_.at(pod.node)];
    n.cpu_used -= scenario_.pods[index].cpu_milli;
    n.memory_used -= scenario_.pods[index].memory_mib;
    truth_.RemovePod(pod.object.uid);
    for (Replica& replica : replicas_) {
      if (replica.alive) replica.engine->PodDeleted(pod.object.uid);
    }
  }

  // ---- kubelets and device plugins

  // The kubelet calls Allocate: the plugin reports success and unlocks.
  void Allocate(std::size_t index) {
    PodState& pod = pods_[index];
    if (!pod.running) return;
    const std::size_t node = node_index_.at(pod.node);
    NodeState& n = nodes_[node];
    if (!n.plugin_up) {
      n.waiting_allocate.push_back(index);
      return;
    }
    StringMap success;
    success.Set(keys::kBindPhase, "success");
    Submit(Request{Verb::kPluginPod, -1, PodWrite{index, std::move(success)}});
    const std::string* lock = n.object.annotations.Find(keys::kNodeLock);
    std::optional<AnnotationWrite> release =
        DecideRelease(lock != nullptr ? std::optional<std::string>(*lock) : std::nullopt,
                      PodRef{pod.object.pod_namespace, pod.object.name}, false);
    if (release) Submit(Request{Verb::kPluginNode, -1, NodeWrite{node, {*release}, std::nullopt}});
  }

  void Heartbeat(std::size_t node) {
    PluginWrites(node);
    At(now_ + scenario_.plugins.heartbeat_ms, Ev::kHeartbeat, node);
  }

  // What the node's plugin writes now: everything (legacy) or the changes.
  void PluginWrites(std::size_t node) {
    NodeState& n = nodes_[node];
    if (!n.plugin_up) return;
    if (scenario_.plugins.mode == PluginModel::Mode::kLegacy) {
      LegacyPluginWrites w = LegacyPluginPass(n.encoded, register_key_, handshake_key_, now_ / 1000,
                                              scenario_.engine.zone_offset_seconds);
      Submit(Request{Verb::kPluginNode, -1,
                     NodeWrite{node, {std::move(w.register_write), std::move(w.handshake_write)}, std::nullopt}});
      return;
    }
    const std::string* on_node = n.object.annotations.Find(register_key_);
    std::optional<AnnotationWrite> w = ChangeOnlyPluginPass(
        on_node != nullptr ? std::optional<std::string>(*on_node) : std::nullopt, n.encoded, register_key_);
    if (w) Submit(Request{Verb::kPluginNode, -1, NodeWrite{node, {std::move(*w)}, std::nullopt}});
  }

  void StartFault(const Fault& f) {
    const std::size_t fault = static_cast<std::size_t>(&f - scenario_.faults.data());
    if (f.duration_ms > 0) At(now_ + f.duration_ms, Ev::kFaultEnd, fault);
    if (f.kind == Fault::Kind::kLeaderCrash) {
      const int r = Leader();
      if (r < 0) return;
      crashed_leader_ = r;
      Crash(r);
      return;
    }
    const std::size_t node = node_index_.at(f.node);
    NodeState& n = nodes_[node];
    switch (f.kind) {
      case Fault::Kind::kPluginHang:
        n.plugin_up = false;
        break;
      case Fault::Kind::kPluginCrash:
        n.plugin_up = false;
        Submit(Request{Verb::kKubeletNode, -1, NodeWrite{node, {}, std::string("0")}});
        break;
      case Fault::Kind::kDeviceUnhealthy:
        SetFirstDeviceHealth(node, false);
        break;
      case Fault::Kind::kLeaderCrash:
        break;
    }
  }

  // The plugin reports its first device (un)healthy.
  void SetFirstDeviceHealth(std::size_t node, bool healthy) {
    NodeState& n = nodes_[node];
    if (!n.devices.empty()) n.devices.front().health = healthy;
    n.encoded = EncodeNodeDevices(n.devices, RegisterFormat::kJson);
    PluginWrites(node);
  }

  void EndFault(const Fault& f) {
    if (f.kind == Fault::Kind::kLeaderCrash) {
      if (crashed_leader_ >= 0) StartEngine(crashed_leader_);  // back as a follower
      if (crashed_leader_ >= 0) At(now_, Ev::kElect, static_cast<std::uint64_t>(crashed_leader_));
      crashed_leader_ = -1;
      return;
    }
    const std::size_t node = node_index_.at(f.node);
    NodeState& n = nodes_[node];
    switch (f.kind) {
      case Fault::Kind::kPluginCrash:
        Submit(Request{Verb::kKubeletNode, -1, NodeWrite{node, {}, GpuAllocatable(n.spec)}});
        [[fallthrough]];
      case Fault::Kind::kPluginHang:
        n.plugin_up = true;
        PluginWrites(node);
        for (std::size_t pod : n.waiting_allocate) At(now_, Ev::kAllocate, pod);
        n.waiting_allocate.clear();
        break;
      case Fault::Kind::kDeviceUnhealthy:
        SetFirstDeviceHealth(node, true);
        break;
      case Fault::Kind::kLeaderCrash:
        break;
    }
  }

  // The replica's process dies: its scheduler's cycle and binds are lost
  // (their pods go back to the queue) and its engine hears nothing more.
  void Crash(int r) {
    Replica& replica = replicas_[static_cast<std::size_t>(r)];
    replica.alive = false;
    replica.elector = Elector{};
    replica.registration_order.clear();
    replica.registration_queued.clear();
    AddCounters(replica.retired, replica.engine->counters());
    crashed_at_ = now_;
    if (cycle_busy_) {
      cycle_busy_ = false;
      Unassume(cycle_pod_);
      queue_.push_front(cycle_pod_);
    }
    for (auto it = bindings_.begin(); it != bindings_.end();) {
      if (it->second.replica == r) {
        if (!pods_[it->second.pod].bound) {
          Unassume(it->second.pod);
          queue_.push_back(it->second.pod);
        }
        it = bindings_.erase(it);
      } else {
        ++it;
      }
    }
    Kick();
  }

  // ---- the report

  // The engine counters the report sums over replicas, into Counters or
  // the Report (the same field names).
  template <typename Sum>
  static void AddCounters(Sum& sum, const Counters& c) {
    sum.filters_refused += c.filters_refused;
    sum.lock_contention += c.lock_contention;
    sum.lock_retries += c.lock_retries;
    sum.binds_failed += c.binds_failed;
    sum.registration_writes += c.registration_writes;
    sum.nodes_dropped += c.nodes_dropped;
  }

  Result<Report> Finish() {
    report_.end_ms = now_;
    report_.pods = arrived_;
    std::vector<std::int64_t> latencies;
    for (std::size_t i = 0; i < pods_.size(); ++i) {
      const PodState& pod = pods_[i];
      if (!pod.arrived) continue;
      const PodSpec& spec = scenario_.pods[i];
      if (pod.bound) {
        latencies.push_back(pod.bound_at - spec.arrive_ms);
        if (pod.running) report_.gpu_allocated += GpusOf(spec);
        continue;
      }
      if (!pod.given_up) latencies.push_back(now_ - spec.arrive_ms);
      ++report_.pending;
      const bool binding = std::any_of(bindings_.begin(), bindings_.end(),
                                       [&](const auto& b) { return b.second.pod == i; });
      ++report_.pending_reasons[!pod.reason.empty() ? pod.reason
                                : binding         ? "binding in progress"
                                                  : "waiting in the scheduling queue"];
    }
    report_.allocation_percent = report_.gpu_capacity > 0 ? 100.0 * report_.gpu_allocated / report_.gpu_capacity : 0;
    std::optional<ClusterFragmentation> fragmentation = Fragmentation();
    if (!fragmentation) return *violation_;
    report_.gpu_free = fragmentation->free_gpus;
    report_.gpu_fragmented = fragmentation->fragmented_gpus;
    report_.fragmentation_percent =
        fragmentation->free_gpus > 0 ? 100.0 * fragmentation->fragmented_gpus / fragmentation->free_gpus : 0;
    Hold(0);
    if (report_.gpu_capacity > 0 && now_ > 0) {
      report_.allocation_mean_percent = 100.0 * held_integral_ / static_cast<double>(now_) / report_.gpu_capacity;
    }
    std::sort(latencies.begin(), latencies.end());
    if (!latencies.empty()) {
      for (std::size_t p = 0; p <= 100; ++p) report_.latency_percentiles.push_back(Percentile(latencies, p));
      report_.latency_p50_ms = report_.latency_percentiles[50];
      report_.latency_p99_ms = report_.latency_percentiles[99];
    }
    if (crashed_at_) report_.unavailable_ms += now_ - *crashed_at_;
    for (const Replica& replica : replicas_) {
      AddCounters(report_, replica.retired);
      if (replica.alive) AddCounters(report_, replica.engine->counters());
    }
    return report_;
  }

  // Pods live in one namespace in the simulation; names are unique.
  PodState* FindPod(const std::string& name) {
    auto it = pod_by_name_.find(name);
    return it == pod_by_name_.end() ? nullptr : &pods_[it->second];
  }
  std::size_t PodIndex(const PodState& pod) const { return static_cast<std::size_t>(&pod - pods_.data()); }

  const Scenario& scenario_;
  const Progress& progress_;
  std::uint64_t progress_total_ = 0, progress_step_ = 1, progress_next_ = 0;
  std::mt19937_64 rng_;
  std::uint64_t seed_;
  EngineOptions workload_options_;
  std::string register_key_, handshake_key_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
  std::int64_t now_ = 0;

  std::vector<NodeState> nodes_;  // by name
  std::unordered_map<std::string, std::size_t> node_index_;
  std::vector<PodState> pods_;    // by the scenario's index
  std::unordered_map<std::string, std::size_t> pod_by_name_;
  ClusterSnapshot truth_;         // the cluster as its API objects say
  std::vector<Replica> replicas_;
  std::optional<LeaseRecord> lease_;
  std::uint64_t lease_version_ = 0;

  std::vector<std::uint64_t> replaced_;  // registration writes replaced by newer ones
  std::uint64_t registration_queued_ = 0, registration_done_ = 0;
  std::optional<std::uint64_t> session_barrier_;
  bool in_session_ = false;
  std::size_t session_left_ = 0;  // pods the open session has still to try
  std::set<std::size_t> session_nodes_;  // nodes changed since the last session (Volcano)
  std::unordered_map<std::uint64_t, Request> requests_;
  std::uint64_t next_request_ = 1;
  std::int32_t inflight_ = 0;

  std::deque<std::size_t> queue_;
  std::vector<std::string> candidates_;
  bool cycle_kicked_ = false, cycle_busy_ = false, cycle_ready_ = false;
  std::size_t cycle_pod_ = 0;
  std::uint64_t cycle_request_ = 0, next_extender_request_ = 1;
  std::unordered_map<std::uint64_t, Binding> bindings_;  // extender request -> pod
  int crashed_leader_ = -1;
  std::optional<std::int64_t> crashed_at_;

  std::size_t arrived_ = 0, handled_ = 0;
  double arrived_gpus_ = 0;  // asked by the arrived pods
  static constexpr double kCurveStepPercent = 10;
  int next_curve_point_ = 1;
  double held_ = 0, held_integral_ = 0;  // GPUs held by running pods; their integral over time (GPU x ms)
  std::int64_t held_since_ = 0;
  Report report_;
  std::optional<Status> violation_;
};

}  // namespace

namespace {

// Rows of a CSV file with a header: column name -> value, per row.
Result<std::vector<std::map<std::string, std::string>>> ReadCsv(std::string_view text,
                                                                 std::string_view what) {
  std::vector<std::map<std::string, std::string>> rows;
  std::vector<std::string> header;
  std::size_t line = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view row = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line;
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    if (row.empty()) continue;
    std::vector<std::string> fields;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = row.find(',', start);
      fields.emplace_back(row.substr(start, comma == std::string_view::npos ? row.npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (header.empty()) {
      header = std::move(fields);
      continue;
    }
    if (fields.size() != header.size()) {
      return Status::Malformed(fmt::format("{}: line {}: {} fields, the header has {}", what, line,
                                           fields.size(), header.size()));
    }
    std::map<std::string, std::string> values;
    for (std::size_t i = 0; i < header.size(); ++i) values[header[i]] = fields[i];
    rows.push_back(std::move(values));
  }
  return rows;
}

Result<std::int64_t> IntField(const std::map<std::string, std::string>& row, const std::string& key,
                              std::string_view what, std::size_t index, std::int64_t fallback) {
  auto it = row.find(key);
  if (it == row.end() || it->second.empty()) return fallback;
  std::optional<std::int64_t> v = QuantityAsInt64(it->second);
  if (!v || *v < 0) {
    return Status::Malformed(fmt::format("{}: row {}: {} is not a non-negative integer: {}", what,
                                         index + 1, key, it->second));
  }
  return *v;
}

// One row of a pod list as a pod (its name, requests and GPU models).
Result<PodSpec> PodRow(const std::map<std::string, std::string>& row, std::size_t i) {
  PodSpec p;
  p.name = row.count("name") ? row.at("name") : fmt::format("row-{}", i + 1);
  Result<std::int64_t> gpus = IntField(row, "num_gpu", "pod list", i, 0);
  Result<std::int64_t> milli = IntField(row, "gpu_milli", "pod list", i, 1000);
  Result<std::int64_t> cpu = IntField(row, "cpu_milli", "pod list", i, 0);
  Result<std::int64_t> mem = IntField(row, "memory_mib", "pod list", i, 0);
  for (const auto* r : {&gpus, &milli, &cpu, &mem}) {
    if (!r->ok()) return r->status();
  }
  if (*gpus > 8 || (*gpus == 1 && (*milli == 0 || *milli > 1000))) {
    return Status::Malformed(fmt::format("pod list: row {}: num_gpu {} with gpu_milli {} cannot be mapped",
                                         i + 1, *gpus, *milli));
  }
  p.gpus = static_cast<std::int32_t>(*gpus);
  p.gpu_milli = p.gpus == 1 ? static_cast<std::int32_t>(*milli) : 1000;
  p.gpu_spec = row.count("gpu_spec") ? row.at("gpu_spec") : "";
  p.cpu_milli = *cpu;
  p.memory_mib = *mem;
  return p;
}

// GPU memory per model; the traces do not give it (V100M16/V100M32 by name;
// the undisclosed G1/G2 assumed 16 GiB and G3 32 GiB). lib/sim/README.md
// states the table. nullopt: a model not in it.
std::optional<std::int32_t> ModelMemory(const std::string& model) {
  static const std::map<std::string, std::int32_t> kMemory = {
      {"V100M16", 16384}, {"V100M32", 32768}, {"P100", 16384}, {"T4", 16384},
      {"A10", 24576},     {"G1", 16384},      {"G2", 16384},   {"G3", 32768}};
  auto it = kMemory.find(model);
  if (it == kMemory.end()) return std::nullopt;
  return it->second;
}

}  // namespace

Result<Scenario> OpenbScenario(std::string_view nodes_csv, std::string_view pods_csv, double demand,
                               std::uint64_t seed, std::int64_t interval_ms) {
  Result<std::vector<std::map<std::string, std::string>>> node_rows = ReadCsv(nodes_csv, "node list");
  if (!node_rows.ok()) return node_rows.status();
  Result<std::vector<std::map<std::string, std::string>>> pod_rows = ReadCsv(pods_csv, "pod list");
  if (!pod_rows.ok()) return pod_rows.status();
  Scenario scenario;
  double capacity = 0;
  for (std::size_t i = 0; i < node_rows->size(); ++i) {
    const auto& row = (*node_rows)[i];
    NodeSpec n;
    n.name = row.count("sn") ? row.at("sn") : "";
    if (n.name.empty()) return Status::Malformed(fmt::format("node list: row {}: no sn", i + 1));
    n.model = row.count("model") ? row.at("model") : "";
    Result<std::int64_t> gpus = IntField(row, "gpu", "node list", i, 0);
    Result<std::int64_t> cpu = IntField(row, "cpu_milli", "node list", i, 0);
    Result<std::int64_t> mem = IntField(row, "memory_mib", "node list", i, 0);
    if (!gpus.ok()) return gpus.status();
    if (!cpu.ok()) return cpu.status();
    if (!mem.ok()) return mem.status();
    const std::optional<std::int32_t> model_memory = ModelMemory(n.model);
    if (*gpus > 0 && !model_memory) {
      return Status::Malformed(fmt::format(
          "node list: row {}: GPU model '{}' has no known memory (V100M16, V100M32, P100, T4, A10, G1, G2, G3)",
          i + 1, n.model));
    }
    n.gpu_memory_mib = model_memory.value_or(0);
    n.gpus = static_cast<std::int32_t>(*gpus);
    n.cpu_milli = *cpu;
    n.memory_mib = *mem;
    capacity += n.gpus;
    scenario.nodes.push_back(std::move(n));
  }
  std::vector<PodSpec> pool;
  for (std::size_t i = 0; i < pod_rows->size(); ++i) {
    const auto& row = (*pod_rows)[i];
    Result<PodSpec> p = PodRow(row, i);
    if (!p.ok()) return p.status();
    pool.push_back(std::move(*p));
  }
  if (pool.empty()) return Status::InvalidArgument("pod list: no pods");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, pool.size() - 1);
  double requested = 0;
  for (std::size_t i = 0; requested < demand * capacity; ++i) {
    PodSpec p = pool[pick(rng)];
    p.name = fmt::format("{}-{}", p.name, i);
    p.arrive_ms = static_cast<std::int64_t>(i) * interval_ms;
    requested += GpusOf(p);
    scenario.pods.push_back(std::move(p));
  }
  return scenario;
}

Result<Scenario> OpenbReplay(std::string_view nodes_csv, std::string_view pods_csv) {
  Result<Scenario> scenario = OpenbScenario(nodes_csv, pods_csv, 0, 0);
  if (!scenario.ok()) return scenario.status();
  scenario->pods.clear();
  Result<std::vector<std::map<std::string, std::string>>> rows = ReadCsv(pods_csv, "pod list");
  if (!rows.ok()) return rows.status();
  std::optional<std::int64_t> first;
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const auto& row = (*rows)[i];
    Result<PodSpec> p = PodRow(row, i);
    if (!p.ok()) return p.status();
    if (row.count("creation_time") == 0 || row.at("creation_time").empty()) {
      return Status::Malformed(fmt::format("pod list: row {}: no creation_time to replay", i + 1));
    }
    Result<std::int64_t> created = IntField(row, "creation_time", "pod list", i, 0);
    Result<std::int64_t> deleted = IntField(row, "deletion_time", "pod list", i, 0);
    if (!created.ok()) return created.status();
    if (!deleted.ok()) return deleted.status();
    if (*deleted != 0 && *deleted < *created) {
      return Status::Malformed(fmt::format("pod list: row {}: deleted ({}) before created ({})", i + 1,
                                           *deleted, *created));
    }
    p->arrive_ms = *created * 1000;
    // A pod deleted the second it was created still runs for a moment.
    p->duration_ms = *deleted != 0 ? std::max<std::int64_t>(1, (*deleted - *created) * 1000) : 0;
    first = first ? std::min(*first, p->arrive_ms) : p->arrive_ms;
    scenario->pods.push_back(std::move(*p));
  }
  for (PodSpec& p : scenario->pods) p.arrive_ms -= first.value_or(0);
  return scenario;
}

Scenario SyntheticScenario(std::uint64_t seed, std::int32_t nodes, double demand) {
  static const char* const kModels[] = {"T4", "V100M16", "V100M32", "A10"};
  Scenario s;
  std::mt19937_64 rng(seed);
  for (std::int32_t n = 0; n < nodes; ++n) {
    const std::string model = kModels[static_cast<std::size_t>(n) % 4];
    s.nodes.push_back(NodeSpec{fmt::format("node-{:04}", n), 8, *ModelMemory(model), model, 96000, 786432});
  }
  // (weight, gpus, milli, cpu_milli, memory_mib): a mix like openb's.
  struct Shape {
    double weight;
    std::int32_t gpus, milli;
    std::int64_t cpu, memory;
  };
  static constexpr Shape kShapes[] = {
      {0.25, 1, 250, 4000, 8192},   {0.30, 1, 500, 8000, 16384}, {0.30, 1, 1000, 12000, 32768},
      {0.08, 2, 1000, 24000, 65536}, {0.04, 4, 1000, 48000, 131072}, {0.03, 8, 1000, 88000, 262144},
  };
  std::vector<double> weights;
  for (const Shape& shape : kShapes) weights.push_back(shape.weight);
  std::discrete_distribution<std::size_t> pick(weights.begin(), weights.end());
  const double capacity = 8.0 * nodes;
  double requested = 0;
  for (std::size_t i = 0; requested < demand * capacity; ++i) {
    const Shape& shape = kShapes[pick(rng)];
    PodSpec p{fmt::format("pod-{}", i), shape.gpus, shape.milli, "", shape.cpu, shape.memory,
              static_cast<std::int64_t>(i) * 1000, 0};
    requested += GpusOf(p);
    s.pods.push_back(std::move(p));
  }
  return s;
}

Result<Report> Run(const Scenario& scenario, std::uint64_t seed, const Progress& progress) {
  auto invalid = [](std::string what) { return Status::InvalidArgument("scenario: " + what); };
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
    if (p.gpus < 0 || p.gpus > 8) return invalid(fmt::format("pod {} asks {} devices (0..8)", p.name, p.gpus));
    if (!pods.insert(p.name).second) return invalid(fmt::format("pod {} is named twice", p.name));
    if (p.arrive_ms < 0 || p.duration_ms < 0) return invalid(fmt::format("pod {} has a negative time", p.name));
    if (p.gpu_milli < 0 || p.cpu_milli < 0 || p.memory_mib < 0) {
      return invalid(fmt::format("pod {} has a negative size", p.name));
    }
  }
  for (const Fault& f : scenario.faults) {
    if (f.kind != Fault::Kind::kLeaderCrash && nodes.count(f.node) == 0) {
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
  Simulation simulation(scenario, seed, progress);
  return simulation.Run();
}

}  // namespace devshare::sim
