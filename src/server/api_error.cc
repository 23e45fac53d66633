// Status -> HTTP status mapping and OpenAI-shaped error bodies.
#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace forge::server {
namespace {

std::string TypeFor(int http_status) {
  switch (http_status) {
    case 400:
    case 404:
    case 405:
    case 408:
    case 413:
    case 414:
    case 417:
    case 431:
    case 505:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 429:
      return "rate_limit_error";
    case 499:
      return "cancelled";
    default:
      return "server_error";
  }
}

}  // namespace

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kUnimplemented:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kCancelled:
      return 499;
    default:
      return 500;
  }
}

ApiError ApiError::FromStatus(const Status& status, std::string param) {
  ApiError e;
  e.http_status = HttpStatusFor(status.code());
  e.message = status.message();
  e.type = TypeFor(e.http_status);
  e.param = std::move(param);
  if (status.code() == StatusCode::kNotFound) e.code = "model_not_found";
  if (status.code() == StatusCode::kUnimplemented) e.code = "unsupported_parameter";
  return e;
}

ApiError ApiError::InvalidRequest(std::string message, std::string param) {
  return FromStatus(InvalidArgumentError(std::move(message)), std::move(param));
}

ApiError ApiError::Unauthorized() {
  ApiError e;
  e.http_status = 401;
  e.message = "missing or invalid API key (Authorization: Bearer KEY)";
  e.type = TypeFor(401);
  e.code = "invalid_api_key";
  return e;
}

ApiError ApiError::Http(int http_status, std::string message) {
  ApiError e;
  e.http_status = http_status;
  e.message = std::move(message);
  e.type = TypeFor(http_status);
  return e;
}

std::string ApiError::Json() const {
  nlohmann::json err = {{"message", message},
                        {"type", type},
                        {"param", param.empty() ? nlohmann::json() : nlohmann::json(param)},
                        {"code", code.empty() ? nlohmann::json() : nlohmann::json(code)}};
  return nlohmann::json{{"error", err}}.dump(-1, ' ', false,
                                             nlohmann::json::error_handler_t::replace);
}

}  // namespace forge::server
