// Fuzzes DecideAdmission (AdmissionReview v1 requests).
//
// Properties: no crash; a decision always carries the request's uid; a
// denial carries no patch; an allowed decision's patch is a JSON array.
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "devshare/admission.hpp"
#include "fuzz_fail.hpp"

namespace {
[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("admission", what, value);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  devshare::AdmissionOptions options;
  options.scheduler_name = "hami-scheduler";
  auto decision =
      devshare::DecideAdmission(input, devshare::DefaultDeviceConfig(), options, nullptr);
  if (!decision.ok()) return 0;
  if (decision->uid.empty()) Fail("decision without uid", input);
  if (!decision->allowed && !decision->patch.empty()) Fail("denial with a patch", input);
  if (!decision->patch.empty()) {
    boost::system::error_code ec;
    boost::json::value patch = boost::json::parse(decision->patch, ec);
    if (ec || !patch.is_array()) Fail("patch is not a JSON array", decision->patch);
  }
  (void)devshare::EncodeAdmissionResponse(*decision);
  return 0;
}
