// Leader election over the API server model: the Lease, its renewals and takeovers.
#include <doctest/doctest.h>

#include "sim_fixtures.hpp"

using namespace devshare;
using namespace devshare::sim;
using namespace devshare::sim::internal;
using namespace devshare::sim::fixtures;

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
