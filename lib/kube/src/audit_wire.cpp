#include "devshare/kube/audit_wire.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "json_member.hpp"

namespace devshare::kube {

namespace bj = boost::json;

namespace {

Status Bad(std::string message, std::string path) {
  return Status::Malformed(fmt::format("list page: {}", message), std::move(path));
}

// An optional string member of `o` at `path`.
Status OptionalString(const bj::object& o, std::string_view key, const std::string& path,
                      std::string& out) {
  Result<std::optional<std::string>> v = StringMember(o, key, path);
  if (!v.ok()) return Bad(std::string(v.status().message()), path);
  if (*v) out = std::move(**v);
  return Status();
}

}  // namespace

Result<MetadataPage> DecodeMetadataPage(std::string_view json) {
  bj::monotonic_resource arena;
  boost::system::error_code ec;
  bj::value doc = bj::parse(json, ec, &arena);
  if (ec) return Bad(fmt::format("not JSON: {}", ec.message()), "");
  if (!doc.is_object()) return Bad("not a JSON object", "");
  const bj::object& root = doc.get_object();
  MetadataPage page;
  if (const bj::value* meta = root.if_contains("metadata"); meta != nullptr && !meta->is_null()) {
    if (!meta->is_object()) return Bad("metadata is not an object", "metadata");
    if (Status s = OptionalString(meta->get_object(), "continue", "metadata.continue",
                                  page.continue_token);
        !s.ok())
      return s;
  }
  // An empty PartialObjectMetadataList has "items": null.
  const bj::value* items = root.if_contains("items");
  if (items == nullptr || items->is_null()) return page;
  if (!items->is_array()) return Bad("items is not an array", "items");
  page.objects.reserve(items->get_array().size());
  std::size_t i = 0;
  for (const bj::value& item : items->get_array()) {
    const std::string at = fmt::format("items[{}]", i++);
    const bj::value* meta = item.is_object() ? item.get_object().if_contains("metadata") : nullptr;
    if (meta == nullptr || !meta->is_object())
      return Bad(fmt::format("{}.metadata is missing or not an object", at), at + ".metadata");
    const bj::object& m = meta->get_object();
    engine::ListedObject o;
    Status s = OptionalString(m, "name", at + ".metadata.name", o.name);
    if (s.ok()) s = OptionalString(m, "namespace", at + ".metadata.namespace", o.object_namespace);
    if (s.ok()) s = OptionalString(m, "uid", at + ".metadata.uid", o.uid);
    if (s.ok())
      s = OptionalString(m, "resourceVersion", at + ".metadata.resourceVersion",
                         o.resource_version);
    if (!s.ok()) return s;
    if (o.name.empty())
      return Bad(fmt::format("{}.metadata.name is missing", at), at + ".metadata.name");
    if (const bj::value* a = m.if_contains("annotations"); a != nullptr && !a->is_null()) {
      const std::string path = at + ".metadata.annotations";
      if (!a->is_object()) return Bad(fmt::format("{} is not an object", path), path);
      for (const auto& [key, value] : a->get_object()) {
        if (!value.is_string())
          return Bad(fmt::format("{}[\"{}\"] is not a string", path, std::string_view(key)), path);
        o.annotations.Set(key, value.get_string());
      }
    }
    page.objects.push_back(std::move(o));
  }
  return page;
}

std::string EncodeAuditReport(const engine::AuditReport& report, const engine::AuditTotals& totals,
                              const AuditListCost& cost, double duration_ms) {
  bj::array differences;
  std::uint64_t suspected = 0;
  for (const engine::Drift& d : report.differences) {
    if (!d.confirmed) ++suspected;
    differences.push_back(bj::object{{"kind", engine::DriftKindName(d.kind)},
                                     {"object", d.object},
                                     {"uid", d.uid},
                                     {"detail", d.detail},
                                     {"first_seen_ms", d.first_seen_ms},
                                     {"confirmed", d.confirmed},
                                     {"healed", d.healed}});
  }
  bj::object found, healed;
  for (std::size_t k = 0; k < engine::kDriftKinds; ++k) {
    found[engine::kDriftKindNames[k]] = totals.found[k];
    healed[engine::kDriftKindNames[k]] = totals.healed[k];
  }
  return bj::serialize(bj::object{{"at_ms", report.at_ms},
                                  {"duration_ms", duration_ms},
                                  {"list", bj::object{{"pages", cost.pages},
                                                      {"nodes", report.nodes_listed},
                                                      {"pods", report.pods_listed},
                                                      {"quotas", report.quotas_listed},
                                                      {"claims", report.claims_listed},
                                                      {"bytes", cost.bytes},
                                                      {"seconds", cost.seconds}}},
                                  {"differences", std::move(differences)},
                                  {"suspected", suspected},
                                  {"totals", std::move(found)},
                                  {"healed", std::move(healed)},
                                  {"audits", totals.audits}});
}

}  // namespace devshare::kube
