// MatchRoute: the route table.
#include "server/routes.h"

#include <string>

namespace forge::server {
namespace {

struct Route {
  std::string_view path;
  RouteId id;
  bool post;  // POST; otherwise GET
};

constexpr Route kRoutes[] = {
    {"/health", RouteId::kHealth, false},
    {"/metrics", RouteId::kMetrics, false},
    {"/v1/models", RouteId::kModels, false},
    {"/models", RouteId::kModels, false},
    {"/v1/completions", RouteId::kCompletions, true},
    {"/completions", RouteId::kCompletions, true},
    {"/v1/chat/completions", RouteId::kChatCompletions, true},
    {"/chat/completions", RouteId::kChatCompletions, true},
    {"/tokenize", RouteId::kTokenize, true},
    {"/detokenize", RouteId::kDetokenize, true},
};

}  // namespace

RouteMatch MatchRoute(std::string_view method, std::string_view path) {
  RouteMatch m;
  for (const Route& r : kRoutes) {
    if (path != r.path) continue;
    m.id = r.id;
    const char* want = r.post ? "POST" : "GET";
    if (method != want) {
      m.error =
          ApiError::Http(405, "only " + std::string(want) + " is allowed on " + std::string(path));
      m.allow = want;
    }
    return m;
  }
  // The path is the client's bytes: shown bounded (the error's dump makes it valid UTF-8).
  std::string shown(path.substr(0, 256));
  if (path.size() > 256) shown += "...";
  m.error = ApiError::Http(404, "no route " + shown);
  return m;
}

}  // namespace forge::server
