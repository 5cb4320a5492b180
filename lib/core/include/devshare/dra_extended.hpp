// devshare/dra_extended.hpp — extended resources backed by DRA (KEP-5004)
// for the classes devshare serves.
//
// A DeviceClass backs the extended resource
// `deviceclass.resource.kubernetes.io/<class>` and, when it names one, its
// spec.extendedResourceName. kube-scheduler makes and allocates the claim
// for a pod asking such a resource itself, in its PreBind, and deletes one
// made for the pod by another hand — for a class devshare serves, a second
// allocator on devshare's devices. So devshare's webhook turns each such ask
// into a ResourceClaim of the class, named in the pod (spec.resourceClaims,
// the container's resources.claims) and listed in the pod's annotation
// kExtendedClaimsAnnotation; the container no longer asks the resource, the
// pod is gated, and the engine makes the claims (owned by the pod) and
// allocates them by its policy like any other.
//
// An extendedResourceName that a device plugin also serves (HAMi's
// `nvidia.com/gpu`) is left alone: kube-scheduler turns to DRA for it only on
// nodes that do not advertise it, which admission cannot tell.
//
// Thread-safety: value types and pure functions.
#ifndef DEVSHARE_DRA_EXTENDED_HPP_
#define DEVSHARE_DRA_EXTENDED_HPP_

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/dra_gate.hpp"
#include "devshare/export.hpp"
#include "devshare/objects.hpp"
#include "devshare/status.hpp"

namespace devshare::dra {

// The implicit extended resource of every DeviceClass: this, then its name.
inline constexpr std::string_view kImplicitExtendedResourcePrefix =
    "deviceclass.resource.kubernetes.io/";

// The claims the webhook named for a pod's asks: a JSON array of
// {"claim", "deviceClassName", "count"}.
inline constexpr std::string_view kExtendedClaimsAnnotation =
    "devshare.dev/extended-resource-claims";

// One container's ask for an extended resource a served class backs.
struct ExtendedResourceAsk {
  bool init = false;          // in spec.initContainers, else spec.containers
  std::size_t container = 0;  // its index there
  std::string container_name;
  std::string resource;  // as asked
  std::string device_class;
  std::int64_t count = 0;    // its limit (an extended resource's request equals it)
  bool in_requests = false;  // asked in requests too
  friend bool operator==(const ExtendedResourceAsk&, const ExtendedResourceAsk&) = default;
};

// The asks of `pod` for extended resources that a class of `served` backs,
// the init containers first, in the containers' and resources' order.
// `device_plugin_resources`: explicit names left alone. Errors: kMalformed
// naming the container and resource for a limit that is not a whole number
// of at least 1.
DEVSHARE_EXPORT Result<std::vector<ExtendedResourceAsk>> ServedExtendedResources(
    const Pod& pod, const DeviceClasses& classes, const ServedClasses& served,
    const std::set<std::string, std::less<>>& device_plugin_resources);

// A claim devshare makes for one ask.
struct ExtendedClaim {
  std::string claim;  // its name, in the pod's namespace
  std::string device_class;
  std::int64_t count = 0;
  friend bool operator==(const ExtendedClaim&, const ExtendedClaim&) = default;
};

DEVSHARE_EXPORT std::string EncodeExtendedClaims(const std::vector<ExtendedClaim>& claims);
// Errors: kMalformed naming the entry and field.
DEVSHARE_EXPORT Result<std::vector<ExtendedClaim>> DecodeExtendedClaims(std::string_view json);

// The ResourceClaim for `claim` in `claim_namespace`: one request,
// "devices", of exactly `count` devices of its class.
DEVSHARE_EXPORT ResourceClaim MakeExtendedClaim(const ExtendedClaim& claim,
                                                std::string_view claim_namespace);

}  // namespace devshare::dra

#endif  // DEVSHARE_DRA_EXTENDED_HPP_
