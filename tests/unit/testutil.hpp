// Shared builders and generators for the unit tests.
#ifndef DEVSHARE_TESTS_TESTUTIL_HPP_
#define DEVSHARE_TESTS_TESTUTIL_HPP_

#include <cstdint>
#include <random>
#include <string>

#include "devshare/device.hpp"

namespace devshare::testing {

// A fluent builder for a Device with HAMi's usual NVIDIA values.
class MakeDevice {
 public:
  explicit MakeDevice(std::string id) {
    d_.id = std::move(id);
    d_.count = 10;
    d_.devmem = 32768;
    d_.devcore = 100;
    d_.type = "NVIDIA-Tesla V100-PCIE-32GB";
    d_.mode = "hami-core";
    d_.health = true;
  }
  MakeDevice& Index(std::uint32_t v) { d_.index = v; return *this; }
  MakeDevice& Count(std::int32_t v) { d_.count = v; return *this; }
  MakeDevice& Mem(std::int32_t v) { d_.devmem = v; return *this; }
  MakeDevice& Cores(std::int32_t v) { d_.devcore = v; return *this; }
  MakeDevice& Type(std::string v) { d_.type = std::move(v); return *this; }
  MakeDevice& Numa(std::int32_t v) { d_.numa = v; return *this; }
  MakeDevice& Mode(std::string v) { d_.mode = std::move(v); return *this; }
  MakeDevice& Health(bool v) { d_.health = v; return *this; }
  operator Device() const { return d_; }  // NOLINT: builder
  Device Build() const { return d_; }

 private:
  Device d_;
};

// Deterministic random values for property tests (fixed seeds only).
class Gen {
 public:
  explicit Gen(std::uint64_t seed) : rng_(seed) {}
  std::int64_t Int(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  bool Bool() { return Int(0, 1) == 1; }
  // A string over `alphabet`, length in [min_len, max_len].
  std::string Text(std::string_view alphabet, std::size_t min_len, std::size_t max_len) {
    std::string s(static_cast<std::size_t>(Int(static_cast<std::int64_t>(min_len),
                                               static_cast<std::int64_t>(max_len))),
                  ' ');
    for (char& c : s) c = alphabet[static_cast<std::size_t>(Int(0, static_cast<std::int64_t>(alphabet.size()) - 1))];
    return s;
  }

 private:
  std::mt19937_64 rng_;
};

inline constexpr std::string_view kIdChars =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_. ";

}  // namespace devshare::testing

#endif  // DEVSHARE_TESTS_TESTUTIL_HPP_
