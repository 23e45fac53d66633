// ParseJsonBody: a request body parsed as JSON within bounds. The nesting depth and the number of
// values are checked on the raw bytes first, in one pass with no allocation, so a hostile body
// (a megabyte of '[', millions of tiny values) costs a scan, not a recursion or an allocation
// per byte.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "server/api_error.h"

namespace forge::server {

struct JsonLimits {
  int max_depth = 64;                   // nested arrays and objects: 400 past it
  size_t max_values = size_t{1} << 20;  // values in the whole body: 413 past it
};

// The error of a body past the limits, or nullopt (the body may still not be valid JSON).
std::optional<ApiError> CheckJsonShape(std::string_view body, const JsonLimits& limits);

// Parses body into *out: 400 when it is not JSON or too deep, 413 when it has too many values.
std::optional<ApiError> ParseJsonBody(std::string_view body, const JsonLimits& limits,
                                      nlohmann::json* out);

}  // namespace forge::server
