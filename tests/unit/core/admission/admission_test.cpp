// The webhook decision (spec/hami-behaviour.md §3, §9.2; kubernetes-wire.md §2).
// Every patch is applied to the original pod here and the result checked.
#include "devshare/admission.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <boost/json.hpp>

#include "devshare/dra_extended.hpp"
#include "testutil.hpp"

using namespace devshare;
namespace bj = boost::json;

namespace {

// A minimal RFC 6902 "add" and "remove" applier (all the webhook emits);
// fails the test on a path whose parent, or removed member, does not exist.
bj::value ApplyPatch(bj::value doc, std::string_view patch) {
  if (patch.empty()) return doc;
  const bj::value ops = bj::parse(patch);
  for (const bj::value& op : ops.as_array()) {
    const bool remove = op.at("op").as_string() == "remove";
    REQUIRE((remove || op.at("op").as_string() == "add"));
    std::string path(op.at("path").as_string());
    std::vector<std::string> tokens;
    std::size_t start = 1;
    while (start <= path.size()) {
      std::size_t end = path.find('/', start);
      if (end == std::string::npos) end = path.size();
      std::string token = path.substr(start, end - start);
      for (std::size_t p; (p = token.find("~1")) != std::string::npos;) token.replace(p, 2, "/");
      for (std::size_t p; (p = token.find("~0")) != std::string::npos;) token.replace(p, 2, "~");
      tokens.push_back(token);
      start = end + 1;
    }
    bj::value* at = &doc;
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (at->is_object()) {
        INFO("missing parent for ", path);
        REQUIRE(at->as_object().contains(tokens[i]));
        at = &at->as_object()[tokens[i]];
      } else {
        REQUIRE(at->is_array());
        at = &at->as_array().at(std::stoul(tokens[i]));
      }
    }
    if (remove) {
      REQUIRE(at->is_object());
      INFO("nothing to remove at ", path);
      REQUIRE(at->as_object().erase(tokens.back()) == 1);
    } else if (at->is_array()) {
      REQUIRE(tokens.back() == "-");
      at->as_array().push_back(op.at("value"));
    } else {
      REQUIRE(at->is_object());
      at->as_object()[tokens.back()] = op.at("value");
    }
  }
  return doc;
}

std::string Review(const bj::value& pod) {
  return bj::serialize(bj::object{{"apiVersion", "admission.k8s.io/v1"},
                                  {"kind", "AdmissionReview"},
                                  {"request", bj::object{{"uid", "705ab4f5"},
                                                         {"namespace", "team-a"},
                                                         {"operation", "CREATE"},
                                                         {"object", pod}}}});
}

bj::value PodWith(bj::value containers, bj::object spec_extra = {}) {
  bj::object spec{{"containers", std::move(containers)}};
  for (auto& [k, v] : spec_extra) spec[k] = v;
  return bj::object{{"kind", "Pod"},
                    {"metadata", bj::object{{"generateName", "trainer-"}, {"namespace", "team-a"}}},
                    {"spec", std::move(spec)}};
}

struct Outcome {
  AdmissionDecision decision;
  bj::value patched;
};

Outcome Admit(const bj::value& pod, const AdmissionOptions& options = {},
              DeviceConfig config = DefaultDeviceConfig(),
              const ClusterSnapshot* quotas = nullptr) {
  Result<AdmissionDecision> d = DecideAdmission(Review(pod), config, options, quotas);
  INFO(d.status().ToString());
  REQUIRE(d.ok());
  CHECK(d->uid == "705ab4f5");
  return Outcome{*d, ApplyPatch(pod, d->patch)};
}

const bj::value& Limits(const bj::value& pod, std::size_t i = 0) {
  return pod.at("spec").at("containers").at(i).at("resources").at("limits");
}

}  // namespace

TEST_CASE("admission: a count only gets exclusive cores and the scheduler name") {
  AdmissionOptions options;
  options.scheduler_name = "hami-scheduler";
  bj::value pod =
      PodWith(bj::array{bj::object{
                  {"name", "main"},
                  {"resources", bj::object{{"limits", bj::object{{"nvidia.com/gpu", "1"}}}}}}},
              bj::object{{"schedulerName", "default-scheduler"}});
  Outcome o = Admit(pod, options);
  CHECK(o.decision.allowed);
  CHECK(Limits(o.patched).at("nvidia.com/gpucores") == "100");
  CHECK(o.patched.at("spec").at("schedulerName") == "hami-scheduler");

  // --force-overwrite-default-scheduler=false: a pod naming default-scheduler stays with it.
  options.force_overwrite_default_scheduler = false;
  Outcome kept = Admit(pod, options);
  CHECK(kept.decision.allowed);
  CHECK(kept.decision.patch.empty());
  CHECK(kept.decision.message.find("different scheduler") != std::string::npos);
  CHECK(kept.patched.at("spec").at("schedulerName") == "default-scheduler");
}

TEST_CASE("admission: memory only gets the default GPU count; no resources block gets one") {
  bj::value pod = PodWith(bj::array{
      bj::object{{"name", "a"},
                 {"resources", bj::object{{"limits", bj::object{{"nvidia.com/gpumem", "3000"}}}}}},
      bj::object{{"name", "b"}}});
  DeviceConfig config = DefaultDeviceConfig();
  config.nvidia.overwrite_env = true;
  config.nvidia.gpu_core_policy = "force";
  Outcome o = Admit(pod, {}, config);
  CHECK(Limits(o.patched, 0).at("nvidia.com/gpu") == "1");
  // W12: the core-policy env only where a GPU is asked; overwriteEnv hides
  // GPUs from the container that asks none (env added under a missing env).
  const bj::array& env_a = o.patched.at("spec").at("containers").at(0).at("env").as_array();
  CHECK(env_a.at(0).at("name") == "GPU_CORE_UTILIZATION_POLICY");
  const bj::array& env_b = o.patched.at("spec").at("containers").at(1).at("env").as_array();
  REQUIRE(env_b.size() == 1);
  CHECK(env_b.at(0).at("name") == "NVIDIA_VISIBLE_DEVICES");
  CHECK(env_b.at(0).at("value") == "none");
}

TEST_CASE("admission: existing env and limits get single members; priority env") {
  bj::value pod = PodWith(bj::array{
      bj::object{{"name", "a"},
                 {"env", bj::array{bj::object{{"name", "X"}, {"value", "1"}}}},
                 {"resources", bj::object{{"limits", bj::object{{"nvidia.com/gpu", "1"},
                                                                {"nvidia.com/priority", "0"}}}}}}});
  Outcome o = Admit(pod);
  CHECK(Limits(o.patched).at("nvidia.com/gpu") == "1");
  CHECK(Limits(o.patched).at("nvidia.com/gpucores") == "100");
  const bj::array& env = o.patched.at("spec").at("containers").at(0).at("env").as_array();
  REQUIRE(env.size() == 2);
  CHECK(env.at(1).at("name") == "CUDA_TASK_PRIORITY");
  CHECK(o.decision.patch.find("/spec/containers/0/resources/limits/nvidia.com~1gpucores") !=
        std::string::npos);
}

TEST_CASE("admission: denials and the scheduler-name gate") {
  AdmissionOptions options;
  options.scheduler_name = "hami-scheduler";
  auto gpu = [](bj::object extra = {}) {
    bj::object c{{"name", "main"},
                 {"resources", bj::object{{"limits", bj::object{{"nvidia.com/gpu", "1"}}}}}};
    for (auto& [k, v] : extra) c[k] = v;
    return c;
  };
  struct Row {
    const char* what;
    bj::value pod;
    bool allowed;
    std::string message;
  };
  const Row rows[] = {
      {"no containers", PodWith(bj::array{}), false, "pod has no containers"},
      {"privileged with a GPU",
       PodWith(bj::array{gpu(bj::object{{"securityContext", bj::object{{"privileged", true}}}})}),
       false, "container main is privileged"},
      {"nodeName set", PodWith(bj::array{gpu()}, bj::object{{"nodeName", "n1"}}), false,
       "pod has node assigned"},
      {"another scheduler", PodWith(bj::array{gpu()}, bj::object{{"schedulerName", "volcano"}}),
       true, "pod already has different scheduler assigned"},
      {"percentage out of range",
       PodWith(bj::array{bj::object{
           {"name", "x"},
           {"resources",
            bj::object{{"limits", bj::object{{"nvidia.com/gpu", "1"},
                                             {"nvidia.com/gpumem-percentage", "150"}}}}}}}),
       false, "must be between 0 and 100"},
      {"privileged without a GPU is fine",
       PodWith(bj::array{
           bj::object{{"name", "p"}, {"securityContext", bj::object{{"privileged", true}}}}}),
       true, ""},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    Outcome o = Admit(row.pod, options);
    CHECK(o.decision.allowed == row.allowed);
    CHECK(o.decision.message.find(row.message) != std::string::npos);
    if (!row.allowed) CHECK(o.decision.patch.empty());
  }
}

TEST_CASE("admission: the quota pre-check") {
  ClusterSnapshot quotas;
  REQUIRE(quotas.SetQuota("team-a", "q", StringMap{{"limits.nvidia.com/gpumem", "4000"}}).ok());
  bj::value small = PodWith(bj::array{bj::object{
      {"name", "a"},
      {"resources", bj::object{{"limits", bj::object{{"nvidia.com/gpu", "1"},
                                                     {"nvidia.com/gpumem", "3000"}}}}}}});
  bj::value big = PodWith(bj::array{bj::object{
      {"name", "a"},
      {"resources", bj::object{{"limits", bj::object{{"nvidia.com/gpu", "2"},
                                                     {"nvidia.com/gpumem", "3000"}}}}}}});
  CHECK(Admit(small, {}, DefaultDeviceConfig(), &quotas).decision.allowed);
  Outcome denied = Admit(big, {}, DefaultDeviceConfig(), &quotas);  // 2 x 3000 > 4000
  CHECK_FALSE(denied.decision.allowed);
  CHECK(denied.decision.message == "exceeding resource quota");
}

TEST_CASE("admission: malformed reviews and the response encoding") {
  CHECK(DecideAdmission("not json", DefaultDeviceConfig(), {}, nullptr).status().code() ==
        StatusCode::kMalformed);
  CHECK(DecideAdmission(R"({"request":{}})", DefaultDeviceConfig(), {}, nullptr).status().field() ==
        "request.uid");
  Result<AdmissionDecision> bad_pod =
      DecideAdmission(R"({"request":{"uid":"u1","object":{"spec":{"containers":"nope"}}}})",
                      DefaultDeviceConfig(), {}, nullptr);
  REQUIRE(bad_pod.ok());
  CHECK_FALSE(bad_pod->allowed);
  CHECK(bad_pod->code == 400);
  // kubernetes-wire §2.3 example: the exact base64.
  AdmissionDecision d;
  d.uid = "705ab4f5-6393-11e8-b7cc-42010a800002";
  d.patch =
      R"([{"op":"add","path":"/metadata/annotations","value":{"gpu.example.com/share":"0.5"}}])";
  CHECK(
      EncodeAdmissionResponse(d) ==
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2Fubm90YXRpb25zIiwidmFsdWUiOnsiZ3B1LmV4YW1wbGUuY29tL3NoYXJlIjoiMC41In19XQ=="}})");
  AdmissionDecision deny{"u2", false, 403, "pod has no containers", ""};
  CHECK(
      EncodeAdmissionResponse(deny) ==
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u2","allowed":false,"status":{"code":403,"message":"pod has no containers"}}})");
}

TEST_CASE("admission: exclusive-core defaulting (spec §3.2 step 5) and the runtime class") {
  struct Row {
    const char* what;
    bj::object limits;
    bool exclusive;  // the patch adds nvidia.com/gpucores=100
  };
  const Row rows[] = {
      {"count only", bj::object{{"nvidia.com/gpu", "1"}}, true},
      {"count and percentage 100",
       bj::object{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "100"}}, true},
      // The spec (§3.2 step 5) reads the three conditions as alternatives; HAMi's
      // code checks the percentage first and only then gpumem (oracle, webhook).
      {"count and percentage 50, no gpumem",
       bj::object{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "50"}}, false},
      {"count and percentage 100 with gpumem",
       bj::object{{"nvidia.com/gpu", "1"},
                  {"nvidia.com/gpumem-percentage", "100"},
                  {"nvidia.com/gpumem", "4000"}},
       true},
      {"count and gpumem", bj::object{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4000"}},
       false},
      {"count and cores", bj::object{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "30"}},
       false},
  };
  DeviceConfig config = DefaultDeviceConfig();
  config.nvidia.runtime_class_name = "nvidia";
  for (const Row& row : rows) {
    CAPTURE(row.what);
    bj::value pod = PodWith(
        bj::array{bj::object{{"name", "c"}, {"resources", bj::object{{"limits", row.limits}}}}});
    Outcome o = Admit(pod, {}, config);
    const bj::object& limits = Limits(o.patched).as_object();
    CHECK(limits.contains("nvidia.com/gpucores") ==
          (row.exclusive || row.limits.contains("nvidia.com/gpucores")));
    if (row.exclusive) CHECK(limits.at("nvidia.com/gpucores") == "100");
    CHECK(o.patched.at("spec").at("runtimeClassName") == "nvidia");
  }
  // A pod that already names a runtime class keeps it; a pod without devices gets none.
  bj::value named =
      PodWith(bj::array{bj::object{
                  {"name", "c"},
                  {"resources", bj::object{{"limits", bj::object{{"nvidia.com/gpu", "1"}}}}}}},
              bj::object{{"runtimeClassName", "kata"}});
  CHECK(Admit(named, {}, config).patched.at("spec").at("runtimeClassName") == "kata");
  bj::value cpu = PodWith(bj::array{bj::object{{"name", "c"}}});
  CHECK_FALSE(Admit(cpu, {}, config).patched.at("spec").as_object().contains("runtimeClassName"));
}

namespace {

// A pod of team-a using `claims` (spec.resourceClaims entries).
bj::value DraPod(bj::array claims, bj::object spec_extra = {}) {
  spec_extra["resourceClaims"] = std::move(claims);
  return PodWith(bj::array{bj::object{{"name", "main"}}}, std::move(spec_extra));
}

dra::ResourceClaimTemplate Template(std::string name, std::string device_class,
                                    std::vector<std::string> selectors = {}) {
  dra::ResourceClaimTemplate t;
  t.template_namespace = "team-a";
  t.name = std::move(name);
  dra::DeviceSelection s;
  s.device_class_name = std::move(device_class);
  s.selectors = std::move(selectors);
  t.spec.requests.push_back(dra::DeviceRequest{"gpu", s, {}});
  return t;
}

ClusterSnapshot DraObjects() {
  ClusterSnapshot snapshot;
  snapshot.AddDeviceClass(dra::DeviceClass{"hami-gpu", "", {"device.driver == 'hami'"}, {}});
  snapshot.AddDeviceClass(dra::DeviceClass{"nic", "", {}, {}});
  snapshot.AddResourceClaimTemplate(Template("share", "hami-gpu"));
  snapshot.AddResourceClaimTemplate(Template("nic", "nic"));
  snapshot.AddResourceClaimTemplate(Template("odd", "hami-gpu", {"size({'a': 1}) == 1"}));
  return snapshot;
}

bj::object FromTemplate(std::string name, std::string template_name) {
  return bj::object{{"name", std::move(name)}, {"resourceClaimTemplateName", template_name}};
}

}  // namespace

TEST_CASE(
    "admission: DRA pods of served classes are gated, and refused when devshare cannot "
    "allocate them") {
  AdmissionOptions options;
  options.dra_device_classes = {"hami-gpu"};
  const ClusterSnapshot snapshot = DraObjects();
  auto gates = [](const Outcome& o) {
    std::vector<std::string> names;
    if (const bj::value* g = o.patched.at("spec").as_object().if_contains("schedulingGates")) {
      for (const bj::value& gate : g->as_array()) names.emplace_back(gate.at("name").as_string());
    }
    return names;
  };
  using Names = std::vector<std::string>;

  // Served: gated, whatever the scheduler (another scheduler would allocate too).
  Outcome served = Admit(DraPod(bj::array{FromTemplate("gpu", "share")},
                                bj::object{{"schedulerName", "other-scheduler"}}),
                         options, DefaultDeviceConfig(), &snapshot);
  CHECK(served.decision.allowed);
  CHECK(gates(served) == Names{"devshare.dev/dra-allocation"});
  // A gate of its own is kept; ours is appended.
  Outcome appended = Admit(
      DraPod(bj::array{FromTemplate("gpu", "share")},
             bj::object{{"schedulingGates", bj::array{bj::object{{"name", "example.com/q"}}}}}),
      options, DefaultDeviceConfig(), &snapshot);
  CHECK(gates(appended) == Names{"example.com/q", "devshare.dev/dra-allocation"});
  // Already gated: nothing to add.
  Outcome again = Admit(appended.patched, options, DefaultDeviceConfig(), &snapshot);
  CHECK(again.decision.patch.empty());
  // Not seen yet: gated until devshare can judge it.
  Outcome unknown = Admit(DraPod(bj::array{FromTemplate("gpu", "later")}), options,
                          DefaultDeviceConfig(), &snapshot);
  CHECK(gates(unknown) == Names{"devshare.dev/dra-allocation"});
  // Not served: left alone.
  Outcome other = Admit(DraPod(bj::array{FromTemplate("net", "nic")}), options,
                        DefaultDeviceConfig(), &snapshot);
  CHECK(other.decision.allowed);
  CHECK(other.decision.patch.empty());
  // Without served classes nothing is gated.
  Outcome off =
      Admit(DraPod(bj::array{FromTemplate("gpu", "share")}), {}, DefaultDeviceConfig(), &snapshot);
  CHECK(off.decision.patch.empty());

  // Refused, each with the reason.
  struct Refusal {
    bj::value pod;
    std::string says;
  };
  const Refusal refusals[] = {
      {DraPod(bj::array{FromTemplate("gpu", "odd")}),
       "claim gpu (ResourceClaimTemplate team-a/odd): request gpu: selector "
       "`size({'a': 1}) == 1`: "},
      {DraPod(bj::array{FromTemplate("gpu", "share"), FromTemplate("net", "nic")}),
       "claim gpu (ResourceClaimTemplate team-a/share) asks a DeviceClass devshare serves and "
       "claim net (ResourceClaimTemplate team-a/nic) one it does not"},
      {DraPod(bj::array{FromTemplate("gpu", "share")}, bj::object{{"nodeName", "n1"}}),
       "pod has node assigned"},
  };
  for (const Refusal& r : refusals) {
    Outcome o = Admit(r.pod, options, DefaultDeviceConfig(), &snapshot);
    INFO(o.decision.message);
    CHECK_FALSE(o.decision.allowed);
    CHECK(o.decision.code == 403);
    CHECK(o.decision.message.find(r.says) != std::string::npos);
  }
}

TEST_CASE(
    "admission: a pod asking an extended resource that a served class backs gets a claim of "
    "that class instead, gated") {
  AdmissionOptions options;
  options.dra_device_classes = {"hami-gpu"};
  ClusterSnapshot snapshot = DraObjects();
  snapshot.AddDeviceClass(
      dra::DeviceClass{"hami-gpu", "", {"device.driver == 'hami'"}, "example.com/shared-gpu"});
  snapshot.AddDeviceClass(dra::DeviceClass{"nic", "", {}, "example.com/nic"});
  snapshot.AddDeviceClass(dra::DeviceClass{"plugin", "", {}, "nvidia.com/gpu"});
  auto asking = [](std::string resource, std::string quantity, bool in_requests) {
    bj::object limits{{resource, quantity}, {"cpu", "1"}};
    bj::object resources{{"limits", limits}};
    if (in_requests) resources["requests"] = limits;
    return PodWith(bj::array{bj::object{{"name", "side"}},
                             bj::object{{"name", "main"}, {"resources", resources}}});
  };
  struct Row {
    std::string resource;
    bool in_requests;
    bool converted;
  };
  const Row rows[] = {
      {"deviceclass.resource.kubernetes.io/hami-gpu", false, true},  // the implicit name
      {"example.com/shared-gpu", true, true},                        // its extendedResourceName
      {"deviceclass.resource.kubernetes.io/nic", false, false},      // a class not served
      {"example.com/nic", false, false},
      {"nvidia.com/gpu", false, false},  // HAMi's own resource: the device plugin's
  };
  for (const Row& row : rows) {
    CAPTURE(row.resource);
    Outcome o = Admit(asking(row.resource, "2", row.in_requests), options, DefaultDeviceConfig(),
                      &snapshot);
    REQUIRE(o.decision.allowed);
    const bj::value& main = o.patched.at("spec").at("containers").at(1);
    const bool kept = main.at("resources").at("limits").as_object().contains(row.resource);
    CHECK(kept != row.converted);
    if (!row.converted) continue;
    CHECK(main.at("resources").at("limits").at("cpu") == "1");
    if (row.in_requests) {
      CHECK_FALSE(main.at("resources").at("requests").as_object().contains(row.resource));
    }
    CHECK(main.at("resources").at("claims") == bj::parse(R"([{"name":"devshare-ext-0"}])"));
    CHECK(o.patched.at("spec").at("containers").at(0).as_object().size() == 1);  // untouched
    CHECK(
        o.patched.at("spec").at("resourceClaims") ==
        bj::parse(R"([{"name":"devshare-ext-0","resourceClaimName":"devshare-ext-705ab4f5-0"}])"));
    CHECK(o.patched.at("spec").at("schedulingGates") ==
          bj::parse(R"([{"name":"devshare.dev/dra-allocation"}])"));
    const std::string listed(o.patched.at("metadata")
                                 .at("annotations")
                                 .at("devshare.dev/extended-resource-claims")
                                 .as_string());
    CHECK(listed ==
          R"([{"claim":"devshare-ext-705ab4f5-0","deviceClassName":"hami-gpu","count":2}])");
    auto decoded = dra::DecodeExtendedClaims(listed);
    REQUIRE(decoded.ok());
    CHECK(*decoded == std::vector<dra::ExtendedClaim>{{"devshare-ext-705ab4f5-0", "hami-gpu", 2}});
  }
  // Beside claims, annotations and container claims already there, and in an
  // init container: appended to each.
  bj::value mixed = bj::parse(R"({"metadata": {"name": "m", "namespace": "team-a",
      "annotations": {"a": "b"}},
    "spec": {"resourceClaims": [{"name": "x", "resourceClaimTemplateName": "share"}],
      "initContainers": [{"name": "i", "resources": {"limits": {
        "deviceclass.resource.kubernetes.io/hami-gpu": "1"}}}],
      "containers": [{"name": "m", "resources": {"limits": {"example.com/shared-gpu": "1"},
        "claims": [{"name": "x"}]}}]}})");
  Outcome both = Admit(mixed, options, DefaultDeviceConfig(), &snapshot);
  REQUIRE(both.decision.allowed);
  const bj::value& spec = both.patched.at("spec");
  CHECK(spec.at("resourceClaims") == bj::parse(R"([{"name":"x","resourceClaimTemplateName":"share"},
          {"name":"devshare-ext-0","resourceClaimName":"devshare-ext-705ab4f5-0"},
          {"name":"devshare-ext-1","resourceClaimName":"devshare-ext-705ab4f5-1"}])"));
  CHECK(spec.at("initContainers").at(0).at("resources") ==
        bj::parse(R"({"limits":{},"claims":[{"name":"devshare-ext-0"}]})"));
  CHECK(spec.at("containers").at(0).at("resources") ==
        bj::parse(R"({"limits":{},"claims":[{"name":"x"},{"name":"devshare-ext-1"}]})"));
  CHECK(both.patched.at("metadata").at("annotations").at("a") == "b");
  CHECK(both.patched.at("metadata")
            .at("annotations")
            .as_object()
            .contains("devshare.dev/extended-resource-claims"));
  // Not a whole number of devices: refused, naming the container.
  Outcome half = Admit(asking("example.com/shared-gpu", "500m", false), options,
                       DefaultDeviceConfig(), &snapshot);
  CHECK_FALSE(half.decision.allowed);
  CHECK(half.decision.message ==
        "devshare cannot allocate this pod's devices: container main asks 500m "
        "example.com/shared-gpu: a whole number of devices, at least 1, is needed");
  // Not serving DRA: left alone.
  Outcome off =
      Admit(asking("example.com/shared-gpu", "1", false), {}, DefaultDeviceConfig(), &snapshot);
  CHECK(off.decision.patch.empty());
}
