// The scheduler extender's wire format (devshare/kube/extender.hpp).
#include "devshare/kube/extender.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <random>
#include <string>
#include <vector>

using namespace devshare;
using namespace devshare::kube;

namespace {

constexpr std::string_view kPod =
    R"({"metadata":{"name":"p","namespace":"ns","uid":"u1"},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})";

}  // namespace

TEST_CASE("kube: ExtenderArgs with NodeNames, and the filter result lists every rejected node") {
  Result<ExtenderArgs> args = DecodeExtenderArgs(
      fmt::format(R"({{"Pod":{},"Nodes":null,"NodeNames":["a","b","c","d"]}})", kPod));
  REQUIRE(args.ok());
  CHECK(args->pod.uid == "u1");
  CHECK(args->node_names);
  CHECK(args->nodes == std::vector<std::string>{"a", "b", "c", "d"});
  engine::FilterReply reply{1, {"b"}, {NodeFailure{"a", "1/2 CardInsufficientMemory"}}, "", {}};
  CHECK(EncodeFilterResult(*args, reply) ==
        R"({"Nodes":null,"NodeNames":["b"],"FailedNodes":{"a":"1/2 CardInsufficientMemory"},)"
        R"("FailedAndUnresolvableNodes":{},"Error":""})");
  engine::FilterReply unschedulable{
      3, {}, {NodeFailure{"a", "1/2 CardInsufficientMemory"}}, "", {}};
  CHECK(EncodeFilterResult(*args, unschedulable) ==
        R"({"Nodes":null,"NodeNames":[],"FailedNodes":{"a":"1/2 CardInsufficientMemory",)"
        R"("b":"does not fit","c":"does not fit","d":"does not fit"},)"
        R"("FailedAndUnresolvableNodes":{},"Error":""})");
  // Under preemption, the nodes no eviction helps are unresolvable.
  engine::FilterReply preempting{4,
                                 {},
                                 {NodeFailure{"a", "preempting: evicting ns/x on a"}},
                                 "",
                                 {NodeFailure{"b", "1/1 CardInsufficientMemory"}}};
  CHECK(EncodeFilterResult(*args, preempting) ==
        R"({"Nodes":null,"NodeNames":[],"FailedNodes":{"a":"preempting: evicting ns/x on a",)"
        R"("c":"does not fit","d":"does not fit"},)"
        R"("FailedAndUnresolvableNodes":{"b":"1/1 CardInsufficientMemory"},"Error":""})");
  engine::FilterReply refused{2, {}, {}, "not ready", {}};
  CHECK(
      EncodeFilterResult(*args, refused) ==
      R"({"Nodes":null,"NodeNames":[],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":"not ready"})");
}

TEST_CASE("kube: ExtenderArgs with full Nodes (nodeCacheCapable false) echo the kept objects") {
  Result<ExtenderArgs> args = DecodeExtenderArgs(fmt::format(
      R"({{"Pod":{},"Nodes":{{"metadata":{{}},"items":[{{"metadata":{{"name":"a"}}}},{{"metadata":{{"name":"b"}},"spec":{{}}}}]}},"NodeNames":null}})",
      kPod));
  REQUIRE(args.ok());
  CHECK_FALSE(args->node_names);
  CHECK(args->nodes == std::vector<std::string>{"a", "b"});
  const std::string out = EncodeFilterResult(*args, engine::FilterReply{1, {"b"}, {}, "", {}});
  CHECK(out.starts_with(
      R"({"Nodes":{"metadata":{},"items":[{"metadata":{"name":"b"},"spec":{}}]},"NodeNames":null,)"));
}

namespace {

// The filter result as a JSON object keeps it (first insertion decides the
// position, the last value wins), serialised by Boost.JSON: what the
// extender's streaming encoder must write byte for byte.
std::string ReferenceFilterResult(const ExtenderArgs& args, const engine::FilterReply& reply) {
  namespace bj = boost::json;
  auto kept = [&](const std::string& node) {
    return std::find(reply.nodes.begin(), reply.nodes.end(), node) != reply.nodes.end();
  };
  bj::object failed;
  for (const NodeFailure& f : reply.failed)
    failed[f.node] = f.reason.empty() ? std::string("does not fit") : f.reason;
  if (reply.error.empty() && reply.nodes.empty()) {
    for (const std::string& node : args.nodes) {
      if (!failed.contains(node)) failed[node] = "does not fit";
    }
  }
  bj::object out;
  if (args.node_names) {
    out["Nodes"] = nullptr;
    bj::array names;
    for (const std::string& node : args.nodes) {
      if (kept(node)) names.emplace_back(node);
    }
    out["NodeNames"] = std::move(names);
  } else {
    bj::array items;
    for (std::size_t i = 0; i < args.nodes.size(); ++i) {
      if (kept(args.nodes[i])) items.push_back(bj::parse(args.node_items[i]));
    }
    out["Nodes"] = bj::object{{"metadata", bj::object{}}, {"items", std::move(items)}};
    out["NodeNames"] = nullptr;
  }
  out["FailedNodes"] = std::move(failed);
  out["FailedAndUnresolvableNodes"] = bj::object{};
  out["Error"] = reply.error;
  return bj::serialize(out);
}

}  // namespace

TEST_CASE("kube: the filter result is what a JSON object would serialise, for any reply") {
  // Names and reasons with characters to escape, duplicates in the request
  // and in the failures, empty reasons, errors, one or many kept nodes.
  const std::vector<std::string> names = {"n0",
                                          "n1",
                                          "n\"2",
                                          "n\\3",
                                          "n\t4",
                                          "n5",
                                          "n6",
                                          "n7",
                                          "node-with-a-long-name-8",
                                          "n\x01"
                                          "9"};
  const std::vector<std::string> reasons = {"", "1/2 CardInsufficientMemory", "say \"no\"",
                                            "line\nbreak", "node unregistered"};
  std::mt19937_64 rng(7);
  auto pick = [&](const std::vector<std::string>& from) { return from[rng() % from.size()]; };
  for (int round = 0; round < 2000; ++round) {
    CAPTURE(round);
    ExtenderArgs args;
    args.node_names = rng() % 4 != 0;
    const std::size_t n = rng() % 12;
    for (std::size_t i = 0; i < n; ++i) {
      args.nodes.push_back(pick(names));
      if (!args.node_names)
        args.node_items.push_back(
            fmt::format(R"({{"metadata":{{"name":{}}},"i":{}}})",
                        boost::json::serialize(boost::json::string_view(args.nodes.back())), i));
    }
    engine::FilterReply reply;
    const std::size_t kept = rng() % 3 == 0 ? rng() % 7 : rng() % 2;
    for (std::size_t i = 0; i < kept; ++i) reply.nodes.push_back(pick(names));
    const std::size_t failures = rng() % 2 == 0 ? 0 : rng() % 12;
    for (std::size_t i = 0; i < failures; ++i)
      reply.failed.push_back(NodeFailure{pick(names), pick(reasons)});
    if (rng() % 8 == 0) reply.error = pick(reasons) + " error";
    CHECK(EncodeFilterResult(args, reply) == ReferenceFilterResult(args, reply));
  }
}

TEST_CASE("kube: malformed extender requests are named") {
  auto error = [](std::string_view json) {
    Result<ExtenderArgs> r = DecodeExtenderArgs(json);
    CHECK(r.status().code() == StatusCode::kMalformed);
    return std::string(r.status().message());
  };
  CHECK(error("{").starts_with("extender request: not JSON"));
  CHECK(error("[]") == "extender request: not a JSON object");
  CHECK(error(R"({"NodeNames":[]})") == "extender request: Pod is missing or not an object");
  CHECK(error(fmt::format(R"({{"Pod":{}}})", kPod)) ==
        "extender request: neither NodeNames nor Nodes is given");
  CHECK(error(fmt::format(R"({{"Pod":{},"NodeNames":["a",1]}})", kPod)) ==
        "extender request: NodeNames[1] is not a string");
  CHECK(error(R"({"Pod":{"metadata":7},"NodeNames":[]})").starts_with("extender request: Pod: "));
}

TEST_CASE("kube: binding args and results, priorities on 0..10") {
  Result<BindArgs> b =
      DecodeBindArgs(R"({"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n"})");
  REQUIRE(b.ok());
  CHECK(*b == BindArgs{"p", "ns", "u", "n"});
  CHECK(DecodeBindArgs(R"({"PodName":"p","PodNamespace":"ns","Node":"n"})").status().message() ==
        "extender request: PodUID is missing or not a string");
  CHECK(EncodeBindResult("") == R"({"Error":""})");
  // The normalized score (0..100) on the extender's 0..10, rounded; the raw score is not used.
  CHECK(
      EncodeHostPriorities({NodeScore{"a", 0.5, 100}, NodeScore{"b", 30, 46}, NodeScore{"c", 7, 0},
                            NodeScore{"d", 1, 44.9}}) ==
      R"([{"Host":"a","Score":10},{"Host":"b","Score":5},{"Host":"c","Score":0},{"Host":"d","Score":4}])");
}

TEST_CASE("kube: preemption args by UID, full victims or none; the result as meta victims") {
  Result<PreemptionArgs> meta = DecodePreemptionArgs(fmt::format(
      R"({{"Pod":{},"NodeNameToMetaVictims":{{"n1":{{"Pods":[{{"UID":"u1"}},{{"UID":"u2"}}],)"
      R"("NumPDBViolations":1}},"n2":{{"Pods":null,"NumPDBViolations":0}}}}}})",
      kPod));
  REQUIRE(meta.ok());
  CHECK(meta->victims.size() == 2);
  CHECK(meta->victims.at("n1") == engine::NodeVictims{{"u1", "u2"}, 1});
  CHECK(meta->victims.at("n2") == engine::NodeVictims{});
  Result<PreemptionArgs> full = DecodePreemptionArgs(fmt::format(
      R"({{"Pod":{},"NodeNameToVictims":{{"n1":{{"Pods":[{{"metadata":{{"uid":"u3"}}}}]}}}},)"
      R"("NodeNameToMetaVictims":null}})",
      kPod));
  REQUIRE(full.ok());
  CHECK(full->victims.at("n1").uids == std::vector<std::string>{"u3"});
  auto error = [](const std::string& json) {
    return std::string(DecodePreemptionArgs(json).status().message());
  };
  CHECK(error(R"({"NodeNameToMetaVictims":{}})") ==
        "extender request: Pod is missing or not an object");
  CHECK(error(fmt::format(R"({{"Pod":{},"NodeNameToMetaVictims":{{"n1":{{"Pods":[{{}}]}}}}}})",
                          kPod)) ==
        "extender request: NodeNameToMetaVictims[n1].Pods[0] has no UID");
  CHECK(error(fmt::format(
            R"({{"Pod":{},"NodeNameToMetaVictims":{{"n1":{{"NumPDBViolations":"x"}}}}}})", kPod)) ==
        "extender request: NodeNameToMetaVictims[n1].NumPDBViolations is not a whole number");
  CHECK(EncodePreemptionResult({{"n1", {{"u1"}, 0}}, {"n2", {}}}) ==
        R"({"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"u1"}],"NumPDBViolations":0},)"
        R"("n2":{"Pods":[],"NumPDBViolations":0}}})");
}
