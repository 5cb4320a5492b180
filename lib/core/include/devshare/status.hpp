// devshare/status.hpp — errors as values: Status and Result<T>.
//
// The core never throws across its API. A function that can fail returns a
// Status (when it has no value) or a Result<T> (a value or a Status). An ok
// Status costs one null pointer; an error carries a code, a message and, for
// malformed input, the field and byte offset that were wrong.
//
// Thread-safety: value types; distinct objects may be used from any thread.
#ifndef DEVSHARE_STATUS_HPP_
#define DEVSHARE_STATUS_HPP_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "devshare/export.hpp"

namespace devshare {

enum class StatusCode {
  kOk = 0,
  // An annotation, object or value could not be decoded (see Status::field()
  // and Status::offset() for where).
  kMalformed,
  // A device-config YAML or scheduler option is invalid.
  kInvalidConfig,
  // A caller passed an argument the function does not accept.
  kInvalidArgument,
  // A named object does not exist.
  kNotFound,
  // The service cannot answer now (not leading, not registered yet); the
  // same call may succeed later.
  kUnavailable,
  // An invariant devshare keeps does not hold: a bug, reported with the
  // event that exposed it.
  kInternal,
  // Valid input that devshare does not evaluate (a CEL selector beyond the
  // subset it implements): refused by name, never guessed at.
  kUnsupported,
};

// Returns "ok", "malformed", "invalid config", ... for `code`.
DEVSHARE_EXPORT std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] DEVSHARE_EXPORT Status {
 public:
  // An ok status.
  Status() = default;
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  // Malformed input. `field` names what was wrong (for example
  // `device[2].devmem`), `offset` is the byte position in the input where the
  // problem was found.
  static Status Malformed(std::string message, std::string field = {}, std::size_t offset = 0);
  static Status InvalidConfig(std::string message, std::string field = {});
  static Status InvalidArgument(std::string message);
  static Status NotFound(std::string message);
  static Status Unavailable(std::string message);
  static Status Internal(std::string message);
  static Status Unsupported(std::string message, std::string field = {});

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // The human-readable message (empty when ok).
  std::string_view message() const { return rep_ ? std::string_view(rep_->message) : ""; }
  // The field that was wrong, or empty.
  std::string_view field() const { return rep_ ? std::string_view(rep_->field) : ""; }
  // The byte offset in the input where decoding failed (0 when unknown).
  std::size_t offset() const { return rep_ ? rep_->offset : 0; }

  // "ok", or "<code name>: <message>".
  std::string ToString() const;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
    std::string field;
    std::size_t offset;
  };
  explicit Status(Rep rep) : rep_(std::make_unique<Rep>(std::move(rep))) {}
  std::unique_ptr<Rep> rep_;
};

// A value of type T, or the Status explaining why there is none.
//
// Example:
//   Result<std::vector<Device>> devices = DecodeNodeDevices(value);
//   if (!devices.ok()) return devices.status();
//   for (const Device& d : *devices) ...
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  // An error. An ok `status` carries no value, so it becomes a kInternal
  // error saying so: a Result is never ok without a value.
  Result(Status status)  // NOLINT: implicit by design
      : state_(status.ok()
                   ? Status::Internal("a Result was made from an ok Status, without a value")
                   : std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(state_); }
  // The error, or an ok Status when a value is held.
  Status status() const {
    if (ok()) return Status();
    return std::get<Status>(state_);
  }
  // REQUIRES: ok()
  const T& value() const& { return std::get<T>(state_); }
  T& value() & { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace devshare

#endif  // DEVSHARE_STATUS_HPP_
