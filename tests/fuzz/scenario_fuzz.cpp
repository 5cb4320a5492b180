// Fuzzes ParseExperiment (the simulator's scenario files, through yaml-cpp).
//
// Property: no crash, no sanitizer report, no exception escaping; errors are
// kInvalidConfig, or kNotFound for a trace file (none can be read here). On
// success every variant has a name, the seeds are not empty, and the model
// settings are in the ranges the simulator accepts.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "devshare/sim/experiment.hpp"
#include "fuzz_fail.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("scenario", what, value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  devshare::sim::LoadOptions options;
  options.read = [](const std::string& path) -> devshare::Result<std::string> {
    return devshare::Status::NotFound("cannot read " + path);
  };
  auto parsed = devshare::sim::ParseExperiment(input, options);
  if (!parsed.ok()) {
    const devshare::StatusCode code = parsed.status().code();
    if (code != devshare::StatusCode::kInvalidConfig && code != devshare::StatusCode::kNotFound) {
      Fail("error is neither kInvalidConfig nor kNotFound", parsed.status().message());
    }
    return 0;
  }
  if (parsed->seeds.empty()) Fail("no seeds");
  if (parsed->variants.empty()) Fail("no variants");
  for (const devshare::sim::Variant& v : parsed->variants) {
    if (v.name.empty()) Fail("a variant without a name");
    const devshare::sim::Scenario& s = v.scenario.settings;
    if (s.api.qps <= 0 || s.api.burst < 1 || s.api.max_inflight < 1) Fail("API model out of range");
    if (s.plugins.heartbeat_ms <= 0 || s.scheduler.replicas < 1)
      Fail("model setting out of range", v.name);
    for (const devshare::sim::PodClass& c : v.scenario.pod_classes) {
      if (c.every_ms <= 0 || c.shape.gpus > 8 || c.shape.gpu_milli > 1000)
        Fail("pod class out of range");
    }
  }
  return 0;
}
