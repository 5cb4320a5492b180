#include "devshare/sim/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <queue>
#include <random>
#include <tuple>
#include <unordered_map>

#include "devshare/annotations.hpp"
#include "devshare/node_codec.hpp"

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

Node MakeNode(const NodeSpec& spec) {
  Node node;
  node.name = spec.name;
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
  node.annotations.Set("hami.io/node-nvidia-register", EncodeNodeDevices(devices, RegisterFormat::kJson));
  node.allocatable.Set("nvidia.com/gpu", std::to_string(spec.gpus * kSlotsPerGpu));
  if (spec.cpu_milli > 0) node.allocatable.Set("cpu", fmt::format("{}m", spec.cpu_milli));
  if (spec.memory_mib > 0) node.allocatable.Set("memory", fmt::format("{}Mi", spec.memory_mib));
  return node;
}

Pod MakePod(const PodSpec& spec, std::size_t index) {
  Pod pod;
  pod.name = spec.name;
  pod.pod_namespace = "sim";
  pod.uid = fmt::format("uid-{}", index);
  pod.phase = "Pending";
  Container c;
  c.name = "main";
  const bool fraction = spec.gpus == 1 && spec.gpu_milli > 0 && spec.gpu_milli < 1000;
  const std::int32_t share = fraction ? std::max(1, spec.gpu_milli / 10) : 100;
  c.limits.Set("nvidia.com/gpu", std::to_string(spec.gpus));
  c.limits.Set("nvidia.com/gpucores", std::to_string(share));
  c.limits.Set("nvidia.com/gpumem-percentage", std::to_string(share));
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

class Simulation {
 public:
  Simulation(const Scenario& scenario, std::uint64_t seed, const Progress& progress)
      : scenario_(scenario),
        progress_(progress),
        progress_step_(std::max<std::uint64_t>(1, scenario.pods.size() / 100)),
        rng_(seed),
        engine_(WithWorkload(scenario)),
        tokens_(scenario.api.burst) {}

  Result<Report> Run() {
    for (const NodeSpec& spec : scenario_.nodes) {
      nodes_[spec.name] = NodeState{MakeNode(spec), spec, 0, 0};
      report_.gpu_capacity += spec.gpus;
    }
    At(0, [this] {
      std::vector<Command> out;
      std::vector<std::string> names;
      for (const auto& [name, state] : nodes_) names.push_back(name);
      std::sort(names.begin(), names.end());
      for (const std::string& name : names) engine_.NodeObserved(nodes_.at(name).object, now_, out);
      engine_.Tick(now_, out);
      Dispatch(out);
      ScheduleTick();
    });
    for (std::size_t i = 0; i < scenario_.pods.size(); ++i) {
      At(scenario_.pods[i].arrive_ms, [this, i] { Arrive(i); });
    }
    outstanding_ = scenario_.pods.size();
    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      if (scenario_.end_ms > 0 && e.at > scenario_.end_ms) break;
      now_ = e.at;
      e.fire();
      if (violation_) break;
      if (scenario_.end_ms == 0 && outstanding_ == 0 && arrived_ == scenario_.pods.size()) break;
    }
    report_.pods = scenario_.pods.size();
    for (const auto& [uid, running] : running_) report_.gpu_allocated += GpusOf(scenario_.pods[running]);
    report_.allocation_percent =
        report_.gpu_capacity > 0 ? 100.0 * report_.gpu_allocated / report_.gpu_capacity : 0;
    std::sort(latencies_.begin(), latencies_.end());
    if (!latencies_.empty()) {
      report_.latency_p50_ms = latencies_[latencies_.size() / 2];
      report_.latency_p99_ms = latencies_[std::min(latencies_.size() - 1, latencies_.size() * 99 / 100)];
    }
    report_.end_ms = now_;
    if (violation_) return *violation_;
    return report_;
  }

 private:
  struct Event {
    std::int64_t at;
    std::uint64_t seq;
    std::function<void()> fire;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  struct NodeState {
    Node object;
    NodeSpec spec;
    std::int64_t cpu_used;
    std::int64_t memory_used;
  };

  void At(std::int64_t at, std::function<void()> fire) { events_.push(Event{at, seq_++, std::move(fire)}); }

  void ScheduleTick() {
    At(now_ + 1000, [this] {
      if (outstanding_ == 0 && arrived_ == scenario_.pods.size()) return;
      std::vector<Command> out;
      engine_.Tick(now_, out);
      Dispatch(out);
      ScheduleTick();
    });
  }

  // When a write of the engine's client completes: after a token, then latency.
  std::int64_t ThrottledCompletion() {
    const ApiModel& api = scenario_.api;
    const double rate = api.qps / 1000.0;  // tokens per ms
    tokens_ = std::min<double>(api.burst, tokens_ + static_cast<double>(now_ - refilled_at_) * rate);
    refilled_at_ = now_;
    std::int64_t start = now_;
    if (tokens_ >= 1) {
      tokens_ -= 1;
    } else {
      const auto wait = static_cast<std::int64_t>(std::ceil((1 - tokens_) / rate));
      start = now_ + wait;
      report_.throttled_ms += wait;
      tokens_ -= 1;  // borrowed: repaid by the refill before the next request
    }
    std::uniform_int_distribution<std::int64_t> jitter(0, std::max<std::int64_t>(api.jitter_ms, 0));
    return start + api.latency_ms + jitter(rng_);
  }

  void Dispatch(std::vector<Command>& commands) {
    for (Command& command : commands) {
      std::visit([this](auto& c) { Handle(c); }, command);
    }
    commands.clear();
  }

  void Handle(PatchNode& c) {
    ++report_.api_calls["patch-node"];
    At(ThrottledCompletion(), [this, c] {
      auto it = nodes_.find(c.node);
      std::vector<Command> out;
      if (it != nodes_.end()) {
        for (const AnnotationWrite& w : c.writes) {
          if (w.value) {
            it->second.object.annotations.Set(w.key, *w.value);
          } else {
            it->second.object.annotations.Erase(w.key);
          }
        }
      }
      engine_.ApiResult(c.id, it != nodes_.end(), now_, out);
      if (it != nodes_.end()) engine_.NodeObserved(it->second.object, now_, out);
      Dispatch(out);
    });
  }

  void Handle(PatchPod& c) {
    ++report_.api_calls["patch-pod"];
    At(ThrottledCompletion(), [this, c] {
      std::vector<Command> out;
      Pod* pod = FindPod(c.name);
      if (pod != nullptr) {
        for (const auto& [k, v] : c.annotations.entries()) pod->annotations.Set(k, v);
      }
      engine_.ApiResult(c.id, pod != nullptr, now_, out);
      if (pod != nullptr) engine_.PodObserved(*pod);
      Dispatch(out);
    });
  }

  void Handle(PostBinding& c) {
    ++report_.api_calls["binding"];
    At(ThrottledCompletion(), [this, c] {
      std::vector<Command> out;
      Pod* pod = FindPod(c.name);
      if (pod != nullptr) {
        for (const auto& [k, v] : c.annotations.entries()) pod->annotations.Set(k, v);
        pod->node_name = c.node;
      }
      engine_.ApiResult(c.id, pod != nullptr, now_, out);
      if (pod != nullptr) engine_.PodObserved(*pod);
      Dispatch(out);
      if (pod != nullptr) At(now_ + scenario_.api.allocate_ms, [this, c] { Allocated(c); });
    });
  }

  void Handle(FilterReply& reply) {
    const std::size_t index = waiting_;
    if (reply.nodes.empty() || !reply.error.empty()) {
      Finish(false);
      return;
    }
    const std::string node = reply.nodes.front();
    const PodSpec& spec = scenario_.pods[index];
    NodeState& state = nodes_.at(node);
    state.cpu_used += spec.cpu_milli;
    state.memory_used += spec.memory_mib;
    bound_node_[index] = node;
    std::vector<Command> out;
    engine_.Bind(next_request_++, "sim", spec.name, pods_.at(index).uid, node, now_, out);
    Dispatch(out);
  }

  void Handle(BindReply& reply) {
    const std::size_t index = waiting_;
    if (!reply.error.empty()) {
      Release(index);
      Finish(false);
      return;
    }
    const PodSpec& spec = scenario_.pods[index];
    CheckInvariants(index);
    latencies_.push_back(now_ - spec.arrive_ms);
    running_[pods_.at(index).uid] = index;
    if (spec.duration_ms > 0) At(now_ + spec.duration_ms, [this, index] { Depart(index); });
    Finish(true);
  }

  // After every bind: the pod is not already running, and its placement
  // holds (CheckPlacement). The first violation ends the run.
  void CheckInvariants(std::size_t index) {
    if (violation_) return;
    const Pod& pod = pods_.at(index);
    auto node = bound_node_.find(index);
    Status status = running_.count(pod.uid) != 0 ? Status::Internal("allocated twice")
                    : node == bound_node_.end()  ? Status::Internal("bound without a node")
                                                 : CheckPlacement(engine_.snapshot(), node->second, pod.uid);
    if (!status.ok()) {
      violation_ = Status::Internal(fmt::format("t={} ms, pod {}: {}", now_, pod.name, status.message()));
    }
  }

  // The kubelet called Allocate: the plugin reports success and unlocks.
  void Allocated(const PostBinding& c) {
    Pod* pod = FindPod(c.name);
    if (pod == nullptr) return;
    ++report_.api_calls["plugin-patch-pod"];
    pod->annotations.Set(keys::kBindPhase, "success");
    engine_.PodObserved(*pod);
    auto node = nodes_.find(c.node);
    if (node != nodes_.end() && node->second.object.annotations.Erase(keys::kNodeLock)) {
      ++report_.api_calls["plugin-patch-node"];
      std::vector<Command> out;
      engine_.NodeObserved(node->second.object, now_, out);
      Dispatch(out);
    }
  }

  void Arrive(std::size_t index) {
    pods_.emplace(index, MakePod(scenario_.pods[index], index));
    pod_by_name_[scenario_.pods[index].name] = index;
    engine_.PodObserved(pods_.at(index));
    queue_.push_back(index);
    ++arrived_;
    TryNext();
  }

  void Depart(std::size_t index) {
    running_.erase(pods_.at(index).uid);
    Release(index);
    engine_.PodDeleted(pods_.at(index).uid);
  }

  void Release(std::size_t index) {
    auto it = bound_node_.find(index);
    if (it == bound_node_.end()) return;
    NodeState& state = nodes_.at(it->second);
    state.cpu_used -= scenario_.pods[index].cpu_milli;
    state.memory_used -= scenario_.pods[index].memory_mib;
    bound_node_.erase(it);
  }

  void Finish(bool bound) {
    (bound ? report_.bound : report_.unschedulable) += 1;
    const std::uint64_t handled = report_.bound + report_.unschedulable;
    if (progress_ && (handled % progress_step_ == 0 || handled == scenario_.pods.size())) {
      progress_(handled, scenario_.pods.size());
    }
    busy_ = false;
    --outstanding_;
    At(now_, [this] { TryNext(); });
  }

  // kube-scheduler: one pod at a time, NodeResourcesFit, then the extender.
  void TryNext() {
    if (busy_ || queue_.empty()) return;
    busy_ = true;
    waiting_ = queue_.front();
    queue_.pop_front();
    const PodSpec& spec = scenario_.pods[waiting_];
    std::vector<std::string> candidates;
    for (const auto& [name, state] : nodes_) {
      const bool cpu = state.spec.cpu_milli == 0 || state.cpu_used + spec.cpu_milli <= state.spec.cpu_milli;
      const bool mem = state.spec.memory_mib == 0 || state.memory_used + spec.memory_mib <= state.spec.memory_mib;
      if (cpu && mem) candidates.push_back(name);
    }
    if (candidates.empty()) {
      Finish(false);
      return;
    }
    if (spec.gpus == 0) {  // no device: kube-scheduler binds it itself
      const std::string node = CpuOnlyNode(candidates);
      NodeState& state = nodes_.at(node);
      state.cpu_used += spec.cpu_milli;
      state.memory_used += spec.memory_mib;
      bound_node_[waiting_] = node;
      Pod& pod = pods_.at(waiting_);
      pod.node_name = node;
      engine_.PodObserved(pod);  // the engine counts its CPU and memory
      latencies_.push_back(now_ - spec.arrive_ms);
      running_[pods_.at(waiting_).uid] = waiting_;
      if (spec.duration_ms > 0) At(now_ + spec.duration_ms, [this, i = waiting_] { Depart(i); });
      Finish(true);
      return;
    }
    std::vector<Command> out;
    engine_.Filter(next_request_++, pods_.at(waiting_), candidates, now_, out);
    Dispatch(out);
  }

  // The node for a pod without devices: the extender's preference when it
  // names one node (fgd), else kube-scheduler's first fitting node.
  std::string CpuOnlyNode(const std::vector<std::string>& candidates) {
    std::vector<Command> out;
    engine_.Filter(next_request_++, pods_.at(waiting_), candidates, now_, out);
    for (const Command& command : out) {
      const auto* reply = std::get_if<FilterReply>(&command);
      if (reply != nullptr && reply->error.empty() && reply->nodes.size() == 1) return reply->nodes.front();
    }
    return candidates.front();
  }

  // Pods live in one namespace in the simulation; names are unique.
  Pod* FindPod(const std::string& name) {
    auto it = pod_by_name_.find(name);
    return it == pod_by_name_.end() ? nullptr : &pods_.at(it->second);
  }

  const Scenario& scenario_;
  const Progress& progress_;
  std::uint64_t progress_step_;
  std::mt19937_64 rng_;
  engine::Engine engine_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
  std::int64_t now_ = 0;
  double tokens_;
  std::int64_t refilled_at_ = 0;
  std::map<std::string, NodeState> nodes_;
  std::unordered_map<std::size_t, Pod> pods_;
  std::unordered_map<std::string, std::size_t> pod_by_name_;
  std::unordered_map<std::size_t, std::string> bound_node_;
  std::map<std::string, std::size_t> running_;
  std::deque<std::size_t> queue_;
  bool busy_ = false;
  std::size_t waiting_ = 0;
  std::size_t arrived_ = 0;
  std::size_t outstanding_ = 0;
  std::uint64_t next_request_ = 1;
  std::vector<std::int64_t> latencies_;
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

// GPU memory per model; the traces do not give it (V100M16/V100M32 by name;
// the undisclosed G1/G2 assumed 16 GiB and G3 32 GiB).
std::int32_t ModelMemory(const std::string& model) {
  static const std::map<std::string, std::int32_t> kMemory = {
      {"V100M16", 16384}, {"V100M32", 32768}, {"P100", 16384}, {"T4", 16384},
      {"A10", 24576},     {"G1", 16384},      {"G2", 16384},   {"G3", 32768}};
  auto it = kMemory.find(model);
  return it == kMemory.end() ? 16384 : it->second;
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
    n.gpu_memory_mib = ModelMemory(n.model);
    Result<std::int64_t> gpus = IntField(row, "gpu", "node list", i, 0);
    Result<std::int64_t> cpu = IntField(row, "cpu_milli", "node list", i, 0);
    Result<std::int64_t> mem = IntField(row, "memory_mib", "node list", i, 0);
    if (!gpus.ok()) return gpus.status();
    if (!cpu.ok()) return cpu.status();
    if (!mem.ok()) return mem.status();
    n.gpus = static_cast<std::int32_t>(*gpus);
    n.cpu_milli = *cpu;
    n.memory_mib = *mem;
    capacity += n.gpus;
    scenario.nodes.push_back(std::move(n));
  }
  std::vector<PodSpec> pool;
  for (std::size_t i = 0; i < pod_rows->size(); ++i) {
    const auto& row = (*pod_rows)[i];
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
    pool.push_back(std::move(p));
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

Scenario SyntheticScenario(std::uint64_t seed, std::int32_t nodes, double demand) {
  static const char* const kModels[] = {"T4", "V100M16", "V100M32", "A10"};
  Scenario s;
  std::mt19937_64 rng(seed);
  for (std::int32_t n = 0; n < nodes; ++n) {
    const std::string model = kModels[static_cast<std::size_t>(n) % 4];
    s.nodes.push_back(NodeSpec{fmt::format("node-{:04}", n), 8, ModelMemory(model), model, 96000, 786432});
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
  for (const NodeSpec& n : scenario.nodes) {
    if (n.name.empty()) return Status::InvalidArgument("scenario: a node has no name");
  }
  for (const PodSpec& p : scenario.pods) {
    if (p.gpus < 0 || p.gpus > 8) {
      return Status::InvalidArgument(fmt::format("scenario: pod {} asks {} devices (0..8)", p.name, p.gpus));
    }
  }
  Simulation simulation(scenario, seed, progress);
  return simulation.Run();
}

}  // namespace devshare::sim
