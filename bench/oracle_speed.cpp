// Times devshare's engine Filter on one cluster of the HAMi oracle's speed
// comparison (tests/oracle/compare.py --speed), the way the oracle's Go
// harness times HAMi's Scheduler.Filter on the same cluster: the objects are
// decoded once, the engine has registered every node and seen every pod, and
// each repetition is one Filter of the whole candidate list with its pod
// PATCH built and reported done. No JSON on the timed path.
//
//   oracle_speed REPEAT < cluster.json
//
// cluster.json: {"nodes": [Node], "pods": [Pod], "pod": Pod, "candidates": [name]}
// (Kubernetes API objects). Prints {"best_ms", "median_ms", "node"}.
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>
#include <variant>
#include <vector>

#include "devshare/engine/engine.hpp"
#include "devshare/objects.hpp"

namespace {

namespace bj = boost::json;
using devshare::Result;

[[noreturn]] void Fail(const std::string& message) {
  std::cerr << "oracle_speed: " << message << "\n";
  std::exit(2);
}

template <typename T>
T Decode(const bj::value& v, Result<T> (*decode)(std::string_view), const char* what) {
  Result<T> r = decode(bj::serialize(v));
  if (!r.ok()) Fail(fmt::format("{}: {}", what, r.status().message()));
  return *std::move(r);
}

// One Filter through the engine, its PATCH reported done; the chosen node.
std::string FilterOnce(devshare::engine::Engine& engine, std::uint64_t request,
                       const devshare::Pod& pod, const std::vector<std::string>& candidates,
                       std::vector<devshare::engine::Command>& out) {
  out.clear();
  engine.Filter(request, pod, candidates, 0, out);
  if (out.empty()) Fail("the engine answered nothing");
  if (const auto* reply = std::get_if<devshare::engine::FilterReply>(&out.front())) {
    if (!reply->error.empty()) Fail("Filter: " + reply->error);
    return reply->nodes.size() == 1 ? reply->nodes.front() : "";
  }
  const auto* patch = std::get_if<devshare::engine::PatchPod>(&out.front());
  if (patch == nullptr) Fail("Filter issued neither a reply nor a pod PATCH");
  const std::uint64_t id = patch->id;
  out.clear();
  engine.ApiResult(id, true, 0, out);
  const auto* reply =
      out.empty() ? nullptr : std::get_if<devshare::engine::FilterReply>(&out.front());
  if (reply == nullptr || reply->nodes.size() != 1) Fail("no reply keeping one node");
  return reply->nodes.front();
}

}  // namespace

int main(int argc, char** argv) {
  const int repeat = argc == 2 ? std::atoi(argv[1]) : 0;
  if (repeat < 1) Fail("usage: oracle_speed REPEAT < cluster.json");
  const std::string input{std::istreambuf_iterator<char>(std::cin),
                          std::istreambuf_iterator<char>()};
  boost::system::error_code ec;
  const bj::value doc = bj::parse(input, ec);
  if (ec || !doc.is_object()) Fail("input is not a JSON object");
  const bj::object& root = doc.get_object();

  devshare::engine::Engine engine{devshare::engine::EngineOptions{}};
  std::vector<devshare::engine::Command> out;
  for (const bj::value& n : root.at("nodes").as_array()) {
    engine.NodeObserved(Decode<devshare::Node>(n, devshare::DecodeNode, "node"), 0, out);
  }
  for (const bj::value& p : root.at("pods").as_array()) {
    engine.PodObserved(Decode<devshare::Pod>(p, devshare::DecodePod, "held pod"));
  }
  engine.Tick(0, out);
  if (!engine.Ready(0)) Fail("the engine is not ready after registration");
  const devshare::Pod pod = Decode<devshare::Pod>(root.at("pod"), devshare::DecodePod, "pod");
  std::vector<std::string> candidates;
  for (const bj::value& name : root.at("candidates").as_array()) {
    candidates.emplace_back(name.as_string());
  }

  std::vector<double> ms;
  std::string chosen;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    chosen = FilterOnce(engine, static_cast<std::uint64_t>(i) + 1, pod, candidates, out);
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    ms.push_back(took.count());
  }
  std::sort(ms.begin(), ms.end());
  fmt::print("{{\"best_ms\": {}, \"median_ms\": {}, \"node\": \"{}\"}}\n", ms.front(),
             ms[ms.size() / 2], chosen);
  return 0;
}
