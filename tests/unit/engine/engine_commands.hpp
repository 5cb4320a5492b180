// What the engine tests share: a fixed clock, the commands of one type, and
// an engine with one registered node.
#ifndef DEVSHARE_TESTS_UNIT_ENGINE_COMMANDS_HPP_
#define DEVSHARE_TESTS_UNIT_ENGINE_COMMANDS_HPP_

#include <cstdint>
#include <variant>
#include <vector>

#include "devshare/engine/engine.hpp"
#include "testutil.hpp"

namespace devshare::engine::testing {

inline constexpr std::int64_t kNowMs = 1787300439000;

// The commands of type T among `commands`, in order.
template <typename T>
std::vector<T> Of(const std::vector<Command>& commands) {
  std::vector<T> out;
  for (const Command& c : commands) {
    if (const T* t = std::get_if<T>(&c)) out.push_back(*t);
  }
  return out;
}

// An engine with one registered node, n1, of two GPUs.
struct OneNodeEngine {
  explicit OneNodeEngine(EngineOptions options = {}) : engine(std::move(options)) {
    std::vector<Command> out;
    engine.NodeObserved(devshare::testing::MakeNode("n1").Gpus(2), kNowMs, out);
    engine.Tick(kNowMs, out);
  }
  // Filters `pod` (request 7) and completes the pod PATCH, if there is one
  // (PodWrites::kHami); returns the reply.
  FilterReply Place(const Pod& pod) {
    std::vector<Command> out;
    engine.Filter(7, pod, {}, kNowMs, out);
    auto patches = Of<PatchPod>(out);
    if (patches.empty()) return Of<FilterReply>(out).at(0);
    out.clear();
    engine.ApiResult(patches[0].id, true, kNowMs, out);
    return Of<FilterReply>(out).at(0);
  }
  Engine engine;
};

}  // namespace devshare::engine::testing

#endif  // DEVSHARE_TESTS_UNIT_ENGINE_COMMANDS_HPP_
