// The scheduler replicas: filtering through the API server, registration writes.
#include <doctest/doctest.h>

#include "sim_fixtures.hpp"

using namespace devshare;
using namespace devshare::sim;
using namespace devshare::sim::internal;
using namespace devshare::sim::fixtures;

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
