#include "devshare/lease_object.hpp"

#include <fmt/format.h>

#include <limits>

#include "base/civil_time.hpp"
#include "base/json.hpp"
#include "base/text.hpp"
#include "devshare/objects_json.hpp"

namespace devshare {

namespace {

constexpr std::string_view kWhat = "lease";
namespace bj = boost::json;

std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Status ReadOptionalMicroTime(const bj::object& spec, std::string_view key,
                             std::optional<std::int64_t>& out) {
  const bj::value* v = spec.if_contains(key);
  if (v == nullptr || v->is_null()) return Status();
  const std::string path = fmt::format("spec.{}", key);
  if (!v->is_string()) return internal::TypeError(kWhat, path, "a MicroTime string", *v);
  Result<std::int64_t> t = DecodeMicroTime(v->get_string());
  if (!t.ok()) {
    return Status::Malformed(fmt::format("{}: {}: {}", kWhat, path, t.status().message()), path);
  }
  out = *t;
  return Status();
}

}  // namespace

std::string EncodeMicroTime(std::int64_t unix_us) {
  const std::int64_t seconds = FloorDiv(unix_us, 1000000);
  const std::int64_t micros = unix_us - seconds * 1000000;
  return fmt::format(
      "{}.{:06}Z", internal::FormatCivil(internal::FromUnixSeconds(seconds, 0), '-', 'T'), micros);
}

Result<std::int64_t> DecodeMicroTime(std::string_view text) {
  auto fail = [&] {
    return Status::Malformed(
        fmt::format("MicroTime {} is not 2006-01-02T15:04:05.000000Z07:00", internal::Quote(text)));
  };
  auto civil = internal::ParseCivil(text.substr(0, 19), '-', 'T');
  if (!civil || civil->length != 19 || text.size() < 27 || text[19] != '.') return fail();
  std::int64_t micros = 0;
  for (std::size_t i = 20; i < 26; ++i) {
    if (text[i] < '0' || text[i] > '9') return fail();
    micros = micros * 10 + (text[i] - '0');
  }
  auto offset = internal::ParseOffset(text.substr(26), /*colon=*/true, /*allow_z=*/true);
  if (!offset || 26 + offset->length != text.size()) return fail();
  const std::int64_t seconds = internal::ToUnixSeconds(civil->time, offset->seconds);
  if (const std::string_view violation = internal::RangeViolation(seconds); !violation.empty()) {
    return Status::Malformed(
        fmt::format("MicroTime {} {}: Kubernetes writes years 0000-9999 in UTC",
                    internal::Quote(text), violation));
  }
  return seconds * 1000000 + micros;
}

Result<LeaseRecord> DecodeLease(std::string_view json) {
  bj::monotonic_resource arena;
  Result<bj::value> doc = internal::ParseJson(json, kWhat, bj::storage_ptr(&arena));
  if (!doc.ok()) return doc.status();
  if (!doc->is_object()) return internal::TypeError(kWhat, "value", "an object", *doc);
  return DecodeLease(doc->get_object());
}

Result<LeaseRecord> DecodeLease(const bj::object& root) {
  LeaseRecord lease;
  if (const bj::value* m = root.if_contains("metadata"); m != nullptr && !m->is_null()) {
    if (!m->is_object()) return internal::TypeError(kWhat, "metadata", "an object", *m);
    const bj::object& metadata = m->get_object();
    for (auto [key, out] : {std::pair<std::string_view, std::string*>{"name", &lease.name},
                            {"namespace", &lease.lease_namespace},
                            {"resourceVersion", &lease.resource_version}}) {
      if (const bj::value* v = metadata.if_contains(key)) {
        Status s = internal::ReadString(*v, kWhat, fmt::format("metadata.{}", key), *out);
        if (!s.ok()) return s;
      }
    }
  }
  const bj::value* s = root.if_contains("spec");
  if (s == nullptr || s->is_null()) return lease;
  if (!s->is_object()) return internal::TypeError(kWhat, "spec", "an object", *s);
  const bj::object& spec = s->get_object();
  if (const bj::value* v = spec.if_contains("holderIdentity"); v != nullptr && !v->is_null()) {
    std::string holder;
    Status st = internal::ReadString(*v, kWhat, "spec.holderIdentity", holder);
    if (!st.ok()) return st;
    lease.holder = std::move(holder);
  }
  constexpr std::int64_t kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  if (const bj::value* v = spec.if_contains("leaseDurationSeconds");
      v != nullptr && !v->is_null()) {
    std::int64_t d = 0;
    Status st = internal::ReadInt(*v, kMin, kMax, kWhat, "spec.leaseDurationSeconds", d);
    if (!st.ok()) return st;
    lease.duration_seconds = static_cast<std::int32_t>(d);
  }
  if (const bj::value* v = spec.if_contains("leaseTransitions")) {
    std::int64_t t = 0;
    Status st = internal::ReadInt(*v, kMin, kMax, kWhat, "spec.leaseTransitions", t);
    if (!st.ok()) return st;
    lease.transitions = static_cast<std::int32_t>(t);
  }
  Status st = ReadOptionalMicroTime(spec, "acquireTime", lease.acquire_time_us);
  if (st.ok()) st = ReadOptionalMicroTime(spec, "renewTime", lease.renew_time_us);
  if (!st.ok()) return st;
  return lease;
}

std::string EncodeLease(const LeaseRecord& lease) {
  bj::object metadata{{"name", lease.name}, {"namespace", lease.lease_namespace}};
  if (!lease.resource_version.empty()) metadata["resourceVersion"] = lease.resource_version;
  bj::object spec;
  spec["holderIdentity"] = lease.holder ? bj::value(*lease.holder) : bj::value(nullptr);
  spec["leaseDurationSeconds"] =
      lease.duration_seconds ? bj::value(*lease.duration_seconds) : bj::value(nullptr);
  spec["acquireTime"] = lease.acquire_time_us ? bj::value(EncodeMicroTime(*lease.acquire_time_us))
                                              : bj::value(nullptr);
  spec["renewTime"] =
      lease.renew_time_us ? bj::value(EncodeMicroTime(*lease.renew_time_us)) : bj::value(nullptr);
  spec["leaseTransitions"] = lease.transitions;
  return bj::serialize(bj::object{{"apiVersion", "coordination.k8s.io/v1"},
                                  {"kind", "Lease"},
                                  {"metadata", std::move(metadata)},
                                  {"spec", std::move(spec)}});
}

}  // namespace devshare
