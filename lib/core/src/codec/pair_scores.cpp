// `hami.io/node-nvidia-score` (devshare/node_codec.hpp): GPU pair scores as
// HAMi's device plugin writes them, decoded as Go's encoding/json reads them.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "base/json.hpp"
#include "base/text.hpp"
#include "devshare/node_codec.hpp"

namespace devshare {

namespace {

constexpr std::string_view kScoreWhat = "node pair scores";

}  // namespace

Result<std::vector<DevicePairScore>> DecodePairScores(std::string_view value) {
  std::array<unsigned char, 8192> buffer;
  boost::json::monotonic_resource arena(buffer.data(), buffer.size());
  Result<boost::json::value> doc =
      internal::ParseJson(value, kScoreWhat, boost::json::storage_ptr(&arena));
  if (!doc.ok()) return doc.status();
  std::vector<DevicePairScore> out;
  if (doc->is_null()) return out;
  if (!doc->is_array()) return internal::TypeError(kScoreWhat, "value", "an array", *doc);
  const auto& array = doc->get_array();
  out.resize(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) {
    const std::string path = fmt::format("entry[{}]", i);
    if (!array[i].is_object()) return internal::TypeError(kScoreWhat, path, "an object", array[i]);
    for (const auto& member : array[i].get_object()) {
      const boost::json::value& v = member.value();
      if (internal::EqualFoldAscii(member.key(), "uuid")) {
        Status s = internal::ReadString(v, kScoreWhat, path + ".uuid", out[i].uuid);
        if (!s.ok()) return s;
      } else if (internal::EqualFoldAscii(member.key(), "score")) {
        out[i].scores.clear();
        if (v.is_null()) continue;
        if (!v.is_object()) return internal::TypeError(kScoreWhat, path + ".score", "an object", v);
        for (const auto& peer : v.get_object()) {
          std::int64_t score = 0;
          const std::string peer_path =
              fmt::format("{}.score[{}]", path, internal::Quote(peer.key()));
          Status s = internal::ReadInt(peer.value(), std::numeric_limits<std::int64_t>::min(),
                                       std::numeric_limits<std::int64_t>::max(), kScoreWhat,
                                       peer_path, score);
          if (!s.ok()) return s;
          out[i].scores.emplace_back(std::string(peer.key()), score);
        }
        // A JSON object may repeat a key; as in Go, the last one wins.
        auto& scores = out[i].scores;
        std::stable_sort(scores.begin(), scores.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        std::vector<std::pair<std::string, std::int64_t>> unique;
        unique.reserve(scores.size());
        for (auto& entry : scores) {
          if (!unique.empty() && unique.back().first == entry.first) {
            unique.back().second = entry.second;
          } else {
            unique.push_back(std::move(entry));
          }
        }
        scores = std::move(unique);
      }
    }
  }
  return out;
}

std::string EncodePairScores(std::span<const DevicePairScore> scores) {
  std::string out = "[";
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (i > 0) out += ',';
    out += '{';
    bool wrote = false;
    if (!scores[i].uuid.empty()) {
      out += "\"uuid\":";
      internal::AppendGoJsonString(out, scores[i].uuid);
      wrote = true;
    }
    if (!scores[i].scores.empty()) {
      if (wrote) out += ',';
      out += "\"score\":{";
      for (std::size_t j = 0; j < scores[i].scores.size(); ++j) {
        if (j > 0) out += ',';
        internal::AppendGoJsonString(out, scores[i].scores[j].first);
        fmt::format_to(std::back_inserter(out), ":{}", scores[i].scores[j].second);
      }
      out += '}';
    }
    out += '}';
  }
  out += ']';
  return out;
}

}  // namespace devshare
