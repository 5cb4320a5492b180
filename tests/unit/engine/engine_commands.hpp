// What the engine tests share: a fixed clock and the commands of one type.
#ifndef DEVSHARE_TESTS_UNIT_ENGINE_COMMANDS_HPP_
#define DEVSHARE_TESTS_UNIT_ENGINE_COMMANDS_HPP_

#include <cstdint>
#include <variant>
#include <vector>

#include "devshare/engine/engine.hpp"

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

}  // namespace devshare::engine::testing

#endif  // DEVSHARE_TESTS_UNIT_ENGINE_COMMANDS_HPP_
