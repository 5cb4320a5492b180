// Fit, scores and Filter (spec/hami-behaviour.md §4, §5, §9).
#include "devshare/filter.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "devshare/pod_codec.hpp"
#include "filter_fixture.hpp"
#include "testutil.hpp"

using namespace devshare;
using testing::Gen;
using testing::kNow;
using testing::Load;
using testing::MakeNode;
using testing::MakePod;
using testing::MustFilter;
using testing::Uuids;

namespace {

std::string ReasonFor(const FilterResult& r, std::string_view node) {
  for (const NodeFailure& f : r.failed) {
    if (f.node == node) return f.reason;
  }
  return "<none>";
}

}  // namespace

TEST_CASE("node score and choice: spec §5.1 worked example") {
  // Two nodes with 2 x (10 slots, 8000 MiB, 100 cores).
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("node1").Gpus(2)).ok());
  REQUIRE(s.AddNode(MakeNode("node2").Gpus(2)).ok());
  Load(s, "node1-gpu0", "node1", 1, 2000, 25);  // S = 10*(1/20 + 25/200 + 2000/16000) = 3.0
  Load(s, "node2-gpu0", "node2", 1, 6000, 75);  // S = 10*(1/20 + 75/200 + 6000/16000) = 8.0
  Pod pod = MakePod("p").Container(1, 1000, 10);
  FilterResult binpack = MustFilter(s, pod);
  CHECK(binpack.node == "node2");
  REQUIRE(binpack.scores.size() == 2);
  CHECK(binpack.scores[0].score == doctest::Approx(3.0));
  CHECK(binpack.scores[1].score == doctest::Approx(8.0));
  FilterOptions spread;
  spread.node_policy = "spread";
  CHECK(MustFilter(s, pod, spread).node == "node1");
  // The pod's annotation overrides the option.
  CHECK(
      MustFilter(
          s,
          MakePod("q").Container(1, 1000, 10).Annotation("hami.io/node-scheduler-policy", "spread"))
          .node == "node1");
}

TEST_CASE("filter result: the annotation patch HAMi writes") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(1)).ok());
  FilterResult r = MustFilter(s, MakePod("p").Container(1, 1000, 30));
  REQUIRE(r.node == "n1");
  CHECK(*r.annotations.Find("hami.io/vgpu-node") == "n1");
  CHECK(*r.annotations.Find("hami.io/vgpu-time") == "1787300439");
  CHECK(*r.annotations.Find("hami.io/vgpu-devices-to-allocate") == "n1-gpu0,NVIDIA,1000,30:;");
  CHECK(*r.annotations.Find("hami.io/vgpu-devices-allocated") == "n1-gpu0,NVIDIA,1000,30:;");
  CHECK(r.failed.empty());
}

TEST_CASE("W1: containers without devices keep their positions") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(2)).ok());
  // An init container without a GPU, then two app containers with one each.
  Pod pod = MakePod("p")
                .Init(0)
                .Container(1, 1000, 10)
                .Container(1, 1000, 10)
                .Annotation("hami.io/gpu-scheduler-policy", "spread");
  FilterResult r = MustFilter(s, pod);
  const std::string value = *r.annotations.Find("hami.io/vgpu-devices-allocated");
  CHECK(value.starts_with(";"));
  Result<PodSingleDevice> decoded = DecodePodDevices(value);
  REQUIRE(decoded.ok());
  REQUIRE(decoded->size() == 4);  // 3 containers + the trailing empty entry
  CHECK((*decoded)[0].empty());
  CHECK((*decoded)[1].size() == 1);
  CHECK((*decoded)[2].size() == 1);
}

TEST_CASE("HAMi-exact W1: on model-named devices only the containers that ask get an entry") {
  Pod pod = MakePod("p").Container(0).Container(1, 1000, 10);
  FilterOptions exact;
  exact.hami_exact.container_padding_by_type = true;
  ClusterSnapshot model;  // types "NVIDIA A100-SXM4-40GB": HAMi pads under that name, not "NVIDIA"
  REQUIRE(model.AddNode(MakeNode("n1").Gpus(1)).ok());
  CHECK(*MustFilter(model, pod).annotations.Find("hami.io/vgpu-devices-allocated") ==
        ";n1-gpu0,NVIDIA,1000,10:;");
  const FilterResult r = MustFilter(model, pod, exact);
  CHECK(*r.annotations.Find("hami.io/vgpu-devices-allocated") == "n1-gpu0,NVIDIA,1000,10:;");
  CHECK(*r.annotations.Find("hami.io/vgpu-devices-to-allocate") == "n1-gpu0,NVIDIA,1000,10:;");
  CHECK(Uuids(r, 0) == std::vector<std::string>{"n1-gpu0"});
  ClusterSnapshot generic;  // type "NVIDIA": HAMi pads every container too
  REQUIRE(generic.AddNode(MakeNode("n1").Gpu(10, 8000, 100, 0, "NVIDIA")).ok());
  CHECK(*MustFilter(generic, pod, exact).annotations.Find("hami.io/vgpu-devices-allocated") ==
        ";n1-gpu0,NVIDIA,1000,10:;");
}

TEST_CASE("HAMi-exact W2: on model-named devices the request does not count in the device score") {
  // Spread: the request's 2048 MiB weighs more on the 4096 MiB card, so
  // devshare takes the 16384 MiB one; HAMi scores both by their usage (0),
  // a tie, and takes the last registered.
  Pod pod = MakePod("p").Container(1, 2048, 0);
  FilterOptions exact;
  exact.hami_exact.device_score_type_match = true;
  ClusterSnapshot model;
  REQUIRE(model.AddNode(MakeNode("n1").Gpu(10, 16384).Gpu(10, 4096)).ok());
  CHECK(Uuids(MustFilter(model, pod), 0) == std::vector<std::string>{"n1-gpu0"});
  CHECK(Uuids(MustFilter(model, pod, exact), 0) == std::vector<std::string>{"n1-gpu1"});
  ClusterSnapshot generic;  // type "NVIDIA": the request counts in HAMi too
  REQUIRE(
      generic
          .AddNode(MakeNode("n1").Gpu(10, 16384, 100, 0, "NVIDIA").Gpu(10, 4096, 100, 0, "NVIDIA"))
          .ok());
  CHECK(Uuids(MustFilter(generic, pod, exact), 0) == std::vector<std::string>{"n1-gpu0"});
}

TEST_CASE("HAMi-exact rows parse from all, none or a list") {
  CHECK(*ParseHamiExact("all") == HamiExact::All());
  CHECK(*ParseHamiExact("none") == HamiExact{});
  CHECK(*ParseHamiExact("") == HamiExact{});
  CHECK(*ParseHamiExact(" W2 , W1,W4,W10") == HamiExact::All());
  const HamiExact w2 = *ParseHamiExact("W2");
  CHECK_FALSE(w2.container_padding_by_type);
  CHECK(w2.device_score_type_match);
  Result<HamiExact> bad = ParseHamiExact("W1,W3");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message() ==
        "hami-exact: unknown row \"W3\" (rows: W1, W2, W4, W10; or all, none)");
}

TEST_CASE("fit: every check of spec §4.4 gives its reason") {
  struct Row {
    const char* what;
    Pod pod;
    std::string reason;
  };
  ClusterSnapshot s;
  // n1: two GPUs, 8000 MiB, 10 slots; gpu0 half used.
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(2)).ok());
  Load(s, "n1-gpu0", "n1", 1, 4000, 50);
  const Row rows[] = {
      {"memory", MakePod("a").Container(1, 9000), "2/2 CardInsufficientMemory"},
      {"cores", MakePod("b").Container(2, 100, 60),
       "1/2 AllocatedCardsInsufficientRequest, 1/2 CardInsufficientCore"},
      {"uuid", MakePod("c").Container(1, 100).Annotation("nvidia.com/use-gpuuuid", "GPU-x"),
       "2/2 CardUuidMismatch"},
      {"type", MakePod("d").Container(1, 100).Annotation("nvidia.com/use-gputype", "h100"),
       "2/2 CardTypeMismatch"},
      {"nouse type (case-insensitive substring)",
       MakePod("e").Container(1, 100).Annotation("nvidia.com/nouse-gputype", ",a100,"),
       "2/2 CardTypeMismatch"},
      {"mode", MakePod("f").Container(1, 100).Annotation("nvidia.com/vgpu-mode", "mig"),
       "2/2 CardTypeMismatch"},
      {"mutex", MakePod("g").Container(2, 100).Annotation("hami.io/gpu-scheduler-policy", "mutex"),
       "1/2 AllocatedCardsInsufficientRequest, 1/2 ExclusiveDeviceAllocateConflict"},
      {"more GPUs than the node has", MakePod("i").Container(3, 100), "NodeInsufficientDevice"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    FilterResult r = MustFilter(s, row.pod);
    CHECK_FALSE(r.node.has_value());
    CHECK(ReasonFor(r, "n1") == row.reason);
  }
}

TEST_CASE("fit: cordon, health, slots and zero-core jobs on a full card") {
  ClusterSnapshot s;
  Device sick = testing::MakeDevice("sick").Index(1).Mem(8000).Health(false);
  REQUIRE(s.AddNode(MakeNode("n1").Gpu().With(sick).Gpu(1).Annotation("hami.io/device-cordon",
                                                                      " n1-gpu0 "))
              .ok());
  Load(s, "n1-gpu2", "n1", 1, 0, 0);  // gpu2 has 1 slot, now taken
  FilterResult r = MustFilter(s, MakePod("p").Container(1, 100));
  CHECK(ReasonFor(r, "n1") == "1/3 CardCordoned, 1/3 CardNotHealth, 1/3 CardTimeSlicingExhausted");

  // 100 cores asked of a card another pod already shares (with 0 cores).
  ClusterSnapshot shared;
  REQUIRE(shared.AddNode(MakeNode("n3").Gpus(2)).ok());
  Load(shared, "n3-gpu0", "n3", 1, 100, 0);
  CHECK(ReasonFor(MustFilter(shared, MakePod("x").Container(2, 100, 100)), "n3") ==
        "1/2 AllocatedCardsInsufficientRequest, 1/2 ExclusiveDeviceAllocateConflict");

  ClusterSnapshot full;
  REQUIRE(full.AddNode(MakeNode("n2").Gpus(1)).ok());
  Load(full, "n2-gpu0", "n2", 1, 100, 100);
  CHECK(ReasonFor(MustFilter(full, MakePod("q").Container(1, 100, 0)), "n2") ==
        "1/1 CardComputeUnitsExhausted");
}

TEST_CASE("reasons sort as whole strings: 10/... before 2/...") {
  ClusterSnapshot s;
  MakeNode n("n1");
  for (int i = 0; i < 12; ++i) n.Gpu(10, i < 2 ? 100 : 8000);
  REQUIRE(s.AddNode(n).ok());
  FilterResult r = MustFilter(
      s, MakePod("p").Container(1, 200).Annotation(
             "nvidia.com/nouse-gpuuuid",
             "n1-gpu2,n1-gpu3,n1-gpu4,n1-gpu5,n1-gpu6,n1-gpu7,n1-gpu8,n1-gpu9,n1-gpu10,n1-gpu11"));
  CHECK(ReasonFor(r, "n1") == "10/12 CardUuidMismatch, 2/12 CardInsufficientMemory");
}

TEST_CASE("GPU policies: spread takes the emptiest card, binpack the fullest") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(3)).ok());
  Load(s, "n1-gpu1", "n1", 1, 4000, 40);
  Load(s, "n1-gpu2", "n1", 1, 2000, 20);
  CHECK(Uuids(MustFilter(s, MakePod("p").Container(1, 1000, 10)), 0) ==
        std::vector<std::string>{"n1-gpu0"});  // default GPU policy: spread
  CHECK(Uuids(MustFilter(s, MakePod("q")
                                .Container(1, 1000, 10)
                                .Annotation("hami.io/gpu-scheduler-policy", "binpack")),
              0) == std::vector<std::string>{"n1-gpu1"});
}

TEST_CASE("W10: a container's ties keep the order the previous container's sort left") {
  // HAMi sorts one device list in place for each container. Under spread,
  // the first container (256 MiB, 30 cores) scores gpu1 (4096 MiB) above the
  // equal gpu0 and gpu2 (16384 MiB): sorted [gpu1, gpu0, gpu2], it takes
  // gpu2, visited first from the end. The second container (75 cores, all
  // the memory) scores gpu0 and gpu1 alike; its sort keeps them as the first
  // left them, [gpu1, gpu0], so gpu0 is visited first. Registration order
  // would have put gpu1 last and picked it (as HAMi v2.10 does not).
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").Gpu(2, 16384).Gpu(2, 4096).Gpu(2, 16384)).ok());
  const FilterResult r = MustFilter(s, MakePod("p").Container(1, 256, 30).Container(1, -1, 75));
  CHECK(Uuids(r, 0) == std::vector<std::string>{"n1-gpu2"});
  CHECK(Uuids(r, 1) == std::vector<std::string>{"n1-gpu0"});
  // Each container alone takes the last of its equals in registration order.
  CHECK(Uuids(MustFilter(s, MakePod("q").Container(1, -1, 75)), 0) ==
        std::vector<std::string>{"n1-gpu2"});
}

TEST_CASE("device scoring weights change the choice (spec §5.4)") {
  // Count 10, Totalcore 100, Totalmem 100; the pod asks 40 % of memory.
  // gpu-a (Used 1, cores 90, mem 10): 1/1/1 -> 16, 1/1/3 -> 26, 1/3/1 -> 34
  // gpu-b (Used 7, cores 10, mem 20): 1/1/1 -> 15, 1/1/3 -> 27, 1/3/1 -> 17
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").Gpu(10, 100, 100).Gpu(10, 100, 100)).ok());
  Load(s, "n1-gpu0", "n1", 1, 10, 90);
  Load(s, "n1-gpu1", "n1", 7, 20, 10);
  auto pick = [&](const char* weights) {
    MakePod pod("p");
    pod.Container(1, -1, -1, 40).Annotation("hami.io/gpu-scheduler-policy", "binpack");
    if (weights != nullptr) pod.Annotation("hami.io/device-scoring-weights", weights);
    return Uuids(MustFilter(s, pod), 0).at(0);
  };
  CHECK(pick(nullptr) == "n1-gpu0");                   // 16 > 15
  CHECK(pick("slot=1,core=1,memory=3") == "n1-gpu1");  // 27 > 26
  CHECK(pick("slot=1,core=3,memory=1") == "n1-gpu0");  // 34 > 17
  Result<FilterResult> bad =
      Filter(s, MakePod("q").Container(1).Annotation("hami.io/device-scoring-weights", "slot=1"),
             {}, kNow);
  CHECK(bad.status().code() == StatusCode::kMalformed);
}

TEST_CASE("W2: the request counts on model-named devices") {
  // Both cards equally loaded; under spread, the request term is what breaks
  // no tie here, but it must raise the score of every NVIDIA card alike: the
  // choice equals the one made with Type "NVIDIA".
  ClusterSnapshot model, generic;
  REQUIRE(model
              .AddNode(MakeNode("n1")
                           .Gpu(10, 8000, 100, 0, "NVIDIA A100")
                           .Gpu(10, 8000, 100, 0, "NVIDIA A100"))
              .ok());
  REQUIRE(
      generic
          .AddNode(MakeNode("n1").Gpu(10, 8000, 100, 0, "NVIDIA").Gpu(10, 8000, 100, 0, "NVIDIA"))
          .ok());
  Load(model, "n1-gpu0", "n1", 1, 1000, 10);
  Load(generic, "n1-gpu0", "n1", 1, 1000, 10);
  Pod pod = MakePod("p").Container(1, 1000, 10);
  CHECK(Uuids(MustFilter(model, pod), 0) == Uuids(MustFilter(generic, pod), 0));
}

TEST_CASE("numa-bind keeps a container's GPUs on one NUMA node") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1")
                        .Gpu(10, 8000, 100, 0)
                        .Gpu(10, 8000, 100, 1)
                        .Gpu(10, 8000, 100, 0)
                        .Gpu(10, 8000, 100, 1))
              .ok());
  Load(s, "n1-gpu1", "n1", 1, 7000, 0);  // NUMA 1 has only one card with 2000 MiB free
  FilterResult r =
      MustFilter(s, MakePod("p").Container(2, 3000).Annotation("nvidia.com/numa-bind", "true"));
  auto got = Uuids(r, 0);
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<std::string>{"n1-gpu0", "n1-gpu2"});
}

TEST_CASE("topology-aware: best-connected pair, worst-connected single card") {
  // gpu1 and gpu3 share NVLinks (1200); every other pair is 100.
  ClusterSnapshot s;
  REQUIRE(
      s.AddNode(MakeNode("n1").Gpus(4).Annotation(
                    "hami.io/node-nvidia-score",
                    R"([{"uuid":"n1-gpu0","score":{"n1-gpu1":100,"n1-gpu2":100,"n1-gpu3":100}},)"
                    R"({"uuid":"n1-gpu1","score":{"n1-gpu0":100,"n1-gpu2":100,"n1-gpu3":1200}},)"
                    R"({"uuid":"n1-gpu2","score":{"n1-gpu0":100,"n1-gpu1":100,"n1-gpu3":100}},)"
                    R"({"uuid":"n1-gpu3","score":{"n1-gpu0":100,"n1-gpu1":1200,"n1-gpu2":100}}])"))
          .ok());
  FilterResult two = MustFilter(s, MakePod("p").Container(2, 100).Annotation(
                                       "hami.io/gpu-scheduler-policy", "topology-aware"));
  auto got = Uuids(two, 0);
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<std::string>{"n1-gpu1", "n1-gpu3"});
  // One card: the lowest total to the others (gpu0 and gpu2: 300); the tie
  // goes to the first collected, and Fit collects from the end: gpu2.
  FilterResult one = MustFilter(s, MakePod("q").Container(1, 100).Annotation(
                                       "hami.io/gpu-scheduler-policy", "topology-aware"));
  CHECK(Uuids(one, 0) == std::vector<std::string>{"n1-gpu2"});
}

TEST_CASE("W14: missing pair scores count 0 instead of crashing") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(3).Annotation(
                        "hami.io/node-nvidia-score",
                        R"([{"uuid":"n1-gpu2","score":{"n1-gpu0":500}},{"uuid":"GPU-gone"}])"))
              .ok());
  FilterResult r = MustFilter(s, MakePod("p").Container(2, 100).Annotation(
                                     "hami.io/gpu-scheduler-policy", "topology-aware"));
  auto got = Uuids(r, 0);
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<std::string>{"n1-gpu0", "n1-gpu2"});
}

TEST_CASE("quota: a request above the namespace's gpumem limit is rejected") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(2)).ok());
  REQUIRE(s.SetQuota("ml", "q", StringMap{{"limits.nvidia.com/gpumem", "5000"}}).ok());
  REQUIRE(
      s.AddPod(MakePod("old", "ml").Container(1).Holding("n1", "n1-gpu0,NVIDIA,3000,0:;")).ok());
  CHECK(ReasonFor(MustFilter(s, MakePod("p", "ml").Container(1, 3000)), "n1") ==
        "2/2 ResourceQuotaNotFit");
  CHECK(MustFilter(s, MakePod("p2", "ml").Container(1, 2000)).node == "n1");
  CHECK(MustFilter(s, MakePod("p3", "other").Container(1, 3000)).node == "n1");
  // The pod's own reservation does not count against it when it is filtered again.
  Pod again = MakePod("old", "ml").Container(1, 5000);
  CHECK(MustFilter(s, again).node == "n1");
}

TEST_CASE("MIG: a request takes the smallest profile with a free placement") {
  Device mig =
      testing::MakeDevice("GPU-m").Count(7).Mem(40960).Mode("mig").Type("NVIDIA A100-SXM4-40GB");
  mig.mig_profiles = {MigProfile{"1g.5gb", 4864, 14, 1, {{6, 1}, {5, 1}, {4, 1}}},
                      MigProfile{"3g.20gb", 20096, 42, 3, {{4, 4}, {0, 4}}}};
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").With(mig)).ok());
  FilterResult r =
      MustFilter(s, MakePod("p").Container(1, 10000).Annotation("nvidia.com/vgpu-mode", "mig"));
  REQUIRE(r.node == "n1");
  CHECK(*r.annotations.Find("hami.io/vgpu-devices-allocated") == "GPU-m,NVIDIA,20096,42:;");
  CHECK(
      *r.annotations.Find("hami.io/vgpu-mig-allocations") ==
      R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-m","profile":"3g.20gb","placement":{"start":4,"size":4}}])");
  // 1g and 3g profiles take the highest free start first; a second pod gets
  // the other 3g placement, then the node is full for 3g.
  Pod second = MakePod("q").Container(1, 10000).Annotation("nvidia.com/vgpu-mode", "mig");
  Pod first = MakePod("p").Container(1, 10000);
  for (const auto& [k, v] : r.annotations.entries()) first.annotations.Set(k, v);
  REQUIRE(s.AddPod(first).ok());
  FilterResult r2 = MustFilter(s, second);
  CHECK(
      *r2.annotations.Find("hami.io/vgpu-mig-allocations") ==
      R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-m","profile":"3g.20gb","placement":{"start":0,"size":4}}])");
}

TEST_CASE("W10 and W15: ties go to the first node name; no candidates means every node") {
  ClusterSnapshot s;
  for (const char* name : {"n3", "n1", "n2"}) REQUIRE(s.AddNode(MakeNode(name).Gpus(1)).ok());
  Pod pod = MakePod("p").Container(1, 100);
  CHECK(MustFilter(s, pod).node == "n1");
  CHECK(MustFilter(s, pod, {}, {"n3", "n2", "n3"}).node == "n2");
  // Candidates in any order, repeated or not, give the same result, by name.
  FilterResult ascending = MustFilter(s, pod, {}, {"ghost", "n2", "n3"});
  FilterResult jumbled = MustFilter(s, pod, {}, {"n3", "ghost", "n2", "n2"});
  CHECK(ascending.node == "n2");
  CHECK(ascending.scores == jumbled.scores);
  CHECK(ascending.failed == jumbled.failed);
  CHECK(ascending.scores == std::vector<NodeScore>{{"n2", 0, 100}, {"n3", 0, 100}});
  // A removed node is unregistered, in either order.
  REQUIRE(s.RemoveNode("n3"));
  CHECK(ReasonFor(MustFilter(s, pod, {}, {"n1", "n3"}), "n3") == "node unregistered");
  CHECK(ReasonFor(MustFilter(s, pod, {}, {"n3", "n1"}), "n3") == "node unregistered");
  CHECK(MustFilter(s, pod, {}, {"n1", "n3", "n4"}).failed ==
        std::vector<NodeFailure>{{"n3", "node unregistered"}, {"n4", "node unregistered"}});
  FilterResult unknown = MustFilter(s, pod, {}, {"ghost"});
  CHECK_FALSE(unknown.node.has_value());
  CHECK(ReasonFor(unknown, "ghost") == "node unregistered");
  FilterResult none = MustFilter(s, MakePod("cpu").Container(0));
  CHECK_FALSE(none.has_requests);
}

TEST_CASE(
    "normalized scores: 0..100, higher is better, the chosen node 100, for every node policy") {
  // a: a 40 % loaded GPU, b: a 10 % loaded GPU, c: empty.
  ClusterSnapshot s;
  for (const char* n : {"a", "b", "c"}) REQUIRE(s.AddNode(MakeNode(n).Gpus(1, 10, 8000, 100)).ok());
  Load(s, "a-gpu0", "a", 1, 3200, 40);
  Load(s, "b-gpu0", "b", 1, 800, 10);
  struct Row {
    const char* node_policy;
    const char* gpu_policy;
    const char* best;  // by the policy's formula; fgd's is whichever fragments least
  };
  for (const Row& row : {Row{"binpack", "spread", "a"}, Row{"spread", "spread", "c"},
                         Row{"fgd", "fgd", nullptr}, Row{"volcano", "binpack", "a"}}) {
    const std::string policy = row.node_policy;
    CAPTURE(policy);
    FilterOptions o;
    o.node_policy = row.node_policy;
    o.gpu_policy = row.gpu_policy;
    FilterResult r = MustFilter(s, MakePod("p").Container(1, 2000, 20), o);
    REQUIRE(r.scores.size() == 3);
    REQUIRE(r.node.has_value());
    if (row.best != nullptr) CHECK(*r.node == row.best);
    // The policy's preference order, from the raw scores: spread prefers the lower.
    std::vector<NodeScore> by_preference = r.scores;
    std::stable_sort(by_preference.begin(), by_preference.end(),
                     [&](const NodeScore& x, const NodeScore& y) {
                       return policy == "spread" ? x.score < y.score : x.score > y.score;
                     });
    CHECK(by_preference.front().node == *r.node);
    CHECK(by_preference.front().normalized == 100);
    CHECK(by_preference.back().normalized == 0);
    for (std::size_t i = 1; i < by_preference.size(); ++i) {
      CHECK(by_preference[i].normalized <= by_preference[i - 1].normalized);
    }
  }
  // All equal: every node 100.
  ClusterSnapshot even;
  for (const char* n : {"x", "y"}) REQUIRE(even.AddNode(MakeNode(n).Gpus(1)).ok());
  for (const NodeScore& n : MustFilter(even, MakePod("p").Container(1)).scores)
    CHECK(n.normalized == 100);
}

TEST_CASE("options are validated") {
  ClusterSnapshot s;
  FilterOptions o;
  o.node_policy = "random";
  CHECK(Filter(s, MakePod("p").Container(1), {}, kNow, o).status().code() ==
        StatusCode::kInvalidArgument);
  o.node_policy = "binpack";
  o.gpu_policy = "binpack,best";
  CHECK(Filter(s, MakePod("p").Container(1), {}, kNow, o).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("properties over random clusters and request sequences") {
  Gen gen(42);
  for (int round = 0; round < 30; ++round) {
    CAPTURE(round);
    ClusterSnapshot s;
    const int nodes = static_cast<int>(gen.Int(1, 12));
    for (int n = 0; n < nodes; ++n) {
      MakeNode node("node" + std::to_string(n));
      for (auto g = gen.Int(1, 8); g > 0; --g) {
        node.Gpu(static_cast<std::int32_t>(gen.Int(1, 10)),
                 static_cast<std::int32_t>(gen.Int(1, 8) * 4096), 100,
                 static_cast<std::int32_t>(gen.Int(0, 1)));
      }
      if (gen.Bool()) node.Cpu(std::to_string(gen.Int(8, 64)));
      if (gen.Bool()) node.Memory(std::to_string(gen.Int(16, 256)) + "Gi");
      REQUIRE(s.AddNode(node).ok());
    }
    const ClusterSnapshot empty = s;
    FilterOptions options;
    options.node_policy = gen.Bool() ? "binpack" : (gen.Bool() ? "spread" : "fgd");
    options.gpu_policy = gen.Bool() ? "spread" : (gen.Bool() ? "binpack" : "fgd");
    for (int c = static_cast<int>(gen.Int(0, 6)); c > 0; --c) {
      const bool fraction = gen.Bool();
      options.workload.push_back(
          WorkloadClass{static_cast<double>(gen.Int(1, 5)),
                        fraction ? 0 : static_cast<std::int32_t>(gen.Int(1, 4)),
                        fraction ? static_cast<std::int32_t>(gen.Int(1, 999)) : 0,
                        gen.Int(0, 3) * 4000, gen.Int(0, 3) * 8192});
    }
    std::vector<std::string> placed;
    std::map<std::string, std::int64_t> cpu_on;  // node -> CPU the placed pods request
    for (int p = 0; p < 60; ++p) {
      MakePod pod("p" + std::to_string(p));
      const std::int64_t cpu = gen.Int(0, 8) * 1000;
      const std::int64_t memory_mib = gen.Int(0, 8) * 1024;
      pod.Requests(cpu, memory_mib);
      if (gen.Int(0, 5) == 0) {  // a pod without devices, bound where kube-scheduler put it
        const std::vector<std::string> names = s.NodeNames();
        const std::string node = names[static_cast<std::size_t>(
            gen.Int(0, static_cast<std::int64_t>(names.size()) - 1))];
        Pod cpu_only = pod.Container(0).BoundTo(node);
        FilterResult r = MustFilter(s, cpu_only, options);
        CHECK_FALSE(r.has_requests);
        CHECK(r.node.has_value() == (options.node_policy == "fgd"));
        REQUIRE(s.AddPod(cpu_only).ok());
        if (cpu > 0 || memory_mib > 0) placed.push_back(cpu_only.uid);  // else nothing is held
        cpu_on[node] += cpu;
        continue;
      }
      pod.Container(
          static_cast<int>(gen.Int(1, 3)), gen.Bool() ? static_cast<int>(gen.Int(1, 20000)) : -1,
          static_cast<int>(gen.Int(0, 100)), gen.Bool() ? static_cast<int>(gen.Int(1, 100)) : -1);
      if (gen.Int(0, 3) == 0) pod.Annotation("nvidia.com/numa-bind", "true");
      Pod built = pod;
      FilterResult first = MustFilter(s, built, options);
      // Deterministic, whatever the candidate order.
      std::vector<std::string> shuffled = s.NodeNames();
      std::reverse(shuffled.begin(), shuffled.end());
      FilterResult second = MustFilter(s, built, options, shuffled);
      CHECK(first.node == second.node);
      CHECK(first.annotations == second.annotations);
      if (!first.node) continue;
      // Re-checked on its own node, the result still fits, with the same devices.
      FilterResult again = MustFilter(s, built, options, {*first.node});
      CHECK(again.annotations == first.annotations);
      for (const auto& [key, value] : first.annotations.entries())
        built.annotations.Set(key, value);
      REQUIRE(s.AddPod(built).ok());
      placed.push_back(built.uid);
      cpu_on[*first.node] += cpu;
      for (const std::string& name : s.NodeNames()) {
        CHECK(s.NodeCpuMemoryOf(name)->cpu_requested_milli == cpu_on[name]);
      }
      // No device over its slots, memory or cores.
      for (const std::string& name : s.NodeNames()) {
        Result<std::vector<DeviceView>> devices = s.NodeDevices(name);
        REQUIRE(devices.ok());
        for (const DeviceView& d : *devices) {
          CHECK(d.usage.used <= d.device.count);
          CHECK(d.usage.usedmem <= d.device.devmem);
          CHECK(d.usage.usedcores <= d.device.devcore);
        }
      }
    }
    // Removing every pod restores the empty cluster exactly.
    for (const std::string& uid : placed) CHECK(s.RemovePod(uid));
    for (const std::string& name : s.NodeNames()) {
      auto a = *s.NodeDevices(name);
      auto b = *empty.NodeDevices(name);
      REQUIRE(a.size() == b.size());
      for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].usage == b[i].usage);
      CHECK(*s.NodeCpuMemoryOf(name) == *empty.NodeCpuMemoryOf(name));
    }
  }
}

TEST_CASE("reasons off: the same placement, rejected nodes listed without reasons") {
  Gen gen(11);
  ClusterSnapshot s;
  for (int n = 0; n < 20; ++n) {
    REQUIRE(
        s.AddNode(MakeNode("n" + std::to_string(n)).Gpus(static_cast<int>(gen.Int(1, 4)), 10, 4000))
            .ok());
  }
  FilterOptions quick;
  quick.reasons = false;
  for (int p = 0; p < 40; ++p) {
    Pod pod = MakePod("p" + std::to_string(p))
                  .Container(static_cast<int>(gen.Int(1, 4)), static_cast<int>(gen.Int(100, 5000)));
    FilterResult full = MustFilter(s, pod);
    FilterResult fast = MustFilter(s, pod, quick);
    CHECK(fast.node == full.node);
    CHECK(fast.annotations == full.annotations);
    CHECK(fast.scores == full.scores);
    REQUIRE(fast.failed.size() == full.failed.size());
    for (std::size_t i = 0; i < fast.failed.size(); ++i) {
      CHECK(fast.failed[i].node == full.failed[i].node);
      CHECK(fast.failed[i].reason.empty());
    }
    if (full.node) {
      Pod placed = pod;
      for (const auto& [k, v] : full.annotations.entries()) placed.annotations.Set(k, v);
      REQUIRE(s.AddPod(placed).ok());
    }
  }
}

TEST_CASE("other vendors go through the same rules with their data (Hygon DCU)") {
  Result<DeviceConfig> config = ParseDeviceConfig("nvidia: {}\nhygon:\n  memoryFactor: 2\n");
  REQUIRE(config.ok());
  ClusterSnapshot s(*config);
  Node node;
  node.name = "dcu-1";
  node.annotations.Set("hami.io/node-dcu-register",
                       "DCU-0,4,65520,100,DCU-Z100L,0,true,0,hami-core:DCU-1,4,65520,100,DCU-Z100L,"
                       "0,true,1,hami-core:");
  REQUIRE(s.AddNode(node).ok());
  Pod pod = MakePod("p");
  Container c;
  c.name = "main";
  c.limits.Set("hygon.com/dcunum", "1");
  c.limits.Set("hygon.com/dcumem", "20000");  // x memoryFactor 2 = 40000 MiB
  pod.containers.push_back(c);
  FilterResult r = MustFilter(s, pod);
  REQUIRE(r.node == "dcu-1");
  const std::string* allocated = r.annotations.Find("hami.io/dcu-devices-allocated");
  REQUIRE(allocated != nullptr);
  CHECK(allocated->find(",DCU,40000,100:") != std::string::npos);  // default cores 100 for Hygon
  CHECK(r.annotations.Find("hami.io/vgpu-devices-allocated") == nullptr);
  // A second whole-card request takes the other card; a third finds none.
  for (const auto& [k, v] : r.annotations.entries()) pod.annotations.Set(k, v);
  REQUIRE(s.AddPod(pod).ok());
  Pod second = pod;
  second.uid = "uid-second";
  second.name = "second";
  second.annotations = StringMap{};
  FilterResult r2 = MustFilter(s, second);
  REQUIRE(r2.node == "dcu-1");
  CHECK(
      r2.annotations.Find("hami.io/dcu-devices-allocated")->find(r.devices[0].second[0][0].uuid) ==
      std::string::npos);
}
