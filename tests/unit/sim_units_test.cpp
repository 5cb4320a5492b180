// The simulator's models one at a time (lib/sim/src): the event queue, the
// API server, leader election, the kubelets and plugins, the scheduler
// replicas, kube-scheduler and the report, each driven by hand with only
// the models it depends on.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "devshare/annotations.hpp"
#include "devshare/node_codec.hpp"
#include "src/api_server.hpp"
#include "src/event_queue.hpp"
#include "src/kube_scheduler.hpp"
#include "src/kubelets.hpp"
#include "src/leader_election.hpp"
#include "src/replicas.hpp"
#include "src/report.hpp"
#include "src/scenario_objects.hpp"

using namespace devshare;
using namespace devshare::sim;
using namespace devshare::sim::internal;

namespace {

constexpr std::string_view kRegister = "hami.io/node-nvidia-register";

NodeSpec Spec(std::string name, std::int32_t gpus, std::int64_t cpu_milli = 0) {
  return NodeSpec{std::move(name), gpus, 16384, "T4", cpu_milli, 0};
}

// A pod asking `gpus` devices (a `milli` share of one when gpus is 1).
PodSpec PodOf(std::string name, std::int32_t gpus, std::int32_t milli, std::int64_t cpu_milli = 0,
              std::int64_t arrive_ms = 0) {
  PodSpec p;
  p.name = std::move(name);
  p.gpus = gpus;
  p.gpu_milli = milli;
  p.cpu_milli = cpu_milli;
  p.arrive_ms = arrive_ms;
  return p;
}

// An API model without jitter, so request times are exact.
ApiModel Exact() {
  ApiModel model;
  model.jitter_ms = 0;
  return model;
}

// The node's object as a run starts, with the devices its plugin registers.
Node StartNode(const NodeSpec& spec) {
  return MakeNode(spec, std::string(kRegister),
                  EncodeNodeDevices(MakeDevices(spec), RegisterFormat::kJson));
}

// An API server holding `nodes`, with one scheduler client.
struct Api {
  explicit Api(ApiModel m = Exact(), std::vector<NodeSpec> specs = {Spec("n1", 2)},
               std::size_t pods = 2)
      : model(m),
        nodes(std::move(specs)),
        api(model, 1, pods, std::string(kRegister), events, rng) {
    for (const NodeSpec& spec : nodes) api.AddNode(StartNode(spec));
  }

  // Runs the requests' events (and nothing else) up to `until`; returns the
  // completions in order, with when they completed.
  std::vector<std::pair<std::int64_t, Completion>> Serve(std::int64_t until = 1'000'000) {
    std::vector<std::pair<std::int64_t, Completion>> done;
    while (!events.empty() && events.next().at <= until) {
      const Event e = events.Pop();
      if (e.kind == EventKind::kRequestStart) api.Receive(e.arg);
      if (e.kind == EventKind::kRequestDone) done.emplace_back(events.now(), api.Complete(e.arg));
    }
    return done;
  }

  Report Counted() const {
    Report r;
    api.AddTo(r);
    return r;
  }

  ApiModel model;
  std::vector<NodeSpec> nodes;
  EventQueue events;
  std::mt19937_64 rng{1};
  ApiServer api;
};

}  // namespace

TEST_CASE("sim units: events fire in time order, ties in the order they were scheduled") {
  EventQueue q;
  q.At(20, EventKind::kWake, 1);
  q.At(10, EventKind::kArrive, 2);
  q.At(10, EventKind::kCycle, 3);
  CHECK(q.next().at == 10);
  CHECK(q.Pop().kind == EventKind::kArrive);
  CHECK(q.now() == 10);
  const Event tie = q.Pop();
  CHECK(tie.kind == EventKind::kCycle);
  CHECK(tie.arg == 3);
  CHECK(q.Pop().at == 20);
  CHECK(q.now() == 20);
  CHECK(q.empty());
  q.AdvanceTo(50);
  CHECK(q.now() == 50);
}

TEST_CASE("sim units: the scenario's objects") {
  const Pod quarter = MakePod(PodSpec{"p", 1, 250, "T4|A10", 4000, 1024, 0, 0}, 7);
  CHECK(quarter.uid == "uid-7");
  CHECK(quarter.pod_namespace == "sim");
  CHECK(*quarter.containers.at(0).limits.Find("nvidia.com/gpu") == "1");
  CHECK(*quarter.containers.at(0).limits.Find("nvidia.com/gpucores") == "25");
  CHECK(*quarter.containers.at(0).limits.Find("nvidia.com/gpumem-percentage") == "25");
  CHECK(*quarter.annotations.Find(keys::kUseGpuType) == "T4,A10");
  CHECK(quarter.memory_bytes == 1024LL * 1024 * 1024);
  CHECK(GpusOf(PodOf("p", 1, 250)) == 0.25);
  CHECK(GpusOf(PodOf("p", 4, 1000)) == 4);

  const Node node = StartNode(NodeSpec{"n", 2, 16384, "T4", 8000, 1024});
  CHECK(*node.allocatable.Find("nvidia.com/gpu") == "200");  // 100 slots a GPU
  CHECK(*node.allocatable.Find("cpu") == "8000m");
  CHECK(*node.allocatable.Find("memory") == "1024Mi");

  Scenario s;
  s.pods = {PodOf("a", 1, 500), PodOf("b", 1, 500), PodOf("c", 2, 1000), PodOf("cpu", 0, 0)};
  const std::vector<WorkloadClass> workload = ReplicaEngineOptions(s).filter.workload;
  REQUIRE(workload.size() ==
          2);  // half a GPU (as 0 GPUs, 500 milli), then 2 GPUs; no CPU-only class
  CHECK(workload[0].gpus == 0);
  CHECK(workload[0].gpu_milli == 500);
  CHECK(workload[0].weight == 2);
  CHECK(workload[1].gpus == 2);
  CHECK(workload[1].weight == 1);
}

TEST_CASE("sim units: API server — a replica's writes wait for its token bucket, plugins' do not") {
  ApiModel model = Exact();
  model.qps = 5;
  model.burst = 2;
  Api a(model);
  for (int i = 0; i < 3; ++i) a.api.Submit(Request{Verb::kPatchPod, 0, engine::PatchPod{}});
  a.api.Submit(Request{Verb::kPluginPod, -1, PodWrite{0, {}}});
  std::vector<std::int64_t> starts;
  while (!a.events.empty()) starts.push_back(a.events.Pop().at);
  // Two tokens at once, the third 1 / 5 s later; the plugin's at once.
  CHECK(starts == std::vector<std::int64_t>{0, 0, 0, 200});
  const Report r = a.Counted();
  CHECK(r.throttled_ms == 200);
  CHECK(r.api_calls.at("patch-pod") == 3);
  CHECK(r.api_calls.at("plugin-patch-pod") == 1);
  CHECK(r.api_calls.count("binding") == 0);  // verbs never sent are not listed
}

TEST_CASE("sim units: API server — 429 beyond the concurrency limit, retried after Retry-After") {
  ApiModel model = Exact();
  model.max_inflight = 1;
  Api a(model);
  a.api.Submit(Request{Verb::kPluginNode, -1, NodeWrite{0, {}, std::nullopt}});
  a.api.Submit(Request{Verb::kPluginNode, -1, NodeWrite{0, {}, std::nullopt}});
  const auto done = a.Serve();
  REQUIRE(done.size() == 2);
  CHECK(done[0].first == 20);    // latency
  CHECK(done[1].first == 1020);  // 429 at 0, sent again at 1 s
  CHECK(a.Counted().rejected_429 == 1);
  CHECK(a.api.node(0).resource_version == "3");  // 1 when added; each write bumps it
}

TEST_CASE(
    "sim units: API server — stale preconditions, a second Binding and a stale Lease get 409") {
  Api a;
  a.api.CreatePod(0, MakePod(PodOf("p0", 0, 0), 0));
  const AnnotationWrite lock{std::string(keys::kNodeLock), std::string("taken")};
  const AnnotationWrite absent{std::string(keys::kNodeLock), std::nullopt};
  a.api.Submit(
      Request{Verb::kPatchNode, 0, engine::PatchNode{1, "n1", {lock}, {absent}, {}, false}});
  a.api.Submit(
      Request{Verb::kPatchNode, 0, engine::PatchNode{2, "n1", {lock}, {absent}, {}, false}});
  a.api.Submit(Request{Verb::kPatchNode, 0, engine::PatchNode{3, "ghost", {lock}, {}, {}, false}});
  a.api.Submit(Request{Verb::kBinding, 0, engine::PostBinding{4, "sim", "p0", "uid-0", "n1", {}}});
  a.api.Submit(Request{Verb::kBinding, 0, engine::PostBinding{5, "sim", "p0", "uid-0", "n1", {}}});
  a.api.Submit(Request{Verb::kPatchPod, 0, engine::PatchPod{6, "sim", "nobody", {}}});
  const auto done = a.Serve();
  REQUIRE(done.size() == 6);
  std::vector<bool> ok;
  for (const auto& [at, c] : done) ok.push_back(c.ok);
  CHECK(ok == std::vector<bool>{true, false, false, true, false, false});
  CHECK(done[0].second.node == 0);
  CHECK(done[3].second.pod == 0);
  CHECK(*a.api.node(0).annotations.Find(keys::kNodeLock) == "taken");
  CHECK(a.api.pod(0).node_name == "n1");
  CHECK(a.Counted().conflicts_409 ==
        2);  // the lock taken already, the pod bound already; 404s are not 409s

  LeaseRecord lease;
  lease.holder = "a";
  a.api.Submit(
      Request{Verb::kLease, -1, LeaseWrite{ElectionDecision{ElectionAction::kCreate, lease}}});
  a.api.Submit(
      Request{Verb::kLease, -1, LeaseWrite{ElectionDecision{ElectionAction::kCreate, lease}}});
  a.Serve();
  REQUIRE(a.api.lease().has_value());
  CHECK(a.api.lease()->resource_version == "1");
  lease.resource_version = "0";  // read before the create
  a.api.Submit(
      Request{Verb::kLease, -1, LeaseWrite{ElectionDecision{ElectionAction::kRenew, lease}}});
  lease.resource_version = "1";
  a.api.Submit(
      Request{Verb::kLease, -1, LeaseWrite{ElectionDecision{ElectionAction::kRenew, lease}}});
  const auto leases = a.Serve();
  CHECK_FALSE(leases.at(0).second.ok);
  CHECK(leases.at(1).second.ok);
  CHECK(a.api.lease()->resource_version == "2");
  CHECK(a.Counted().conflicts_409 == 4);
}

TEST_CASE(
    "sim units: leader election — the first try creates the Lease and leads; a crash stops the "
    "elector") {
  Api a;
  LeaderElection election(1, a.events, a.api);
  election.SetIdentity(0, "scheduler-0_1");
  election.Run(0, 0);
  bool started = false;
  while (!a.events.empty() && a.events.next().at < 2000) {
    const Event e = a.events.Pop();
    if (e.kind == EventKind::kElect) election.Elect(0);
    if (e.kind == EventKind::kRequestStart) a.api.Receive(e.arg);
    if (e.kind == EventKind::kRequestDone) {
      Completion done = a.api.Complete(e.arg);
      started = election.WriteResult(0, std::get<LeaseWrite>(done.request.body).decision, done.ok);
    }
  }
  CHECK(started);
  CHECK(election.leading(0));
  REQUIRE(a.api.lease().has_value());
  CHECK(a.api.lease()->holder == "scheduler-0_1");
  CHECK(a.Counted().api_calls.at("lease") == 1);

  election.Stop(0);
  CHECK_FALSE(election.leading(0));
  const Event next = a.events.Pop();  // the retry period's try
  CHECK(next.kind == EventKind::kElect);
  CHECK(next.at == 2000);
  election.Elect(0);
  CHECK(a.events.empty());  // a stopped elector neither writes nor tries again
}

namespace {

// Kubelets and plugins of one node `n1`, over an API server holding it.
struct Nodes {
  explicit Nodes(PluginModel::Mode mode = PluginModel::Mode::kChangeOnly) {
    scenario.plugins.mode = mode;
    kubelets = std::make_unique<Kubelets>(scenario, a.nodes, std::string(kRegister),
                                          "hami.io/node-handshake", a.events, a.api);
    a.api.CreatePod(0, MakePod(PodOf("p0", 1, 1000), 0));
  }
  void Lock(std::string owner) {
    const std::string value =
        EncodeNodeLock(NodeLock{1787300439, 0, true, "sim", std::move(owner)});
    const AnnotationWrite lock{std::string(keys::kNodeLock), value};
    a.api.Submit(Request{Verb::kPatchNode, 0, engine::PatchNode{1, "n1", {lock}, {}, {}, false}});
    a.Serve();
  }
  // Runs the kubelets' and the requests' events up to `until`.
  void Run(std::int64_t until) {
    while (!a.events.empty() && a.events.next().at <= until) {
      const Event e = a.events.Pop();
      if (e.kind == EventKind::kRequestStart) a.api.Receive(e.arg);
      if (e.kind == EventKind::kRequestDone) a.api.Complete(e.arg);
      if (e.kind == EventKind::kAllocate) kubelets->Allocate(e.arg, 0);
      if (e.kind == EventKind::kHeartbeat) kubelets->Heartbeat(e.arg);
    }
  }

  Api a;
  Scenario scenario;
  std::unique_ptr<Kubelets> kubelets;
};

}  // namespace

TEST_CASE("sim units: kubelet — Allocate reports success and releases the pod's own lock") {
  Nodes n;
  n.Lock("p0");
  n.kubelets->PodBound(0);
  CHECK(n.a.events.next().at == n.a.events.now() + 500);  // the model's `allocate`
  n.Run(1000);
  CHECK(*n.a.api.pod(0).annotations.Find(keys::kBindPhase) == "success");
  CHECK(n.a.api.node(0).annotations.Find(keys::kNodeLock) == nullptr);

  Nodes other;
  other.Lock("someone-else");
  other.kubelets->PodBound(0);
  other.Run(1000);
  CHECK(*other.a.api.pod(0).annotations.Find(keys::kBindPhase) == "success");
  CHECK(other.a.api.node(0).annotations.Find(keys::kNodeLock) != nullptr);  // not ours to release
  CHECK(other.a.Counted().api_calls.count("plugin-patch-node") == 0);
}

TEST_CASE("sim units: kubelet — a hung plugin delays Allocate until it is back") {
  Nodes n;
  n.kubelets->StartFault(Fault::Kind::kPluginHang, 0);
  n.kubelets->PodBound(0);
  n.Run(10000);
  CHECK(n.a.api.pod(0).annotations.Find(keys::kBindPhase) == nullptr);
  n.kubelets->EndFault(Fault::Kind::kPluginHang, 0);
  n.Run(20000);
  CHECK(*n.a.api.pod(0).annotations.Find(keys::kBindPhase) == "success");
}

TEST_CASE(
    "sim units: plugins — change-only writes a changed device list; legacy writes every "
    "heartbeat") {
  Nodes n;
  const std::string registered = *n.a.api.node(0).annotations.Find(kRegister);
  n.kubelets->StartHeartbeats(n.a.rng);
  CHECK(n.a.events.empty());  // change-only: no heartbeat
  n.kubelets->StartFault(Fault::Kind::kDeviceUnhealthy, 0);
  n.Run(1000);
  CHECK(*n.a.api.node(0).annotations.Find(kRegister) == n.kubelets->encoded(0));
  CHECK(n.kubelets->encoded(0) != registered);
  n.kubelets->StartFault(Fault::Kind::kPluginCrash, 0);
  n.Run(2000);
  CHECK(*n.a.api.node(0).allocatable.Find("nvidia.com/gpu") ==
        "0");  // the kubelet reports no devices
  n.kubelets->EndFault(Fault::Kind::kPluginCrash, 0);
  n.Run(3000);
  CHECK(*n.a.api.node(0).allocatable.Find("nvidia.com/gpu") == "200");

  Nodes legacy(PluginModel::Mode::kLegacy);
  legacy.kubelets->StartHeartbeats(legacy.a.rng);
  REQUIRE(legacy.a.events.next().kind == EventKind::kHeartbeat);
  CHECK(legacy.a.events.next().at < 30000);  // a random phase within the period
  legacy.Run(90000);
  CHECK(legacy.a.Counted().api_calls.at("plugin-patch-node") == 3);  // unchanged, written anyway
  CHECK(legacy.a.api.node(0).annotations.Find("hami.io/node-handshake") != nullptr);
}

namespace {

// What the models above the replicas would hear, recorded; kube-scheduler's
// part forwarded to `scheduler` when one is set.
struct Recorder : Replicas::Listener, KubeScheduler::Listener {
  void FilterAnswered(int r, const engine::FilterReply& reply) override {
    filters.push_back(reply);
    if (scheduler != nullptr) scheduler->FilterAnswered(r, reply);
  }
  void BindAnswered(const engine::BindReply& reply) override {
    if (scheduler != nullptr) scheduler->BindAnswered(reply);
  }
  void RegistrationWritten() override { ++registrations; }
  void Bound(std::size_t pod, const std::string& node, int /*replica*/) override {
    bound.emplace_back(pod, node);
    scheduler->Bound(pod, node);
  }
  void GaveUp(std::size_t pod) override { given_up.push_back(pod); }
  void Placed() override { ++placed; }
  void Violation(std::size_t /*pod*/, std::string_view what) override {
    violations.emplace_back(what);
  }

  KubeScheduler* scheduler = nullptr;
  std::vector<engine::FilterReply> filters;
  int registrations = 0, placed = 0;
  std::vector<std::pair<std::size_t, std::string>> bound;
  std::vector<std::size_t> given_up;
  std::vector<std::string> violations;
};

// One replica's engine over an API server holding `nodes`.
struct Engines {
  explicit Engines(std::vector<NodeSpec> nodes, engine::EngineOptions o = {})
      : a(Exact(), std::move(nodes), 4),
        options(std::move(o)),
        election(1, a.events, a.api),
        replicas(options, 1, 0, "hami.io/node-handshake", a.events, a.api, election, recorder) {}

  // Runs the requests and the engine's timers up to `until`, telling the
  // engine each outcome.
  void Run(std::int64_t until) {
    while (!a.events.empty() && a.events.next().at <= until) {
      const Event e = a.events.Pop();
      if (e.kind == EventKind::kRequestStart) a.api.Receive(e.arg);
      if (e.kind == EventKind::kWake) replicas.Wake(static_cast<int>(e.arg));
      if (e.kind == EventKind::kRequestDone) {
        Completion done = a.api.Complete(e.arg);
        std::visit(
            [&](auto& c) {
              using T = std::decay_t<decltype(c)>;
              if constexpr (std::is_same_v<T, engine::PatchNode>) {
                replicas.Tell(done.request.client, c.id, done.ok);
                if (c.registration) replicas.RegistrationWritten(done.request.client);
              } else if constexpr (std::is_same_v<T, engine::PatchPod> ||
                                   std::is_same_v<T, engine::PostBinding>) {
                replicas.Tell(done.request.client, c.id, done.ok);
              }
            },
            done.request.body);
      }
      if (e.kind == EventKind::kCycle && scheduler) scheduler->Cycle();
      if (e.kind == EventKind::kCycleTimeout && scheduler) scheduler->CycleTimedOut(e.arg);
      if (e.kind == EventKind::kRequeue && scheduler) scheduler->Enqueue(e.arg);
    }
  }

  Api a;
  engine::EngineOptions options;
  Recorder recorder;
  LeaderElection election;
  Replicas replicas;
  std::unique_ptr<KubeScheduler> scheduler;
};

}  // namespace

TEST_CASE("sim units: replicas — the engine filters through the API server; the leader lives") {
  Engines e({Spec("n1", 2), Spec("n2", 2)});
  e.replicas.Start(0);
  e.Run(1000);
  CHECK(e.replicas.Leader() == 0);
  e.a.api.CreatePod(0, MakePod(PodOf("p0", 1, 1000), 0));
  e.replicas.PodObserved(e.a.api.pod(0));
  e.replicas.Filter(0, 9, e.a.api.pod(0), {"n1", "n2"});
  e.Run(2000);
  REQUIRE(e.recorder.filters.size() == 1);
  CHECK(e.recorder.filters[0].request == 9);
  CHECK(e.recorder.filters[0].nodes.size() == 1);
  CHECK(e.a.Counted().api_calls.count("patch-pod") == 0);  // the placement goes with the bind
  e.replicas.Crash(0);
  CHECK(e.replicas.Leader() == -1);
  e.replicas.Start(0);
  CHECK(e.replicas.Leader() == 0);
}

TEST_CASE("sim units: replicas — registration writes go one at a time") {
  engine::EngineOptions hami;
  hami.registration = engine::RegistrationProtocol::kHami;
  Engines e({Spec("n1", 2), Spec("n2", 2), Spec("n3", 2)}, hami);
  e.replicas.Start(0);
  REQUIRE(e.replicas.registration_queued() == 3);
  std::size_t sent = 0;
  for (std::size_t i = 0; i < 3; ++i)
    sent += !e.a.events.empty() && e.a.events.Pop().kind == EventKind::kRequestStart;
  CHECK(sent == 1);
}

TEST_CASE("sim units: kube-scheduler — NodeResourcesFit, giving up, binding CPU-only pods itself") {
  Scenario s;
  s.nodes = {Spec("n1", 2, 4000), Spec("n2", 2, 8000)};
  s.pods = {PodOf("cpu", 0, 0, 6000), PodOf("huge", 0, 0, 10000)};
  Engines e(s.nodes);
  e.scheduler =
      std::make_unique<KubeScheduler>(s, e.a.nodes, e.a.events, e.a.api, e.replicas, e.recorder);
  e.recorder.scheduler = e.scheduler.get();
  e.replicas.Start(0);
  for (std::size_t i = 0; i < 2; ++i) {
    e.a.api.CreatePod(i, MakePod(s.pods[i], i));
    e.scheduler->Enqueue(i);
  }
  e.Run(1000);
  REQUIRE(e.recorder.bound.size() == 1);
  CHECK(e.recorder.bound[0] == std::pair<std::size_t, std::string>{0, "n2"});  // n1 has 4 cores
  CHECK(e.a.api.pod(0).node_name == "n2");
  CHECK(e.recorder.given_up == std::vector<std::size_t>{1});
  CHECK(e.scheduler->pod(1).reason == "no node has enough CPU and memory");
  CHECK(e.scheduler->pod(0).running);
  CHECK(e.scheduler->Depart(0));
  CHECK_FALSE(e.scheduler->Depart(0));
}

TEST_CASE("sim units: kube-scheduler — retries back off from 1 s, doubling to 10 s") {
  Scenario s;
  s.nodes = {Spec("n1", 2, 4000)};
  s.pods = {PodOf("huge", 0, 0, 10000)};
  s.scheduler.retry_unschedulable = true;
  Engines e(s.nodes);
  e.scheduler =
      std::make_unique<KubeScheduler>(s, e.a.nodes, e.a.events, e.a.api, e.replicas, e.recorder);
  e.recorder.scheduler = e.scheduler.get();
  e.replicas.Start(0);
  e.a.api.CreatePod(0, MakePod(s.pods[0], 0));
  e.scheduler->Enqueue(0);
  std::vector<std::int64_t> retries;
  while (retries.size() < 5 && !e.a.events.empty()) {
    const Event ev = e.a.events.Pop();
    if (ev.kind == EventKind::kCycle) e.scheduler->Cycle();
    if (ev.kind == EventKind::kRequeue) {
      retries.push_back(ev.at);
      e.scheduler->Enqueue(ev.arg);
    }
  }
  CHECK(retries == std::vector<std::int64_t>{1000, 3000, 7000, 15000, 25000});
  CHECK(e.recorder.given_up.empty());
  CHECK(e.scheduler->pod(0).attempts == 5);
}

TEST_CASE("sim units: kube-scheduler — an extender that does not answer times out") {
  Scenario s;
  s.nodes = {Spec("n1", 2)};
  s.pods = {PodOf("gpu", 1, 1000)};
  engine::EngineOptions hami;  // Filter's reply waits for the pod's PATCH
  hami.pod_writes = engine::PodWrites::kHami;
  Engines e(s.nodes, hami);
  e.scheduler =
      std::make_unique<KubeScheduler>(s, e.a.nodes, e.a.events, e.a.api, e.replicas, e.recorder);
  e.recorder.scheduler = e.scheduler.get();
  e.replicas.Start(0);
  e.Run(1000);
  e.a.api.CreatePod(0, MakePod(s.pods[0], 0));
  e.replicas.PodObserved(e.a.api.pod(0));
  e.scheduler->Enqueue(0);
  const std::int64_t cycle_at = e.a.events.now();
  // Only the cycle and its timeout run: the pod's PATCH never completes.
  std::int64_t timed_out = -1;
  while (!e.a.events.empty() && timed_out < 0) {
    const Event ev = e.a.events.Pop();
    if (ev.kind == EventKind::kCycle) e.scheduler->Cycle();
    if (ev.kind == EventKind::kCycleTimeout) {
      timed_out = ev.at;
      e.scheduler->CycleTimedOut(ev.arg);
    }
  }
  CHECK(timed_out == cycle_at + 30000);  // the extender's timeout
  CHECK(e.scheduler->pod(0).reason == "extender timed out");
  CHECK(e.recorder.given_up == std::vector<std::size_t>{0});
  Report r;
  e.scheduler->AddTo(r);
  CHECK(r.extender_timeouts == 1);
}

TEST_CASE(
    "sim units: the report — the fragmentation curve, the mean allocation, latencies and reasons") {
  EventQueue q;
  ReportBuilder report(q, {WorkloadClass{1, 1, 0, 0, 0}});  // whole GPUs
  ClusterSnapshot truth;
  REQUIRE(truth.AddNode(StartNode(Spec("n1", 4))).ok());
  report.AddCapacity(4);
  // A 1-GPU pod arrives: 25 % of the GPUs asked, the curve's 10 % and 20 %
  // points, taken before it is placed.
  REQUIRE(report.Arrived(1, truth).ok());
  report.Bound(1);
  q.AdvanceTo(1000);
  report.LeaderCrashed();
  REQUIRE(report.Arrived(0.5, truth).ok());  // 37.5 %: the 30 % point, one GPU held
  REQUIRE(report.Arrived(0.5, truth).ok());  // 50 %: 40 % and 50 %
  q.AdvanceTo(1500);
  report.Placed();
  report.Departed(1);
  q.AdvanceTo(2000);
  report.CountPod(PodOf("a", 1, 1000), PodOutcome{true, false, false, false, 500, ""});
  report.CountPod(PodOf("b", 1, 500, 0, 1000),
                  PodOutcome{false, false, false, false, 0, "no device fits"});
  report.CountPod(PodOf("c", 1, 500, 0, 1000),
                  PodOutcome{false, false, true, false, 0, "no device fits"});
  Result<Report> r = report.Finish(truth);
  REQUIRE(r.ok());
  REQUIRE(r->fragmentation_curve.size() == 5);
  CHECK(r->fragmentation_curve[1].demand_percent == 20);
  CHECK(r->fragmentation_curve[1].allocation_percent == 0);
  CHECK(r->fragmentation_curve[2].allocation_percent == 25);
  CHECK(r->pods == 3);
  CHECK(r->bound == 1);
  CHECK(r->pending == 2);
  CHECK(r->pending_reasons.at("no device fits") == 2);
  CHECK(r->allocation_mean_percent == doctest::Approx(18.75));  // 1 GPU of 4 for 1.5 s of 2 s
  CHECK(r->unavailable_ms == 500);
  CHECK(r->end_ms == 2000);
  // Latencies: a bound at 500 ms, b waiting 1 s so far; c given up counts none.
  CHECK(r->latency_percentiles.front() == 500);
  CHECK(r->latency_p99_ms == 1000);
  CHECK(r->gpu_free == 4);  // `truth` holds no pods
}
