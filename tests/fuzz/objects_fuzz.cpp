// Fuzzes DecodePod, DecodeNode and DecodePodDisruptionBudget (Kubernetes
// objects as JSON), the request rules applied to the decoded containers, a
// budget's selector applied to the pod's labels, and quantity parsing.
//
// Properties: no crash; NodeExcludes of the input read as a pod and as a
// node gives a reason when it excludes; a decoded budget names its
// namespace and name; for every container quantity that is a whole number,
// QuantityValue equals it and QuantityMilliValue is 1000 times it (when that
// fits); a generated request never asks for a negative count or memory.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "devshare/objects.hpp"
#include "devshare/request.hpp"
#include "devshare/vendor.hpp"
#include "fuzz_fail.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("objects", what, value);
}

void CheckQuantity(std::string_view text) {
  const auto exact = devshare::QuantityAsInt64(text);
  if (!exact) return;
  if (devshare::QuantityValue(text) != exact) Fail("Value differs from AsInt64", text);
  const auto milli = devshare::QuantityMilliValue(text);
  const bool fits = *exact <= std::numeric_limits<std::int64_t>::max() / 1000 &&
                    *exact >= std::numeric_limits<std::int64_t>::min() / 1000;
  if (fits && milli != *exact * 1000) Fail("MilliValue is not 1000 x AsInt64", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckQuantity(input);
  const devshare::Result<devshare::Node> node = devshare::DecodeNode(input);
  const devshare::Result<devshare::PodDisruptionBudget> budget =
      devshare::DecodePodDisruptionBudget(input);
  if (budget.ok() && (budget->budget_namespace.empty() || budget->name.empty()))
    Fail("a budget without its namespace or name", input);
  auto pod = devshare::DecodePod(input);
  if (!pod.ok()) return 0;
  if (budget.ok()) static_cast<void>(devshare::LabelSelectorMatches(budget->selector, pod->labels));
  // A pod that may go to no node says why; one that may, nothing.
  if (node.ok()) {
    const std::optional<std::string> why = devshare::NodeExcludes(*pod, *node);
    if (why && why->empty()) Fail("an exclusion without a reason", input);
  }
  for (const auto* list : {&pod->init_containers, &pod->containers}) {
    for (const devshare::Container& c : *list) {
      for (const auto& [name, value] : c.limits.entries()) CheckQuantity(value);
      for (const auto& [name, value] : c.requests.entries()) CheckQuantity(value);
    }
  }
  for (const devshare::ContainerRequests& requests :
       devshare::PodRequests(*pod, devshare::DefaultDeviceConfig())) {
    for (const devshare::ContainerRequest& r : requests) {
      if (r.nums <= 0 || r.memreq < 0) Fail("invalid request", input);
    }
  }
  return 0;
}
