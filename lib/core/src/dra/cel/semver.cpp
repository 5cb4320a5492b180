// Semantic versions as github.com/blang/semver/v4 parses and compares
// them (semver.hpp).
#include "dra/cel/semver.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "base/text.hpp"

namespace devshare::dra::cel {
namespace {

using devshare::internal::IsAsciiDigit;

bool ContainsOnly(std::string_view s, std::string_view set) {
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return set.find(c) != std::string_view::npos; });
}
constexpr std::string_view kNumbers = "0123456789";
constexpr std::string_view kAlphaNum =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789";

std::vector<std::string_view> SplitN(std::string_view s, char sep, std::size_t n) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < n) {
    const std::size_t at = s.find(sep);
    if (at == std::string_view::npos) break;
    parts.push_back(s.substr(0, at));
    s.remove_prefix(at + 1);
  }
  parts.push_back(s);
  return parts;
}

// A version number as Parse reads one: digits, no leading zero, a uint64;
// else blang's error for the component `what` ("Major", "Minor", "Patch").
std::variant<std::uint64_t, std::string> VersionNumber(std::string_view s, std::string_view what) {
  if (!ContainsOnly(s, kNumbers)) {
    std::string lower(what);
    lower[0] = static_cast<char>(lower[0] - 'A' + 'a');
    return fmt::format("Invalid character(s) found in {} number {:?}", lower, s);
  }
  if (s.size() > 1 && s[0] == '0') {
    return fmt::format("{} number must not contain leading zeroes {:?}", what, s);
  }
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return fmt::format("strconv.ParseUint: parsing {:?}: {}", s,
                       s.empty() ? "invalid syntax" : "value out of range");
  }
  return v;
}

}  // namespace

// semver.Parse; the error is blang's message.
std::variant<Semver, std::string> ParseSemver(std::string_view s) {
  if (s.empty()) return std::string("Version string empty");
  const auto parts = SplitN(s, '.', 3);
  if (parts.size() != 3) return std::string("No Major.Minor.Patch elements found");
  Semver v;
  const auto major = VersionNumber(parts[0], "Major");
  if (const auto* e = std::get_if<std::string>(&major)) return *e;
  const auto minor = VersionNumber(parts[1], "Minor");
  if (const auto* e = std::get_if<std::string>(&minor)) return *e;
  v.major = std::get<std::uint64_t>(major);
  v.minor = std::get<std::uint64_t>(minor);
  std::string_view patch = parts[2];
  std::vector<std::string_view> build;
  std::vector<std::string_view> pre;
  if (const std::size_t plus = patch.find('+'); plus != std::string_view::npos) {
    build = SplitN(patch.substr(plus + 1), '.', std::string_view::npos);
    patch = patch.substr(0, plus);
  }
  if (const std::size_t dash = patch.find('-'); dash != std::string_view::npos) {
    pre = SplitN(patch.substr(dash + 1), '.', std::string_view::npos);
    patch = patch.substr(0, dash);
  }
  const auto patch_number = VersionNumber(patch, "Patch");
  if (const auto* e = std::get_if<std::string>(&patch_number)) return *e;
  v.patch = std::get<std::uint64_t>(patch_number);
  for (std::string_view p : pre) {
    if (p.empty()) return std::string("Prerelease is empty");
    PreRelease r;
    if (ContainsOnly(p, kNumbers)) {
      if (p.size() > 1 && p[0] == '0') {
        return fmt::format("Numeric PreRelease version must not contain leading zeroes {:?}", p);
      }
      const auto n = VersionNumber(p, "PreRelease");
      if (const auto* e = std::get_if<std::string>(&n)) return *e;
      r.numeric = true;
      r.number = std::get<std::uint64_t>(n);
    } else if (ContainsOnly(p, kAlphaNum)) {
      r.text = std::string(p);
    } else {
      return fmt::format("Invalid character(s) found in prerelease {:?}", p);
    }
    v.pre.push_back(std::move(r));
  }
  for (std::string_view b : build) {
    if (b.empty()) return std::string("Build meta data is empty");
    if (!ContainsOnly(b, kAlphaNum))
      return fmt::format("Invalid character(s) found in build meta data {:?}", b);
  }
  return v;
}

// normalizeAndParse (semverlib.go): no "v", zeros filled in and trimmed.
std::variant<Semver, std::string> ParseSemverNormalized(std::string_view s) {
  if (!s.empty() && s[0] == 'v') s.remove_prefix(1);
  std::vector<std::string> parts;
  for (std::string_view p : SplitN(s, '.', 3)) {
    std::string part(p);
    if (part.size() > 1) {
      part.erase(0, part.find_first_not_of('0') == std::string::npos ? part.size()
                                                                     : part.find_first_not_of('0'));
      if (part.empty() || !IsAsciiDigit(part[0])) {
        std::string padded(1, '0');
        padded += part;
        part = std::move(padded);
      }
    }
    parts.push_back(std::move(part));
  }
  if (parts.size() < 3) {
    if (parts.back().find_first_of("+-") != std::string::npos) {
      return std::string("short version cannot contain PreRelease/Build meta data");
    }
    parts.resize(3, "0");
  }
  return ParseSemver(parts[0] + "." + parts[1] + "." + parts[2]);
}

int CompareSemver(const Semver& a, const Semver& b) {
  if (int c = Cmp(a.major, b.major)) return c;
  if (int c = Cmp(a.minor, b.minor)) return c;
  if (int c = Cmp(a.patch, b.patch)) return c;
  if (a.pre.empty() || b.pre.empty()) return Cmp(a.pre.empty(), b.pre.empty());
  for (std::size_t i = 0; i < a.pre.size() && i < b.pre.size(); ++i) {
    const PreRelease& x = a.pre[i];
    const PreRelease& y = b.pre[i];
    int c = x.numeric != y.numeric ? (x.numeric ? -1 : 1)
                                   : (x.numeric ? Cmp(x.number, y.number) : Cmp(x.text, y.text));
    if (c != 0) return c;
  }
  return Cmp(a.pre.size(), b.pre.size());
}

}  // namespace devshare::dra::cel
