// The server's routes: which paths exist and the method each takes. MatchRoute is the whole
// decision (404, 405 or a route), with no I/O, so the HTTP fuzzer runs it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/api_error.h"

namespace forge::server {

enum class RouteId {
  kHealth,
  kMetrics,
  kModels,
  kModel,  // GET /v1/models/{id}
  kCompletions,
  kChatCompletions,
  kEmbeddings,  // POST /v1/embeddings
  kTokenize,
  kDetokenize,
  kApplyTemplate,  // POST /apply-template: the chat template's rendered prompt
  kStatus,         // GET /status: the live operations snapshot
  kStatusStream,   // GET /status/stream: the snapshot every second (server-sent events)
  kWebPage,        // GET /: the web page
  kWebAsset,       // GET /web/{file}: the page's scripts and styles
};

struct RouteMatch {
  RouteId id = RouteId::kHealth;
  bool preflight = false;         // OPTIONS on a route (CORS preflight)
  std::string model_id;           // kModel: the id, percent-decoded
  std::string asset;              // kWebAsset: the file name, as sent
  std::optional<ApiError> error;  // 404 (no such path) or 405 (another method)
  const char* allow = nullptr;    // the method the path takes (with 405 and preflight)
};

RouteMatch MatchRoute(std::string_view method, std::string_view path);

}  // namespace forge::server
