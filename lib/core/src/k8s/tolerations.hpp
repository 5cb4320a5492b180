// Private: Kubernetes' toleration rule, the one the core's pod placement
// (core/v1 Toleration and Taint) and DRA allocator (resource.k8s.io
// DeviceToleration and DeviceTaint) both apply. Either pair of types works:
// each has string members key, value, effect, and the toleration `op`.
#ifndef DEVSHARE_SRC_K8S_TOLERATIONS_HPP_
#define DEVSHARE_SRC_K8S_TOLERATIONS_HPP_

#include <algorithm>

namespace devshare::internal {

// Whether `toleration` tolerates `taint` (ToleratesTaint of core/v1 and of
// resource.k8s.io): an empty effect or key matches any; operator Exists
// matches any value, Equal (or none) the same value, another none.
template <typename Toleration, typename Taint>
bool ToleratesTaint(const Toleration& toleration, const Taint& taint) {
  if (!toleration.effect.empty() && toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  if (toleration.op == "Exists") return true;
  return (toleration.op.empty() || toleration.op == "Equal") && toleration.value == taint.value;
}

// Whether `taint` keeps what carries `tolerations` away: its effect is
// NoSchedule or NoExecute (PreferNoSchedule and None keep nothing away) and
// none of them tolerates it.
template <typename Taint, typename Tolerations>
bool TaintRepels(const Taint& taint, const Tolerations& tolerations) {
  if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") return false;
  return std::none_of(tolerations.begin(), tolerations.end(),
                      [&](const auto& toleration) { return ToleratesTaint(toleration, taint); });
}

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_K8S_TOLERATIONS_HPP_
