#include "devshare/admission.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <set>

#include "base/json.hpp"
#include "base/json_reader.hpp"
#include "base/text.hpp"
#include "devshare/dra_extended.hpp"
#include "devshare/objects.hpp"
#include "devshare/objects_json.hpp"
#include "devshare/request.hpp"

namespace devshare {

namespace {

namespace bj = boost::json;
constexpr std::string_view kWhat = "admission review";
constexpr int kDenied = 403;
constexpr int kBadRequest = 400;

// RFC 6901: '~' -> "~0", '/' -> "~1".
std::string Escape(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// RFC 6902 operations: "add" (which also replaces an existing member) and
// "remove".
class PatchBuilder {
 public:
  void Add(std::string path, bj::value value) {
    ops_.push_back(
        bj::object{{"op", "add"}, {"path", std::move(path)}, {"value", std::move(value)}});
  }
  void Remove(std::string path) {
    ops_.push_back(bj::object{{"op", "remove"}, {"path", std::move(path)}});
  }
  bool empty() const { return ops_.empty(); }
  std::string Serialize() const { return ops_.empty() ? "" : bj::serialize(ops_); }

 private:
  bj::array ops_;
};

// The mutations one container receives.
struct ContainerMutation {
  std::vector<std::pair<std::string, std::string>> limits;  // resource -> quantity
  std::vector<std::pair<std::string, std::string>> env;     // name -> value
};

void EmitContainer(const bj::object& json, const std::string& path, const ContainerMutation& m,
                   PatchBuilder& patch) {
  if (!m.limits.empty()) {
    const bj::object* resources = internal::ObjectMember(json, "resources");
    const bj::object* limits =
        resources != nullptr ? internal::ObjectMember(*resources, "limits") : nullptr;
    bj::object added;
    for (const auto& [name, value] : m.limits) added[name] = value;
    if (resources == nullptr) {
      patch.Add(path + "/resources", bj::object{{"limits", std::move(added)}});
    } else if (limits == nullptr) {
      patch.Add(path + "/resources/limits", std::move(added));
    } else {
      for (const auto& [name, value] : m.limits) {
        patch.Add(path + "/resources/limits/" + Escape(name), bj::string(value));
      }
    }
  }
  if (!m.env.empty()) {
    const bj::value* env = json.if_contains("env");
    if (env == nullptr || !env->is_array()) {
      bj::array items;
      for (const auto& [name, value] : m.env)
        items.push_back(bj::object{{"name", name}, {"value", value}});
      patch.Add(path + "/env", std::move(items));
    } else {
      for (const auto& [name, value] : m.env) {
        patch.Add(path + "/env/-", bj::object{{"name", name}, {"value", value}});
      }
    }
  }
}

const std::string* LimitElseRequest(const Container& c, const std::string& resource) {
  if (resource.empty()) return nullptr;
  if (const std::string* v = c.limits.Find(resource)) return v;
  return c.requests.Find(resource);
}

// NVIDIA's MutateAdmission (spec §3.2) on `c`, which it updates as the
// patched container will be. Returns whether the container asks for the
// vendor, or an error for an invalid memory percentage.
Result<bool> MutateNvidia(Container& c, const VendorSpec& v, const NvidiaOptions& o,
                          ContainerMutation& m) {
  if (const std::string* pct = LimitElseRequest(c, v.memory_percentage_resource)) {
    const std::optional<std::int64_t> value = QuantityAsInt64(*pct);
    if (value && (*value < 0 || *value > 100)) {
      return Status::InvalidArgument(
          fmt::format("container {}: {} must be between 0 and 100, got {}", c.name,
                      v.memory_percentage_resource, *pct));
    }
  }
  if (const std::string* priority = c.limits.Find(v.priority_resource);
      priority != nullptr && !v.priority_resource.empty()) {
    m.env.emplace_back("CUDA_TASK_PRIORITY", *priority);
  }
  bool found = false;
  auto set_limit = [&](const std::string& name, std::string value) {
    c.limits.Set(name, value);
    m.limits.emplace_back(name, std::move(value));
  };
  if (c.limits.Contains(v.count_resource)) {
    found = true;
  } else if ((c.limits.Contains(v.core_resource) || c.limits.Contains(v.memory_resource) ||
              c.limits.Contains(v.memory_percentage_resource)) &&
             v.default_gpu_num > 0) {
    set_limit(v.count_resource, std::to_string(v.default_gpu_num));
    found = true;
  }
  // A count without cores: exclusive whole devices when the memory asked is
  // all of it — a percentage of 100, or, without a percentage, no memory.
  if (LimitElseRequest(c, v.count_resource) != nullptr && !v.core_resource.empty() &&
      LimitElseRequest(c, v.core_resource) == nullptr) {
    const std::string* pct = LimitElseRequest(c, v.memory_percentage_resource);
    const bool exclusive = pct != nullptr ? QuantityAsInt64(*pct) == 100
                                          : v.memory_resource.empty() ||
                                                LimitElseRequest(c, v.memory_resource) == nullptr;
    if (exclusive) {
      set_limit(v.core_resource, "100");
      found = true;
    }
  }
  // W12 fixed: only containers that ask for a GPU get the core policy.
  if (found && o.gpu_core_policy != "default") {
    m.env.emplace_back("GPU_CORE_UTILIZATION_POLICY", o.gpu_core_policy);
  }
  if (!found && o.overwrite_env) m.env.emplace_back("NVIDIA_VISIBLE_DEVICES", "none");
  return found;
}

// The quota pre-check (spec §9.2): false when what the pod asks, added to
// what its namespace's placed pods use, would exceed a namespace limit.
bool QuotaAdmits(const Pod& pod, const DeviceConfig& config, const ClusterSnapshot& quotas) {
  const std::vector<ContainerRequests> requests = PodRequests(pod, config);
  for (const VendorSpec& v : config.vendors) {
    if (v.memory_resource.empty() && v.core_resource.empty()) continue;
    std::int64_t app_mem = 0, app_cores = 0, init_mem = 0, init_cores = 0;
    for (std::size_t c = 0; c < requests.size(); ++c) {
      for (const ContainerRequest& r : requests[c]) {
        if (r.vendor != v.common_word) continue;
        const std::int64_t mem = std::int64_t{r.memreq} * r.nums;
        const std::int64_t cores = std::int64_t{r.coresreq} * r.nums;
        if (c < pod.init_containers.size()) {
          init_mem = std::max(init_mem, mem);
          init_cores = std::max(init_cores, cores);
        } else {
          app_mem += mem;
          app_cores += cores;
        }
      }
    }
    const std::int64_t mem = std::max(app_mem, init_mem);
    const std::int64_t cores = std::max(app_cores, init_cores);
    if (mem == 0 && cores == 0) continue;
    if (!v.memory_resource.empty()) {
      std::int64_t limit = quotas.QuotaLimit(pod.pod_namespace, v.memory_resource);
      if (limit >= 0) {
        if (v.memory_factor > 1) limit *= v.memory_factor;
        if (quotas.QuotaUsed(pod.pod_namespace, v.memory_resource) + mem > limit) return false;
      }
    }
    if (!v.core_resource.empty()) {
      const std::int64_t limit = quotas.QuotaLimit(pod.pod_namespace, v.core_resource);
      if (limit >= 0 && quotas.QuotaUsed(pod.pod_namespace, v.core_resource) + cores > limit) {
        return false;
      }
    }
  }
  return true;
}

// The claim names of one admission: from its request's UID, unique to it
// (a pod's name may be empty yet, and a name used again may still have the
// claim of the pod before).
std::string ExtendedClaimName(std::string_view request_uid, std::size_t k) {
  std::string name = "devshare-ext-";
  for (const char c : request_uid) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    name += (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') ? lower : '-';
  }
  return fmt::format("{}-{}", name, k);
}

// Each ask for an extended resource a served class backs becomes a claim
// of that class (devshare/dra_extended.hpp): the resource taken out of the
// container's limits and requests, the claim named in spec.resourceClaims
// and in the container's resources.claims, the claims listed in the pod's
// annotation; `pod` is changed the same way.
void ConvertExtendedResources(const std::vector<dra::ExtendedResourceAsk>& asks,
                              std::string_view request_uid, const bj::object& object, Pod& pod,
                              PatchBuilder& patch) {
  const bj::object* spec = internal::ObjectMember(object, "spec");
  const bj::object* metadata = internal::ObjectMember(object, "metadata");
  // (asks come from containers, so the spec is there)
  bool pod_claims =
      spec->if_contains("resourceClaims") != nullptr && spec->at("resourceClaims").is_array();
  std::set<std::pair<bool, std::size_t>> with_claims;  // containers given resources.claims
  std::vector<dra::ExtendedClaim> claims;
  for (std::size_t k = 0; k < asks.size(); ++k) {
    const dra::ExtendedResourceAsk& ask = asks[k];
    const char* list = ask.init ? "initContainers" : "containers";
    const std::string at = fmt::format("/spec/{}/{}/resources", list, ask.container);
    const bj::object& resources =
        *internal::ObjectMember(spec->at(list).as_array()[ask.container].as_object(), "resources");
    patch.Remove(at + "/limits/" + Escape(ask.resource));
    if (ask.in_requests) patch.Remove(at + "/requests/" + Escape(ask.resource));
    const std::string pod_claim = fmt::format("devshare-ext-{}", k);
    const bj::object entry{{"name", pod_claim}};
    const bool has =
        resources.if_contains("claims") != nullptr && resources.at("claims").is_array();
    if (has || !with_claims.insert({ask.init, ask.container}).second) {
      patch.Add(at + "/claims/-", entry);
    } else {
      patch.Add(at + "/claims", bj::array{entry});
    }
    dra::ExtendedClaim& claim = claims.emplace_back();
    claim = dra::ExtendedClaim{ExtendedClaimName(request_uid, k), ask.device_class, ask.count};
    const bj::object pod_entry{{"name", pod_claim}, {"resourceClaimName", claim.claim}};
    if (pod_claims) {
      patch.Add("/spec/resourceClaims/-", pod_entry);
    } else {
      patch.Add("/spec/resourceClaims", bj::array{pod_entry});
      pod_claims = true;
    }
    pod.resource_claims.push_back(PodResourceClaim{pod_claim, claim.claim, "", ""});
    Container& c = (ask.init ? pod.init_containers : pod.containers)[ask.container];
    c.limits.Erase(ask.resource);
    c.requests.Erase(ask.resource);
  }
  const std::string listed = dra::EncodeExtendedClaims(claims);
  if (metadata != nullptr && internal::ObjectMember(*metadata, "annotations") != nullptr) {
    patch.Add("/metadata/annotations/" + Escape(dra::kExtendedClaimsAnnotation),
              bj::string(listed));
  } else {
    patch.Add("/metadata/annotations",
              bj::object{{dra::kExtendedClaimsAnnotation, bj::string(listed)}});
  }
  pod.annotations.Set(dra::kExtendedClaimsAnnotation, listed);
}

AdmissionDecision Deny(AdmissionDecision d, int code, std::string message) {
  d.allowed = false;
  d.code = code;
  d.message = std::move(message);
  d.patch.clear();
  return d;
}

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const auto n = (static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << 16) |
                   (static_cast<std::uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8) |
                   static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i < in.size()) {
    std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << 16;
    if (i + 1 < in.size())
      n |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace

Result<AdmissionDecision> DecideAdmission(std::string_view review_json, const DeviceConfig& config,
                                          const AdmissionOptions& options,
                                          const ClusterSnapshot* state) {
  bj::monotonic_resource arena;
  Result<bj::value> doc = internal::ParseJson(review_json, kWhat, bj::storage_ptr(&arena));
  if (!doc.ok()) return doc.status();
  const bj::object* root = doc->if_object();
  const bj::object* request = root != nullptr ? internal::ObjectMember(*root, "request") : nullptr;
  if (request == nullptr) {
    return Status::Malformed(fmt::format("{}: request is missing or not an object", kWhat),
                             "request");
  }
  const bj::value* uid = request->if_contains("uid");
  if (uid == nullptr || !uid->is_string() || uid->get_string().empty()) {
    return Status::Malformed(fmt::format("{}: request.uid is missing", kWhat), "request.uid");
  }
  AdmissionDecision d;
  d.uid = std::string(uid->get_string());
  const bj::object* object = internal::ObjectMember(*request, "object");
  if (object == nullptr) return Deny(d, kBadRequest, "request.object is not a Pod");
  Result<Pod> decoded = DecodePod(*object);
  if (!decoded.ok()) return Deny(d, kBadRequest, std::string(decoded.status().message()));
  Pod pod = std::move(*decoded);
  if (pod.pod_namespace.empty()) {
    if (const bj::value* ns = request->if_contains("namespace"); ns != nullptr && ns->is_string()) {
      pod.pod_namespace = std::string(ns->get_string());
    }
  }
  if (pod.containers.empty()) return Deny(d, kDenied, "pod has no containers");
  const bj::object* spec = internal::ObjectMember(*object, "spec");
  PatchBuilder patch;
  if (!options.dra_device_classes.empty() && state != nullptr) {
    std::set<std::string, std::less<>> device_plugin_resources;
    for (const VendorSpec& v : config.vendors) {
      for (const std::string* r : {&v.count_resource, &v.memory_resource,
                                   &v.memory_percentage_resource, &v.core_resource}) {
        if (!r->empty()) device_plugin_resources.insert(*r);
      }
    }
    Result<std::vector<dra::ExtendedResourceAsk>> asks = dra::ServedExtendedResources(
        pod, state->device_classes(), options.dra_device_classes, device_plugin_resources);
    if (!asks.ok()) {
      return Deny(
          d, kDenied,
          fmt::format("devshare cannot allocate this pod's devices: {}", asks.status().message()));
    }
    if (!asks->empty()) ConvertExtendedResources(*asks, d.uid, *object, pod, patch);
  }
  if (!options.dra_device_classes.empty() && !pod.resource_claims.empty() && state != nullptr) {
    const dra::ClaimsVerdict claims =
        dra::JudgePodClaims(pod, *state, options.dra_device_classes, /*at_admission=*/true);
    if (claims.kind == dra::ClaimsVerdictKind::kRefused) {
      return Deny(d, kDenied,
                  fmt::format("devshare cannot allocate this pod's DRA claims: {}", claims.reason));
    }
    if (claims.kind != dra::ClaimsVerdictKind::kNotServed && !dra::HasSchedulingGate(pod)) {
      if (!pod.node_name.empty()) {
        return Deny(d, kDenied,
                    "pod has node assigned; devshare allocates its DRA claims before it is bound");
      }
      const bj::object gate{{"name", dra::kSchedulingGate}};
      if (pod.scheduling_gates.empty()) {
        patch.Add("/spec/schedulingGates", bj::array{gate});
      } else {
        patch.Add("/spec/schedulingGates/-", gate);
      }
    }
  }
  if (!pod.scheduler_name.empty() &&
      (pod.scheduler_name != "default-scheduler" || !options.force_overwrite_default_scheduler) &&
      (options.scheduler_name.empty() || pod.scheduler_name != options.scheduler_name)) {
    d.message = "pod already has different scheduler assigned";
    d.patch = patch.Serialize();
    return d;
  }

  bool has_resource = false;
  const VendorSpec* nvidia = config.FindVendor("NVIDIA");
  struct List {
    const char* key;
    std::vector<Container>* containers;
  };
  for (const List& list :
       {List{"initContainers", &pod.init_containers}, List{"containers", &pod.containers}}) {
    const bj::value* array = spec != nullptr ? spec->if_contains(list.key) : nullptr;
    for (std::size_t i = 0; i < list.containers->size(); ++i) {
      Container& c = (*list.containers)[i];
      ContainerMutation m;
      bool found = false;
      for (const VendorSpec& v : config.vendors) {
        if (&v == nvidia) {
          Result<bool> r = MutateNvidia(c, v, config.nvidia, m);
          if (!r.ok()) return Deny(d, kBadRequest, std::string(r.status().message()));
          found = found || *r;
        } else {
          found = found || c.limits.Contains(v.count_resource);
        }
      }
      has_resource = has_resource || found;
      // DecodePod read this container from the same JSON, so it is there.
      EmitContainer(array->as_array()[i].as_object(), fmt::format("/spec/{}/{}", list.key, i), m,
                    patch);
    }
  }
  if (has_resource) {
    for (const auto* list : {&pod.init_containers, &pod.containers}) {
      for (const Container& c : *list) {
        if (c.privileged)
          return Deny(d, kDenied, fmt::format("container {} is privileged", c.name));
      }
    }
    if (nvidia != nullptr && !config.nvidia.runtime_class_name.empty() &&
        (spec == nullptr || spec->if_contains("runtimeClassName") == nullptr ||
         spec->at("runtimeClassName").is_null())) {
      patch.Add("/spec/runtimeClassName", bj::string(config.nvidia.runtime_class_name));
    }
    if (!options.scheduler_name.empty()) {
      patch.Add("/spec/schedulerName", bj::string(options.scheduler_name));
      if (!pod.node_name.empty()) return Deny(d, kDenied, "pod has node assigned");
    }
  }
  if (state != nullptr && !QuotaAdmits(pod, config, *state)) {
    return Deny(d, kDenied, "exceeding resource quota");
  }
  d.patch = patch.Serialize();
  return d;
}

std::string EncodeAdmissionResponse(const AdmissionDecision& d) {
  bj::object response{{"uid", d.uid}, {"allowed", d.allowed}};
  if (!d.allowed) {
    response["status"] = bj::object{{"code", d.code}, {"message", d.message}};
  } else if (!d.patch.empty()) {
    response["patchType"] = "JSONPatch";
    response["patch"] = Base64(d.patch);
  }
  return bj::serialize(bj::object{{"apiVersion", "admission.k8s.io/v1"},
                                  {"kind", "AdmissionReview"},
                                  {"response", std::move(response)}});
}

}  // namespace devshare
