// fgd, the fragmentation-gradient policy, and the cluster fragmentation it
// measures (spec/peers-and-pain-points.md, the FGD paper).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "devshare/filter.hpp"
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

TEST_CASE("fgd: prefers the placement that fragments the cluster least") {
  // A half-used card and an empty one: a 0.5-GPU pod should fill the
  // half-used card, keeping the empty card whole for whole-GPU pods.
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(2, 10, 1000, 100)).ok());
  Load(s, "n1-gpu1", "n1", 1, 500, 50);
  FilterOptions o;
  o.node_policy = "fgd";
  o.gpu_policy = "fgd";
  FilterResult r = MustFilter(s, MakePod("p").Container(1, -1, 50, 50), o);
  CHECK(Uuids(r, 0) == std::vector<std::string>{"n1-gpu1"});
  // As node policy: the node where the pod closes a gap beats an empty node.
  ClusterSnapshot two;
  REQUIRE(two.AddNode(MakeNode("a").Gpus(1, 10, 1000, 100)).ok());
  REQUIRE(two.AddNode(MakeNode("b").Gpus(1, 10, 1000, 100)).ok());
  Load(two, "b-gpu0", "b", 1, 500, 50);
  CHECK(MustFilter(two, MakePod("q").Container(1, -1, 50, 50), o).node == "b");
}

TEST_CASE(
    "fgd: a class the node's free CPU or memory cannot host counts all its free GPU as fragment") {
  // One node of two free GPUs; the pod is placed there. The node score is
  // floor(100 * sigmoid(decrease in fragmentation, in GPUs)): 50 when the
  // placement changes nothing, 26 when it strands one more GPU (-1), 73
  // when it uses a GPU that was stranded (+1).
  struct Row {
    const char* name;
    std::vector<WorkloadClass> workload;
    const char* cpu;         // allocatable, or nullptr
    const char* memory;      // allocatable, or nullptr
    std::int64_t other_cpu;  // requested by a pod already bound there
    int cores;               // the pod's share of one GPU, percent
    std::int64_t pod_cpu, pod_memory_mib;
    double score;
  };
  const Row rows[] = {
      {"the class fits before and after", {{1, 1, 0, 4000, 0}}, "8", nullptr, 0, 100, 1000, 0, 50},
      {"the pod's CPU strands the other GPU",
       {{1, 1, 0, 4000, 0}},
       "8",
       nullptr,
       0,
       100,
       5000,
       0,
       26},
      {"the pod takes a GPU that CPU had stranded",
       {{1, 1, 0, 4000, 0}},
       "8",
       nullptr,
       7000,
       100,
       1000,
       0,
       73},
      {"unknown CPU capacity is unlimited",
       {{1, 1, 0, 4000, 0}},
       nullptr,
       nullptr,
       0,
       100,
       50000,
       0,
       50},
      {"a class asking no CPU fits any node", {{1, 1, 0, 0, 0}}, "8", nullptr, 0, 100, 8000, 0, 50},
      {"memory strands as CPU does", {{1, 1, 0, 0, 4096}}, nullptr, "8Gi", 0, 100, 0, 5120, 26},
      {"memory that still fits", {{1, 1, 0, 0, 4096}}, nullptr, "8Gi", 0, 100, 0, 4096, 50},
      {"a fractional class: all 1.5 free GPUs stranded",
       {{1, 0, 500, 4000, 0}},
       "8",
       nullptr,
       0,
       50,
       5000,
       0,
       18},
      {"a fractional class that still fits",
       {{1, 0, 500, 4000, 0}},
       "8",
       nullptr,
       0,
       50,
       1000,
       0,
       50},
      {"classes weigh by their share: 3/4 of one GPU",
       {{3, 1, 0, 4000, 0}, {1, 1, 0, 0, 0}},
       "8",
       nullptr,
       0,
       100,
       5000,
       0,
       32},
  };
  for (const Row& row : rows) {
    const std::string name = row.name;
    CAPTURE(name);
    MakeNode node("n");
    node.Gpus(2, 10, 1000, 100);
    if (row.cpu != nullptr) node.Cpu(row.cpu);
    if (row.memory != nullptr) node.Memory(row.memory);
    ClusterSnapshot s;
    REQUIRE(s.AddNode(node).ok());
    if (row.other_cpu > 0)
      REQUIRE(s.AddPod(MakePod("other").Requests(row.other_cpu, 0).BoundTo("n")).ok());
    FilterOptions o;
    o.node_policy = "fgd";
    o.gpu_policy = "fgd";
    o.workload = row.workload;
    FilterResult r = MustFilter(s,
                                MakePod("p")
                                    .Container(1, -1, row.cores, row.cores)
                                    .Requests(row.pod_cpu, row.pod_memory_mib),
                                o);
    REQUIRE(r.node == "n");
    REQUIRE(r.scores.size() == 1);
    CHECK(r.scores[0].score == row.score);
  }
}

TEST_CASE("fgd: prefers the node whose CPU keeps its other GPUs usable") {
  FilterOptions o;
  o.node_policy = "fgd";
  o.gpu_policy = "fgd";
  o.workload = {{1, 1, 0, 4000, 0}};
  const Pod pod = MakePod("p").Container(1, -1, 100, 100).Requests(5000, 0);
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("a").Gpus(2, 10, 1000, 100).Cpu("8")).ok());
  REQUIRE(s.AddNode(MakeNode("b").Gpus(2, 10, 1000, 100).Cpu("16")).ok());
  FilterResult r = MustFilter(s, pod, o);
  CHECK(r.node == "b");  // on a, 3 cores would be left: too few for the class
  CHECK(r.scores == std::vector<NodeScore>{{"a", 26, 0}, {"b", 50, 100}});
  // Knowing no CPU capacity, the nodes are alike and the first name wins.
  ClusterSnapshot blind;
  REQUIRE(blind.AddNode(MakeNode("a").Gpus(2, 10, 1000, 100)).ok());
  REQUIRE(blind.AddNode(MakeNode("b").Gpus(2, 10, 1000, 100)).ok());
  CHECK(MustFilter(blind, pod, o).node == "a");
  // CPU already taken on b by a pod without devices turns the choice.
  REQUIRE(s.AddPod(MakePod("cpu").Requests(9000, 0).BoundTo("b")).ok());
  CHECK(MustFilter(s, pod, o).node == "a");
  // As a GPU policy under binpack, the node comes from binpack.
  o.node_policy = "binpack";
  CHECK(MustFilter(s, pod, o).node == "a");
}

TEST_CASE("fgd: a pod without devices goes where its CPU strands the least GPU") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("a").Gpus(2, 10, 1000, 100).Cpu("8")).ok());
  REQUIRE(s.AddNode(MakeNode("b").Gpus(2, 10, 1000, 100).Cpu("16")).ok());
  REQUIRE(s.AddNode(MakeNode("c").Gpus(2, 10, 1000, 100).Cpu("8")).ok());
  Load(s, "c-gpu0", "c", 1, 1000, 100);
  Load(s, "c-gpu1", "c", 1, 1000, 100);
  FilterOptions o;
  o.node_policy = "fgd";
  o.gpu_policy = "fgd";
  o.workload = {{1, 1, 0, 4000, 0}};
  const Pod pod = MakePod("cpu").Container(0).Requests(5000, 0);
  FilterResult r = MustFilter(s, pod, o);
  CHECK_FALSE(r.has_requests);
  CHECK(r.annotations.empty());
  CHECK(r.devices.empty());
  // a: both free GPUs stranded (-2); b and c: nothing stranded, and among
  // equal scores the node with the fewest free GPUs wins.
  CHECK(r.scores == std::vector<NodeScore>{{"a", 11, 0}, {"b", 50, 100}, {"c", 50, 100}});
  CHECK(r.node == "c");
  // Other node policies leave such a pod to kube-scheduler.
  o.node_policy = "binpack";
  FilterResult binpack = MustFilter(s, pod, o);
  CHECK_FALSE(binpack.has_requests);
  CHECK_FALSE(binpack.node.has_value());
  CHECK(binpack.scores.empty());
}

TEST_CASE("fgd: workload classes with negative CPU or memory are refused") {
  ClusterSnapshot s;
  FilterOptions o;
  o.node_policy = "fgd";
  o.workload = {{1, 1, 0, -1, 0}};
  CHECK(Filter(s, MakePod("p").Container(1), {}, kNow, o).status().code() ==
        StatusCode::kInvalidArgument);
  o.workload = {{1, 1, 0, 0, -1}};
  CHECK(Filter(s, MakePod("p").Container(1), {}, kNow, o).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("fragmentation of a cluster: fgd's measure, node by node") {
  // One node of two GPUs (1000 MiB, 100 cores each), GPU 1 half used unless
  // said; the free GPUs the workload cannot use, as a weighted mean.
  struct Row {
    const char* name;
    std::vector<WorkloadClass> workload;
    int used_cores;          // on GPU 1 (memory in the same share)
    std::int64_t other_cpu;  // requested on the node (8 cores allocatable)
    double free, fragmented;
  };
  const Row rows[] = {
      {"whole GPUs, all free: nothing fragmented", {{1, 1, 0, 0, 0}}, 0, 0, 2, 0},
      {"a whole-GPU class cannot use half a GPU", {{1, 1, 0, 0, 0}}, 50, 0, 1.5, 0.5},
      {"a half-GPU class can", {{1, 0, 500, 0, 0}}, 50, 0, 1.5, 0},
      {"a 0.6-GPU class cannot", {{1, 0, 600, 0, 0}}, 50, 0, 1.5, 0.5},
      {"a 2-GPU class with one whole GPU free: all of it", {{1, 2, 0, 0, 0}}, 50, 0, 1.5, 1.5},
      {"a 2-GPU class with two free: none", {{1, 2, 0, 0, 0}}, 0, 0, 2, 0},
      {"a class the free CPU cannot host: all of it", {{1, 1, 0, 4000, 0}}, 0, 7000, 2, 2},
      {"a class the free CPU still hosts", {{1, 1, 0, 4000, 0}}, 0, 4000, 2, 0},
      {"classes weigh by their share", {{3, 1, 0, 4000, 0}, {1, 1, 0, 0, 0}}, 0, 7000, 2, 1.5},
      {"the default mix: the 4- and 8-GPU classes (5 % each)", {}, 0, 0, 2, 0.2},
  };
  for (const Row& row : rows) {
    const std::string name = row.name;
    CAPTURE(name);
    ClusterSnapshot s;
    REQUIRE(s.AddNode(MakeNode("n").Gpus(2, 10, 1000, 100).Cpu("8")).ok());
    if (row.used_cores > 0) Load(s, "n-gpu1", "n", 1, row.used_cores * 10, row.used_cores);
    if (row.other_cpu > 0)
      REQUIRE(s.AddPod(MakePod("other").Requests(row.other_cpu, 0).BoundTo("n")).ok());
    Result<ClusterFragmentation> f = MeasureFragmentation(s, row.workload);
    REQUIRE(f.ok());
    CHECK(f->free_gpus == doctest::Approx(row.free));
    CHECK(f->fragmented_gpus == doctest::Approx(row.fragmented));
    REQUIRE(f->nodes.size() == 1);
    CHECK(f->nodes[0] == NodeFragmentation{"n", f->free_gpus, f->fragmented_gpus});
  }
}

TEST_CASE("fragmentation of a cluster: sums over every node, by name; bad workloads refused") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("b").Gpus(2, 10, 1000, 100)).ok());
  REQUIRE(s.AddNode(MakeNode("a").Gpus(1, 10, 1000, 100)).ok());
  REQUIRE(s.AddNode(MakeNode("c")).ok());  // no devices
  Load(s, "b-gpu0", "b", 1, 250, 25);
  const std::vector<WorkloadClass> whole = {{1, 1, 0, 0, 0}};
  Result<ClusterFragmentation> f = MeasureFragmentation(s, whole);
  REQUIRE(f.ok());
  CHECK(f->nodes == std::vector<NodeFragmentation>{{"a", 1, 0}, {"b", 1.75, 0.75}, {"c", 0, 0}});
  CHECK(f->free_gpus == doctest::Approx(2.75));
  CHECK(f->fragmented_gpus == doctest::Approx(0.75));
  CHECK(MeasureFragmentation(ClusterSnapshot{})->nodes.empty());
  const std::vector<WorkloadClass> invalid[] = {{{1, 0, 0, 0, 0}},
                                                {{1, 1, 500, 0, 0}},
                                                {{-1, 1, 0, 0, 0}},
                                                {{1, 0, 1000, 0, 0}},
                                                {{1, 1, 0, -1, 0}}};
  for (const auto& workload : invalid) {
    CHECK(MeasureFragmentation(s, workload).status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("fragmentation of a cluster: fgd's node score is the decrease it measures") {
  // Over random clusters, every fgd placement's score is floor(100 *
  // sigmoid(fragmentation of the node before - after)), as measured here.
  Gen gen(7);
  for (int round = 0; round < 20; ++round) {
    CAPTURE(round);
    ClusterSnapshot s;
    for (int n = 0, nodes = static_cast<int>(gen.Int(1, 8)); n < nodes; ++n) {
      MakeNode node("node" + std::to_string(n));
      for (auto g = gen.Int(1, 8); g > 0; --g)
        node.Gpu(10, static_cast<std::int32_t>(gen.Int(1, 4) * 4096), 100);
      node.Cpu(std::to_string(gen.Int(8, 64)));
      REQUIRE(s.AddNode(node).ok());
    }
    FilterOptions o;
    o.node_policy = "fgd";
    o.gpu_policy = "fgd";
    for (int c = static_cast<int>(gen.Int(1, 5)); c > 0; --c) {
      const bool fraction = gen.Bool();
      o.workload.push_back(WorkloadClass{static_cast<double>(gen.Int(1, 5)),
                                         fraction ? 0 : static_cast<std::int32_t>(gen.Int(1, 4)),
                                         fraction ? static_cast<std::int32_t>(gen.Int(1, 999)) : 0,
                                         gen.Int(0, 3) * 4000, 0});
    }
    for (int p = 0; p < 40; ++p) {
      const int cores = gen.Bool() ? 100 : static_cast<int>(gen.Int(1, 99));
      Pod pod = MakePod("p" + std::to_string(p))
                    .Container(cores == 100 ? static_cast<int>(gen.Int(1, 3)) : 1, -1, cores, cores)
                    .Requests(gen.Int(0, 8) * 1000, 0);
      FilterResult r = MustFilter(s, pod, o);
      if (!r.node) continue;
      auto node_fragmentation = [&] {
        Result<ClusterFragmentation> f = MeasureFragmentation(s, o.workload);
        REQUIRE(f.ok());
        CHECK(f->fragmented_gpus <= f->free_gpus + 1e-9);
        for (const NodeFragmentation& n : f->nodes) {
          if (n.node == *r.node) return n.fragmented_gpus;
        }
        FAIL("node not measured");
        return 0.0;
      };
      const double before = node_fragmentation();
      for (const auto& [key, value] : r.annotations.entries()) pod.annotations.Set(key, value);
      REQUIRE(s.AddPod(pod).ok());
      const double after = node_fragmentation();
      double score = 0;
      for (const NodeScore& n : r.scores) score = n.node == *r.node ? n.score : score;
      CHECK(score ==
            std::floor(100.0 / (1.0 + std::exp(-std::nearbyint((before - after) * 1e6) / 1e6))));
    }
  }
}

TEST_CASE("fgd: which options keep the fragmentation measure") {
  struct Row {
    const char* node_policy;
    const char* gpu_policy;
    bool fgd;
  };
  const Row rows[] = {{"binpack", "spread", false},
                      {"fgd", "spread", true},
                      {"binpack", "fgd", true},
                      {"spread", "binpack,fgd", true},
                      {"volcano", "volcano-binpack", false}};
  for (const Row& row : rows) {
    FilterOptions o;
    o.node_policy = row.node_policy;
    o.gpu_policy = row.gpu_policy;
    CAPTURE(o.node_policy);
    CAPTURE(o.gpu_policy);
    CHECK(UsesFgd(o) == row.fgd);
  }
}

TEST_CASE("fgd: a snapshot keeping the fragmentation measure decides as one that does not") {
  // Twins fed the same changes, one measuring each node as it changes
  // (SetFragmentationWorkload, at the start or midway), compared after every
  // change: Filter under fgd, and MeasureFragmentation, to the bit.
  Gen gen(23);
  for (int round = 0; round < 24; ++round) {
    CAPTURE(round);
    FilterOptions o;
    o.node_policy = gen.Bool() ? "fgd" : "binpack";
    o.gpu_policy = o.node_policy == "binpack" || gen.Bool() ? "fgd" : "spread";
    for (int c = static_cast<int>(gen.Int(0, 6)); c > 0; --c) {
      const bool fraction = gen.Bool();
      o.workload.push_back(WorkloadClass{static_cast<double>(gen.Int(1, 5)),
                                         fraction ? 0 : static_cast<std::int32_t>(gen.Int(1, 4)),
                                         fraction ? static_cast<std::int32_t>(gen.Int(1, 999)) : 0,
                                         gen.Int(0, 4) * 4000, gen.Int(0, 4) * 16384});
    }
    ClusterSnapshot plain;
    ClusterSnapshot kept;
    const int measure_from = static_cast<int>(gen.Int(0, 30));
    auto node = [&](int n) {
      MakeNode made("node" + std::to_string(n));
      for (auto g = gen.Int(0, 8); g > 0; --g)
        made.Gpu(static_cast<std::int32_t>(gen.Int(1, 10)),
                 static_cast<std::int32_t>(gen.Int(1, 4) * 4096), 100);
      if (gen.Bool()) made.Cpu(std::to_string(gen.Int(8, 64)));
      if (gen.Bool()) made.Memory(std::to_string(gen.Int(16, 256)) + "Gi");
      return made;
    };
    auto both = [&](auto change) {
      change(plain);
      change(kept);
    };
    const int nodes = static_cast<int>(gen.Int(1, 10));
    for (int n = 0; n < nodes; ++n) {
      const Node made = node(n);
      both([&](ClusterSnapshot& s) { REQUIRE(s.AddNode(made).ok()); });
    }
    std::vector<Pod> placed;
    for (int step = 0; step < 60; ++step) {
      CAPTURE(step);
      if (step == measure_from) REQUIRE(kept.SetFragmentationWorkload(o.workload).ok());
      const auto what = gen.Int(0, 9);
      if (what == 0) {  // a node comes back changed, or goes
        const int n = static_cast<int>(gen.Int(0, nodes - 1));
        if (gen.Bool()) {
          const Node made = node(n);
          both([&](ClusterSnapshot& s) { REQUIRE(s.AddNode(made).ok()); });
        } else {
          both([&](ClusterSnapshot& s) { s.RemoveNode("node" + std::to_string(n)); });
        }
      } else if (what == 1 && !placed.empty()) {  // a pod leaves
        const auto i =
            static_cast<std::size_t>(gen.Int(0, static_cast<std::int64_t>(placed.size()) - 1));
        both([&](ClusterSnapshot& s) { s.RemovePod(placed[i].uid); });
        placed.erase(placed.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        // A pod arrives: without devices, bound by kube-scheduler; with
        // devices, where the Filter puts it; or a placed one filtered
        // again (its own placement released first).
        const bool again = what == 2 && !placed.empty();
        Pod pod = again ? placed[static_cast<std::size_t>(
                              gen.Int(0, static_cast<std::int64_t>(placed.size()) - 1))]
                        : Pod(MakePod("p" + std::to_string(step))
                                  .Requests(gen.Bool() ? 0 : gen.Int(1, 8) * 1000,
                                            gen.Bool() ? 0 : gen.Int(1, 8) * 4096));
        if (!again && gen.Int(0, 4) == 0) {
          const std::vector<std::string> names = plain.NodeNames();
          if (names.empty()) continue;
          pod = MakePod(pod.name)
                    .Requests(pod.cpu_milli, pod.memory_bytes >> 20)
                    .BoundTo(names[static_cast<std::size_t>(
                        gen.Int(0, static_cast<std::int64_t>(names.size()) - 1))]);
        } else if (!again) {
          const int cores = gen.Bool() ? 100 : static_cast<int>(gen.Int(1, 99));
          pod =
              MakePod(pod.name)
                  .Requests(pod.cpu_milli, pod.memory_bytes >> 20)
                  .Container(cores == 100 ? static_cast<int>(gen.Int(1, 3)) : 1, -1, cores, cores);
        }
        FilterResult a = MustFilter(plain, pod, o);
        FilterResult b = MustFilter(kept, pod, o);
        CHECK(a.node == b.node);
        CHECK(a.annotations == b.annotations);
        CHECK(a.scores == b.scores);
        CHECK(a.failed == b.failed);
        if (!again && (a.node || !pod.node_name.empty())) {
          for (const auto& [key, value] : a.annotations.entries()) pod.annotations.Set(key, value);
          both([&](ClusterSnapshot& s) { REQUIRE(s.AddPod(pod).ok()); });
          placed.push_back(pod);
        }
      }
      CHECK(*MeasureFragmentation(plain, o.workload) == *MeasureFragmentation(kept, o.workload));
    }
  }
}
