// Fuzzes CompileSelector (DRA CEL device selectors) and Matches on a fixed
// device that has every kind of attribute and a capacity.
//
// Properties: no crash; a failed compile is kMalformed or kUnsupported; a
// compiled selector keeps its text; evaluating twice gives the same result;
// an evaluation error is kInvalidArgument or kUnsupported.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/dra_cel.hpp"
#include "fuzz_fail.hpp"

namespace {

using devshare::StatusCode;
namespace dra = devshare::dra;

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("dra_cel", what, value);
}

dra::Device FixedDevice() {
  dra::Device d;
  d.name = "gpu-0";
  d.attributes["model"] = std::string("A100");
  d.attributes["index"] = std::int64_t{3};
  d.attributes["healthy"] = true;
  d.attributes["driverVersion"] = dra::Version{"550.54.15"};
  d.attributes["ids"] = std::vector<std::int64_t>{1, 2, 3};
  d.attributes["flags"] = std::vector<bool>{true, false};
  d.attributes["names"] = std::vector<std::string>{"a", "b"};
  d.attributes["versions"] = std::vector<dra::Version>{{"1.0.0"}, {"2.0.0-rc.1"}};
  d.attributes["resource.kubernetes.io/pcieRoot"] = std::string("pci0000:00");
  d.capacity["memory"] = dra::Capacity{{85899345920000}, {}};
  d.capacity["cores"] = dra::Capacity{{1500}, {}};
  d.allow_multiple_allocations = true;
  return d;
}

bool AllowedCompileError(StatusCode code) {
  return code == StatusCode::kMalformed || code == StatusCode::kUnsupported;
}
bool AllowedEvalError(StatusCode code) {
  return code == StatusCode::kInvalidArgument || code == StatusCode::kUnsupported;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto selector = dra::CompileSelector(input);
  if (!selector.ok()) {
    if (!AllowedCompileError(selector.status().code())) Fail("compile error code", input);
    return 0;
  }
  if (selector->expression() != input) Fail("expression text differs from the input", input);
  static const dra::Device device = FixedDevice();
  const auto first = dra::Matches(*selector, "gpu.nvidia.com", device);
  const auto second = dra::Matches(*selector, "gpu.nvidia.com", device);
  if (first.ok() != second.ok()) Fail("evaluation is not deterministic", input);
  if (first.ok()) {
    if (*first != *second) Fail("evaluation is not deterministic", input);
  } else {
    if (first.status().code() != second.status().code() ||
        first.status().message() != second.status().message()) {
      Fail("evaluation error is not deterministic", input);
    }
    if (!AllowedEvalError(first.status().code())) Fail("evaluation error code", input);
  }
  return 0;
}
