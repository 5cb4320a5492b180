// devshare/dra_json.hpp — the DRA decoders of dra.hpp on a JSON object
// already parsed with Boost.JSON (a watch event's object, a List's item),
// so that the caller does not serialise it to text only for it to be
// parsed again. Include it only where Boost.JSON is at hand: it is an
// interface dependency of these functions alone.
//
// Same contract as the text overloads (errors name the JSON path). They take
// the JSON object (a value would make DecodeResourceClaim("...") ambiguous).
//
// Thread-safety: pure functions.
#ifndef DEVSHARE_DRA_JSON_HPP_
#define DEVSHARE_DRA_JSON_HPP_

#include <boost/json/object.hpp>

#include "devshare/dra.hpp"
#include "devshare/export.hpp"

namespace devshare::dra {

DEVSHARE_EXPORT Result<ResourceSlice> DecodeResourceSlice(const boost::json::object& root);
DEVSHARE_EXPORT Result<DeviceClass> DecodeDeviceClass(const boost::json::object& root);
DEVSHARE_EXPORT Result<ResourceClaim> DecodeResourceClaim(const boost::json::object& root);
DEVSHARE_EXPORT Result<ResourceClaimTemplate> DecodeResourceClaimTemplate(
    const boost::json::object& root);

}  // namespace devshare::dra

#endif  // DEVSHARE_DRA_JSON_HPP_
