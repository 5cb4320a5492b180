// json_member.hpp — reading a member of a JSON object, the one way lib/kube's
// wire decoders read one (as Go's encoding/json reads a struct field: an
// absent member and JSON null are the same, the field left unset). Private
// to lib/kube.
#ifndef DEVSHARE_KUBE_SRC_JSON_MEMBER_HPP_
#define DEVSHARE_KUBE_SRC_JSON_MEMBER_HPP_

#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "devshare/status.hpp"

namespace devshare::kube {

// The member `key` of `o`; nullptr when it is absent or JSON null.
const boost::json::value* Member(const boost::json::object& o, std::string_view key);

// The member `key` as an object; nullptr when absent, null or another kind.
const boost::json::object* ObjectMember(const boost::json::object& o, std::string_view key);

// The member `key` as a string: its text, or nullopt when absent or null.
// Errors: kMalformed "<where> is not a string" (field `where`) for another
// kind; `where` names the member (Default: `key`).
Result<std::optional<std::string>> StringMember(const boost::json::object& o, std::string_view key,
                                                std::string_view where = {});

// The member `key` as a string; "" when absent, null or another kind (text
// read leniently: a name for a message, an optional credential field).
std::string StringOrEmpty(const boost::json::object& o, std::string_view key);

// The string `key` of an API object's (or a list's) metadata; "" when the
// object has no metadata object or the member is not a string.
std::string MetadataString(const boost::json::value& object, std::string_view key);

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_SRC_JSON_MEMBER_HPP_
