// Private (dra layer): the `device` variable of a CEL selector, as
// k8s.io/dynamic-resource-allocation/cel's DeviceMatches builds it: a map
// with driver, allowMultipleAllocations, attributes and capacity, the last
// two by domain then name (unqualified names in the driver's domain; an
// unknown domain reads as an empty map).
#ifndef DEVSHARE_SRC_DRA_CEL_DEVICE_HPP_
#define DEVSHARE_SRC_DRA_CEL_DEVICE_HPP_

#include <string_view>

#include "devshare/dra.hpp"
#include "devshare/status.hpp"
#include "dra/cel/value.hpp"

namespace devshare::dra::cel {

// The value of `device` for a device of a slice of `driver`. Attribute
// values are CEL values (versions as Semver, lists element-wise);
// capacities are quantities as Go holds the API server's canonical text
// (k8s::QuantityOfCanonicalMilli). Errors: kInvalidArgument "attribute
// <key>: parse semantic version: <blang's message>".
Result<Value> DeviceValue(std::string_view driver, const Device& device);

}  // namespace devshare::dra::cel

#endif  // DEVSHARE_SRC_DRA_CEL_DEVICE_HPP_
