// The drift auditor: every kind of difference found, confirmed only after
// the grace period, healed through a read of the object (or a conditional
// lock release), and never by freeing a device a live pod holds.
#include "devshare/engine/audit.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include "devshare/annotations.hpp"
#include "devshare/engine/engine.hpp"
#include "devshare/kube/audit_wire.hpp"
#include "testutil.hpp"

using namespace devshare;
using namespace devshare::engine;
using testing::GpuUuid;
using testing::PodBuilder;
using testing::Use;

namespace {

constexpr std::int64_t kT0 = 1787300439000;
constexpr std::int64_t kGrace = 30000;

ListedObject Listed(const Node& node) {
  return ListedObject{"", node.name, node.uid, node.resource_version, node.annotations};
}
ListedObject Listed(const Pod& pod) {
  return ListedObject{pod.pod_namespace, pod.name, pod.uid, "", pod.annotations};
}

Node GpuNode(std::string name, int gpus, std::string uid) {
  Node node = testing::NodeBuilder(std::move(name)).Gpus(gpus, 40960);
  node.uid = std::move(uid);
  return node;
}

Pod Holding(std::string name, std::string node, std::int32_t memory) {
  return PodBuilder(name)
      .Gpus(1, memory)
      .Uid("uid-" + name)
      .Allocated(node, {{Use(node, 0, memory, 0)}});
}

std::int32_t UsedMemory(const Engine& engine, const std::string& node, std::uint32_t gpu) {
  auto devices = engine.snapshot().NodeDevices(node);
  REQUIRE(devices.ok());
  for (const DeviceView& d : *devices) {
    if (d.device.id == GpuUuid(node, gpu)) return d.usage.usedmem;
  }
  return -1;
}

// An engine (always leading) that knows node n1 (2 GPUs) and `pods`; the
// listing of the same objects agrees with it.
struct Cluster {
  explicit Cluster(std::vector<Pod> pods = {}) : engine(Options()) {
    nodes.push_back(GpuNode("n1", 2, "uid-n1"));
    std::vector<Command> out;
    engine.NodeObserved(nodes[0], kT0, out);
    engine.Tick(kT0, out);
    for (const Pod& p : pods) Observe(p);
  }
  static EngineOptions Options() {
    EngineOptions o;
    o.audit_grace_ms = kGrace;
    return o;
  }
  void Observe(const Pod& pod) {
    engine.PodObserved(pod);
    server.erase(std::remove_if(server.begin(), server.end(),
                                [&](const Pod& p) { return p.uid == pod.uid; }),
                 server.end());
    server.push_back(pod);
  }
  AuditListing Listing() const {
    AuditListing l;
    for (const Node& n : nodes) l.nodes.push_back(Listed(n));
    for (const Pod& p : server) l.pods.push_back(Listed(p));
    return l;
  }
  AuditReport Audit(std::int64_t at) {
    out.clear();
    return engine.Audit(Listing(), at, out);
  }
  // Executes the report's reads against `server` / `nodes`.
  void Heal(const AuditReport& report, std::int64_t at) {
    for (const std::string& name : report.nodes_to_read) {
      std::optional<Node> found;
      for (const Node& n : nodes) {
        if (n.name == name) found = n;
      }
      engine.NodeRead(name, found, at, out);
    }
    for (const PodToRead& asked : report.pods_to_read) {
      std::optional<Pod> found;
      for (const Pod& p : server) {
        if (p.pod_namespace == asked.pod_namespace && p.name == asked.name) found = p;
      }
      engine.PodRead(asked, found);
    }
  }
  Engine engine;
  std::vector<Node> nodes;
  std::vector<Pod> server;  // the API server's unfinished pods
  std::vector<Command> out;
};

const Drift& Only(const AuditReport& report, DriftKind kind) {
  REQUIRE(report.differences.size() == 1);
  CHECK(report.differences[0].kind == kind);
  return report.differences[0];
}

}  // namespace

TEST_CASE("audit: a view that agrees with the API server has no difference") {
  Cluster c({Holding("a", "n1", 8000)});
  AuditReport r = c.Audit(kT0 + 1000);
  CHECK(r.differences.empty());
  CHECK(r.nodes_listed == 1);
  CHECK(r.pods_listed == 1);
  CHECK(c.engine.audit_totals().audits == 1);
  CHECK_FALSE(c.engine.AuditFollowUpMs());
}

TEST_CASE("audit: a difference is confirmed only once it outlives the grace period") {
  Cluster c({Holding("a", "n1", 8000)});
  c.server.clear();  // deleted on the server; the watch event has not come yet
  AuditReport first = c.Audit(kT0);
  const Drift& d = Only(first, DriftKind::kPodGone);
  CHECK_FALSE(d.confirmed);
  CHECK_FALSE(d.healed);
  CHECK(first.pods_to_read.empty());
  CHECK(c.engine.AuditFollowUpMs() == kT0 + kGrace);
  SUBCASE("the watch catches up: never counted") {
    c.engine.PodDeleted("uid-a");
    CHECK(c.Audit(kT0 + kGrace).differences.empty());
    CHECK(c.engine.audit_totals().found[static_cast<std::size_t>(DriftKind::kPodGone)] == 0);
    CHECK_FALSE(c.engine.AuditFollowUpMs());
  }
  SUBCASE("still there a grace period later: confirmed, counted once, healed") {
    CHECK_FALSE(Only(c.Audit(kT0 + kGrace - 1), DriftKind::kPodGone).confirmed);
    AuditReport second = c.Audit(kT0 + kGrace);
    const Drift& confirmed = Only(second, DriftKind::kPodGone);
    CHECK(confirmed.confirmed);
    CHECK(confirmed.healed);
    CHECK(confirmed.object == "default/a");
    REQUIRE(second.pods_to_read.size() == 1);
    CHECK(second.pods_to_read[0].uid == "uid-a");
    CHECK(UsedMemory(c.engine, "n1", 0) == 8000);  // the audit itself frees nothing
    const auto& totals = c.engine.audit_totals();
    CHECK(totals.found[static_cast<std::size_t>(DriftKind::kPodGone)] == 1);
    CHECK(totals.healed[static_cast<std::size_t>(DriftKind::kPodGone)] == 1);
    c.Audit(kT0 + 2 * kGrace);  // seen again before the heal ran: not counted twice
    CHECK(totals.found[static_cast<std::size_t>(DriftKind::kPodGone)] == 1);
    c.Heal(second, kT0 + kGrace);  // the read finds no pod: the phantom allocation goes
    CHECK(UsedMemory(c.engine, "n1", 0) == 0);
    CHECK(c.Audit(kT0 + 3 * kGrace).differences.empty());
  }
}

TEST_CASE("audit: a pod finished without an event is read again and forgotten") {
  Cluster c({Holding("a", "n1", 8000)});
  Pod finished = c.server[0];
  finished.phase = "Succeeded";
  c.server.clear();  // the LIST leaves finished pods out
  c.Audit(kT0);
  AuditReport r = c.Audit(kT0 + kGrace);
  Only(r, DriftKind::kPodGone);
  REQUIRE(r.pods_to_read.size() == 1);
  c.engine.PodRead(r.pods_to_read[0], finished);  // the GET finds it Succeeded
  CHECK(UsedMemory(c.engine, "n1", 0) == 0);
  CHECK(c.Audit(kT0 + 2 * kGrace).differences.empty());
}

TEST_CASE("audit: a reservation for a pod deleted while its bind was in flight is dropped") {
  Cluster c;
  Pod pod = PodBuilder("b").Gpus(1, 10000).Uid("uid-b");
  c.Observe(pod);
  std::vector<Command> out;
  c.engine.Filter(1, pod, {}, kT0, out);  // placed: reserved in memory, not on the server
  CHECK(UsedMemory(c.engine, "n1", 0) + UsedMemory(c.engine, "n1", 1) == 10000);
  CHECK(c.Audit(kT0).differences.empty());  // an in-flight placement is newer than any LIST
  c.server.clear();                         // deleted; the DELETED event is lost
  c.Audit(kT0 + 1);
  AuditReport r = c.Audit(kT0 + 1 + kGrace);
  const Drift& d = Only(r, DriftKind::kPodGone);
  CHECK(d.detail.find("reservation") != std::string::npos);
  c.Heal(r, kT0 + 1 + kGrace);
  CHECK(UsedMemory(c.engine, "n1", 0) + UsedMemory(c.engine, "n1", 1) == 0);
}

TEST_CASE("audit: an allocation the cache misses is read and counted") {
  Cluster c;
  SUBCASE("a pod the watch never delivered") {
    c.server.push_back(Holding("a", "n1", 12000));
    c.Audit(kT0);
    AuditReport r = c.Audit(kT0 + kGrace);
    const Drift& d = Only(r, DriftKind::kAllocationMissed);
    CHECK(d.detail.find("holds devices on n1") != std::string::npos);
    CHECK(r.pods_to_read.at(0).uid.empty());
    c.Heal(r, kT0 + kGrace);
    CHECK(UsedMemory(c.engine, "n1", 0) == 12000);
  }
  SUBCASE("a pod whose allocation update was missed") {
    Pod pending = PodBuilder("a").Gpus(1, 12000).Uid("uid-a");
    c.Observe(pending);
    c.server[0] = Holding("a", "n1", 12000);  // placed by another scheduler replica
    c.Audit(kT0);
    AuditReport r = c.Audit(kT0 + kGrace);
    const Drift& d = Only(r, DriftKind::kAllocationMissed);
    CHECK(d.detail.find("hami.io/vgpu-") != std::string::npos);
    CHECK(r.pods_to_read.at(0).uid == "uid-a");
    c.Heal(r, kT0 + kGrace);
    CHECK(UsedMemory(c.engine, "n1", 0) == 12000);
    CHECK(c.Audit(kT0 + 2 * kGrace).differences.empty());
  }
  SUBCASE("a pod without devices the cache misses") {
    c.server.push_back(PodBuilder("plain").Uid("uid-plain").Build());
    c.Audit(kT0);
    AuditReport r = c.Audit(kT0 + kGrace);
    Only(r, DriftKind::kPodMissed);
    c.Heal(r, kT0 + kGrace);
    CHECK(c.Audit(kT0 + 2 * kGrace).differences.empty());
  }
}

TEST_CASE("audit: a heal never frees a device a live pod holds") {
  // The server's copy lost the allocation annotations (a client rewrote
  // them): reported, read again, and the device stays counted.
  Cluster c({Holding("a", "n1", 8000)});
  c.server[0].annotations.Erase("hami.io/vgpu-node");
  c.server[0].annotations.Erase("hami.io/vgpu-devices-allocated");
  c.Audit(kT0);
  AuditReport r = c.Audit(kT0 + kGrace);
  Only(r, DriftKind::kAllocationMissed);
  c.Heal(r, kT0 + kGrace);
  CHECK(UsedMemory(c.engine, "n1", 0) == 8000);
}

TEST_CASE("audit: nodes changed, replaced, gone or missed without an event are read again") {
  Cluster c({Holding("a", "n1", 8000)});
  SUBCASE("register annotation changed") {
    Node grown = GpuNode("n1", 3, "uid-n1");
    c.nodes[0] = grown;
    c.Audit(kT0);
    AuditReport r = c.Audit(kT0 + kGrace);
    const Drift& d = Only(r, DriftKind::kNodeChanged);
    CHECK(d.detail.find("hami.io/node-nvidia-register") != std::string::npos);
    CHECK(r.nodes_to_read == std::vector<std::string>{"n1"});
    c.Heal(r, kT0 + kGrace);
    CHECK(c.engine.snapshot().NodeDevices("n1")->size() == 3);
    CHECK(UsedMemory(c.engine, "n1", 0) == 8000);  // the live pod still holds its device
  }
  SUBCASE("re-created under the same name with other GPUs") {
    c.nodes[0] = GpuNode("n1", 1, "uid-n1-new");
    c.Audit(kT0);
    AuditReport r = c.Audit(kT0 + kGrace);
    const Drift& d = Only(r, DriftKind::kNodeReplaced);
    CHECK(d.detail.find("uid-n1-new") != std::string::npos);
    c.Heal(r, kT0 + kGrace);
    CHECK(c.engine.snapshot().NodeDevices("n1")->size() == 1);
    CHECK(c.Audit(kT0 + 2 * kGrace).differences.empty());
  }
  SUBCASE("deleted") {
    c.nodes.clear();
    c.Audit(kT0);
    AuditReport r = c.Audit(kT0 + kGrace);
    Only(r, DriftKind::kNodeGone);
    c.Heal(r, kT0 + kGrace);
    CHECK(c.engine.snapshot().node_count() == 0);
  }
  SUBCASE("added") {
    c.nodes.push_back(GpuNode("n2", 1, "uid-n2"));
    c.Audit(kT0);
    AuditReport r = c.Audit(kT0 + kGrace);
    Only(r, DriftKind::kNodeMissed);
    c.Heal(r, kT0 + kGrace);
    CHECK(c.engine.snapshot().node_count() == 2);
  }
}

TEST_CASE("audit: a node whose lock comes and goes with the binds is no difference") {
  // Every listing catches another bind's lock; the engine hears of each
  // lock and release, so its copy of the node is never the same twice.
  Cluster c;
  std::vector<Command> out;
  auto listed_with_lock = [&](const std::string& second, const std::string& version) {
    c.nodes[0].resource_version = version;
    c.nodes[0].annotations.Set(std::string(keys::kNodeLock), "2026-08-21T08:20:" + second + "Z");
  };
  auto heard_release = [&](const std::string& version) {
    Node released = GpuNode("n1", 2, "uid-n1");
    released.resource_version = version;
    c.engine.NodeObserved(released, kT0, out);
  };
  heard_release("10");
  listed_with_lock("01", "11");
  CHECK_FALSE(Only(c.Audit(kT0), DriftKind::kNodeChanged).confirmed);
  heard_release("12");
  listed_with_lock("31", "13");
  CHECK_FALSE(Only(c.Audit(kT0 + kGrace), DriftKind::kNodeChanged).confirmed);
  heard_release("14");
  listed_with_lock("59", "15");
  CHECK_FALSE(Only(c.Audit(kT0 + 2 * kGrace), DriftKind::kNodeChanged).confirmed);
  SUBCASE("nothing heard of the node for a grace period: confirmed") {
    AuditReport r = c.Audit(kT0 + 3 * kGrace);
    CHECK(Only(r, DriftKind::kNodeChanged).confirmed);
    CHECK(r.nodes_to_read == std::vector<std::string>{"n1"});
  }
  SUBCASE("the listing shows the version the engine has: nothing to compare") {
    heard_release("15");
    c.nodes[0].annotations = GpuNode("n1", 2, "uid-n1").annotations;
    CHECK(c.Audit(kT0 + 3 * kGrace).differences.empty());
  }
}

TEST_CASE("audit: a lock whose holder does not exist is released, conditionally, by a leader") {
  Cluster c;
  const std::string lock = "2026-08-21T08:20:39Z,default,gone";
  c.nodes[0].annotations.Set(std::string(keys::kNodeLock), lock);
  std::vector<Command> out;
  c.engine.NodeObserved(c.nodes[0], kT0, out);  // the cache saw the lock too
  c.Audit(kT0);
  AuditReport r = c.Audit(kT0 + kGrace);
  const Drift& d = Only(r, DriftKind::kLockOrphaned);
  CHECK(d.detail.find("default/gone") != std::string::npos);
  CHECK(d.healed);
  REQUIRE(c.out.size() == 1);
  const auto& release = std::get<PatchNode>(c.out[0]);
  CHECK(release.node == "n1");
  CHECK(release.writes.at(0).key == keys::kNodeLock);
  CHECK_FALSE(release.writes.at(0).value);
  CHECK(release.preconditions.at(0).value == lock);  // only while it still holds that value

  SUBCASE("a lock whose holder exists is no difference") {
    Cluster held;
    held.nodes[0].annotations.Set(std::string(keys::kNodeLock), "2026-08-21T08:20:39Z,default,a");
    held.engine.NodeObserved(held.nodes[0], kT0, out);
    held.Observe(PodBuilder("a").Gpus(1).Uid("uid-a"));
    CHECK(held.Audit(kT0).differences.empty());
  }
  SUBCASE("a follower reports it and writes nothing") {
    EngineOptions o = Cluster::Options();
    o.leadership = Leadership::kFollowLease;
    o.hostname = "me";
    Engine follower(o);
    follower.NodeObserved(c.nodes[0], kT0, out);
    AuditListing listing = c.Listing();
    std::vector<Command> written;
    follower.Audit(listing, kT0, written);
    AuditReport fr = follower.Audit(listing, kT0 + kGrace, written);
    CHECK(Only(fr, DriftKind::kLockOrphaned).confirmed);
    CHECK_FALSE(fr.differences[0].healed);
    CHECK(written.empty());
  }
}

TEST_CASE("audit: a bind whose lock the server no longer shows is reported") {
  Cluster c;
  Pod pod = PodBuilder("b").Gpus(1, 1000).Uid("uid-b");
  c.Observe(pod);
  std::vector<Command> out;
  c.engine.Filter(1, pod, {}, kT0, out);
  out.clear();
  c.engine.Bind(2, "default", "b", "uid-b", "n1", kT0, out);
  const PatchNode lock = std::get<PatchNode>(out.at(0));
  out.clear();
  c.engine.ApiResult(lock.id, true, kT0, out);  // locked; the Binding is in flight
  // The server never shows the lock (someone removed it).
  c.Audit(kT0);
  AuditReport r = c.Audit(kT0 + kGrace);
  bool lost = false;
  for (const Drift& d : r.differences) {
    if (d.kind == DriftKind::kLockLost) {
      lost = true;
      CHECK(d.detail.find("default/b") != std::string::npos);
      CHECK_FALSE(d.healed);
    }
  }
  CHECK(lost);
}

TEST_CASE("audit: kinds are named for metrics and logs") {
  CHECK(DriftKindName(DriftKind::kPodGone) == "pod-gone");
  CHECK(DriftKindName(DriftKind::kAllocationMissed) == "allocation-missed");
  CHECK(DriftKindName(DriftKind::kLockLost) == "lock-lost");
  CHECK(kDriftKindNames.size() == kDriftKinds);
}

TEST_CASE("audit: a metadata list page decodes, and what does not decode says where") {
  using devshare::kube::DecodeMetadataPage;
  auto page = DecodeMetadataPage(
      R"({"kind":"PartialObjectMetadataList","metadata":{"continue":"abc"},"items":[)"
      R"({"metadata":{"name":"p1","namespace":"default","uid":"u1","resourceVersion":"42",)"
      R"("annotations":{"hami.io/vgpu-node":"gpu-a","a":"b"}}},{"metadata":{"name":"gpu-a"}}]})");
  REQUIRE(page.ok());
  CHECK(page->continue_token == "abc");
  REQUIRE(page->objects.size() == 2);
  CHECK(page->objects[0].object_namespace == "default");
  CHECK(page->objects[0].uid == "u1");
  CHECK(page->objects[0].resource_version == "42");
  CHECK(*page->objects[0].annotations.Find("hami.io/vgpu-node") == "gpu-a");
  CHECK(page->objects[1].object_namespace.empty());
  for (const char* empty : {R"({"items":null})", R"({"metadata":{}})", R"({"items":[]})"}) {
    CAPTURE(empty);
    auto e = DecodeMetadataPage(empty);
    REQUIRE(e.ok());
    CHECK(e->objects.empty());
  }
  struct Bad {
    const char* json;
    const char* says;
  };
  for (
      const Bad& bad :
      {Bad{"", "not JSON"}, Bad{"[]", "not a JSON object"},
       Bad{R"({"items":{}})", "items is not an array"},
       Bad{R"({"items":[1]})", "items[0].metadata"},
       Bad{R"({"items":[{"metadata":{"uid":"u"}}]})", "items[0].metadata.name"},
       Bad{R"({"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b","annotations":{"k":1}}}]})",
           "items[1].metadata.annotations[\"k\"]"},
       Bad{R"({"items":[{"metadata":{"name":"a","resourceVersion":7}}]})",
           "items[0].metadata.resourceVersion"},
       Bad{R"({"metadata":{"continue":7},"items":[]})", "metadata.continue"}}) {
    CAPTURE(bad.json);
    auto r = DecodeMetadataPage(bad.json);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kMalformed);
    CHECK(std::string(r.status().message()).find(bad.says) != std::string::npos);
  }
}

TEST_CASE("audit: /debug/audit's JSON carries the differences, the totals and the LIST's cost") {
  Cluster c({Holding("a", "n1", 8000)});
  c.server.clear();
  c.Audit(kT0);
  AuditReport r = c.Audit(kT0 + kGrace);
  const std::string json = devshare::kube::EncodeAuditReport(
      r, c.engine.audit_totals(), devshare::kube::AuditListCost{2, 1, 512, 0.25}, 3.5);
  CHECK(json.find(R"("kind":"pod-gone","object":"default/a","uid":"uid-a")") != std::string::npos);
  CHECK(json.find(R"("confirmed":true,"healed":true)") != std::string::npos);
  CHECK(
      json.find(
          R"("list":{"pages":2,"nodes":1,"pods":0,"quotas":0,"claims":0,"bytes":512,"seconds":2.5E-1})") !=
      std::string::npos);
  CHECK(json.find(R"("totals":{"pod-gone":1,)") != std::string::npos);
  CHECK(json.find(R"("audits":2)") != std::string::npos);
}

TEST_CASE("audit: quotas gone, missed or changed without an event are read again") {
  Cluster c;
  auto quota = [](std::string name, std::string version, std::string limit) {
    return ResourceQuota{"ml", std::move(name), "uid-" + version, std::move(version),
                         StringMap{{"limits.nvidia.com/gpumem", std::move(limit)}}};
  };
  std::vector<ResourceQuota> server = {quota("kept", "1", "8000"), quota("changed", "2", "6000"),
                                       quota("missed", "3", "1000")};
  c.engine.ResourceQuotaObserved(server[0]);
  c.engine.ResourceQuotaObserved(quota("changed", "1", "9000"));  // an update was missed
  c.engine.ResourceQuotaObserved(quota("gone", "1", "2000"));     // its delete was missed
  CHECK(c.engine.quota_count() == 3);
  AuditListing listing = c.Listing();
  for (const ResourceQuota& q : server)
    listing.quotas.push_back(
        ListedObject{q.quota_namespace, q.name, q.uid, q.resource_version, {}});
  c.engine.Audit(listing, kT0, c.out);
  AuditReport r = c.engine.Audit(listing, kT0 + kGrace, c.out);
  CHECK(r.quotas_listed == 3);
  std::vector<std::pair<DriftKind, std::string>> seen;
  for (const Drift& d : r.differences) seen.emplace_back(d.kind, d.object);
  CHECK(seen ==
        std::vector<std::pair<DriftKind, std::string>>{{DriftKind::kQuotaGone, "ml/gone"},
                                                       {DriftKind::kQuotaMissed, "ml/missed"},
                                                       {DriftKind::kQuotaChanged, "ml/changed"}});
  // The reads: the server's versions (and the gone one's absence) replace the cache's.
  for (const ObjectToRead& asked : r.quotas_to_read) {
    std::optional<ResourceQuota> found;
    for (const ResourceQuota& q : server) {
      if (q.name == asked.name) found = q;
    }
    c.engine.QuotaRead(asked, found);
  }
  CHECK(c.engine.snapshot().QuotaLimit("ml", "nvidia.com/gpumem") == 1000);
  CHECK(c.engine.audit_totals().healed[static_cast<std::size_t>(DriftKind::kQuotaChanged)] == 1);
  CHECK(c.engine.Audit(listing, kT0 + 2 * kGrace, c.out).differences.empty());
}
