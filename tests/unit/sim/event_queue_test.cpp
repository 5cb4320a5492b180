// The event queue: events fire in time order, ties in the order scheduled.
#include <doctest/doctest.h>

#include "sim_fixtures.hpp"

using namespace devshare;
using namespace devshare::sim;
using namespace devshare::sim::internal;
using namespace devshare::sim::fixtures;

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
