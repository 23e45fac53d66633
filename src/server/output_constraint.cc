// ParseOutputConstraint: each request field's constraint as GBNF.
#include "server/output_constraint.h"

#include <nlohmann/json.hpp>

#include "grammar/codepoint_set.h"
#include "grammar/json_schema.h"
#include "grammar/regex_to_gbnf.h"
#include "server/json_body.h"

namespace forge::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// The most alternatives guided_choice may list (each is a string of the request body).
constexpr size_t kMaxChoices = 4096;

ApiError Bad(const std::string& field, const std::string& what) {
  return ApiError::InvalidRequest("'" + field + "': " + what, field);
}

// Where the request's fields are read from: the parsed body, and the same body in the client's
// key order for what needs it (a schema's "properties" order is the order of the output's keys).
struct Source {
  const json& body;
  const ordered_json* ordered;  // null: not known
};

std::optional<ApiError> FromOrderedSchema(const std::string& field, const ordered_json& schema,
                                          OutputConstraint* out) {
  if (!schema.is_object() && !schema.is_boolean()) {
    return Bad(field, "the JSON schema must be an object");
  }
  auto gbnf = ParsedJsonSchemaToGbnf(schema);
  if (!gbnf.ok()) return Bad(field, gbnf.status().message());
  out->gbnf = std::move(*gbnf);
  return std::nullopt;
}

// The schema at `pointer` in the body (a JSON pointer such as /response_format/json_schema/schema),
// given as JSON or as JSON text, read in the client's key order when the raw body is known.
std::optional<ApiError> FromSchema(const Source& src, const std::string& field,
                                   const std::string& pointer, OutputConstraint* out) {
  const json& value = src.body.at(json::json_pointer(pointer));
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (auto e = CheckJsonShape(text, JsonLimits{})) {
      return Bad(field, "the schema text is past bounds: " + e->message);
    }
    auto ordered = ordered_json::parse(text, nullptr, false);
    if (ordered.is_discarded()) return Bad(field, "the schema text is not JSON");
    return FromOrderedSchema(field, ordered, out);
  }
  if (src.ordered != nullptr) {
    const auto ptr = ordered_json::json_pointer(pointer);
    if (src.ordered->contains(ptr)) return FromOrderedSchema(field, src.ordered->at(ptr), out);
  }
  return FromOrderedSchema(field, ordered_json::parse(value.dump()), out);
}

std::optional<ApiError> FromRegex(const std::string& field, const json& pattern,
                                  OutputConstraint* out) {
  if (!pattern.is_string()) return Bad(field, "expected a regular expression (a string)");
  // The whole text matches the expression (anchored at both ends).
  auto expr = RegexToGbnf("^(" + pattern.get<std::string>() + ")$", RegexGbnfOptions{});
  if (!expr.ok()) return Bad(field, expr.status().message());
  out->gbnf = "root ::= " + *expr + "\n";
  return std::nullopt;
}

std::optional<ApiError> FromChoice(const std::string& field, const json& choices,
                                   OutputConstraint* out) {
  if (!choices.is_array() || choices.empty() || choices.size() > kMaxChoices) {
    return Bad(field, "expected a list of 1 to " + std::to_string(kMaxChoices) + " strings");
  }
  std::string gbnf = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (!choices[i].is_string() || choices[i].get_ref<const std::string&>().empty()) {
      return Bad(field, "choice " + std::to_string(i) + " is not a non-empty string");
    }
    if (i > 0) gbnf += " | ";
    gbnf += codepoints::GbnfLiteral(choices[i].get_ref<const std::string&>());
  }
  out->gbnf = gbnf + "\n";
  return std::nullopt;
}

std::optional<ApiError> FromGbnf(const std::string& field, const json& text,
                                 OutputConstraint* out) {
  if (!text.is_string() || text.get_ref<const std::string&>().empty()) {
    return Bad(field, "expected a grammar in GBNF (a non-empty string)");
  }
  out->gbnf = text.get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> FromResponseFormat(const Source& src, OutputConstraint* out) {
  const std::string field = "response_format";
  const json& rf = src.body.at(field);
  if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string()) {
    return Bad(field, "expected an object with a \"type\"");
  }
  const std::string type = rf["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    // A schema given with json_object (as some servers take it) constrains like json_schema.
    if (auto it = rf.find("schema"); it != rf.end() && !it->is_null()) {
      return FromSchema(src, field + ".schema", "/response_format/schema", out);
    }
    out->gbnf = JsonObjectGbnf();
    return std::nullopt;
  }
  if (type == "json_schema") {
    auto js = rf.find("json_schema");
    if (js == rf.end() || !js->is_object()) {
      return Bad(field + ".json_schema", "expected an object with a \"schema\"");
    }
    if (auto strict = js->find("strict");
        strict != js->end() && !strict->is_null() && !strict->is_boolean()) {
      return Bad(field + ".json_schema.strict", "expected a boolean");
    }
    auto schema = js->find("schema");
    if (schema == js->end() || schema->is_null()) {  // no schema: any JSON object
      out->gbnf = JsonObjectGbnf();
      return std::nullopt;
    }
    return FromSchema(src, field + ".json_schema.schema", "/response_format/json_schema/schema",
                      out);
  }
  return Bad(field, "unknown type " + rf["type"].dump() +
                        " (expected \"text\", \"json_object\" or \"json_schema\")");
}

std::optional<ApiError> FromStructuredOutputs(const Source& src, OutputConstraint* out) {
  const std::string field = "structured_outputs";
  const json& so = src.body.at(field);
  if (!so.is_object()) return Bad(field, "expected an object");
  int given = 0;
  for (const auto& [key, value] : so.items()) {
    if (value.is_null()) continue;
    const std::string f = field + "." + key;
    std::optional<ApiError> error;
    if (key == "json") {
      error = FromSchema(src, f, "/structured_outputs/json", out);
    } else if (key == "regex") {
      error = FromRegex(f, value, out);
    } else if (key == "choice") {
      error = FromChoice(f, value, out);
    } else if (key == "grammar") {
      error = FromGbnf(f, value, out);
    } else if (key == "json_object") {
      if (!value.is_boolean()) return Bad(f, "expected a boolean");
      if (!value.get<bool>()) continue;
      out->gbnf = JsonObjectGbnf();
    } else {
      return Bad(f, "is not supported (json, regex, choice, grammar and json_object are)");
    }
    if (error) return error;
    if (++given > 1) return Bad(field, "give one of json, regex, choice, grammar, json_object");
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ParseOutputConstraint(const json& body, const ordered_json* ordered_body,
                                              OutputConstraint* out) {
  *out = OutputConstraint{};
  const Source src{body, ordered_body};
  for (const char* f : kConstraintFields) {
    auto it = body.find(f);
    if (it == body.end() || it->is_null()) continue;
    const std::string field = f;
    OutputConstraint c;
    std::optional<ApiError> error;
    if (field == "response_format") {
      error = FromResponseFormat(src, &c);
    } else if (field == "grammar" || field == "guided_grammar") {
      error = FromGbnf(field, *it, &c);
    } else if (field == "json_schema" || field == "guided_json") {
      error = FromSchema(src, field, "/" + field, &c);
    } else if (field == "guided_regex") {
      error = FromRegex(field, *it, &c);
    } else if (field == "guided_choice") {
      error = FromChoice(field, *it, &c);
    } else {
      error = FromStructuredOutputs(src, &c);
    }
    if (error) return error;
    if (c.gbnf.empty()) continue;  // {"type": "text"}
    if (!out->gbnf.empty()) {
      return Bad(field, "only one output constraint may be given (also '" + out->field + "')");
    }
    c.field = field;
    *out = std::move(c);
  }
  return std::nullopt;
}

}  // namespace forge::server
