// Which pods devshare allocates DRA claims for (devshare/dra_gate.hpp).
#include "devshare/dra_gate.hpp"

#include <doctest/doctest.h>

#include "dra_fixtures.hpp"

using namespace devshare;
using namespace devshare::dra;
using namespace devshare::dra::testing;

namespace {

Pod PodUsing(std::vector<PodResourceClaim> claims) {
  Pod p;
  p.pod_namespace = "default";
  p.name = "p";
  p.uid = "uid-p";
  p.resource_claims = std::move(claims);
  return p;
}

PodResourceClaim ByName(std::string name, std::string claim) {
  return PodResourceClaim{std::move(name), std::move(claim), "", ""};
}

PodResourceClaim ByTemplate(std::string name, std::string claim_template,
                            std::string generated = "") {
  return PodResourceClaim{std::move(name), "", std::move(claim_template), std::move(generated)};
}

ClusterSnapshot Objects() {
  ClusterSnapshot s;
  for (auto& [name, c] : Classes()) s.AddDeviceClass(c);
  s.AddResourceClaim(Claim("gpu-claim", {Exactly("gpu", Select("gpu"))}));
  s.AddResourceClaim(Claim("a100-claim", {Exactly("gpu", Select("a100"))}));
  ResourceClaimTemplate t;
  t.template_namespace = "default";
  t.name = "gpu-template";
  t.spec.requests = {Exactly("gpu", Select("gpu"))};
  s.AddResourceClaimTemplate(t);
  return s;
}

}  // namespace

TEST_CASE("dra gate: a pod's claims judged against the served classes") {
  const ClusterSnapshot s = Objects();
  const ServedClasses served{"gpu"};
  struct Case {
    const char* what;
    std::vector<PodResourceClaim> claims;
    bool at_admission;
    ClaimsVerdictKind kind;
    std::string reason;  // a part of it
  };
  const Case cases[] = {
      {"a claim of a served class",
       {ByName("g", "gpu-claim")},
       false,
       ClaimsVerdictKind::kServed,
       ""},
      {"a claim of another class",
       {ByName("g", "a100-claim")},
       false,
       ClaimsVerdictKind::kNotServed,
       ""},
      {"a template at admission",
       {ByTemplate("g", "gpu-template")},
       true,
       ClaimsVerdictKind::kServed,
       ""},
      {"a template's claim not made yet",
       {ByTemplate("g", "gpu-template")},
       false,
       ClaimsVerdictKind::kWaiting,
       "claim g: waiting for the claim to be made from ResourceClaimTemplate default/gpu-template"},
      {"a template's claim made",
       {ByTemplate("g", "gpu-template", "gpu-claim")},
       false,
       ClaimsVerdictKind::kServed,
       ""},
      {"an unknown claim",
       {ByName("g", "nope")},
       false,
       ClaimsVerdictKind::kWaiting,
       "claim g: ResourceClaim default/nope is not there (yet)"},
      {"served and other classes",
       {ByName("g", "gpu-claim"), ByName("a", "a100-claim")},
       false,
       ClaimsVerdictKind::kRefused,
       "claim g (ResourceClaim default/gpu-claim) asks a DeviceClass devshare serves and claim a "
       "(ResourceClaim default/a100-claim) one it does not"},
      {"a refusal outranks waiting",
       {ByName("x", "nope"), ByName("g", "gpu-claim"), ByName("a", "a100-claim")},
       false,
       ClaimsVerdictKind::kRefused,
       "serves and claim a"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    ClaimsVerdict v = JudgePodClaims(PodUsing(c.claims), s, served, c.at_admission);
    CHECK(v.kind == c.kind);
    CHECK(v.reason.find(c.reason) != std::string::npos);
    if (v.kind == ClaimsVerdictKind::kServed) CHECK(v.claims.size() == c.claims.size());
  }
}

TEST_CASE("dra gate: an allocated claim is not judged again; a class must exist and compile") {
  ClusterSnapshot s = Objects();
  ResourceClaim allocated = Claim("a100-claim", {Exactly("gpu", Select("a100"))});
  allocated.allocation = Allocation{};
  s.AddResourceClaim(allocated);
  // The allocated claim of another class is kube-scheduler's to reserve.
  ClaimsVerdict v = JudgePodClaims(PodUsing({ByName("g", "gpu-claim"), ByName("a", "a100-claim")}),
                                   s, ServedClasses{"gpu"}, false);
  CHECK(v.kind == ClaimsVerdictKind::kServed);

  ClaimSpec spec;
  spec.requests = {Exactly("gpu", Select("missing"))};
  Status missing = CheckAllocatable(spec, Classes());
  CHECK(missing.code() == StatusCode::kNotFound);
  CHECK(missing.message() == "request gpu: DeviceClass missing does not exist");
  DeviceSelection odd = Select("gpu");
  odd.selectors = {"size({'a': 1}) == 1"};
  spec.requests = {DeviceRequest{"gpu", std::nullopt, {DeviceSubRequest{"small", odd}}}};
  Status unsupported = CheckAllocatable(spec, Classes());
  INFO(unsupported.message());
  CHECK(unsupported.code() == StatusCode::kUnsupported);
  CHECK(unsupported.message().starts_with("request gpu/small: selector `size({'a': 1}) == 1`: "));
  CHECK(unsupported.message().find("rewrite the selector") != std::string::npos);
  CHECK(AsksServedClass(spec, ServedClasses{"gpu"}));
  CHECK_FALSE(AsksServedClass(spec, ServedClasses{"a100"}));
}
