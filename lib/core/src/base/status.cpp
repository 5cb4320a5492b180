#include "devshare/status.hpp"

#include <fmt/format.h>

namespace devshare {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kMalformed:
      return "malformed";
    case StatusCode::kInvalidConfig:
      return "invalid config";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kUnsupported:
      return "unsupported";
  }
  return "unknown";
}

Status::Status(const Status& other)
    : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
  return *this;
}

Status Status::Malformed(std::string message, std::string field, std::size_t offset) {
  return Status(Rep{StatusCode::kMalformed, std::move(message), std::move(field), offset});
}
Status Status::InvalidConfig(std::string message, std::string field) {
  return Status(Rep{StatusCode::kInvalidConfig, std::move(message), std::move(field), 0});
}
Status Status::InvalidArgument(std::string message) {
  return Status(Rep{StatusCode::kInvalidArgument, std::move(message), {}, 0});
}
Status Status::NotFound(std::string message) {
  return Status(Rep{StatusCode::kNotFound, std::move(message), {}, 0});
}
Status Status::Unavailable(std::string message) {
  return Status(Rep{StatusCode::kUnavailable, std::move(message), {}, 0});
}
Status Status::Internal(std::string message) {
  return Status(Rep{StatusCode::kInternal, std::move(message), {}, 0});
}

Status Status::Unsupported(std::string message, std::string field) {
  return Status(Rep{StatusCode::kUnsupported, std::move(message), std::move(field), 0});
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return fmt::format("{}: {}", StatusCodeName(rep_->code), rep_->message);
}

}  // namespace devshare
