// Codec micro-benchmarks: decode and encode the annotation values the
// scheduler reads and writes on every filter/bind.
//
// Inputs are built once, outside the timed loops, with the library's own
// encoders so they are byte-for-byte what HAMi/Volcano write. Every input is
// decoded once before timing; a benchmark whose input does not decode is
// reported as an error instead of timing the error path.
//
// Goals (from the issue): BM_Codec_DecodeNodeJson8Gpu <= 3 us,
// BM_Codec_DecodePodDevices4Containers <= 0.5 us.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/annotations.hpp"
#include "devshare/device.hpp"
#include "devshare/node_codec.hpp"
#include "devshare/pod_codec.hpp"

namespace {

using devshare::ContainerDevice;
using devshare::ContainerDevices;
using devshare::Device;
using devshare::DevicePairScore;
using devshare::MigAllocation;
using devshare::PodSingleDevice;
using devshare::RegisterFormat;

// "GPU-7c3b1f52-0b1e-4a49-9e1f-2f4a8d6c1a0<i>"-style UUIDs, distinct per GPU.
std::string GpuUuid(int i) {
  std::string uuid = "GPU-7c3b1f52-0b1e-4a49-9e1f-2f4a8d6c1a00";
  const std::string suffix = std::to_string(i + 1);
  uuid.replace(uuid.size() - suffix.size(), suffix.size(), suffix);
  return uuid;
}

// An 8 x A100-80GB node as the HAMi NVIDIA device plugin registers it.
const std::vector<Device>& Node8Gpu() {
  static const std::vector<Device> devices = [] {
    std::vector<Device> out;
    for (int i = 0; i < 8; ++i) {
      Device d;
      d.id = GpuUuid(i);
      d.index = static_cast<std::uint32_t>(i);
      d.count = 10;
      d.devmem = 81920;
      d.devcore = 100;
      d.type = "NVIDIA A100-SXM4-80GB";
      d.numa = i < 4 ? 0 : 1;
      d.mode = "hami-core";
      d.health = true;
      out.push_back(std::move(d));
    }
    return out;
  }();
  return devices;
}

// Four containers with one device each, as the scheduler writes
// `hami.io/vgpu-devices-to-allocate`.
const PodSingleDevice& Pod4Containers() {
  static const PodSingleDevice pod = [] {
    PodSingleDevice out;
    for (int i = 0; i < 4; ++i) {
      out.push_back(ContainerDevices{ContainerDevice{GpuUuid(i), "NVIDIA", 20000, 30}});
    }
    return out;
  }();
  return pod;
}

const std::string& NodeJson8Gpu() {
  static const std::string value = devshare::EncodeNodeDevices(Node8Gpu(), RegisterFormat::kJson);
  return value;
}

const std::string& NodeLegacy8Gpu() {
  static const std::string value = devshare::EncodeNodeDevices(Node8Gpu(), RegisterFormat::kLegacy);
  return value;
}

const std::string& NodeVolcano8Gpu() {
  static const std::string value =
      devshare::EncodeNodeDevices(Node8Gpu(), RegisterFormat::kVolcano);
  return value;
}

const std::string& PodDevices4Containers() {
  static const std::string value = devshare::EncodePodDevices(Pod4Containers());
  return value;
}

// Two MIG reservations, the second already completed by the device plugin.
const std::string& MigAllocations2() {
  static const std::string value = [] {
    std::vector<MigAllocation> allocations(2);
    allocations[0].container_index = 0;
    allocations[0].device_index = 0;
    allocations[0].gpu_uuid = GpuUuid(0);
    allocations[0].profile = "2g.20gb";
    allocations[0].placement = {0, 2};
    allocations[1].container_index = 1;
    allocations[1].device_index = 0;
    allocations[1].gpu_uuid = GpuUuid(0);
    allocations[1].profile = "3g.40gb";
    allocations[1].placement = {4, 4};
    allocations[1].mig_uuid = "MIG-5f2d8e4a-9c1b-5e7f-a3d6-0b4c8e2f6a19";
    allocations[1].gpu_instance_id = 2;
    allocations[1].compute_instance_id = 0;
    return devshare::EncodeMigAllocations(allocations);
  }();
  return value;
}

// `hami.io/node-nvidia-score` for 8 GPUs: every GPU scored against the 7 others.
const std::string& PairScores8Gpu() {
  static const std::string value = [] {
    std::vector<DevicePairScore> scores;
    for (int i = 0; i < 8; ++i) {
      DevicePairScore s;
      s.uuid = GpuUuid(i);
      for (int j = 0; j < 8; ++j) {
        if (j == i) continue;
        // NVLink within a NUMA half scores higher than across it.
        s.scores.emplace_back(GpuUuid(j), (i < 4) == (j < 4) ? 200 : 100);
      }
      scores.push_back(std::move(s));
    }
    return devshare::EncodePairScores(scores);
  }();
  return value;
}

constexpr std::string_view kNodeLock = "2026-08-01T06:00:00Z,default,trainer-7d9f8c6b5-x2kqp";
constexpr std::string_view kHandshake = "Requesting_2026-08-21 08:20:39";
constexpr std::string_view kScoringWeights = "slot=1,core=1,memory=3";

// Decodes `input` once and stops the benchmark with an error when it fails,
// so a broken fixture is reported rather than silently timing the error path.
template <typename Decode>
bool CheckDecodes(benchmark::State& state, std::string_view input, Decode decode) {
  auto result = decode(input);
  if (!result.ok()) {
    state.SkipWithError(std::string(result.status().ToString()).c_str());
    return false;
  }
  return true;
}

void SetBytes(benchmark::State& state, std::size_t bytes_per_iteration) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes_per_iteration));
}

// ---------------------------------------------------------------------------
// Node registration

void DecodeNode(benchmark::State& state, const std::string& input, RegisterFormat format) {
  const auto decode = [format](std::string_view v) {
    return devshare::DecodeNodeDevices(v, format);
  };
  if (!CheckDecodes(state, input, decode)) return;
  for (auto _ : state) {
    auto devices = devshare::DecodeNodeDevices(input, format);
    benchmark::DoNotOptimize(devices);
  }
  SetBytes(state, input.size());
}

void BM_Codec_DecodeNodeJson8Gpu(benchmark::State& state) {
  // kAuto: what the scheduler calls; detection is a trim and a first-byte check.
  DecodeNode(state, NodeJson8Gpu(), RegisterFormat::kAuto);
}
BENCHMARK(BM_Codec_DecodeNodeJson8Gpu);

void BM_Codec_EncodeNodeJson8Gpu(benchmark::State& state) {
  const std::vector<Device>& devices = Node8Gpu();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string out = devshare::EncodeNodeDevices(devices, RegisterFormat::kJson);
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  SetBytes(state, bytes);
}
BENCHMARK(BM_Codec_EncodeNodeJson8Gpu);

void BM_Codec_DecodeNodeLegacy8Gpu(benchmark::State& state) {
  DecodeNode(state, NodeLegacy8Gpu(), RegisterFormat::kAuto);
}
BENCHMARK(BM_Codec_DecodeNodeLegacy8Gpu);

void BM_Codec_DecodeNodeVolcano8Gpu(benchmark::State& state) {
  DecodeNode(state, NodeVolcano8Gpu(), RegisterFormat::kAuto);
}
BENCHMARK(BM_Codec_DecodeNodeVolcano8Gpu);

void BM_Codec_DecodePairScores8Gpu(benchmark::State& state) {
  const std::string& input = PairScores8Gpu();
  if (!CheckDecodes(state, input, devshare::DecodePairScores)) return;
  for (auto _ : state) {
    auto scores = devshare::DecodePairScores(input);
    benchmark::DoNotOptimize(scores);
  }
  SetBytes(state, input.size());
}
BENCHMARK(BM_Codec_DecodePairScores8Gpu);

// ---------------------------------------------------------------------------
// Pod devices and MIG reservations

void BM_Codec_DecodePodDevices4Containers(benchmark::State& state) {
  const std::string& input = PodDevices4Containers();
  if (!CheckDecodes(state, input, devshare::DecodePodDevices)) return;
  for (auto _ : state) {
    auto pod = devshare::DecodePodDevices(input);
    benchmark::DoNotOptimize(pod);
  }
  SetBytes(state, input.size());
}
BENCHMARK(BM_Codec_DecodePodDevices4Containers);

// The same decoding into a reused value, as a watch loop or device plugin
// decoding annotation after annotation does: no allocation.
void BM_Codec_DecodePodDevices4ContainersReuse(benchmark::State& state) {
  const std::string& input = PodDevices4Containers();
  devshare::PodSingleDevice pod;
  if (!devshare::DecodePodDevicesInto(input, pod).ok()) {
    state.SkipWithError("input does not decode");
    return;
  }
  for (auto _ : state) {
    devshare::Status status = devshare::DecodePodDevicesInto(input, pod);
    benchmark::DoNotOptimize(status);
    benchmark::DoNotOptimize(pod);
  }
  SetBytes(state, input.size());
}
BENCHMARK(BM_Codec_DecodePodDevices4ContainersReuse);

void BM_Codec_EncodePodDevices4Containers(benchmark::State& state) {
  const PodSingleDevice& pod = Pod4Containers();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string out = devshare::EncodePodDevices(pod);
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  SetBytes(state, bytes);
}
BENCHMARK(BM_Codec_EncodePodDevices4Containers);

void BM_Codec_DecodeMigAllocations(benchmark::State& state) {
  const std::string& input = MigAllocations2();
  if (!CheckDecodes(state, input, devshare::DecodeMigAllocations)) return;
  for (auto _ : state) {
    auto allocations = devshare::DecodeMigAllocations(input);
    benchmark::DoNotOptimize(allocations);
  }
  SetBytes(state, input.size());
}
BENCHMARK(BM_Codec_DecodeMigAllocations);

// ---------------------------------------------------------------------------
// Small annotation values

void BM_Codec_DecodeNodeLock(benchmark::State& state) {
  if (!CheckDecodes(state, kNodeLock, devshare::DecodeNodeLock)) return;
  for (auto _ : state) {
    auto lock = devshare::DecodeNodeLock(kNodeLock);
    benchmark::DoNotOptimize(lock);
  }
  SetBytes(state, kNodeLock.size());
}
BENCHMARK(BM_Codec_DecodeNodeLock);

void BM_Codec_DecodeHandshake(benchmark::State& state) {
  const auto decode = [](std::string_view v) { return devshare::DecodeHandshake(v); };
  if (!CheckDecodes(state, kHandshake, decode)) return;
  for (auto _ : state) {
    auto handshake = devshare::DecodeHandshake(kHandshake);
    benchmark::DoNotOptimize(handshake);
  }
  SetBytes(state, kHandshake.size());
}
BENCHMARK(BM_Codec_DecodeHandshake);

void BM_Codec_DecodeScoringWeights(benchmark::State& state) {
  if (!CheckDecodes(state, kScoringWeights, devshare::DecodeScoringWeights)) return;
  for (auto _ : state) {
    auto weights = devshare::DecodeScoringWeights(kScoringWeights);
    benchmark::DoNotOptimize(weights);
  }
  SetBytes(state, kScoringWeights.size());
}
BENCHMARK(BM_Codec_DecodeScoringWeights);

}  // namespace

BENCHMARK_MAIN();
