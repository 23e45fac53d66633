// ApiError: an error as the HTTP API reports it (OpenAI's {"error": {...}} shape) and the one
// place where Status codes become HTTP status codes.
#pragma once

#include <string>

#include "base/status.h"

namespace forge::server {

// The HTTP status for a Status code: kInvalidArgument, kOutOfRange, kUnimplemented -> 400,
// kNotFound -> 404, kResourceExhausted -> 429, kUnavailable -> 503, kCancelled -> 499,
// anything else -> 500.
int HttpStatusFor(StatusCode code);

struct ApiError {
  int http_status = 500;
  std::string message;
  std::string type;   // invalid_request_error, authentication_error, rate_limit_error, ...
  std::string param;  // the request field at fault; empty when none
  std::string code;   // e.g. model_not_found; empty when none

  // From a Status (HttpStatusFor decides the HTTP status; the type follows from it).
  static ApiError FromStatus(const Status& status, std::string param = "");
  static ApiError InvalidRequest(std::string message, std::string param);
  static ApiError Unauthorized();
  // An error of the HTTP layer itself (malformed request, limits, routes).
  static ApiError Http(int http_status, std::string message);

  // {"error": {"message", "type", "param", "code"}} (param and code null when empty). Text that
  // is not valid UTF-8 (a client's bytes echoed back) is replaced, never thrown on.
  std::string Json() const;
};

}  // namespace forge::server
