// devshare/lease_object.hpp — a coordination.k8s.io/v1 Lease as the API
// server reads and writes it, and its MicroTime; the decisions over it are
// in devshare/lease.hpp (kubernetes-wire.md §3).
//
// Thread-safety: value types and pure functions.
#ifndef DEVSHARE_LEASE_OBJECT_HPP_
#define DEVSHARE_LEASE_OBJECT_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "devshare/export.hpp"
#include "devshare/status.hpp"
#include "devshare/time_range.hpp"

namespace devshare {

// A Lease as read from (or written to) the API server. Absent JSON fields
// and `null` stay nullopt.
struct LeaseRecord {
  std::string name;
  std::string lease_namespace;
  std::string resource_version;
  std::optional<std::string> holder;             // spec.holderIdentity
  std::optional<std::int32_t> duration_seconds;  // spec.leaseDurationSeconds
  std::optional<std::int64_t> acquire_time_us;   // spec.acquireTime, Unix microseconds
  std::optional<std::int64_t> renew_time_us;     // spec.renewTime, Unix microseconds
  std::int32_t transitions = 0;                  // spec.leaseTransitions
  friend bool operator==(const LeaseRecord&, const LeaseRecord&) = default;
};

// Decodes a Lease object. Errors: not JSON, a field of the wrong type, a
// MicroTime without exactly 6 fractional digits or outside
// devshare/time_range.hpp's range.
DEVSHARE_EXPORT Result<LeaseRecord> DecodeLease(std::string_view json);
// Encodes the Lease for a PUT or POST: apiVersion, kind, metadata (name,
// namespace, resourceVersion when set) and the spec fields client-go writes.
DEVSHARE_EXPORT std::string EncodeLease(const LeaseRecord& lease);
// MicroTime: "2006-01-02T15:04:05.000000Z" (UTC, exactly 6 fractional digits).
// The decoder reads any offset ("Z07:00") and refuses instants outside
// devshare/time_range.hpp's range, so every decoded value encodes and reads
// back equal. REQUIRES (encoder): InTimeRange(floor(unix_us / 1e6)).
DEVSHARE_EXPORT std::string EncodeMicroTime(std::int64_t unix_us);
DEVSHARE_EXPORT Result<std::int64_t> DecodeMicroTime(std::string_view text);

}  // namespace devshare

#endif  // DEVSHARE_LEASE_OBJECT_HPP_
