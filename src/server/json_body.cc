// ParseJsonBody: a bounds scan, then nlohmann's parser.
#include "server/json_body.h"

#include <nlohmann/json.hpp>
#include <string>

namespace forge::server {

std::optional<ApiError> CheckJsonShape(std::string_view body, const JsonLimits& limits) {
  int depth = 0;
  size_t values = 1;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > limits.max_depth) {
          return ApiError::Http(400, "the JSON body nests deeper than " +
                                         std::to_string(limits.max_depth) + " levels");
        }
        break;
      case ']':
      case '}':
        --depth;
        break;
      case ',':
        if (++values > limits.max_values) {
          return ApiError::Http(413, "the JSON body holds more than " +
                                         std::to_string(limits.max_values) + " values");
        }
        break;
      default:
        break;
    }
  }
  return std::nullopt;
}

std::optional<ApiError> ParseJsonBody(std::string_view body, const JsonLimits& limits,
                                      nlohmann::json* out) {
  if (auto e = CheckJsonShape(body, limits)) return e;
  *out = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) return ApiError::InvalidRequest("the body is not valid JSON", "");
  return std::nullopt;
}

}  // namespace forge::server
