#include "k8s/node_selector.hpp"

#include <vector>

namespace devshare::internal {

namespace {

namespace bj = boost::json;

void ReadRequirements(JsonReader& r, const bj::object& term, std::string_view key,
                      const std::string& path, std::vector<NodeSelectorRequirement>& out) {
  r.EachObject(term, key, path, [&](const bj::object& req, const std::string& at) {
    NodeSelectorRequirement& requirement = out.emplace_back();
    r.String(req, "key", at + ".key", requirement.key);
    r.String(req, "operator", at + ".operator", requirement.op);
    r.Strings(req, "values", at + ".values", requirement.values);
  });
}

}  // namespace

void ReadNodeSelector(JsonReader& r, const bj::object& selector, const std::string& path,
                      NodeSelector& out) {
  r.EachObject(selector, "nodeSelectorTerms", path + ".nodeSelectorTerms",
               [&](const bj::object& term, const std::string& at) {
                 NodeSelectorTerm& t = out.terms.emplace_back();
                 ReadRequirements(r, term, "matchExpressions", at + ".matchExpressions",
                                  t.match_expressions);
                 ReadRequirements(r, term, "matchFields", at + ".matchFields", t.match_fields);
               });
}

void ReadLabelSelector(JsonReader& r, const bj::object& selector, const std::string& path,
                       LabelSelector& out) {
  r.Members(selector, "matchLabels", path + ".matchLabels",
            [&](const std::string& name, const bj::value& v, const std::string& at) {
              if (!v.is_string()) return r.Expect(at, "a string", v);
              out.match_labels.Set(name, v.get_string());
            });
  ReadRequirements(r, selector, "matchExpressions", path + ".matchExpressions",
                   out.match_expressions);
}

}  // namespace devshare::internal
