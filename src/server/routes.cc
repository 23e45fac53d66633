// MatchRoute: the route table.
#include "server/routes.h"

#include <string>

#include "base/escapes.h"

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
    {"/v1/models/{id}", RouteId::kModel, false},
    {"/v1/completions", RouteId::kCompletions, true},
    {"/completions", RouteId::kCompletions, true},
    {"/v1/chat/completions", RouteId::kChatCompletions, true},
    {"/chat/completions", RouteId::kChatCompletions, true},
    {"/v1/embeddings", RouteId::kEmbeddings, true},
    {"/embeddings", RouteId::kEmbeddings, true},
    {"/tokenize", RouteId::kTokenize, true},
    {"/detokenize", RouteId::kDetokenize, true},
    {"/apply-template", RouteId::kApplyTemplate, true},
    {"/status", RouteId::kStatus, false},
    {"/status/stream", RouteId::kStatusStream, false},
    {"/", RouteId::kWebPage, false},
    {"/web/{file}", RouteId::kWebAsset, false},
};

constexpr std::string_view kModelPrefix = "/v1/models/";
constexpr std::string_view kWebPrefix = "/web/";

// %XX sequences decoded; a malformed one is kept as it is.
std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexDigitValue(s[i + 1]) >= 0 &&
        HexDigitValue(s[i + 2]) >= 0) {
      out += static_cast<char>(HexDigitValue(s[i + 1]) * 16 + HexDigitValue(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

RouteMatch MatchRoute(std::string_view method, std::string_view path) {
  RouteMatch m;
  const bool model =
      path.size() > kModelPrefix.size() && path.substr(0, kModelPrefix.size()) == kModelPrefix;
  const bool web =
      path.size() > kWebPrefix.size() && path.substr(0, kWebPrefix.size()) == kWebPrefix;
  for (const Route& r : kRoutes) {
    if (path != r.path && !(model && r.id == RouteId::kModel) &&
        !(web && r.id == RouteId::kWebAsset)) {
      continue;
    }
    m.id = r.id;
    if (model) m.model_id = PercentDecode(path.substr(kModelPrefix.size()));
    if (web) m.asset = std::string(path.substr(kWebPrefix.size()));
    const char* want = r.post ? "POST" : "GET";
    m.allow = want;
    if (method == "OPTIONS") {
      m.preflight = true;
      return m;
    }
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
