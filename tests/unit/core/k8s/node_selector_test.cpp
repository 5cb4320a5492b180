// The one core/v1 NodeSelector decoder (src/k8s/node_selector.hpp): what it
// keeps, and its errors, as the pod decoder and the DRA decoders report them.
#include "src/k8s/node_selector.hpp"

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <string>

#include "devshare/dra.hpp"
#include "devshare/objects.hpp"

namespace {

namespace bj = boost::json;
using devshare::NodeSelector;
using devshare::NodeSelectorRequirement;
using devshare::NodeSelectorTerm;
using devshare::internal::JsonReader;

devshare::Result<NodeSelector> Read(std::string_view json) {
  const bj::value doc = bj::parse(json);
  JsonReader r("test");
  NodeSelector out;
  devshare::internal::ReadNodeSelector(r, doc.as_object(), "sel", out);
  if (!r.ok()) return r.status();
  return out;
}

}  // namespace

TEST_CASE("ReadNodeSelector: terms with their expressions and fields, in order") {
  auto s = Read(R"({"nodeSelectorTerms": [
      {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
       "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]},
      {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
      {}]})");
  REQUIRE(s.ok());
  const NodeSelector want{{
      NodeSelectorTerm{{NodeSelectorRequirement{"zone", "In", {"a", "b"}}},
                       {NodeSelectorRequirement{"metadata.name", "NotIn", {"n1"}}}},
      NodeSelectorTerm{{NodeSelectorRequirement{"gpu", "Exists", {}}}, {}},
      NodeSelectorTerm{},
  }};
  CHECK(*s == want);
}

TEST_CASE("ReadNodeSelector: null and absent members are empty") {
  auto s = Read(R"({"nodeSelectorTerms": [{"matchExpressions": null,
      "matchFields": [{"key": "metadata.name", "operator": "In", "values": null}]}]})");
  REQUIRE(s.ok());
  REQUIRE(s->terms.size() == 1);
  CHECK(s->terms[0].match_expressions.empty());
  CHECK(s->terms[0].match_fields ==
        std::vector<NodeSelectorRequirement>{{"metadata.name", "In", {}}});
  CHECK(Read(R"({})")->terms.empty());
  CHECK(Read(R"({"nodeSelectorTerms": null})")->terms.empty());
}

TEST_CASE("ReadNodeSelector: the wrong kind of member, named by its path") {
  struct Row {
    const char* json;
    const char* message;
  };
  const Row rows[] = {
      {R"({"nodeSelectorTerms": {}})",
       "test: sel.nodeSelectorTerms: expected an array, got an object"},
      {R"({"nodeSelectorTerms": [1]})",
       "test: sel.nodeSelectorTerms[0]: expected an object, got an integer"},
      {R"({"nodeSelectorTerms": [{"matchExpressions": [{"key": 7}]}]})",
       "test: sel.nodeSelectorTerms[0].matchExpressions[0].key: expected a string, got an "
       "integer"},
      {R"({"nodeSelectorTerms": [{}, {"matchFields": [{"key": "k", "operator": true}]}]})",
       "test: sel.nodeSelectorTerms[1].matchFields[0].operator: expected a string, got a "
       "boolean"},
      {R"({"nodeSelectorTerms": [{"matchFields": [{"values": ["a", 2]}]}]})",
       "test: sel.nodeSelectorTerms[0].matchFields[0].values[1]: expected a string, got an "
       "integer"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.json);
    auto s = Read(row.json);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message() == row.message);
  }
}

TEST_CASE("NodeSelector errors read the same from a pod and from a ResourceSlice") {
  auto pod = devshare::DecodePod(R"({"spec": {"affinity": {"nodeAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": "a"}]}]}}}}})");
  REQUIRE_FALSE(pod.ok());
  CHECK(pod.status().message() ==
        "pod: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
        "nodeSelectorTerms[0].matchExpressions[0].values: expected an array, got a string");
  auto slice = devshare::dra::DecodeResourceSlice(R"({"metadata": {"name": "s"}, "spec": {
      "driver": "d", "pool": {"name": "p", "resourceSliceCount": 1}, "nodeSelector": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In",
                                                     "values": "a"}]}]}}})");
  REQUIRE_FALSE(slice.ok());
  CHECK(slice.status().message() ==
        "ResourceSlice: spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values: "
        "expected an array, got a string");
}
