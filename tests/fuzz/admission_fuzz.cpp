// Fuzzes DecideAdmission (AdmissionReview v1 requests).
//
// Properties: no crash; a decision always carries the request's uid; a
// denial carries no patch; an allowed decision's patch is a JSON array. Each
// input is decided twice: without cluster state, and serving a DeviceClass
// (gpu, whose extendedResourceName is example.com/gpu) with DRA objects.
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "devshare/admission.hpp"
#include "devshare/snapshot.hpp"
#include "fuzz_fail.hpp"

namespace {
[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("admission", what, value);
}

void Decide(std::string_view input, const devshare::AdmissionOptions& options,
            const devshare::ClusterSnapshot* state) {
  auto decision = devshare::DecideAdmission(input, devshare::DefaultDeviceConfig(), options, state);
  if (!decision.ok()) return;
  if (decision->uid.empty()) Fail("decision without uid", input);
  if (!decision->allowed && !decision->patch.empty()) Fail("denial with a patch", input);
  if (!decision->patch.empty()) {
    boost::system::error_code ec;
    boost::json::value patch = boost::json::parse(decision->patch, ec);
    if (ec || !patch.is_array()) Fail("patch is not a JSON array", decision->patch);
  }
  (void)devshare::EncodeAdmissionResponse(*decision);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  devshare::AdmissionOptions options;
  options.scheduler_name = "hami-scheduler";
  Decide(input, options, nullptr);
  static const devshare::ClusterSnapshot dra_state = [] {
    devshare::ClusterSnapshot s;
    s.AddDeviceClass(devshare::dra::DeviceClass{"gpu", "", {}, "example.com/gpu"});
    return s;
  }();
  options.dra_device_classes = {"gpu"};
  Decide(input, options, &dra_state);
  return 0;
}
