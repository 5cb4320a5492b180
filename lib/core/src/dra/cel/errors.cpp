// The compile-time diagnostics of a CEL selector (errors.hpp).
#include "dra/cel/errors.hpp"

#include <fmt/format.h>

#include <string>

namespace devshare::dra::cel {

std::nullptr_t Errors::Malformed(std::size_t offset, std::string_view message) {
  if (!failed()) {
    status_ = Status::Malformed(
        fmt::format("CEL selector {:?}: {} (at byte {})", expression_, message, offset), {},
        offset);
  }
  return nullptr;
}

std::nullptr_t Errors::Unsupported(std::string_view construct) {
  if (!failed()) {
    status_ = Status::Unsupported(
        fmt::format("CEL selector {:?}: {} is not supported by devshare", expression_, construct),
        std::string(construct));
  }
  return nullptr;
}

}  // namespace devshare::dra::cel
