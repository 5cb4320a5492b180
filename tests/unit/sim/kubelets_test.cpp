// The kubelets and device plugins: Allocate, hung plugins, device-list writes.
#include <doctest/doctest.h>

#include "sim_fixtures.hpp"

using namespace devshare;
using namespace devshare::sim;
using namespace devshare::sim::internal;
using namespace devshare::sim::fixtures;

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
