#include "devshare/dra_gate.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "devshare/dra_allocate.hpp"
#include "devshare/dra_cel.hpp"

namespace devshare::dra {

namespace {

// Every selection of `spec`: each request's `exactly`, or each of its
// firstAvailable alternatives, with the name a message gives it.
template <typename Visit>
bool ForEachSelection(const ClaimSpec& spec, Visit visit) {
  for (const DeviceRequest& r : spec.requests) {
    if (r.exactly) {
      if (!visit(r.name, *r.exactly)) return false;
    }
    for (const DeviceSubRequest& s : r.first_available) {
      if (!visit(r.name + "/" + s.name, s.selection)) return false;
    }
  }
  return true;
}

Status SelectorProblem(std::string_view owner, std::string_view expression, const Status& error) {
  const std::string what = fmt::format("{}: selector `{}`: {}", owner, expression, error.message());
  if (error.code() == StatusCode::kUnsupported) {
    return Status::Unsupported(fmt::format(
        "{}; devshare evaluates the CEL that device selectors commonly use (attributes, "
        "capacity, comparisons, string and list functions, semver and quantity) — rewrite "
        "the selector with those",
        what));
  }
  return Status::Malformed(what, "selector");
}

ClaimsVerdict Verdict(ClaimsVerdictKind kind, std::string reason) {
  ClaimsVerdict v;
  v.kind = kind;
  v.reason = std::move(reason);
  return v;
}

}  // namespace

bool AsksServedClass(const ClaimSpec& spec, const ServedClasses& served) {
  return !ForEachSelection(spec, [&](const std::string&, const DeviceSelection& s) {
    return !served.contains(s.device_class_name);
  });
}

Status CheckAllocatable(const ClaimSpec& spec, const DeviceClasses& classes) {
  Status problem;
  ForEachSelection(spec, [&](const std::string& request, const DeviceSelection& s) {
    auto device_class = classes.find(s.device_class_name);
    if (device_class == classes.end()) {
      problem = Status::NotFound(
          fmt::format("request {}: DeviceClass {} does not exist", request, s.device_class_name));
      return false;
    }
    for (const std::string& expression : device_class->second.selectors) {
      Result<Selector> compiled = CompileSelector(expression);
      if (!compiled.ok()) {
        problem =
            SelectorProblem(fmt::format("request {}: DeviceClass {}", request, s.device_class_name),
                            expression, compiled.status());
        return false;
      }
    }
    for (const std::string& expression : s.selectors) {
      Result<Selector> compiled = CompileSelector(expression);
      if (!compiled.ok()) {
        problem =
            SelectorProblem(fmt::format("request {}", request), expression, compiled.status());
        return false;
      }
    }
    return true;
  });
  return problem;
}

ClaimsVerdict JudgePodClaims(const Pod& pod, const ClusterSnapshot& snapshot,
                             const ServedClasses& served, bool at_admission) {
  std::vector<ResolvedClaim> resolved;
  resolved.reserve(pod.resource_claims.size());
  std::string waiting;
  for (const PodResourceClaim& c : pod.resource_claims) {
    ResolvedClaim r;
    r.pod_claim = c.name;
    if (!c.resource_claim_name.empty()) {
      r.source = fmt::format("ResourceClaim {}/{}", pod.pod_namespace, c.resource_claim_name);
      r.claim = snapshot.FindResourceClaim(pod.pod_namespace, c.resource_claim_name);
      if (r.claim != nullptr) r.spec = &r.claim->spec;
    } else if (!c.generated_claim_name.empty()) {
      r.source = fmt::format("ResourceClaim {}/{}", pod.pod_namespace, c.generated_claim_name);
      r.claim = snapshot.FindResourceClaim(pod.pod_namespace, c.generated_claim_name);
      if (r.claim != nullptr) r.spec = &r.claim->spec;
    } else {
      r.source = fmt::format("ResourceClaimTemplate {}/{}", pod.pod_namespace,
                             c.resource_claim_template_name);
      const ResourceClaimTemplate* t =
          snapshot.FindResourceClaimTemplate(pod.pod_namespace, c.resource_claim_template_name);
      if (t != nullptr && at_admission) r.spec = &t->spec;
      if (t != nullptr && !at_admission && waiting.empty()) {
        waiting =
            fmt::format("claim {}: waiting for the claim to be made from {}", c.name, r.source);
      }
    }
    if (r.spec == nullptr && waiting.empty())
      waiting = fmt::format("claim {}: {} is not there (yet)", c.name, r.source);
    resolved.push_back(std::move(r));
  }

  // What is known decides first: a served claim devshare cannot allocate
  // is refused even while another claim is awaited.
  const ResolvedClaim* served_claim = nullptr;
  const ResolvedClaim* other_claim = nullptr;
  for (const ResolvedClaim& r : resolved) {
    if (r.spec == nullptr || (r.claim != nullptr && r.claim->allocation)) continue;
    const bool asks_served = AsksServedClass(*r.spec, served);
    bool asks_other = false;
    ForEachSelection(*r.spec, [&](const std::string&, const DeviceSelection& s) {
      asks_other = asks_other || !served.contains(s.device_class_name);
      return true;
    });
    if (asks_served) {
      if (Status s = CheckAllocatable(*r.spec, snapshot.device_classes()); !s.ok()) {
        return Verdict(ClaimsVerdictKind::kRefused,
                       fmt::format("claim {} ({}): {}", r.pod_claim, r.source, s.message()));
      }
      if (served_claim == nullptr) served_claim = &r;
    }
    if (asks_other && other_claim == nullptr) other_claim = &r;
  }
  if (served_claim != nullptr && other_claim != nullptr) {
    return Verdict(
        ClaimsVerdictKind::kRefused,
        fmt::format("claim {} ({}) asks a DeviceClass devshare serves and claim {} ({}) one it "
                    "does not; devshare allocates every claim of a pod it serves, so put them in "
                    "separate pods or serve both classes",
                    served_claim->pod_claim, served_claim->source, other_claim->pod_claim,
                    other_claim->source));
  }
  if (!waiting.empty()) return Verdict(ClaimsVerdictKind::kWaiting, std::move(waiting));
  if (served_claim == nullptr) return Verdict(ClaimsVerdictKind::kNotServed, "");
  ClaimsVerdict v = Verdict(ClaimsVerdictKind::kServed, "");
  v.claims = std::move(resolved);
  return v;
}

bool HasSchedulingGate(const Pod& pod) {
  return std::find(pod.scheduling_gates.begin(), pod.scheduling_gates.end(), kSchedulingGate) !=
         pod.scheduling_gates.end();
}

}  // namespace devshare::dra
