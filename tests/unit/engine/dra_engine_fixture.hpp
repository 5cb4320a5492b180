// The engine's DRA fixture: two nodes of one shared GPU each serving class
// gpu, share claims and gated pods (engine_dra_test.cpp,
// engine_dra_due_test.cpp).
#ifndef DEVSHARE_TESTS_UNIT_ENGINE_DRA_ENGINE_FIXTURE_HPP_
#define DEVSHARE_TESTS_UNIT_ENGINE_DRA_ENGINE_FIXTURE_HPP_

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "devshare/engine/engine.hpp"
#include "dra_fixtures.hpp"
#include "engine_commands.hpp"
#include "testutil.hpp"

namespace devshare::engine::testing {

using devshare::dra::testing::Claim;
using devshare::dra::testing::Classes;
using devshare::dra::testing::Exactly;
using devshare::dra::testing::kMi;
using devshare::dra::testing::NodeSlice;
using devshare::dra::testing::Q;
using devshare::dra::testing::Select;
using devshare::dra::testing::SharedGpu;
using devshare::testing::MakeNode;
using devshare::testing::MakePod;

// A claim of class gpu asking `cores` percent of one shared GPU's cores and
// 400 MiB of its 40 GiB per percent.
inline dra::ResourceClaim Share(std::string name, std::int64_t cores) {
  dra::DeviceSelection s = Select("gpu");
  s.capacity_requests["cores"] = Q(cores);
  s.capacity_requests["memory"] = Q(cores * 400 * kMi);
  return Claim(std::move(name), {Exactly("gpu", s)});
}

inline Pod Gated(std::string name, std::vector<std::string> claims) {
  Pod p = MakePod(name);
  for (std::size_t i = 0; i < claims.size(); ++i) {
    p.resource_claims.push_back(PodResourceClaim{"c" + std::to_string(i), claims[i], "", ""});
  }
  p.scheduling_gates = {std::string(dra::kSchedulingGate)};
  return p;
}

// Nodes n1 and n2, each with one shared GPU, serving class gpu by binpack.
// `claim` as the watch shows it once `w` is written: its allocation and
// reservedFor, at `version` (kept when empty).
inline dra::ResourceClaim AsWritten(dra::ResourceClaim claim, const WriteClaimStatus& w,
                                    std::string version = "") {
  claim.allocation = w.allocation;
  claim.reserved_for = w.reserved_for;
  if (!version.empty()) claim.resource_version = std::move(version);
  return claim;
}

struct DraEngine {
  explicit DraEngine(dra::Policy policy = dra::Policy::kBinpack) : engine(Options(policy)) {
    for (const char* node : {"n1", "n2"}) {
      engine.NodeObserved(MakeNode(node), kNowMs, out);
      engine.ResourceSliceObserved(NodeSlice(node, {SharedGpu(0)}));
    }
    for (auto& [name, c] : Classes()) engine.DeviceClassObserved(c);
    engine.Tick(kNowMs, out);
    out.clear();
  }
  static EngineOptions Options(dra::Policy policy) {
    EngineOptions o;
    o.dra_device_classes = {"gpu"};
    o.dra_policy = policy;
    return o;
  }
  std::vector<Command> Tick(std::int64_t now_ms = kNowMs) {
    out.clear();
    engine.Tick(now_ms, out);
    return out;
  }
  std::vector<Command> Result(std::uint64_t id, bool ok, std::int64_t now_ms = kNowMs) {
    out.clear();
    engine.ApiResult(id, ok, now_ms, out);
    return out;
  }
  // The watch shows claim `w` as written, then the write answers: what the
  // engine does (the gate's removal once the pod's claims are all written).
  std::vector<Command> Written(const WriteClaimStatus& w, std::int64_t now_ms = kNowMs) {
    engine.ResourceClaimObserved(AsWritten(Claimed(w.name), w));
    return Result(w.id, true, now_ms);
  }
  const dra::ResourceClaim& Claimed(const std::string& name) const {
    const dra::ResourceClaim* c = engine.snapshot().FindResourceClaim("default", name);
    REQUIRE(c != nullptr);
    return *c;
  }
  Engine engine;
  std::vector<Command> out;
};

inline std::string NodeOf(const dra::Allocation& a) {
  REQUIRE(a.node_selector);
  return a.node_selector->terms.at(0).match_fields.at(0).values.at(0);
}

}  // namespace devshare::engine::testing

#endif  // DEVSHARE_TESTS_UNIT_ENGINE_DRA_ENGINE_FIXTURE_HPP_
