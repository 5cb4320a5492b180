// Private (dra layer): the semantic versions of the CEL selector library
// (Kubernetes' semver functions and version attributes), parsed and
// compared as github.com/blang/semver/v4 parses and compares them.
#ifndef DEVSHARE_SRC_DRA_CEL_SEMVER_HPP_
#define DEVSHARE_SRC_DRA_CEL_SEMVER_HPP_

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace devshare::dra::cel {

// -1, 0 or 1 as a is below, equal to or above b.
template <typename T>
int Cmp(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

struct PreRelease {
  bool numeric = false;
  std::uint64_t number = 0;  // when numeric
  std::string text;          // otherwise
};

struct Semver {
  std::uint64_t major = 0, minor = 0, patch = 0;
  std::vector<PreRelease> pre;  // build metadata is checked, not kept
};

// semver.Parse: MAJOR.MINOR.PATCH[-PRE][+BUILD]; the error is blang's
// message ("No Major.Minor.Patch elements found", "Invalid character(s)
// found in minor number \"x\""...).
std::variant<Semver, std::string> ParseSemver(std::string_view s);

// normalizeAndParse (Kubernetes' semverlib.go): an optional leading "v",
// missing minor and patch filled in with 0, leading zeros trimmed, then
// ParseSemver; a short version with pre-release or build is an error.
std::variant<Semver, std::string> ParseSemverNormalized(std::string_view s);

// Version.Compare: -1, 0 or 1 (build metadata does not count).
int CompareSemver(const Semver& a, const Semver& b);

}  // namespace devshare::dra::cel

#endif  // DEVSHARE_SRC_DRA_CEL_SEMVER_HPP_
