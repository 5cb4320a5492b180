// Private (dra layer): the compile-time diagnostics of a CEL selector. The
// lexer, parser and checker report into one Errors; the first report wins,
// later ones are dropped, so each phase may stop at its first failure.
#ifndef DEVSHARE_SRC_DRA_CEL_ERRORS_HPP_
#define DEVSHARE_SRC_DRA_CEL_ERRORS_HPP_

#include <cstddef>
#include <string_view>
#include <utility>

#include "devshare/status.hpp"

namespace devshare::dra::cel {

class Errors {
 public:
  // `expression` is quoted in the messages; it must outlive this object.
  explicit Errors(std::string_view expression) : expression_(expression) {}

  bool failed() const { return !status_.ok(); }
  // The first report (OK when none), moved out.
  Status take() { return std::move(status_); }

  // kMalformed "CEL selector "<expr>": <message> (at byte <offset>)", with
  // offset() set. Returns nullptr, for `return errors.Malformed(...)`.
  std::nullptr_t Malformed(std::size_t offset, std::string_view message);
  // kUnsupported "CEL selector "<expr>": <construct> is not supported by
  // devshare", with field() the construct. Returns nullptr.
  std::nullptr_t Unsupported(std::string_view construct);

 private:
  std::string_view expression_;
  Status status_;
};

}  // namespace devshare::dra::cel

#endif  // DEVSHARE_SRC_DRA_CEL_ERRORS_HPP_
