#include "objects_file.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <boost/json.hpp>
#include <charconv>
#include <fstream>
#include <sstream>

#include "read_file.hpp"

namespace devshare::cli {

namespace {

namespace bj = boost::json;

// YAML -> JSON: quoted scalars stay strings; plain ones become null,
// booleans or integers when they read as such (YAML 1.2 core schema).
bj::value ToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      bj::object o;
      for (const auto& entry : node) o[entry.first.Scalar()] = ToJson(entry.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      bj::array a;
      for (const auto& item : node) a.push_back(ToJson(item));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return bj::string(s);
      if (s == "null" || s == "~") return nullptr;
      if (s == "true" || s == "false") return s == "true";
      std::int64_t n = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return n;
      return bj::string(s);
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return nullptr;
}

// Decodes `text` with `decode` into `into`, an error naming `where`.
template <typename T, typename Decode>
Status Decoded(const std::string& text, const std::string& where, Decode decode,
               std::vector<T>& into) {
  Result<T> object = decode(text);
  if (!object.ok())
    return Status::Malformed(fmt::format("{}: {}", where, object.status().message()));
  into.push_back(std::move(*object));
  return Status();
}

// `kind_of_items`: the kind of a typed list's items, which carry none.
Status AddObject(const bj::value& v, const std::string& where, ObjectsFile& out,
                 const std::string& kind_of_items = "") {
  if (!v.is_object()) return Status::InvalidArgument(fmt::format("{}: not an object", where));
  const bj::object& o = v.get_object();
  const bj::value* kind = o.if_contains("kind");
  const std::string k =
      kind != nullptr && kind->is_string() ? std::string(kind->get_string()) : kind_of_items;
  if (k.ends_with("List")) {
    const bj::value* items = o.if_contains("items");
    if (items == nullptr || !items->is_array()) {
      return Status::InvalidArgument(fmt::format("{}: a {} needs an items array", where, k));
    }
    const std::string item_kind = k == "List" ? "" : k.substr(0, k.size() - 4);
    for (std::size_t i = 0; i < items->get_array().size(); ++i) {
      Status s =
          AddObject(items->get_array()[i], fmt::format("{}.items[{}]", where, i), out, item_kind);
      if (!s.ok()) return s;
    }
    return Status();
  }
  const std::string text = bj::serialize(v);
  if (k == "Node")
    return Decoded(
        text, where, [](const std::string& t) { return DecodeNode(t); }, out.nodes);
  if (k == "Pod")
    return Decoded(
        text, where, [](const std::string& t) { return DecodePod(t); }, out.pods);
  if (k == "ResourceQuota")
    return Decoded(
        text, where, [](const std::string& t) { return DecodeResourceQuota(t); }, out.quotas);
  if (k == "PodDisruptionBudget")
    return Decoded(
        text, where, [](const std::string& t) { return DecodePodDisruptionBudget(t); },
        out.budgets);
  if (k == "ResourceSlice") return Decoded(text, where, dra::DecodeResourceSlice, out.slices);
  if (k == "DeviceClass") return Decoded(text, where, dra::DecodeDeviceClass, out.device_classes);
  if (k == "ResourceClaim") return Decoded(text, where, dra::DecodeResourceClaim, out.claims);
  return Status::InvalidArgument(fmt::format(
      "{}: kind {} is not Node, Pod, ResourceQuota, PodDisruptionBudget, ResourceSlice, "
      "DeviceClass, ResourceClaim or a list of them",
      where, k.empty() ? "<missing>" : k));
}

}  // namespace

Result<ObjectsFile> ReadObjectsFile(const std::string& path) {
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  ObjectsFile out;
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(*text);  // JSON is YAML too
  } catch (const YAML::Exception& e) {
    return Status::Malformed(fmt::format("{}: {}", path, e.what()));
  }
  for (std::size_t d = 0; d < documents.size(); ++d) {
    if (documents[d].IsNull()) continue;
    Status s = AddObject(ToJson(documents[d]), fmt::format("{} (document {})", path, d + 1), out);
    if (!s.ok()) return s;
  }
  return out;
}

}  // namespace devshare::cli
