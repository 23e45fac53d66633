// ParseJsonBody: a bounds scan, then nlohmann's parser.
#include "server/json_body.h"

#include <nlohmann/json.hpp>
#include <string>

#include "base/json_scan.h"

namespace forge::server {

std::optional<ApiError> CheckJsonShape(std::string_view body, const JsonLimits& limits) {
  JsonScanner scan(body);
  size_t values = 1;
  while (scan.Next()) {
    if (scan.opens() && scan.depth() > limits.max_depth) {
      return ApiError::Http(
          400, "the JSON body nests deeper than " + std::to_string(limits.max_depth) + " levels");
    }
    if (scan.byte() == ',' && ++values > limits.max_values) {
      return ApiError::Http(
          413, "the JSON body holds more than " + std::to_string(limits.max_values) + " values");
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
