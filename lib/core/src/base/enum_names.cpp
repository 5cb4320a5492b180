#include "devshare/enum_names.hpp"

#include <fmt/format.h>

#include "base/text.hpp"

namespace devshare {

Status UnknownNameError(std::string_view what, std::string_view name, std::string_view names) {
  return Status::InvalidArgument(
      fmt::format("unknown {} {} (want one of {})", what, internal::Quote(name), names));
}

}  // namespace devshare
