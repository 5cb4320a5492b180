#include "devshare/kube/extender.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <set>

#include "devshare/objects_json.hpp"

namespace devshare::kube {

namespace bj = boost::json;

namespace {

Status Bad(const std::string& what) { return Status::Malformed("extender request: " + what); }

Result<bj::value> ParseJson(std::string_view json) {
  boost::system::error_code ec;
  bj::value v = bj::parse(json, ec);
  if (ec) return Bad(fmt::format("not JSON: {}", ec.message()));
  if (!v.is_object()) return Bad("not a JSON object");
  return v;
}

// A string field of `o`, or an error naming it.
Result<std::string> StringField(const bj::object& o, std::string_view key) {
  const bj::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string())
    return Bad(fmt::format("{} is missing or not a string", key));
  return std::string(v->get_string());
}

}  // namespace

Result<ExtenderArgs> DecodeExtenderArgs(std::string_view json) {
  Result<bj::value> doc = ParseJson(json);
  if (!doc.ok()) return doc.status();
  const bj::object& root = doc->get_object();
  ExtenderArgs args;
  const bj::value* pod = root.if_contains("Pod");
  if (pod == nullptr || !pod->is_object()) return Bad("Pod is missing or not an object");
  Result<Pod> decoded = DecodePod(pod->get_object());
  if (!decoded.ok()) return Bad(fmt::format("Pod: {}", decoded.status().message()));
  args.pod = std::move(*decoded);
  const bj::value* names = root.if_contains("NodeNames");
  const bj::value* nodes = root.if_contains("Nodes");
  if (names != nullptr && names->is_array()) {
    for (std::size_t i = 0; i < names->get_array().size(); ++i) {
      const bj::value& n = names->get_array()[i];
      if (!n.is_string()) return Bad(fmt::format("NodeNames[{}] is not a string", i));
      args.nodes.emplace_back(n.get_string());
    }
    return args;
  }
  if (nodes == nullptr || !nodes->is_object()) return Bad("neither NodeNames nor Nodes is given");
  args.node_names = false;
  const bj::value* items = nodes->get_object().if_contains("items");
  if (items == nullptr || !items->is_array()) return Bad("Nodes.items is missing or not a list");
  for (std::size_t i = 0; i < items->get_array().size(); ++i) {
    const bj::value& item = items->get_array()[i];
    const bj::value* name = item.is_object() ? item.get_object().if_contains("metadata") : nullptr;
    name = name != nullptr && name->is_object() ? name->get_object().if_contains("name") : nullptr;
    if (name == nullptr || !name->is_string())
      return Bad(fmt::format("Nodes.items[{}].metadata.name is missing", i));
    args.nodes.emplace_back(name->get_string());
    args.node_items.push_back(bj::serialize(item));
  }
  return args;
}

std::string EncodeFilterResult(const ExtenderArgs& args, const engine::FilterReply& reply) {
  const std::set<std::string_view> kept(reply.nodes.begin(), reply.nodes.end());
  bj::object failed;
  for (const NodeFailure& f : reply.failed) {
    failed[f.node] = f.reason.empty() ? std::string("does not fit") : f.reason;
  }
  if (reply.error.empty()) {
    for (const std::string& node : args.nodes) {
      if (!kept.contains(node) && !failed.contains(node)) {
        failed[node] = reply.nodes.empty()
                           ? std::string("does not fit")
                           : fmt::format("not chosen: {} is preferred", reply.nodes.front());
      }
    }
  }
  bj::object out;
  if (args.node_names) {
    out["Nodes"] = nullptr;
    bj::array names;
    for (const std::string& node : args.nodes) {
      if (kept.contains(node)) names.emplace_back(node);
    }
    out["NodeNames"] = std::move(names);
  } else {
    bj::array items;
    for (std::size_t i = 0; i < args.nodes.size(); ++i) {
      if (kept.contains(args.nodes[i])) items.push_back(bj::parse(args.node_items[i]));
    }
    out["Nodes"] = bj::object{{"metadata", bj::object{}}, {"items", std::move(items)}};
    out["NodeNames"] = nullptr;
  }
  out["FailedNodes"] = std::move(failed);
  out["FailedAndUnresolvableNodes"] = bj::object{};
  out["Error"] = reply.error;
  return bj::serialize(out);
}

std::string EncodeHostPriorities(const std::vector<NodeScore>& scores) {
  bj::array out;
  for (const NodeScore& s : scores) {
    // The core's 0..100 on the extender API's 0..10 (MaxExtenderPriority), rounded.
    const auto score = std::lround(std::clamp(s.normalized, 0.0, 100.0) / 10);
    out.push_back(bj::object{{"Host", s.node}, {"Score", score}});
  }
  return bj::serialize(out);
}

Result<BindArgs> DecodeBindArgs(std::string_view json) {
  Result<bj::value> doc = ParseJson(json);
  if (!doc.ok()) return doc.status();
  const bj::object& o = doc->get_object();
  BindArgs args;
  for (auto [key, field] :
       {std::pair{"PodName", &args.pod_name}, std::pair{"PodNamespace", &args.pod_namespace},
        std::pair{"PodUID", &args.pod_uid}, std::pair{"Node", &args.node}}) {
    Result<std::string> v = StringField(o, key);
    if (!v.ok()) return v.status();
    *field = std::move(*v);
  }
  return args;
}

std::string EncodeBindResult(std::string_view error) {
  return bj::serialize(bj::object{{"Error", error}});
}

}  // namespace devshare::kube
