// Shared builders and generators for the unit tests.
#ifndef DEVSHARE_TESTS_TESTUTIL_HPP_
#define DEVSHARE_TESTS_TESTUTIL_HPP_

#include <cstdint>
#include <random>
#include <string>

#include "devshare/device.hpp"
#include "devshare/node_codec.hpp"
#include "devshare/objects.hpp"
#include "devshare/pod_codec.hpp"
#include "devshare/testing.hpp"

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
  MakeDevice& Index(std::uint32_t v) {
    d_.index = v;
    return *this;
  }
  MakeDevice& Count(std::int32_t v) {
    d_.count = v;
    return *this;
  }
  MakeDevice& Mem(std::int32_t v) {
    d_.devmem = v;
    return *this;
  }
  MakeDevice& Cores(std::int32_t v) {
    d_.devcore = v;
    return *this;
  }
  MakeDevice& Type(std::string v) {
    d_.type = std::move(v);
    return *this;
  }
  MakeDevice& Numa(std::int32_t v) {
    d_.numa = v;
    return *this;
  }
  MakeDevice& Mode(std::string v) {
    d_.mode = std::move(v);
    return *this;
  }
  MakeDevice& Health(bool v) {
    d_.health = v;
    return *this;
  }
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
    std::string s(static_cast<std::size_t>(
                      Int(static_cast<std::int64_t>(min_len), static_cast<std::int64_t>(max_len))),
                  ' ');
    for (char& c : s)
      c = alphabet[static_cast<std::size_t>(
          Int(0, static_cast<std::int64_t>(alphabet.size()) - 1))];
    return s;
  }

 private:
  std::mt19937_64 rng_;
};

// devshare/testing.hpp's NodeBuilder with the unit tests' conventions:
// GPUs "<node>-gpu<i>" of 8,000 MiB, Gpus(count, slots, memory, cores).
class MakeNode {
 public:
  explicit MakeNode(std::string name) : name_(name), node_(std::move(name)) {}
  // Adds a GPU "<node>-gpu<i>" with `slots`, `mem` MiB, `cores` percent.
  MakeNode& Gpu(std::int32_t slots = 10, std::int32_t mem = 8000, std::int32_t cores = 100,
                std::int32_t numa = 0, std::string type = "NVIDIA A100-SXM4-40GB") {
    const auto i = static_cast<std::uint32_t>(node_.devices().size());
    node_.With(MakeDevice(name_ + "-gpu" + std::to_string(i))
                   .Index(i)
                   .Count(slots)
                   .Mem(mem)
                   .Cores(cores)
                   .Numa(numa)
                   .Type(std::move(type)));
    return *this;
  }
  MakeNode& Gpus(int n, std::int32_t slots = 10, std::int32_t mem = 8000,
                 std::int32_t cores = 100) {
    for (int i = 0; i < n; ++i) Gpu(slots, mem, cores);
    return *this;
  }
  MakeNode& With(Device d) {
    node_.With(std::move(d));
    return *this;
  }
  MakeNode& Annotation(std::string key, std::string value) {
    node_.Annotation(std::move(key), std::move(value));
    return *this;
  }
  // Allocatable CPU and memory as quantities, e.g. "8" or "8000m", "16Gi".
  MakeNode& Cpu(std::string quantity) {
    node_.Cpu(std::move(quantity));
    return *this;
  }
  MakeNode& Memory(std::string quantity) {
    node_.Memory(std::move(quantity));
    return *this;
  }
  Node Build() const { return node_.Build(); }
  operator Node() const { return Build(); }  // NOLINT: builder

 private:
  std::string name_;
  NodeBuilder node_;
};

// devshare/testing.hpp's PodBuilder with the unit tests' names.
class MakePod {
 public:
  explicit MakePod(std::string name, std::string ns = "default")
      : pod_(std::move(name), std::move(ns)) {}
  // An app container asking `gpus` GPUs; mem (MiB) / cores (%) / pct when >= 0.
  MakePod& Container(int gpus, int mem = -1, int cores = -1, int pct = -1) {
    pod_.Gpus(gpus, mem, cores, pct);
    return *this;
  }
  MakePod& Init(int gpus, int mem = -1, int cores = -1, int pct = -1) {
    pod_.InitGpus(gpus, mem, cores, pct);
    return *this;
  }
  MakePod& Annotation(std::string key, std::string value) {
    pod_.Annotation(std::move(key), std::move(value));
    return *this;
  }
  // Marks the pod bound to `node` holding `allocated` (pod-devices encoding).
  MakePod& Holding(std::string node, std::string allocated) {
    pod_.Annotation("hami.io/vgpu-node", node);
    pod_.Annotation("hami.io/vgpu-devices-allocated", std::move(allocated));
    pod_.BoundTo(std::move(node));
    return *this;
  }
  MakePod& Uid(std::string uid) {
    pod_.Uid(std::move(uid));
    return *this;
  }
  // The CPU (millicores) and memory (MiB) the pod requests.
  MakePod& Requests(std::int64_t cpu_milli, std::int64_t memory_mib) {
    pod_.Requests(cpu_milli, memory_mib);
    return *this;
  }
  // Bound to `node` (spec.nodeName) without devices.
  MakePod& BoundTo(std::string node) {
    pod_.BoundTo(std::move(node));
    return *this;
  }
  Pod Build() const { return pod_.Build(); }
  operator Pod() const { return Build(); }  // NOLINT: builder

 private:
  PodBuilder pod_;
};

inline constexpr std::string_view kIdChars =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_. ";

}  // namespace devshare::testing

#endif  // DEVSHARE_TESTS_TESTUTIL_HPP_
