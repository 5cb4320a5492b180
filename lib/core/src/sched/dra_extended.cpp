// Extended resources backed by DRA for the served classes
// (devshare/dra_extended.hpp).
#include "devshare/dra_extended.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "base/json.hpp"
#include "base/json_reader.hpp"

namespace devshare::dra {

namespace bj = boost::json;

namespace {

constexpr std::string_view kWhat = "extended resource claims";

}  // namespace

Result<std::vector<ExtendedResourceAsk>> ServedExtendedResources(
    const Pod& pod, const DeviceClasses& classes, const ServedClasses& served,
    const std::set<std::string, std::less<>>& device_plugin_resources) {
  auto backing = [&](std::string_view resource) -> const std::string* {
    if (resource.starts_with(kImplicitExtendedResourcePrefix)) {
      auto it = served.find(resource.substr(kImplicitExtendedResourcePrefix.size()));
      return it != served.end() ? &*it : nullptr;
    }
    if (device_plugin_resources.contains(resource)) return nullptr;
    for (const std::string& name : served) {
      auto c = classes.find(name);
      if (c != classes.end() && c->second.extended_resource_name == resource) return &name;
    }
    return nullptr;
  };
  std::vector<ExtendedResourceAsk> asks;
  for (const bool init : {true, false}) {
    const std::vector<Container>& list = init ? pod.init_containers : pod.containers;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const Container& c = list[i];
      // An extended resource is asked by its limit (a request must equal it).
      for (const auto& [resource, quantity] : c.limits.entries()) {
        const std::string* device_class = backing(resource);
        if (device_class == nullptr) continue;
        const std::optional<std::int64_t> count = QuantityAsInt64(quantity);
        if (!count || *count < 1) {
          return Status::Malformed(
              fmt::format("container {} asks {} {}: a whole number of devices, at least 1, is "
                          "needed",
                          c.name, quantity, resource),
              fmt::format("spec.{}[{}].resources.limits", init ? "initContainers" : "containers",
                          i));
        }
        asks.push_back(ExtendedResourceAsk{init, i, c.name, resource, *device_class, *count,
                                           c.requests.Contains(resource)});
      }
    }
  }
  return asks;
}

std::string EncodeExtendedClaims(const std::vector<ExtendedClaim>& claims) {
  bj::array out;
  for (const ExtendedClaim& c : claims) {
    out.push_back(
        bj::object{{"claim", c.claim}, {"deviceClassName", c.device_class}, {"count", c.count}});
  }
  return bj::serialize(out);
}

Result<std::vector<ExtendedClaim>> DecodeExtendedClaims(std::string_view json) {
  bj::monotonic_resource arena;
  Result<bj::value> doc = internal::ParseJson(json, kWhat, bj::storage_ptr(&arena));
  if (!doc.ok()) return doc.status();
  if (!doc->is_array()) return internal::TypeError(kWhat, "value", "an array", *doc);
  internal::JsonReader r(kWhat);
  std::vector<ExtendedClaim> claims;
  std::size_t i = 0;
  for (const bj::value& v : doc->get_array()) {
    const std::string at = fmt::format("[{}]", i++);
    if (!v.is_object()) {
      r.Expect(at, "an object", v);
      break;
    }
    ExtendedClaim& c = claims.emplace_back();
    r.String(v.get_object(), "claim", at + ".claim", c.claim);
    r.String(v.get_object(), "deviceClassName", at + ".deviceClassName", c.device_class);
    r.Int(v.get_object(), "count", at + ".count", c.count, 1);
    if (r.ok() && (c.claim.empty() || c.device_class.empty() || c.count == 0)) {
      r.Fail(at + (c.claim.empty()          ? ".claim"
                   : c.device_class.empty() ? ".deviceClassName"
                                            : ".count"),
             "missing");
    }
    if (!r.ok()) break;
  }
  if (!r.ok()) return r.status();
  return claims;
}

ResourceClaim MakeExtendedClaim(const ExtendedClaim& claim, std::string_view claim_namespace) {
  ResourceClaim out;
  out.claim_namespace = std::string(claim_namespace);
  out.name = claim.claim;
  DeviceRequest& request = out.spec.requests.emplace_back();
  request.name = "devices";
  DeviceSelection& selection = request.exactly.emplace();
  selection.device_class_name = claim.device_class;
  selection.count = claim.count;
  return out;
}

}  // namespace devshare::dra
