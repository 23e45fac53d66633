// Status and StatusOr<T>: how every fallible call in Forge reports an error, with a code and
// a message naming the object, what was expected and what was found.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "base/check.h"

namespace forge {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // bad input from a user or a file
  kNotFound,           // a named thing (file, tensor, key) does not exist
  kOutOfRange,         // an index, length or offset beyond its bounds
  kDataLoss,           // a file is corrupt or truncated
  kUnimplemented,      // valid input that Forge does not support (yet)
  kResourceExhausted,  // out of memory, KV blocks, queue room
  kFailedPrecondition, // the system is not in a state for the call
  kUnavailable,        // a device or service is not there
  kCancelled,          // the caller cancelled
  kAlreadyExists,
  kInternal,           // an invariant broke; a bug in Forge
  kIoError,            // the operating system refused a read or write
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "DATA_LOSS: tensor table: ..." ; "OK" for success.
  std::string ToString() const;
  // Prefixes the message with where it happened: "file.gguf: <message>". No-op when ok.
  Status WithContext(std::string_view context) const;
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status OutOfRangeError(std::string message);
Status DataLossError(std::string message);
Status UnimplementedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status UnavailableError(std::string message);
Status CancelledError(std::string message);
Status InternalError(std::string message);
Status IoError(std::string message);

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : status_(status) {  // NOLINT(google-explicit-constructor)
    CHECK(!status_.ok()) << "StatusOr built from an OK status without a value";
  }
  StatusOr(Status&& status) : status_(std::move(status)) {  // NOLINT
    CHECK(!status_.ok()) << "StatusOr built from an OK status without a value";
  }
  StatusOr(const T& value) : value_(value) {}  // NOLINT
  StatusOr(T&& value) : value_(std::move(value)) {}  // NOLINT
  template <typename U>
    requires(std::is_constructible_v<T, U &&> && !std::is_same_v<std::decay_t<U>, Status> &&
             !std::is_same_v<std::decay_t<U>, StatusOr<T>> && !std::is_same_v<std::decay_t<U>, T>)
  StatusOr(U&& value) : value_(T(std::forward<U>(value))) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & {
    CHECK(ok()) << "StatusOr::value() on error: " << status_.ToString();
    return *value_;
  }
  const T& value() const& {
    CHECK(ok()) << "StatusOr::value() on error: " << status_.ToString();
    return *value_;
  }
  T&& value() && {
    CHECK(ok()) << "StatusOr::value() on error: " << status_.ToString();
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

namespace internal {
inline const Status& AsStatus(const Status& s) { return s; }
template <typename T>
const Status& AsStatus(const StatusOr<T>& s) {
  return s.status();
}
}  // namespace internal

}  // namespace forge

#define FORGE_CONCAT_INNER(a, b) a##b
#define FORGE_CONCAT(a, b) FORGE_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define RETURN_IF_ERROR(expr)                                                   \
  do {                                                                          \
    ::forge::Status _forge_st = ::forge::internal::AsStatus((expr));            \
    if (!_forge_st.ok()) return _forge_st;                                      \
  } while (0)

// ASSIGN_OR_RETURN(lhs, expr): evaluates a StatusOr; returns its error or assigns its value.
#define ASSIGN_OR_RETURN(lhs, expr) \
  FORGE_ASSIGN_OR_RETURN_IMPL(FORGE_CONCAT(_forge_so_, __LINE__), lhs, expr)
#define FORGE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
