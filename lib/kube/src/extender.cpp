#include "devshare/kube/extender.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <boost/unordered/unordered_flat_map.hpp>
#include <boost/unordered/unordered_flat_set.hpp>
#include <cmath>

#include "devshare/objects_json.hpp"
#include "json_member.hpp"

namespace devshare::kube {

namespace bj = boost::json;

namespace {

Status Bad(const std::string& what) { return Status::Malformed("extender request: " + what); }

Result<bj::value> ParseJson(std::string_view json, bj::storage_ptr storage = {}) {
  boost::system::error_code ec;
  bj::value v = bj::parse(json, ec, std::move(storage));
  if (ec) return Bad(fmt::format("not JSON: {}", ec.message()));
  if (!v.is_object()) return Bad("not a JSON object");
  return v;
}

}  // namespace

Result<ExtenderArgs> DecodeExtenderArgs(std::string_view json) {
  // The document lives only while it is read: one arena, freed at once.
  bj::monotonic_resource arena(json.size() * 2);
  Result<bj::value> doc = ParseJson(json, &arena);
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
    args.nodes.reserve(names->get_array().size());
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
  args.nodes.reserve(items->get_array().size());
  args.node_items.reserve(items->get_array().size());
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

namespace {

// Appends `s` as a JSON string, escaped as Boost.JSON's serializer escapes it
// (the encoders below write what bj::serialize wrote before them).
void AppendJsonString(std::string& out, std::string_view s) {
  const bool plain = std::none_of(s.begin(), s.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\';
  });
  if (!plain) {
    out += bj::serialize(bj::string_view(s.data(), s.size()));
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

// The FailedNodes entries in the order a JSON object keeps them: first
// insertion decides the position, the last value written wins.
class FailedNodes {
 public:
  explicit FailedNodes(std::size_t expected) {
    index_.reserve(expected);
    entries_.reserve(expected);
  }
  // Sets `node`'s reason (an escaped JSON string).
  void Set(std::string_view node, std::string_view reason) {
    auto [it, added] = index_.try_emplace(node, entries_.size());
    if (added) {
      entries_.push_back({node, reason});
    } else {
      entries_[it->second].reason = reason;
    }
  }
  bool Contains(std::string_view node) const { return index_.contains(node); }
  // Adds `node` with `reason` unless it is listed already.
  void Add(std::string_view node, std::string_view reason) {
    if (index_.try_emplace(node, entries_.size()).second) entries_.push_back({node, reason});
  }
  void AppendTo(std::string& out) const {
    out += '{';
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (i > 0) out += ',';
      AppendJsonString(out, entries_[i].node);
      out += ':';
      out += entries_[i].reason;
    }
    out += '}';
  }

 private:
  struct Entry {
    std::string_view node;
    std::string_view reason;  // escaped
  };
  boost::unordered_flat_map<std::string_view, std::size_t> index_;
  std::vector<Entry> entries_;
};

}  // namespace

std::string EncodeFilterResult(const ExtenderArgs& args, const engine::FilterReply& reply) {
  // Kept nodes: one, or a few, or (a pod asking no device) every candidate.
  boost::unordered_flat_set<std::string_view> kept_set;
  if (reply.nodes.size() > 4) kept_set.insert(reply.nodes.begin(), reply.nodes.end());
  auto kept = [&](std::string_view node) {
    if (reply.nodes.size() > 4) return kept_set.contains(node);
    return std::find(reply.nodes.begin(), reply.nodes.end(), node) != reply.nodes.end();
  };

  // Reasons escaped once: the shared one, then each failure's own.
  std::string does_not_fit;
  AppendJsonString(does_not_fit, "does not fit");
  std::vector<std::string> reasons(reply.failed.size() + reply.unresolvable.size());
  auto fill = [&](FailedNodes& map, const std::vector<NodeFailure>& failures, std::size_t first) {
    for (std::size_t i = 0; i < failures.size(); ++i) {
      const NodeFailure& f = failures[i];
      if (f.reason.empty()) {
        map.Set(f.node, does_not_fit);
        continue;
      }
      AppendJsonString(reasons[first + i], f.reason);
      map.Set(f.node, reasons[first + i]);
    }
  };
  FailedNodes failed(args.nodes.size() + reply.failed.size());
  FailedNodes unresolvable(reply.unresolvable.size());
  fill(failed, reply.failed, 0);
  fill(unresolvable, reply.unresolvable, reply.failed.size());
  // An unschedulable pod: every candidate has its reason, in FailedNodes
  // unless the reply found it unresolvable (a node missing from both maps
  // would count as UnschedulableAndUnresolvable, out of preemption's
  // reach). A placed pod: only the failures the reply names; the candidates
  // not chosen are dropped, which matters to nobody once the pod has a
  // node, and spares kube-scheduler a status per node per pod.
  if (reply.error.empty() && reply.nodes.empty()) {
    for (const std::string& node : args.nodes) {
      if (!unresolvable.Contains(node)) failed.Add(node, does_not_fit);
    }
  }

  std::size_t size = 128 + reply.error.size();
  for (const std::string& node : args.nodes) size += 2 * node.size() + 8 + does_not_fit.size();
  for (const std::string& r : reasons) size += r.size();
  for (const std::string& item : args.node_items) size += item.size() + 1;
  std::string out;
  out.reserve(size);
  if (args.node_names) {
    out += R"({"Nodes":null,"NodeNames":[)";
    bool first = true;
    for (const std::string& node : args.nodes) {
      if (!kept(node)) continue;
      if (!first) out += ',';
      first = false;
      AppendJsonString(out, node);
    }
    out += "],";
  } else {
    out += R"({"Nodes":{"metadata":{},"items":[)";
    bool first = true;
    for (std::size_t i = 0; i < args.nodes.size(); ++i) {
      if (!kept(args.nodes[i])) continue;
      if (!first) out += ',';
      first = false;
      out += args.node_items[i];
    }
    out += R"(]},"NodeNames":null,)";
  }
  out += R"("FailedNodes":)";
  failed.AppendTo(out);
  out += R"(,"FailedAndUnresolvableNodes":)";
  unresolvable.AppendTo(out);
  out += R"(,"Error":)";
  AppendJsonString(out, reply.error);
  out += '}';
  return out;
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

Result<PreemptionArgs> DecodePreemptionArgs(std::string_view json) {
  Result<bj::value> doc = ParseJson(json);
  if (!doc.ok()) return doc.status();
  const bj::object& root = doc->get_object();
  const bj::value* pod = root.if_contains("Pod");
  if (pod == nullptr || !pod->is_object()) return Bad("Pod is missing or not an object");
  Result<Pod> decoded = DecodePod(pod->get_object());
  if (!decoded.ok()) return Bad(fmt::format("Pod: {}", decoded.status().message()));
  PreemptionArgs args{std::move(*decoded), {}};
  // Meta victims name pods by UID; full ones carry it in their metadata.
  for (const auto& [key, meta] :
       {std::pair{"NodeNameToMetaVictims", true}, std::pair{"NodeNameToVictims", false}}) {
    const bj::value* map = root.if_contains(key);
    if (map == nullptr || map->is_null()) continue;
    if (!map->is_object()) return Bad(fmt::format("{} is not an object", key));
    for (const auto& [node, entry] : map->get_object()) {
      const std::string where = fmt::format("{}[{}]", key, std::string_view(node));
      engine::NodeVictims& victims = args.victims[std::string(node)];
      if (entry.is_null()) continue;
      if (!entry.is_object()) return Bad(fmt::format("{} is not an object", where));
      const bj::object& o = entry.get_object();
      if (const bj::value* n = o.if_contains("NumPDBViolations"); n != nullptr && !n->is_null()) {
        if (!n->is_int64() && !n->is_uint64())
          return Bad(fmt::format("{}.NumPDBViolations is not a whole number", where));
        victims.budget_violations = n->to_number<std::int64_t>();
      }
      const bj::value* pods = o.if_contains("Pods");
      if (pods == nullptr || pods->is_null()) continue;
      if (!pods->is_array()) return Bad(fmt::format("{}.Pods is not a list", where));
      for (std::size_t i = 0; i < pods->get_array().size(); ++i) {
        const bj::value& p = pods->get_array()[i];
        std::string uid = meta ? (p.is_object() ? StringOrEmpty(p.get_object(), "UID") : "")
                               : MetadataString(p, "uid");
        if (uid.empty()) return Bad(fmt::format("{}.Pods[{}] has no UID", where, i));
        victims.uids.push_back(std::move(uid));
      }
    }
  }
  return args;
}

std::string EncodePreemptionResult(const std::map<std::string, engine::NodeVictims>& victims) {
  bj::object nodes;
  for (const auto& [node, v] : victims) {
    bj::array pods;
    for (const std::string& uid : v.uids) pods.push_back(bj::object{{"UID", uid}});
    nodes[node] = bj::object{{"Pods", std::move(pods)}, {"NumPDBViolations", v.budget_violations}};
  }
  return bj::serialize(bj::object{{"NodeNameToMetaVictims", std::move(nodes)}});
}

Result<BindArgs> DecodeBindArgs(std::string_view json) {
  Result<bj::value> doc = ParseJson(json);
  if (!doc.ok()) return doc.status();
  const bj::object& o = doc->get_object();
  BindArgs args;
  for (auto [key, field] :
       {std::pair{"PodName", &args.pod_name}, std::pair{"PodNamespace", &args.pod_namespace},
        std::pair{"PodUID", &args.pod_uid}, std::pair{"Node", &args.node}}) {
    Result<std::optional<std::string>> v = StringMember(o, key);
    if (!v.ok() || !*v) return Bad(fmt::format("{} is missing or not a string", key));
    *field = std::move(**v);
  }
  return args;
}

std::string EncodeBindResult(std::string_view error) {
  return bj::serialize(bj::object{{"Error", error}});
}

}  // namespace devshare::kube
