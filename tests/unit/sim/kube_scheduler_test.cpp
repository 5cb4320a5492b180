// kube-scheduler's model: NodeResourcesFit, retries and back-off, extender time-outs.
#include <doctest/doctest.h>

#include "sim_fixtures.hpp"

using namespace devshare;
using namespace devshare::sim;
using namespace devshare::sim::internal;
using namespace devshare::sim::fixtures;

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
