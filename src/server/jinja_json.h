// JinjaFromJson: a JSON value (nlohmann json or ordered_json) as a chat template sees it: objects
// become maps (in the JSON's key order), arrays lists, numbers ints or floats.
#pragma once

#include <cstdint>
#include <string>

#include "jinja/value.h"

namespace forge::server {

// Requires: v's nesting is bounded (as the request body's parser bounds it).
template <class Json>
jinja::Value JinjaFromJson(const Json& v) {
  if (v.is_null()) return jinja::Value::None();
  if (v.is_boolean()) return jinja::Value::Bool(v.template get<bool>());
  if (v.is_number_integer()) return jinja::Value::Int(v.template get<int64_t>());
  if (v.is_number()) return jinja::Value::Float(v.template get<double>());
  if (v.is_string()) return jinja::Value::String(v.template get<std::string>());
  if (v.is_array()) {
    jinja::ValueList items;
    for (const auto& x : v) items.push_back(JinjaFromJson(x));
    return jinja::Value::List(std::move(items));
  }
  if (v.is_object()) {
    jinja::ValueMap map;
    for (const auto& [k, x] : v.items()) map.Set(k, JinjaFromJson(x));
    return jinja::Value::Map(std::move(map));
  }
  return jinja::Value::None();
}

}  // namespace forge::server
