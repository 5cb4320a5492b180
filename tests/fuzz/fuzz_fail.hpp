// How a fuzz target reports a broken property: the target, the property and
// the value that shows it on stderr, then abort() so that libFuzzer keeps
// the input as a crash artifact.
#ifndef DEVSHARE_TESTS_FUZZ_FUZZ_FAIL_HPP_
#define DEVSHARE_TESTS_FUZZ_FUZZ_FAIL_HPP_

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace devshare::fuzz {

[[noreturn]] inline void Fail(const char* target, const char* what, std::string_view value = {}) {
  std::fprintf(stderr, "%s: %s\nvalue: %.*s\n", target, what, static_cast<int>(value.size()),
               value.data());
  std::abort();
}

}  // namespace devshare::fuzz

#endif  // DEVSHARE_TESTS_FUZZ_FUZZ_FAIL_HPP_
