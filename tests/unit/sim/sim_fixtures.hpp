// Helpers shared by the simulator model tests (tests/unit/sim/*_test.cpp):
// nodes and pods as specs, an API model without jitter, an API server,
// kubelets and scheduler replicas driven by hand.
#pragma once

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

namespace devshare::sim::fixtures {

using namespace devshare::sim::internal;

constexpr std::string_view kRegister = "hami.io/node-nvidia-register";

inline NodeSpec Spec(std::string name, std::int32_t gpus, std::int64_t cpu_milli = 0) {
  return NodeSpec{std::move(name), gpus, 16384, "T4", cpu_milli, 0};
}

// A pod asking `gpus` devices (a `milli` share of one when gpus is 1).
inline PodSpec PodOf(std::string name, std::int32_t gpus, std::int32_t milli,
                     std::int64_t cpu_milli = 0, std::int64_t arrive_ms = 0) {
  PodSpec p;
  p.name = std::move(name);
  p.gpus = gpus;
  p.gpu_milli = milli;
  p.cpu_milli = cpu_milli;
  p.arrive_ms = arrive_ms;
  return p;
}

// An API model without jitter, so request times are exact.
inline ApiModel Exact() {
  ApiModel model;
  model.jitter_ms = 0;
  return model;
}

// The node's object as a run starts, with the devices its plugin registers.
inline Node StartNode(const NodeSpec& spec) {
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
  void Preempting(int /*r*/, const engine::NominatePod& nomination) override {
    nominations.push_back(nomination);
  }
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
  std::vector<engine::NominatePod> nominations;
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

}  // namespace devshare::sim::fixtures
