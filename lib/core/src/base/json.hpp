// Private: reading JSON the way Go's encoding/json reads into structs, and
// writing it the way json.Marshal writes, shared by the JSON codecs.
#ifndef DEVSHARE_SRC_JSON_HPP_
#define DEVSHARE_SRC_JSON_HPP_

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "devshare/status.hpp"

namespace devshare::internal {

// Parses one complete JSON document into `sp`'s memory. Syntax errors and
// trailing data become kMalformed with the byte offset; `what` names the
// annotation in the message ("node register JSON").
Result<boost::json::value> ParseJson(std::string_view text, std::string_view what,
                                     const boost::json::storage_ptr& sp);

// Field readers with Go's decoding rules: `null` leaves `out` unchanged;
// integers must be JSON integers within [min, max]. They return an error
// Status naming `what` and `field`.
Status ReadInt(const boost::json::value& v, std::int64_t min, std::int64_t max,
               std::string_view what, const std::string& field, std::int64_t& out);
Status ReadString(const boost::json::value& v, std::string_view what, const std::string& field,
                  std::string& out);
Status ReadBool(const boost::json::value& v, std::string_view what, const std::string& field,
                bool& out);

// "a string", "an object", ... for messages.
std::string_view KindName(const boost::json::value& v);

// A kMalformed status "<what>: <field>: expected <expected>, got <kind>".
Status TypeError(std::string_view what, const std::string& field, std::string_view expected,
                 const boost::json::value& got);

// Appends `s` as a JSON string exactly as Go's json.Marshal writes it: HTML
// characters escaped as \u003c \u003e \u0026, control characters as \b \f \n
// \r \t or \u00xx, invalid UTF-8 as \ufffd, U+2028/U+2029 escaped.
void AppendGoJsonString(std::string& out, std::string_view s);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_JSON_HPP_
