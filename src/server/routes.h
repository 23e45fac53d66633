// The server's routes: which paths exist and the method each takes. MatchRoute is the whole
// decision (404, 405 or a route), with no I/O, so the HTTP fuzzer runs it.
#pragma once

#include <optional>
#include <string_view>

#include "server/api_error.h"

namespace forge::server {

enum class RouteId {
  kHealth,
  kMetrics,
  kModels,
  kCompletions,
  kChatCompletions,
  kTokenize,
  kDetokenize
};

struct RouteMatch {
  RouteId id = RouteId::kHealth;
  std::optional<ApiError> error;  // 404 (no such path) or 405 (another method)
  const char* allow = nullptr;    // with 405: the method the path takes
};

RouteMatch MatchRoute(std::string_view method, std::string_view path);

}  // namespace forge::server
