// devshare/objects_json.hpp — the Pod, Node, ResourceQuota and PodDisruptionBudget decoders of
// objects.hpp and the Lease decoder of lease_object.hpp on a JSON object already parsed with
// Boost.JSON (a watch event's object, an AdmissionReview's request.object, an
// ExtenderArgs' Pod), so that the caller does not serialise it to text only
// for it to be parsed again.
// Include it only where Boost.JSON is at hand: it is an interface
// dependency of these functions alone.
//
// Same contract as the text overloads (errors name the JSON path). They take
// the JSON object (a value would make DecodePod("...") ambiguous).
//
// Thread-safety: pure functions.
#ifndef DEVSHARE_OBJECTS_JSON_HPP_
#define DEVSHARE_OBJECTS_JSON_HPP_

#include <boost/json/object.hpp>

#include "devshare/export.hpp"
#include "devshare/lease_object.hpp"
#include "devshare/objects.hpp"

namespace devshare {

DEVSHARE_EXPORT Result<Pod> DecodePod(const boost::json::object& root);
DEVSHARE_EXPORT Result<Node> DecodeNode(const boost::json::object& root);
DEVSHARE_EXPORT Result<ResourceQuota> DecodeResourceQuota(const boost::json::object& root);
DEVSHARE_EXPORT Result<PodDisruptionBudget> DecodePodDisruptionBudget(
    const boost::json::object& root);
DEVSHARE_EXPORT Result<LeaseRecord> DecodeLease(const boost::json::object& root);

}  // namespace devshare

#endif  // DEVSHARE_OBJECTS_JSON_HPP_
