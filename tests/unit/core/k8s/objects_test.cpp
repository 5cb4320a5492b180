// Kubernetes objects as the API server serves them, and quantities as Go reads
// them (k8s.io/apimachinery resource.Quantity).
#include "devshare/objects.hpp"

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <functional>

#include "devshare/objects_json.hpp"
#include "testutil.hpp"

using namespace devshare;

TEST_CASE("quantities: Go's Quantity.AsInt64 and MilliValue") {
  struct Row {
    std::string_view text;
    std::optional<std::int64_t> as_int64;
    std::optional<std::int64_t> milli;
  };
  const Row rows[] = {
      {"2", 2, 2000},
      {"16Gi", 17179869184LL, 17179869184000LL},
      {"1Ki", 1024, 1024000},
      {"0.5Ki", 512, 512000},
      {"1500m", std::nullopt, 1500},  // 1.5 is not a whole number
      {"2000m", 2, 2000},
      {"1e3", 1000, 1000000},
      {"1.5", std::nullopt, 1500},
      {"+3", 3, 3000},
      {"-1", -1, -1000},
      {"100k", 100000, 100000000},
      {"1n", std::nullopt, 1},  // MilliValue rounds up
      {"9223372036854775807", 9223372036854775807LL, std::nullopt},
      {"9223372036854775808", std::nullopt, std::nullopt},
      {"abc", std::nullopt, std::nullopt},
      {"", std::nullopt, std::nullopt},
      {"1Gb", std::nullopt, std::nullopt},
      {".", std::nullopt, std::nullopt},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    CHECK(QuantityAsInt64(row.text) == row.as_int64);
    CHECK(QuantityMilliValue(row.text) == row.milli);
  }
  CHECK(QuantityValue("1500m") == 2);
}

TEST_CASE("objects: a Pod as the API server serves it") {
  constexpr std::string_view kPod = R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ml", "uid": "u-1",
                 "annotations": {"hami.io/vgpu-node": "n1"}, "labels": {"app": "x"},
                 "deletionTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {"schedulerName": "hami-scheduler", "nodeName": "", "priority": 5,
             "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}],
             "containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "500m"},
                                                        "requests": {"cpu": "500m", "memory": "512Mi"}},
                             "securityContext": {"privileged": true}},
                            {"name": "b", "resources": {"requests": {"cpu": "250m"}}}]},
    "status": {"phase": "Pending",
               "initContainerStatuses": [{"state": {"terminated": {"exitCode": 0}}}]}})";
  Result<Pod> pod = DecodePod(kPod);
  REQUIRE(pod.ok());
  CHECK(pod->pod_namespace == "ml");
  CHECK(pod->uid == "u-1");
  CHECK(*pod->annotations.Find("hami.io/vgpu-node") == "n1");
  CHECK(pod->terminating);
  CHECK(pod->priority == 5);
  REQUIRE(pod->containers.size() == 2);
  CHECK(*pod->containers[0].limits.Find("nvidia.com/gpu") == "1");  // a number becomes text
  CHECK(pod->containers[0].privileged);
  CHECK(pod->init_containers_done);
  CHECK(pod->cpu_milli == 2000);           // max(500 + 250, init 2000)
  CHECK(pod->memory_bytes == 1073741824);  // max(512Mi, init 1Gi)
  CHECK(pod->phase == "Pending");

  // The same from a value already parsed (objects_json.hpp): nothing re-serialised.
  Result<Pod> from_value = DecodePod(boost::json::parse(kPod).get_object());
  REQUIRE(from_value.ok());
  CHECK(*from_value == *pod);
  Result<Node> node =
      DecodeNode(boost::json::parse(R"({"metadata": {"name": "n1"}})").get_object());
  REQUIRE(node.ok());
  CHECK(node->name == "n1");
  CHECK(DecodeNode(boost::json::object{}).status().field() == "metadata.name");
}

TEST_CASE("objects: a Pod's DRA claims and scheduling gates") {
  Result<Pod> pod = DecodePod(R"({
    "metadata": {"name": "p", "namespace": "ml"},
    "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "shared-gpu"},
                                {"name": "nic", "resourceClaimName": "nic-1"}],
             "schedulingGates": [{"name": "devshare.io/dra"}],
             "containers": [{"name": "a", "resources": {"claims": [{"name": "gpu"}]}}]},
    "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x7k2"}]}})");
  REQUIRE(pod.ok());
  CHECK(pod->resource_claims ==
        std::vector<PodResourceClaim>{{"gpu", "", "shared-gpu", "p-gpu-x7k2"},
                                      {"nic", "nic-1", "", ""}});
  CHECK(pod->scheduling_gates == std::vector<std::string>{"devshare.io/dra"});
  struct Row {
    std::string_view json, field;
  };
  const Row rows[] = {
      {R"({"spec": {"resourceClaims": {}}})", "spec.resourceClaims"},
      {R"({"spec": {"resourceClaims": [{"resourceClaimName": "c"}]}})",
       "spec.resourceClaims[0].name"},
      {R"({"spec": {"resourceClaims": [{"name": "g"}]}})", "spec.resourceClaims[0]"},
      {R"({"spec": {"resourceClaims": [{"name": "g", "resourceClaimName": "c",
                                        "resourceClaimTemplateName": "t"}]}})",
       "spec.resourceClaims[0]"},
      {R"({"spec": {"schedulingGates": [{"name": 3}]}})", "spec.schedulingGates[0].name"},
      {R"({"status": {"resourceClaimStatuses": [7]}})", "status.resourceClaimStatuses[0]"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.json);
    Result<Pod> bad = DecodePod(row.json);
    REQUIRE(!bad.ok());
    CHECK(bad.status().field() == row.field);
  }
}

TEST_CASE("objects: where a Pod may go, and which nodes exclude it") {
  Result<Pod> pod = DecodePod(R"({
    "metadata": {"name": "p"},
    "spec": {"nodeSelector": {"gpu": "a100"},
             "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                             {"key": "team", "value": "ml"}],
             "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
               "nodeSelectorTerms": [
                 {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
                 {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]}]}}},
             "containers": [{"name": "a"}]}})");
  REQUIRE(pod.ok());
  CHECK(pod->node_selector == StringMap{{"gpu", "a100"}});
  CHECK(pod->tolerations == std::vector<Toleration>{{"nvidia.com/gpu", "Exists", "", "NoSchedule"},
                                                    {"team", "", "ml", ""}});
  REQUIRE(pod->required_node_affinity);
  CHECK(pod->required_node_affinity->terms.size() == 2);
  Result<Node> base = DecodeNode(R"({
    "metadata": {"name": "n1", "labels": {"gpu": "a100", "zone": "b"}},
    "spec": {"unschedulable": false,
             "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                        {"key": "team", "value": "ml", "effect": "NoExecute"},
                        {"key": "soft", "effect": "PreferNoSchedule"}]}})");
  REQUIRE(base.ok());
  CHECK(base->taints.size() == 3);
  CHECK(NodeExcludes(*pod, *base) == std::nullopt);

  struct Row {
    const char* what;
    std::function<void(Node&)> change;
    std::optional<std::string> excludes;
  };
  const Row rows[] = {
      {"cordoned", [](Node& n) { n.unschedulable = true; }, "the node is unschedulable (cordoned)"},
      {"a taint not tolerated",
       [](Node& n) {
         n.taints.push_back(Taint{"x", "1", "NoSchedule"});
       },
       "taint x=1:NoSchedule is not tolerated"},
      {"a toleration of another value", [](Node& n) { n.taints[1].value = "web"; },
       "taint team=web:NoExecute is not tolerated"},
      {"a label the node selector wants", [](Node& n) { n.labels.Set("gpu", "h100"); },
       "node selector gpu=a100 does not match"},
      {"the affinity's zone", [](Node& n) { n.labels.Set("zone", "c"); },
       "the required node affinity does not match"},
      {"the affinity's other term",
       [](Node& n) {
         n.labels.Set("zone", "c");
         n.name = "n9";
       },
       std::nullopt},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    Node node = *base;
    row.change(node);
    CHECK(NodeExcludes(*pod, node) == row.excludes);
  }
  Pod tolerates_all = *pod;
  tolerates_all.tolerations = {Toleration{"", "Exists", "", ""}};
  Node cordoned = *base;
  cordoned.unschedulable = true;
  CHECK(NodeExcludes(tolerates_all, cordoned) == std::nullopt);

  struct Bad {
    std::string_view json, field;
  };
  const Bad bad_pods[] = {
      {R"({"spec": {"nodeSelector": {"gpu": 1}}})", "spec.nodeSelector[\"gpu\"]"},
      {R"({"spec": {"tolerations": [{"key": 3}]}})", "spec.tolerations[0].key"},
      {R"({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "values": "b"}]}]}}}}})",
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchExpressions[0].values"},
  };
  for (const Bad& b : bad_pods) {
    CAPTURE(b.json);
    Result<Pod> bad = DecodePod(b.json);
    REQUIRE(!bad.ok());
    CHECK(bad.status().field() == b.field);
  }
  CHECK(DecodeNode(R"({"metadata": {"name": "n"}, "spec": {"unschedulable": "yes"}})")
            .status()
            .field() == "spec.unschedulable");
  CHECK(DecodeNode(R"({"metadata": {"name": "n"}, "spec": {"taints": [{"effect": 1}]}})")
            .status()
            .field() == "spec.taints[0].effect");
}

TEST_CASE("objects: malformed Pods and Nodes name the JSON path") {
  CHECK(DecodePod("[]").status().field() == "value");
  CHECK(DecodePod(R"({"metadata": []})").status().field() == "metadata");
  CHECK(
      DecodePod(R"({"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": [1]}}}]}})")
          .status()
          .field() == "spec.containers[0].resources.limits[\"nvidia.com/gpu\"]");
  CHECK(DecodePod(R"({"metadata": {"annotations": {"a": 1}}})").status().field() ==
        "metadata.annotations[\"a\"]");
  CHECK(DecodeNode(R"({"metadata": {}})").status().field() == "metadata.name");
  Result<Node> node = DecodeNode(R"({"metadata": {"name": "n1", "annotations": {"k": "v"}},
                                     "status": {"allocatable": {"nvidia.com/gpu": "80"}}})");
  REQUIRE(node.ok());
  CHECK(*node->allocatable.Find("nvidia.com/gpu") == "80");
}

TEST_CASE("objects: a ResourceQuota as the API server serves it, and malformed ones") {
  Result<ResourceQuota> quota = DecodeResourceQuota(R"({
    "metadata": {"namespace": "team-a", "name": "gpu", "uid": "u1", "resourceVersion": "42"},
    "spec": {"hard": {"limits.nvidia.com/gpumem": "8000", "requests.nvidia.com/gpu": 2}},
    "status": {"used": {"limits.nvidia.com/gpumem": "0"}}})");
  REQUIRE(quota.ok());
  CHECK(quota->quota_namespace == "team-a");
  CHECK(quota->name == "gpu");
  CHECK(quota->uid == "u1");
  CHECK(quota->resource_version == "42");
  CHECK(*quota->hard.Find("limits.nvidia.com/gpumem") == "8000");
  CHECK(*quota->hard.Find("requests.nvidia.com/gpu") == "2");  // a number, as its text
  CHECK(quota->hard.size() == 2);  // status.used is the API server's count, not read
  CHECK(DecodeResourceQuota(R"({"metadata": {"namespace": "a", "name": "q"}})").ok());  // no spec
  CHECK(DecodeResourceQuota(R"({"metadata": {"name": "q"}})").status().field() ==
        "metadata.namespace");
  CHECK(DecodeResourceQuota(R"({"metadata": {"namespace": "a"}})").status().field() ==
        "metadata.name");
  CHECK(DecodeResourceQuota(R"({"metadata": {"namespace": "a", "name": "q"},
                                "spec": {"hard": {"limits.nvidia.com/gpumem": [1]}}})")
            .status()
            .field() == "spec.hard[\"limits.nvidia.com/gpumem\"]");
  CHECK(DecodeResourceQuota("[]").status().code() == StatusCode::kMalformed);
  CHECK(DecodeResourceQuota("{").status().code() == StatusCode::kMalformed);
}

TEST_CASE("objects: a PodDisruptionBudget, its label selector, and malformed ones") {
  Result<PodDisruptionBudget> budget = DecodePodDisruptionBudget(R"({
    "metadata": {"namespace": "db", "name": "pg"},
    "spec": {"selector": {"matchLabels": {"app": "pg"},
                          "matchExpressions": [{"key": "tier", "operator": "In",
                                                "values": ["primary", "replica"]}]}},
    "status": {"disruptionsAllowed": 1, "disruptedPods": {"pg-0": "2026-11-28T10:00:00Z"}}})");
  REQUIRE(budget.ok());
  CHECK(budget->budget_namespace == "db");
  CHECK(budget->disruptions_allowed == 1);
  CHECK(budget->disrupted_pods == std::vector<std::string>{"pg-0"});
  const StringMap primary{{"app", "pg"}, {"tier", "primary"}};
  const StringMap other_tier{{"app", "pg"}, {"tier", "cache"}};
  const StringMap other_app{{"app", "web"}, {"tier", "primary"}};
  CHECK(LabelSelectorMatches(budget->selector, primary));
  CHECK_FALSE(LabelSelectorMatches(budget->selector, other_tier));
  CHECK_FALSE(LabelSelectorMatches(budget->selector, other_app));
  CHECK(LabelSelectorMatches(LabelSelector{}, other_app));  // empty: everything
  // Gt and Lt are node selector operators only: a label selector with them selects nothing.
  CHECK_FALSE(LabelSelectorMatches(LabelSelector{{}, {{"tier", "Gt", {"1"}}}}, primary));
  CHECK(DecodePodDisruptionBudget(R"({"metadata": {"name": "x"}})").status().field() ==
        "metadata.namespace");
  CHECK(DecodePodDisruptionBudget(R"({"metadata": {"namespace": "a", "name": "x"},
                                      "status": {"disruptionsAllowed": -1}})")
            .status()
            .field() == "status.disruptionsAllowed");
  CHECK(DecodePodDisruptionBudget(R"({"metadata": {"namespace": "a", "name": "x"},
                                      "spec": {"selector": {"matchLabels": {"app": 1}}}})")
            .status()
            .field() == "spec.selector.matchLabels[\"app\"]");
}

TEST_CASE("objects: a Pod's preemption policy and start time") {
  Result<Pod> pod = DecodePod(R"({"metadata": {"name": "p"},
    "spec": {"priority": 1000, "preemptionPolicy": "Never"},
    "status": {"startTime": "2026-11-28T10:00:00Z"}})");
  REQUIRE(pod.ok());
  CHECK(pod->priority == 1000);
  CHECK(pod->preemption_policy == "Never");
  CHECK(pod->start_time == "2026-11-28T10:00:00Z");
}
